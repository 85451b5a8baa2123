"""A change request as its reviewer sees it: each operation's page before and after, a drifted one
with both sides (the page now, the text proposed) to resolve by hand, and whether the caller may
apply or reject it; mixed into :class:`~hostcore.service.wiki.Wiki`.

The browser's review page draws this; deciding goes through
:meth:`~hostcore.service.change_requests.ChangeRequestsMixin.apply_change_request` (with the
resolved texts as ``resolutions``) and ``reject_change_request``, which enforce who may.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from hostcore.domain import change_requests as dom
from hostcore.domain import sections as sec
from hostcore.domain.edits import apply_edits
from hostcore.errors import HostcoreError, NotFound
from hostcore.service.change_requests import RESOLVABLE, ChangeRequestsMixin, RequestView, _Planned, _view


class ReviewedChange(TypedDict):
    """One operation: ``before``/``after`` the page's text when it applies now (``outcome`` ok,
    rebased or unchanged); when it drifted (``needs_refresh``), ``theirs`` (the page now, at
    ``hash``) and ``proposed`` (the whole page as the author meant it, "" when it cannot be told),
    ``resolvable`` when a person may resolve it by text."""

    index: int
    op: str
    slug: str
    new_slug: str
    risk: str
    outcome: str
    message: str
    hash: str
    before: str
    after: str
    theirs: str
    proposed: str
    resolvable: bool
    rewrites: list[str]  # the other pages it changes: those whose links a rename rewrites


class Review(TypedDict):
    request: RequestView  # its ``pages`` empty: each operation is in ``changes``
    risk: str
    changes: list[ReviewedChange]
    may_apply: bool
    may_reject: bool


class ChangeReviewMixin(ChangeRequestsMixin):
    """review_change_request."""

    def review_change_request(self, id: str) -> Review:
        """The request ``id`` for its reviewer: every operation's texts (see :class:`ReviewedChange`)
        and whether the caller may apply and reject it. Raises NotFound as read_change_request does."""
        record, _digest = self._record(id)
        changes = record["changes"]
        risk = dom.highest([record.get("risk", "additive"), self._risk(changes)])
        if record["state"] == "open":
            planned, _warnings = self._plan_request(changes, record.get("bases"), [])
        else:
            planned = [_Planned(None, "closed") for _c in changes]
        bases = record.get("bases") or [None] * len(changes)
        reviewed = [self._reviewed_change(i, c, p, bases[i]) for i, (c, p) in enumerate(zip(changes, planned, strict=True))]
        request = _view(record, [])  # the operations' outcomes are in ``changes``
        is_open = record["state"] == "open"
        needed = "write" if risk == "additive" else "review"
        may_apply = is_open and self.principal.has_scope("write") and self.principal.has_scope(needed)
        may_reject = is_open and self.principal.has_scope("propose") and (
            record["author"] == self.principal.name or self.principal.has_scope("write" if record.get("risk") == "additive" else "review"))  # fmt: skip
        return {"request": request, "risk": risk, "changes": reviewed, "may_apply": may_apply, "may_reject": may_reject}

    def _reviewed_change(self, i: int, change: dict[str, Any], p: _Planned, base: str | None) -> ReviewedChange:
        outcome = self._outcome(i, change, p)
        entry: ReviewedChange = {
            "index": i, "op": change["op"], "slug": change["slug"], "new_slug": change.get("new_slug") or "",
            "risk": outcome["risk"], "outcome": outcome["outcome"], "message": outcome.get("message", ""),
            "hash": outcome["hash"], "before": "", "after": "", "theirs": "", "proposed": "", "resolvable": False, "rewrites": [],
        }  # fmt: skip
        if p.plan is not None:
            if change["op"] == "rename":
                entry["new_slug"] = p.plan.page.slug
            entry["rewrites"] = [q.page.slug for q in p.plan.also]
            entry["before"] = p.plan.previous.body if p.plan.previous is not None else ""
            entry["after"] = "" if p.plan.event == "page_deleted" else p.plan.page.body
        elif p.outcome == "needs_refresh":
            try:
                current = self._load(change["slug"])
            except NotFound:
                return entry
            entry["theirs"], entry["hash"] = current.body, current.hash
            entry["proposed"] = _proposed(change, base, current.body)
            entry["resolvable"] = change["op"] in RESOLVABLE
        return entry


def _proposed(change: dict[str, Any], base: str | None, current: str) -> str:
    """The whole page as the operation's author meant it: a save's body; an edit's edits on the text
    they were made on; a section's text in place of that section of the page now. "" when unknown."""
    op = change["op"]
    try:
        if op == "save":
            return str(change.get("body") or "")
        if op == "edit" and base is not None:
            return apply_edits(base, change["edits"])[0]
        if op == "section":
            o = sec.outline(current)
            return sec.replace_section(o, o.find(change["section_id"]), change["text"])
    except (HostcoreError, KeyError, TypeError):
        return ""
    return ""
