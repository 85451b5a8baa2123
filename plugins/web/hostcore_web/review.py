"""Reviewing change requests in the browser: the open ones per namespace (``/_/review``), and one
request's page (``/_/review/<id>``) with each page's diff, inline or side by side, changed words
marked (:mod:`hostcore_web.diffs`), its title, reason, source, risk and author; approve or reject
with a note.

The service decides everything: which requests the person sees (every namespace one touches must
be theirs), who may apply or reject (the page only leaves out the buttons of those who may not),
and what applying does. A page whose base drifted is rebased when the rebasing rules allow; else
the page shows both sides (the page now, the text proposed) and a text area, and approving saves
the resolved text over the hash the person resolved it against (``resolutions`` of
``apply_change_request``): never applied blind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flask import abort, redirect, request, url_for

from hostcore import Conflict, NotFound, Principal, ValidationError, check_csrf

from . import diffs
from .access import SignInFirst, host, viewer, web_principal
from .views import bp, page

LISTED = 100  # open requests asked for per call of list_change_requests


@dataclass
class Shown:
    """One operation of the request as the page draws it."""

    change: Mapping[str, Any]
    diff: diffs.Diff
    drifted: bool
    text: str  # what the resolution's text area starts with


def _person() -> Principal:
    person = viewer()
    if person is None:
        raise SignInFirst()
    return web_principal(person)


def _view() -> str:
    return "split" if request.args.get("view") == "split" else "inline"


@bp.route("/_/review")
def review_list() -> Any:
    """The open change requests the person may see, grouped by the namespaces they touch (one
    touching two namespaces is listed under each); ``?namespace=`` keeps one."""
    person = _person()
    wiki = host().wiki(person)
    chosen = request.args.get("namespace") or None
    requests: list[Mapping[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        listed = wiki.list_change_requests("open", chosen, None, offset, LISTED)
        requests += listed["change_requests"]
        offset = listed["next_offset"]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in requests:
        for namespace in r["namespaces"]:
            if chosen is None or namespace == chosen:
                groups.setdefault(namespace, []).append(r)
    return page("review_list.html", person=person, groups=sorted(groups.items()), chosen=chosen, total=len(requests),
                title="Change requests")  # fmt: skip


def _shown(change: Mapping[str, Any]) -> Shown:
    slug = change["slug"]
    if change["outcome"] == "needs_refresh" and change["resolvable"]:
        proposed = change["proposed"] or change["theirs"]
        return Shown(change, diffs.diff(change["theirs"], proposed, f"{slug} now", "proposed"), True, proposed)
    if change["op"] in ("move", "rename"):
        return Shown(change, diffs.Diff(), False, "")
    return Shown(change, diffs.diff(change["before"], change["after"], f"a/{slug}", f"b/{slug}"), False, "")


def _review_page(request_id: str, person: Principal, error: str = "", status: int = 200) -> Any:
    try:
        review = host().wiki(person).review_change_request(request_id)
    except (NotFound, ValidationError):
        abort(404)
    shown = [_shown(c) for c in review["changes"]]
    html = page("review.html", person=person, review=review, cr=review["request"], shown=shown, view=_view(),
                error=error, title=review["request"]["title"])  # fmt: skip
    return html, status


@bp.route("/_/review/<request_id>")
def review_request(request_id: str) -> Any:
    return _review_page(request_id, _person())


@bp.route("/_/review/<request_id>/apply", methods=["POST"])
def review_apply(request_id: str) -> Any:
    """Apply the request, with the texts the person resolved for drifted pages."""
    check_csrf()
    person = _person()
    form = request.form
    resolutions = [
        {"index": int(key.removeprefix("resolved-")), "basehash": form.get(f"basehash-{key.removeprefix('resolved-')}", ""),
         "body": value.replace("\r\n", "\n")}
        for key, value in form.items() if key.startswith("resolved-") and key.removeprefix("resolved-").isdigit()
    ]  # fmt: skip
    try:
        host().wiki(person).apply_change_request(request_id, form.get("note", ""), resolutions)  # type: ignore[arg-type]
    except (Conflict, ValidationError) as exc:
        return _review_page(request_id, person, f"Not applied: {exc}", 409 if isinstance(exc, Conflict) else 400)
    return redirect(url_for("web.review_request", request_id=request_id))


@bp.route("/_/review/<request_id>/reject", methods=["POST"])
def review_reject(request_id: str) -> Any:
    check_csrf()
    person = _person()
    try:
        host().wiki(person).reject_change_request(request_id, request.form.get("note", ""))
    except (Conflict, ValidationError) as exc:
        return _review_page(request_id, person, f"Not rejected: {exc}", 409 if isinstance(exc, Conflict) else 400)
    return redirect(url_for("web.review_request", request_id=request_id))

