"""Change requests: page operations proposed together, reviewed, then applied as one change or
rejected; mixed into :class:`~hostcore.service.wiki.Wiki`.

A change request holds the operations of :meth:`~hostcore.service.changes.ChangesMixin.apply_changes`
(save, edit, move, delete, with their base hashes; a delete needs one here) and three more: ``append``
(Markdown added to a page or a section, no hash), ``section`` (a section's own text replaced,
checked against its ``rev``) and ``rename`` (rename_page's: a new title, the slug it gives, and the
links to the page in its namespace rewritten, all in the one change). It is stored as JSON in the wiki's storage
(:mod:`hostcore.domain.change_requests`), with the base text of each saved or edited page, so a
drifted edit can be rebased on every backend.

Who does what (the service's rules, whatever the adapter):

- **Create, validate**: the ``propose`` scope (``write`` implies it) and access to every
  namespace the operations touch; the operations are planned exactly as their own tools would
  plan them for a writer of those namespaces.
- **See** (list, read, dry-run): the ``read`` scope and access to *every* namespace the request
  touches; a request touching any other is not shown at all (read answers not_found), so none
  reveals a page its reader cannot see.
- **Apply**: access to every namespace it touches, and the ``write`` scope for an *additive*
  request (new pages and appends: the writer relays the person's go-ahead), the ``review`` scope
  (``admin`` implies it) for a *structural* or *destructive* one. The risk is computed again
  against the current wiki when applying. Every operation is planned again on the current pages:
  a drifted edit is rebased when safe (:func:`hostcore.domain.rebase.rebase`), anything else that
  drifted answers ``needs_refresh`` and nothing is written. The pages and the request's new state
  are written by one :meth:`~hostcore.seams.storage.Storage.apply`, compare-and-set on the request's
  record too, so of two appliers one wins and the other is told the request is applied already.
- **Reject**: whoever may apply it, or its author (withdrawing it), with a note.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, NotRequired

from typing_extensions import TypedDict

from hostcore.domain import change_requests as dom
from hostcore.domain import sections as sec
from hostcore.domain.edits import text_diff
from hostcore.domain.pages import Page, check_body, namespace_of, page_path, rewrite_links
from hostcore.domain.rebase import rebase as rebase_edits
from hostcore.errors import Conflict, HostcoreError, InsufficientScope, NotFound, TooLarge, ValidationError
from hostcore.seams.storage import Put
from hostcore.service.changes import MAX_CHANGES, ChangedPage, ChangesMixin, _entry, check_fields, claim
from hostcore.service.pages import Plan
from hostcore.service.sections import _current, outline_of

MAX_LIST = 100
# The fields each op of a change request takes besides op and slug: required, then optional.
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "save": ((), ("basehash", "body", "title", "tags", "pin")),
    "edit": (("basehash", "edits"), ()),
    "append": (("markdown",), ("section_id", "position")),
    "section": (("section_id", "rev", "text"), ()),
    "move": (("basehash", "new_slug"), ()),
    "rename": (("basehash", "title"), ()),
    "delete": (("basehash",), ()),
}
_FIXES = {
    "validation_error": "correct this field as the message says, then validate again",
    "conflict": "read the page again (read_page, or outline for a section) and use its current hash or rev",
    "not_found": "check the slug with list_pages or search",
    "forbidden": "keep the change request to namespaces your token may use",
    "insufficient_scope": "ask an admin for a token with the scope the message names",
    "too_large": "make it smaller, as the message says",
}


class RequestedChange(TypedDict):
    op: str
    slug: str
    basehash: NotRequired[str]
    body: NotRequired[str]
    title: NotRequired[str]
    tags: NotRequired[list[str]]
    pin: NotRequired[bool]
    edits: NotRequired[list[dict[str, str]]]
    new_slug: NotRequired[str]
    markdown: NotRequired[str]
    section_id: NotRequired[str]
    position: NotRequired[str]
    rev: NotRequired[str]
    text: NotRequired[str]


class Problem(TypedDict):
    field: str
    code: str
    message: str
    fix: str


class Validation(TypedDict):
    valid: bool
    risk: str
    namespaces: list[str]
    errors: list[Problem]
    warnings: list[Problem]


RESOLVABLE = ("save", "edit", "section")
"""The operations a person may resolve by hand when they drifted: those that write a page's text."""


class Resolution(TypedDict):
    """A drifted operation resolved by the approver: the whole page's text, saved over ``basehash``."""

    index: int
    basehash: str
    body: str


class Outcome(TypedDict):
    index: int
    op: str
    slug: str
    risk: str
    outcome: str
    hash: str
    message: NotRequired[str]
    code: NotRequired[str]
    diff: NotRequired[str]


class DryRun(TypedDict):
    id: str
    state: str
    risk: str
    ready: bool
    needs_refresh: bool
    changes: list[Outcome]


class Summary(TypedDict):
    id: str
    title: str
    state: str
    risk: str
    author: str
    client: str
    created: str
    namespaces: list[str]
    slugs: list[str]
    change_count: int


class RequestList(TypedDict):
    change_requests: list[Summary]
    total: int
    more: bool
    next_offset: int | None


class RequestView(Summary):
    description: str
    reason: str
    source: str
    decided_by: str
    decided_client: str
    decided_at: str
    note: str
    changes: list[RequestedChange]
    pages: list[Outcome]
    applied: list[ChangedPage]


class Created(TypedDict):
    id: str
    state: str
    risk: str
    namespaces: list[str]
    warnings: list[Problem]


class Decided(TypedDict):
    id: str
    state: str
    risk: str
    decided_by: str
    decided_at: str
    note: str
    changes: list[ChangedPage]


class _Planned:
    """One operation planned against the current wiki: its plan, or why it has none."""

    def __init__(self, plan: Plan | None, outcome: str, error: HostcoreError | None = None) -> None:
        self.plan, self.outcome, self.error = plan, outcome, error


def _problem(exc: HostcoreError) -> Problem:
    return {"field": exc.field or "", "code": exc.code, "message": str(exc), "fix": _FIXES.get(exc.code, "see the message")}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ChangeRequestsMixin(ChangesMixin):
    """create_change_request, validate_change_request, dry_run_change_request, list_change_requests,
    read_change_request, apply_change_request, reject_change_request."""

    # --- making one ------------------------------------------------------------------------

    def validate_change_request(
        self, changes: list[dict[str, Any]], title: str, reason: str, description: str = "", source: str = ""
    ) -> Validation:
        """Every problem of a change request, each with its field, code, message and a fix; nothing is saved."""
        self.principal.require("propose")
        errors: list[Problem] = []
        meta = {"title": (title, dom.MAX_TITLE, True), "reason": (reason, dom.MAX_REASON, True),
                "description": (description, dom.MAX_DESCRIPTION, False), "source": (source, dom.MAX_SOURCE, False)}  # fmt: skip
        for name, (value, limit, required) in meta.items():
            try:
                dom.check_text(value, name, limit, required=required)
            except ValidationError as exc:
                errors.append(_problem(exc))
        planned, warnings = self._plan_request(changes, None, errors)
        risk = self._risk(changes)
        for i, p in enumerate(planned):
            if p.error is not None:
                errors.append(_problem(p.error))
            elif p.outcome == "unchanged":
                warnings.append({"field": f"changes[{i}]", "code": "unchanged", "message": f"changes[{i}]: changes nothing on the current page",
                                 "fix": "drop it, or change what it writes"})  # fmt: skip
        return {
            "valid": not errors,
            "risk": risk,
            "namespaces": dom.namespaces_of(changes),
            "errors": errors,
            "warnings": warnings,
        }

    def create_change_request(
        self, changes: list[dict[str, Any]], title: str, reason: str, description: str = "", source: str = ""
    ) -> Created:
        """Validate, then store a new open change request. Raises ValidationError (its ``errors``:
        every problem) and stores nothing when it is not valid."""
        checked = self.validate_change_request(changes, title, reason, description, source)
        if not checked["valid"]:
            first = checked["errors"][0]
            raise ValidationError(
                f"{first['message'].removeprefix(first['field'] + ': ')} ({len(checked['errors'])} problem(s) in all, "
                "listed in errors; nothing was saved)",
                field=first["field"] or None,
                errors=checked["errors"],
            )
        created = datetime.now(UTC)
        request_id = dom.new_id(created)
        record = {
            "id": request_id, "title": title.strip(), "description": description.strip(), "reason": reason.strip(),
            "source": source.strip(), "author": self.principal.name, "client": self.principal.client or "",
            "created": created.isoformat(timespec="seconds"), "state": "open", "risk": checked["risk"],
            "namespaces": checked["namespaces"], "changes": changes, "bases": [self._base_text(c) for c in changes],
            "decided_by": "", "decided_client": "", "decided_at": "", "note": "", "applied": [],
        }  # fmt: skip
        data = dom.to_bytes(record)
        if len(data) > dom.MAX_RECORD_BYTES:
            raise TooLarge(
                f"would be stored as {len(data)} bytes with the text of the pages it changes; at most "
                f"{dom.MAX_RECORD_BYTES} (8 MiB). Split it into smaller change requests; nothing was saved",
                field="changes",
            )
        change = self._change("create_change_request", f"{request_id}: {record['title']}")
        self._store([Put(dom.record_path(request_id), data, expect=None)], change)
        return {"id": request_id, "state": "open", "risk": checked["risk"], "namespaces": checked["namespaces"],
                "warnings": checked["warnings"]}  # fmt: skip

    def _base_text(self, change: dict[str, Any]) -> str | None:
        """The body of the page an edit or save was made on, kept so it can be rebased or diffed later."""
        if change["op"] not in ("edit", "save") or not change.get("basehash"):
            return None
        try:
            page = self._load(change["slug"])
        except NotFound:
            return None
        return page.body if page.hash == change["basehash"] else None

    # --- planning on the current wiki ------------------------------------------------------

    def _writer(self) -> ChangeRequestsMixin:
        """The wiki as a writer of the caller's namespaces: how a request's operations are planned
        for someone who may propose, read or review them, without their own write scope."""
        principal = replace(self.principal, scopes=frozenset({"write"}))
        return type(self)(self.host, principal)

    def _plan_request(
        self, changes: list[dict[str, Any]], bases: list[str | None] | None, errors: list[Problem], *, planner: Any = None
    ) -> tuple[list[_Planned], list[Problem]]:
        """Each operation planned on the current pages (rebased when drifted and safe); problems of the
        list itself go to ``errors``. Returns the plans and the warnings."""
        if not isinstance(changes, list) or not changes:
            errors.append(_problem(ValidationError("needs at least one change {op, slug, ...}", field="changes")))
            return [], []
        if len(changes) > MAX_CHANGES:
            errors.append(_problem(ValidationError(f"has {len(changes)} changes; at most {MAX_CHANGES}", field="changes")))
            return [], []
        planner = planner or self._writer()
        owner: dict[str, int] = {}
        written: dict[str, int] = {}  # path -> the change that writes it: a rename's link rewrites too
        planned: list[_Planned] = []
        warnings: list[Problem] = []
        for i, change in enumerate(changes):
            try:
                claim(owner, i, change)
                plan, outcome = planner._plan_requested(change, bases[i] if bases else None)
                _claim_paths(written, i, plan)
                planned.append(_Planned(plan, "unchanged" if not plan.ops else outcome))
            except HostcoreError as exc:
                if exc.field and not exc.field.startswith("changes["):
                    exc.field = f"changes[{i}].{exc.field}"
                exc.field = exc.field or f"changes[{i}]"
                exc.data.setdefault("index", i)
                planned.append(_Planned(None, "needs_refresh" if isinstance(exc, Conflict) else "error", exc))
                continue
            warnings += self._warnings(i, change, outcome)
        return planned, warnings

    def _warnings(self, i: int, change: dict[str, Any], outcome: str) -> list[Problem]:
        out: list[Problem] = []
        if outcome == "rebased":
            out.append({"field": f"changes[{i}].basehash", "code": "rebased", "message": f"{change['slug']} changed since its "
                        "basehash; the edits were carried over to the current page", "fix": "check the diff in read_change_request"})  # fmt: skip
        if change["op"] == "delete":
            out.append({"field": f"changes[{i}]", "code": "deletes_page", "message": f"deletes {change['slug']} and its "
                        "attachments", "fix": "restore_page brings a deleted page back on storage with history"})  # fmt: skip
        linked = self._linked_from(change)
        if linked:
            out.append({"field": f"changes[{i}].new_slug", "code": "links_left", "message": f"{linked} other page(s) link "
                        f"to {change['slug']}; after the move those links point to nothing",
                        "fix": "rename_page moves a page and rewrites the links to it"})  # fmt: skip
        return out

    def _linked_from(self, change: dict[str, Any]) -> int:
        if change.get("op") != "move":
            return 0
        slug = change.get("slug")
        sources = self.host.indexes.link_graph(while_rebuilt=True).slugs_linking_to(slug) if isinstance(slug, str) else []
        return sum(1 for s in sources if s != slug)

    def _risk(self, changes: list[dict[str, Any]]) -> dom.Risk:
        if not isinstance(changes, list):
            return "additive"
        return dom.highest([dom.op_risk(c, self._linked_from(c)) for c in changes if isinstance(c, dict)])

    def _plan_requested(self, change: dict[str, Any], base: str | None) -> tuple[Plan, str]:
        """One operation planned on the current page, as its own tool plans it; ``base``: the body it
        was made on, to rebase a drifted edit. Raises Conflict when its base drifted."""
        op = check_fields(change, FIELDS)
        slug = change["slug"]
        if op == "append":
            return self._plan_insert(slug, change), "ok"
        if op == "section":
            return self._plan_section(slug, change), "ok"
        if op == "rename":
            return self._plan_rename(slug, change["title"], change["basehash"]), "ok"
        if op == "save" and change.get("basehash") is None:
            self._access("write", slug)
            if self.storage.exists(page_path(slug)):
                raise Conflict(f"{slug} exists now; read_page it and save over it with its hash", field="slug", hash="")
        if op == "edit":
            self._access("write", slug)
            current = self._current_page(slug)
            if current.hash != change["basehash"] and base is not None:
                done = rebase_edits(base, current.body, change["edits"])
                if done is not None:
                    body = check_body(done[0])
                    new = replace(current, body=body).stored()
                    ops = [Put(page_path(slug), new.to_bytes(), expect=current.hash)] if new.hash != current.hash else []
                    return Plan("page_saved", new, current, list(ops)), "rebased"
        return self._plan_change(change), "ok"

    def _plan_rename(self, slug: str, title: str, basehash: str) -> Plan:
        """What rename_page writes, as one change: the page at the slug its title gives, and the
        links to it rewritten in the pages of its namespace, in the same change (links from other
        namespaces are left as written: no reader of those learns of it, as with rename_page)."""
        self._access("write", slug)
        new_slug = self._renamed_slug(slug, title)
        if new_slug == slug:
            raise ValidationError(f"gives {slug!r} its own slug again; change only the title with a save", field="title")
        current = self._current_or_conflict(slug, basehash, tool="rename_page")
        self._check_movable(slug, new_slug, "title")
        plan = self._relocation(current, replace(current, slug=new_slug, title=title).stored(), basehash)
        for source in self.host.indexes.link_graph().slugs_linking_to(slug):
            if source in (slug, new_slug) or namespace_of(source) != namespace_of(slug):
                continue
            page = self._load(source)
            body = rewrite_links(page.body, source, slug, new_slug)
            if body != page.body:
                rewritten = replace(page, body=body).stored()
                plan.ops.append(Put(page_path(source), rewritten.to_bytes(), expect=page.hash))
                plan.also.append(Plan("page_saved", rewritten, page, []))
        return plan

    def _current_page(self, slug: str) -> Page:
        try:
            return self._load(slug)
        except NotFound:
            raise Conflict(f"page {slug!r} no longer exists", field="slug", hash="") from None

    def _plan_insert(self, slug: str, change: dict[str, Any]) -> Plan:
        """What append_to_page writes on the current page."""
        self._access("write", slug)
        markdown = check_body(change["markdown"], "markdown")
        position: sec.Position = change.get("position") or "end"
        if position not in sec.POSITIONS:
            raise ValidationError(f"must be one of {', '.join(sec.POSITIONS)}", field="position")
        page = self._load(slug)
        o = outline_of(page)
        at = o.find(change["section_id"]) if change.get("section_id") is not None else None
        return self._rewritten(page, sec.insert(o, markdown, at, position))

    def _plan_section(self, slug: str, change: dict[str, Any]) -> Plan:
        """What save_section writes on the current page, checked against the section's rev."""
        self._access("write", slug)
        text = check_body(change["text"], "text")
        page = self._current_page(slug)
        o = outline_of(page)
        at = _current(o, change["section_id"], change["rev"])
        return self._rewritten(page, sec.replace_section(o, at, text))

    def _rewritten(self, page: Page, body: str) -> Plan:
        new = replace(page, body=check_body(body)).stored()
        ops = [Put(page_path(page.slug), new.to_bytes(), expect=page.hash)] if new.hash != page.hash else []
        return Plan("page_saved", new, page, list(ops))

    # --- reading them ----------------------------------------------------------------------

    def _records(self) -> list[tuple[dict[str, Any], str]]:
        """Every change request the caller may see (access to each namespace it touches), newest first, with its hash."""
        self.principal.require("read")
        found = []
        for path in self.storage.list(dom.FOLDER):
            if dom.id_of(path) is None:
                continue
            try:
                data, digest = self.storage.read_with_hash(path)
                record = dom.from_bytes(data)
            except (NotFound, ValueError):
                continue
            if self._sees_request(record):
                found.append((record, digest))
        found.sort(key=lambda r: r[0]["id"], reverse=True)
        return found

    def _sees_request(self, record: dict[str, Any]) -> bool:
        return all(self.principal.can_access(ns) for ns in record.get("namespaces", []))

    def _record(self, request_id: str) -> tuple[dict[str, Any], str]:
        """The change request ``request_id`` and its hash. Raises NotFound when it does not exist or
        touches a namespace the caller may not use (the two are told apart by no one)."""
        self.principal.require("read")
        dom.check_id(request_id)
        try:
            data, digest = self.storage.read_with_hash(dom.record_path(request_id))
            record = dom.from_bytes(data)
        except (NotFound, ValueError):
            record, digest = {}, ""
        if not record or not self._sees_request(record):
            raise NotFound(f"no change request {request_id!r}; list_change_requests shows those you may see", field="id")
        return record, digest

    def list_change_requests(
        self,
        state: str | None = "open",
        namespace: str | None = None,
        author: str | None = None,
        offset: int = 0,
        limit: int = 20,
    ) -> RequestList:
        if state is not None and state not in dom.STATES:
            raise ValidationError(f"must be one of {', '.join(dom.STATES)}, or omitted for all", field="state")
        if not 1 <= limit <= MAX_LIST:
            raise ValidationError(f"must be between 1 and {MAX_LIST}", field="limit")
        if offset < 0:
            raise ValidationError("must not be negative", field="offset")
        if namespace is not None:
            self.principal.require_namespace(namespace, "namespace")
        chosen = [
            r for r, _h in self._records()
            if (state is None or r["state"] == state) and (namespace is None or namespace in r["namespaces"])
            and (author is None or r["author"] == author)
        ]  # fmt: skip
        page = chosen[offset : offset + limit]
        more = offset + limit < len(chosen)
        return {"change_requests": [_summary(r) for r in page], "total": len(chosen), "more": more,
                "next_offset": offset + limit if more else None}  # fmt: skip

    def read_change_request(self, id: str) -> RequestView:
        """The request, with each operation's outcome now and its page's diff against the current text
        (for a drifted operation that cannot be rebased: against the text it was made on)."""
        record, _digest = self._record(id)
        return _view(record, self._outcomes(record, diffs=True))

    def dry_run_change_request(self, id: str) -> DryRun:
        """What applying the request would do now, operation by operation; writes nothing."""
        record, _digest = self._record(id)
        outcomes = self._outcomes(record, diffs=False)
        refresh = any(o["outcome"] == "needs_refresh" for o in outcomes)
        ready = record["state"] == "open" and all(o["outcome"] in ("ok", "rebased", "unchanged") for o in outcomes)
        return {"id": record["id"], "state": record["state"], "risk": self._risk(record["changes"]), "ready": ready,
                "needs_refresh": refresh, "changes": outcomes}  # fmt: skip

    def _outcomes(self, record: dict[str, Any], *, diffs: bool) -> list[Outcome]:
        changes = record["changes"]
        if record["state"] != "open":
            return [self._outcome(i, c, None) for i, c in enumerate(changes)]
        planned, _warnings = self._plan_request(changes, record.get("bases"), [])
        out = []
        for i, (change, p) in enumerate(zip(changes, planned, strict=True)):
            entry = self._outcome(i, change, p)
            if diffs:
                entry["diff"] = self._diff(change, p, (record.get("bases") or [None] * len(changes))[i])
            out.append(entry)
        return out

    def _outcome(self, i: int, change: dict[str, Any], p: _Planned | None) -> Outcome:
        current = self.storage.hash(page_path(change["slug"])) or ""
        entry: Outcome = {"index": i, "op": change["op"], "slug": change["slug"], "risk": dom.op_risk(change, self._linked_from(change)),
                          "outcome": p.outcome if p else "closed", "hash": current}  # fmt: skip
        if p is not None and p.error is not None:
            entry["message"], entry["code"] = str(p.error), p.error.code
        return entry

    def _diff(self, change: dict[str, Any], p: _Planned, base: str | None) -> str:
        slug = change["slug"]
        if p.plan is not None:
            before = p.plan.previous.body if p.plan.previous is not None and p.plan.event != "page_moved" else ""
            after = "" if p.plan.event == "page_deleted" else p.plan.page.body
            if p.plan.event == "page_moved":
                return f"--- a/{slug}\n+++ b/{p.plan.page.slug}\n"
            return text_diff(before, after, f"a/{slug}", f"b/{slug}")
        if base is not None and change["op"] == "save" and change.get("body") is not None:
            return text_diff(base, change["body"], f"a/{slug}@{change.get('basehash', '')}", f"b/{slug}")
        return ""

    # --- deciding --------------------------------------------------------------------------

    def _require_decider(self, record: dict[str, Any], risk: str, verb: str) -> None:
        """Raise unless the caller may ``verb`` (apply or reject) a request of ``risk``."""
        needed = "write" if risk == "additive" else "review"
        if not self.principal.has_scope(needed):
            raise InsufficientScope(
                f"id: this change request is {risk}; to {verb} it needs the {needed!r} scope, which your token lacks. "
                f"Ask someone whose token has {needed!r} to {verb} it",
                required_scope=needed,
            )

    def _require_open(self, record: dict[str, Any]) -> None:
        if record["state"] != "open":
            raise Conflict(
                f"is {record['state']} already (by {record.get('decided_by') or 'someone'} at {record.get('decided_at')}); "
                "nothing was changed. list_change_requests shows the open ones",
                field="id", hash="", state=record["state"],
            )  # fmt: skip

    def apply_change_request(self, id: str, note: str = "", resolutions: list[Resolution] | None = None) -> Decided:
        """Apply an open request as one recorded change (its id, reason and the approver in the
        message), with the request marked applied in the same write. ``resolutions``: operations
        the approver resolved by hand (a drifted one the rebasing rules could not carry over), each
        written as a save of the resolved text over the page's ``basehash`` the approver saw, in
        place of the operation. Raises InsufficientScope or Forbidden when the caller may not apply
        its risk, Conflict when it is not open or a base drifted beyond rebasing (``needs_refresh``:
        per operation), and writes nothing then."""
        self.principal.require("write")
        record, digest = self._record(id)
        note = dom.check_text(note, "note", dom.MAX_NOTE, required=False)
        self._require_open(record)
        changes, bases = self._resolved(record, resolutions or [])
        risk = dom.highest([record.get("risk", "additive"), self._risk(changes)])
        self._require_decider(record, risk, "apply")
        planned, _warnings = self._plan_request(changes, bases, [], planner=self)
        stuck = [self._outcome(i, c, p) for i, (c, p) in enumerate(zip(changes, planned, strict=True))
                 if p.plan is None]  # fmt: skip
        if stuck:
            code = "needs_refresh" if all(o["outcome"] == "needs_refresh" for o in stuck) else "invalid"
            first = stuck[0]
            raise Conflict(
                f"changes[{first['index']}] ({first['slug']}): {first.get('message', 'cannot be applied')}; nothing was "
                "written. dry_run_change_request shows every operation; the author makes a new change request on the current pages",
                field="id", hash="", needs_refresh=code == "needs_refresh", changes=stuck,
            )  # fmt: skip
        plans = [p.plan for p in planned if p.plan is not None]
        writing = [p for p in plans if p.ops]
        decided = self._decided(record, "applied", note)
        decided["applied"] = [dict(_entry(c, p)) for c, p in zip(changes, plans, strict=True)]
        decided["risk"] = risk
        decided["resolved"] = sorted(r["index"] for r in resolutions or [])
        slugs = ", ".join(dom.slugs_of(changes))
        trailer = f"\n\nReason: {record['reason']}\nProposed-by: {record['author']}" + (
            f" via {record['client']}" if record["client"] else "") + f"\nApproved-by: {self.principal.name}" + (
            f"\nResolved-by: {self.principal.name} (changes {', '.join(map(str, decided['resolved']))})"
            if decided["resolved"] else "")  # fmt: skip
        record_op = Put(dom.record_path(id), dom.to_bytes(decided), expect=digest)
        try:
            self._land_plans(writing, "apply_change_request", f"{id}: {record['title']}", slugs, [record_op], trailer)
        except (Conflict, NotFound):
            now, _h = self._record(id)
            self._require_open(now)
            raise Conflict(
                "a page it changes changed while it was being applied; nothing was written. Dry-run it again",
                field="id", hash="", needs_refresh=True,
            ) from None  # fmt: skip
        return _decided_result(decided)

    def _resolved(self, record: dict[str, Any], resolutions: list[Resolution]) -> tuple[list[dict[str, Any]], list[str | None]]:
        """The request's operations and base texts with each resolution in place of its operation:
        a save of the resolved text over the hash the approver resolved it against. Raises
        ValidationError naming the resolution's field."""
        changes = [dict(c) for c in record["changes"]]
        bases: list[str | None] = list(record.get("bases") or [None] * len(changes))
        seen: set[int] = set()
        for n, resolution in enumerate(resolutions):
            field = f"resolutions[{n}]"
            index = resolution.get("index")
            if not isinstance(index, int) or not 0 <= index < len(changes) or index in seen:
                raise ValidationError(f"index must be one of the request's operations (0 to {len(changes) - 1}), "
                                      "each resolved once", field=f"{field}.index")  # fmt: skip
            if changes[index]["op"] not in RESOLVABLE:
                raise ValidationError(f"changes[{index}] is a {changes[index]['op']}; only {', '.join(RESOLVABLE)} "
                                      "operations are resolved by text", field=f"{field}.index")  # fmt: skip
            basehash, body = resolution.get("basehash"), resolution.get("body")
            if not isinstance(basehash, str) or not basehash:
                raise ValidationError("is required: the hash of the page the text was resolved against", field=f"{field}.basehash")
            if not isinstance(body, str):
                raise ValidationError("must be the resolved text of the whole page", field=f"{field}.body")
            seen.add(index)
            changes[index] = {"op": "save", "slug": changes[index]["slug"], "basehash": basehash, "body": check_body(body, f"{field}.body")}
            bases[index] = None
        return changes, bases

    def reject_change_request(self, id: str, note: str = "") -> Decided:
        """Mark an open request rejected with ``note``; by whoever may apply it, or its author."""
        self.principal.require("propose")
        record, digest = self._record(id)
        note = dom.check_text(note, "note", dom.MAX_NOTE, required=False)
        self._require_open(record)
        if record["author"] != self.principal.name:
            self._require_decider(record, record.get("risk", "additive"), "reject")
        decided = self._decided(record, "rejected", note)
        change = self._change("reject_change_request", f"{id}: {record['title']}")
        try:
            self._store([Put(dom.record_path(id), dom.to_bytes(decided), expect=digest)], change)
        except Conflict:
            self._require_open(self._record(id)[0])
            raise
        return _decided_result(decided)

    def _decided(self, record: dict[str, Any], state: str, note: str) -> dict[str, Any]:
        # the decision's own id makes two deciders' records differ, so compare-and-set on the record
        # lets exactly one of them land even when both decide the same way in the same second
        return {**record, "state": state, "decided_by": self.principal.name, "decided_client": self.principal.client or "",
                "decided_at": _now(), "note": note, "decision": secrets.token_hex(8)}  # fmt: skip


def _claim_paths(written: dict[str, int], i: int, plan: Plan) -> None:
    """Note the paths ``plan`` (of ``changes[i]``) writes; raises ValidationError when an earlier
    change writes one of them (a page whose links a rename rewrites, changed by another op)."""
    for op in plan.ops:
        if op.path in written and written[op.path] != i:
            raise ValidationError(
                f"writes {op.path} (links rewritten by a rename, or a page's file), which changes[{written[op.path]}] "
                "writes too; make them two change requests", field="slug",
            )  # fmt: skip
    for op in plan.ops:
        written.setdefault(op.path, i)


def _summary(record: dict[str, Any]) -> Summary:
    return {
        "id": record["id"], "title": record["title"], "state": record["state"], "risk": record["risk"],
        "author": record["author"], "client": record.get("client", ""), "created": record["created"],
        "namespaces": list(record["namespaces"]), "slugs": dom.slugs_of(record["changes"]),
        "change_count": len(record["changes"]),
    }  # fmt: skip


def _view(record: dict[str, Any], pages: list[Outcome]) -> RequestView:
    """The request as read_change_request answers it, with ``pages``: each operation's outcome."""
    keep = ("description", "reason", "source", "decided_by", "decided_client", "decided_at", "note")
    return {**_summary(record), **{k: record.get(k, "") for k in keep}, "changes": record["changes"],  # type: ignore[typeddict-item]
            "pages": pages, "applied": record.get("applied", [])}  # fmt: skip


def _decided_result(record: dict[str, Any]) -> Decided:
    return {"id": record["id"], "state": record["state"], "risk": record["risk"], "decided_by": record["decided_by"],
            "decided_at": record["decided_at"], "note": record["note"], "changes": record.get("applied", [])}  # fmt: skip
