"""The admin's people pages: every account, a new one, and one person's access, state and password.

``/_/people`` and ``/_/people/<name>`` do what ``hostcore user`` does, through the same
:class:`~hostcore_accounts.management.Management`, so every check is the plugin's, not the
page's. They are for a signed-in browser session of an admin of the whole wiki (never a bearer
token), every form carries the CSRF token, and they sit in the site's frame (``frame_page``) when
the web plugin gives one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any

from flask import Blueprint, Response, redirect, render_template, request, url_for
from markupsafe import Markup

from hostcore import HTTP_STATUS, SCOPES, HostcoreError, PluginHost, ValidationError, check_csrf, login_redirect, person

from .management import Management

PEOPLE_PATH = "/_/people"


def when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else "never"


def namespaces_from(text: str) -> list[str] | None:
    names = [n for n in text.replace(",", " ").split() if n]
    return names or None


def people_pages(host: PluginHost, store: Any) -> Blueprint:
    """The blueprint of the people pages for ``host``'s accounts ``store``."""
    pages = Blueprint("people", __name__)

    def framed(title: str, template: str, status: int = 200, **context: Any) -> Response:
        main = Markup(render_template(template, scopes=SCOPES, **context))  # Jinja escaped what the template holds
        head = Markup('<link rel="stylesheet" href="{}">').format(url_for("accounts.static", filename="people.css"))
        html = host.pm.hook.frame_page(title=title, main=main, head=head, host=host)
        body = str(html) if html is not None else f"<!doctype html><title>{Markup.escape(title)}</title>{head}{main}"
        return Response(body, status, mimetype="text/html", headers={"Cache-Control": "no-store"})

    def admin_only(view: Callable[..., Any]) -> Callable[..., Any]:
        """Run ``view(manager, ...)`` for an admin's browser session; sign-in or the refusal otherwise."""

        @wraps(view)
        def run(*args: Any, **kwargs: Any) -> Any:
            who = person(host)
            if who is None or request.headers.get("Authorization"):
                return login_redirect()
            try:
                manager = Management(store, who)
                if request.method == "POST":
                    check_csrf(host)
                return view(manager, *args, **kwargs)
            except HostcoreError as exc:
                return framed("Not done", "accounts/refused.html", HTTP_STATUS.get(exc.code, 400), message=str(exc))

        return run

    def listing(manager: Management, status: int = 200, **context: Any) -> Response:
        accounts = manager.accounts()
        for a in accounts:
            a["seen_text"] = when(a["last_sign_in"])
        return framed("People", "accounts/people.html", status, accounts=accounts, **context)

    @pages.route(PEOPLE_PATH, methods=["GET", "POST"])
    @admin_only
    def people(manager: Management) -> Any:
        if request.method == "GET":
            return listing(manager, done=request.args.get("created"))
        form = request.form
        name = form.get("name", "").strip().lower()
        try:
            if form.get("password", "") != form.get("repeat_password", ""):
                raise ValidationError("the two passwords differ; type the same one twice", field="repeat_password")
            manager.create(name, form.get("password", ""), form.getlist("scope"), namespaces_from(form.get("namespaces", "")))
        except ValidationError as exc:
            return listing(manager, 400, error=str(exc), error_field=exc.field, typed=form)
        return redirect(url_for("people.people", created=name), 303)

    def one(manager: Management, name: str, status: int = 200, **context: Any) -> Response:
        record = manager.get(name)
        shown = {**{k: v for k, v in record.items() if k != "hash"}, "has_password": bool(record.get("hash"))}
        return framed(f"Account {name}", "accounts/person.html", status, account=shown, me=person(host),
                      seen_text=when(store.last_sign_in(name)), **context)  # fmt: skip

    @pages.route(PEOPLE_PATH + "/<name>", methods=["GET"])
    @admin_only
    def account(manager: Management, name: str) -> Any:
        return one(manager, name, done=request.args.get("done"))

    def act(manager: Management, name: str, change: Callable[[], str]) -> Any:
        try:
            done = change()
        except ValidationError as exc:
            return one(manager, name, 400, error=str(exc), error_field=exc.field)
        return redirect(url_for("people.account", name=name, done=done), 303)

    @pages.route(PEOPLE_PATH + "/<name>/access", methods=["POST"])
    @admin_only
    def access(manager: Management, name: str) -> Any:
        def change() -> str:
            manager.set_access(name, request.form.getlist("scope"), namespaces_from(request.form.get("namespaces", "")))
            return "access"

        return act(manager, name, change)

    @pages.route(PEOPLE_PATH + "/<name>/state", methods=["POST"])
    @admin_only
    def state(manager: Management, name: str) -> Any:
        def change() -> str:
            disabled = request.form.get("disabled") == "1"
            manager.set_disabled(name, disabled)
            return "disabled" if disabled else "enabled"

        return act(manager, name, change)

    @pages.route(PEOPLE_PATH + "/<name>/password", methods=["POST"])
    @admin_only
    def password(manager: Management, name: str) -> Any:
        def change() -> str:
            new = request.form.get("password", "")
            if new != request.form.get("repeat_password", ""):
                raise ValidationError("the two passwords differ; type the same one twice", field="repeat_password")
            manager.reset_password(name, new)
            return "password"

        return act(manager, name, change)

    return pages
