"""A browser session on a Flask test client, as a sign-in plugin's :func:`hostcore.sign_in` makes one."""

from __future__ import annotations

from typing import Any

from flask import session

from hostcore.browser.sessions import sign_in


def sign_in_client(client: Any, name: str) -> str:
    """Sign the person ``name`` in on the test ``client`` (a live session record in the app's
    shared state, and its cookie on the client); returns the session's CSRF token."""
    app = client.application
    with app.test_request_context():
        sign_in(name, app.extensions["hostcore"])
        values = dict(session)
    with client.session_transaction() as kept:
        kept.clear()
        kept.update(values)
    return str(values["csrf"])
