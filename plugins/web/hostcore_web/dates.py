"""The calendar widget: a namespace's dated pages (a ``YYYY-MM-DD`` date in the page's name, as
``new.slug = "journal/{date}"`` makes them) on a month grid, each day linking to its pages.

The month shown is the one asked for (``?month=YYYY-MM`` on the namespace's index), else the month
of the newest dated page, else this month; the grid links to the nearest earlier and later months
that have pages.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_WEEKS = calendar.Calendar(firstweekday=0)  # Monday first (ISO 8601)


@dataclass
class Day:
    day: int
    iso: str
    today: bool
    pages: list[Any] = field(default_factory=list)


@dataclass
class Month:
    month: str  # YYYY-MM
    label: str  # "November 2026"
    weeks: list[list[Day | None]]
    entries: list[tuple[str, Any]]  # (YYYY-MM-DD, entry) of this month, newest first
    earlier: str | None  # the nearest earlier month with dated pages (YYYY-MM)
    later: str | None
    dated: int  # dated pages in the namespace

    @staticmethod
    def name(month: str) -> str:
        """``2026-11`` -> ``November 2026``."""
        year, number = month.split("-")
        return f"{calendar.month_name[int(number)]} {year}"


def page_date(slug: str) -> date | None:
    """The date in a page's name (the last one, so ``2026/2026-11-30`` counts once), or None."""
    found = _DATE.findall(slug)
    if not found:
        return None
    year, month, day = found[-1]
    try:
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


def _asked(month: str | None) -> tuple[int, int] | None:
    m = _MONTH.fullmatch(month or "")
    if m is None or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 1:
        return None
    return int(m.group(1)), int(m.group(2))


def newest_entries(entries: Sequence[Any], limit: int = 10) -> list[Any]:
    """The prev-entries widget: the dated pages, latest date first (a journal's previous entries);
    in a namespace without dated pages, the pages changed last."""
    dated = [(when, e) for e in entries if (when := page_date(e.slug)) is not None]
    if not dated:
        return sorted(entries, key=lambda e: e.changed, reverse=True)[:limit]
    return [e for _when, e in sorted(dated, key=lambda pair: (pair[0], pair[1].slug), reverse=True)[:limit]]


def month_view(entries: Sequence[Any], month: str | None, today: date) -> Month:
    """The calendar of ``entries`` (objects with a ``slug``) for ``month`` (YYYY-MM; see the module)."""
    by_day: dict[date, list[Any]] = {}
    for entry in entries:
        when = page_date(entry.slug)
        if when is not None:
            by_day.setdefault(when, []).append(entry)
    months = sorted({(d.year, d.month) for d in by_day})
    year, number = _asked(month) or (months[-1] if months else (today.year, today.month))
    weeks: list[list[Day | None]] = []
    for week in _WEEKS.monthdayscalendar(year, number):
        row: list[Day | None] = []
        for n in week:
            if n == 0:
                row.append(None)
                continue
            when = date(year, number, n)
            row.append(Day(n, when.isoformat(), when == today, sorted(by_day.get(when, []), key=lambda e: e.slug)))
        weeks.append(row)
    shown = [(d.isoformat(), e) for d in sorted(by_day, reverse=True) if (d.year, d.month) == (year, number) for e in by_day[d]]
    earlier = [m for m in months if m < (year, number)]
    later = [m for m in months if m > (year, number)]
    return Month(
        month=f"{year:04d}-{number:02d}",
        label=Month.name(f"{year}-{number}"),
        weeks=weeks,
        entries=shown,
        earlier=f"{earlier[-1][0]:04d}-{earlier[-1][1]:02d}" if earlier else None,
        later=f"{later[0][0]:04d}-{later[0][1]:02d}" if later else None,
        dated=sum(len(v) for v in by_day.values()),
    )
