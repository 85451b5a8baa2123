"""Several pages in one change: saves, edits, moves and deletes, each checked against its own base
hash, written all or nothing as one recorded change (one commit on git, one change record on S3);
mixed into :class:`~hostcore.service.wiki.Wiki`.

Each operation is planned exactly as its own tool would do it (the same checks, in the same
words, with the field at fault named ``changes[i].<field>``); then every planned write goes to
:meth:`~hostcore.seams.storage.Storage.apply` at once, which checks every expectation before
writing anything. Each page may appear once per call (as a slug or a move's destination).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from hostcore.domain.pages import page_path
from hostcore.errors import Conflict, HostcoreError, NotFound, ValidationError
from hostcore.seams.storage import Operation
from hostcore.service.links import LinksMixin
from hostcore.service.pages import Plan

MAX_CHANGES = 64
OPS = ("save", "edit", "move", "delete")
Op = Literal["save", "edit", "move", "delete"]
# The fields each op takes besides op and slug: required, then optional.
_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "save": ((), ("basehash", "body", "title", "tags", "pin")),
    "edit": (("basehash", "edits"), ()),
    "move": (("basehash", "new_slug"), ()),
    "delete": ((), ("basehash",)),
}


class ChangedPage(TypedDict):
    op: str
    slug: str
    hash: str
    changed: bool
    old_slug: NotRequired[str]


class ChangesResult(TypedDict):
    changes: list[ChangedPage]
    changed: bool
    proposed: NotRequired[str]
    review: NotRequired[str]
    review_url: NotRequired[str]


class ChangesMixin(LinksMixin):
    """apply_changes."""

    def apply_changes(self, changes: list[dict[str, Any]]) -> ChangesResult:
        if (proposer := self._proposer()) is not None:
            return proposer.apply_changes(changes)
        self.principal.require("write")
        if not changes:
            raise ValidationError("needs at least one change {op, slug, ...}", field="changes")
        if len(changes) > MAX_CHANGES:
            raise ValidationError(f"has {len(changes)} changes; at most {MAX_CHANGES} per call", field="changes")
        plans: list[Plan] = []
        owner: dict[str, int] = {}  # page slug -> the change that touches it
        for i, change in enumerate(changes):
            claim(owner, i, change)
            try:
                plans.append(self._plan_change(change))
            except HostcoreError as exc:
                exc.field = f"changes[{i}].{exc.field}" if exc.field else f"changes[{i}]"
                exc.data.setdefault("index", i)
                raise
        writing = [p for p in plans if p.ops]
        based = [  # a change request deletes only with a basehash: the one each delete was checked against
            {**c, "basehash": p.previous.hash} if c["op"] == "delete" and p.previous is not None else c
            for c, p in zip(changes, plans, strict=True)
        ]
        if writing and (proposal := self._proposal("apply_changes", based)) is not None:
            unchanged = [{**_entry(c, p), "hash": p.previous.hash if p.previous else "", "changed": False} for c, p in zip(changes, plans, strict=True)]
            return {"changes": unchanged, "changed": False, **proposal}  # type: ignore[typeddict-item]
        if writing:
            self._write(changes, plans, writing)
        return {"changes": [_entry(c, p) for c, p in zip(changes, plans, strict=True)], "changed": bool(writing)}

    def _write(self, changes: list[dict[str, Any]], plans: list[Plan], writing: list[Plan]) -> None:
        slugs = ", ".join(c["slug"] for c, p in zip(changes, plans, strict=True) if p.ops)
        paths = {op.path: i for i, p in enumerate(plans) for op in p.ops}
        try:
            self._land_plans(writing, "apply_changes", f"{len(writing)} pages: {slugs}", slugs)
        except (Conflict, NotFound) as exc:
            i = paths.get(str(exc.data.get("path", "")), 0)
            slug = changes[i]["slug"]
            current = self.storage.hash(page_path(slug))
            raise Conflict(
                f"is stale: {slug} (or a file it moves) changed while this call was writing; nothing in this call "
                "was written. Re-read it and retry with the current hash",
                field=f"changes[{i}].basehash",
                hash=current or "",
                index=i,
            ) from None

    def _land_plans(
        self, writing: list[Plan], tool: str, subject: str, slugs: str, extra: Sequence[Operation] = (), trailer: str = ""
    ) -> None:
        """Store ``extra`` and every operation of ``writing`` as one change of ``tool`` (each page
        written counts as one write against the limit; ``trailer`` ends its message), its moves
        recorded, then announce each plan. Raises RateLimited or DiskFull first, Conflict or
        NotFound with nothing written. ``extra`` goes first: a backend that writes in order (S3)
        meets a race lost on it before touching a page."""
        change = self._change(tool, subject)
        for _more in writing[1:]:
            self._change(tool, slugs)
        change = replace(change, message=change.message + trailer, moves=tuple(m for p in writing for m in p.moves))
        self._store([*extra, *(op for p in writing for op in p.ops)], change)
        for p in writing:
            for q in (p, *p.also):
                self._announce(q, change)

    def _plan_change(self, change: dict[str, Any]) -> Plan:
        op = check_fields(change, _FIELDS)
        slug = change["slug"]
        if op == "save":
            return self._plan_save(
                slug, change.get("basehash"), change.get("body"), change.get("title"), change.get("tags"), change.get("pin")
            )
        if op == "edit":
            edits = [{"oldText": e["oldText"], "newText": e["newText"]} for e in change["edits"]]
            return self._plan_edit(slug, change["basehash"], edits)[0]
        if op == "delete":
            return self._plan_delete(slug, change.get("basehash"))
        return self._plan_move(slug, change["new_slug"], change["basehash"])

    def _plan_move(self, slug: str, new_slug: str, basehash: str) -> Plan:
        """What move_page writes, after its checks."""
        current = self._check_move(slug, new_slug, basehash)
        return self._relocation(current, replace(current, slug=new_slug), basehash)


def check_fields(change: dict[str, Any], table: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> str:
    """``change``'s op, once it is one of ``table``'s (op -> required fields, optional fields besides
    op and slug) and ``change`` has every required field of it and no other; raises ValidationError."""
    op = change.get("op")
    if op not in table:
        raise ValidationError(f"must be one of {', '.join(table)}", field="op")
    required, optional = table[op]
    for name in required:
        if change.get(name) is None:
            raise ValidationError(f"is required for op {op!r}", field=name)
    for name, value in change.items():
        if value is not None and name not in ("op", "slug", *required, *optional):
            raise ValidationError(f"is not used by op {op!r}; op {op!r} takes {', '.join(required + optional)}", field=name)
    return str(op)


def claim(owner: dict[str, int], i: int, change: dict[str, Any]) -> None:
    """Note in ``owner`` (slug -> index) the pages ``changes[i]`` touches; raises ValidationError
    when another change touches one of them already: each page is changed once per call."""
    for name in ("slug", "new_slug"):
        slug = change.get(name)
        if slug is None or (name == "new_slug" and change.get("op") != "move"):
            continue
        if slug in owner:
            raise ValidationError(
                f"{slug!r} is changed by changes[{owner[slug]}] already; change each page once per call",
                field=f"changes[{i}].{name}",
            )
        owner[slug] = i


def _entry(change: dict[str, Any], plan: Plan) -> ChangedPage:
    entry: ChangedPage = {
        "op": change["op"],
        "slug": plan.page.slug,
        "hash": "" if plan.event == "page_deleted" else plan.page.hash,
        "changed": bool(plan.ops),
    }
    if change["op"] in ("move", "rename"):
        entry["old_slug"] = change["slug"]
    return entry
