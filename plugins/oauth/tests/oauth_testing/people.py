"""A stand-in sign-in plugin for the OAuth tests: two people, and a page that signs one in.

``ann`` may do anything everywhere; ``tim`` may write only in the ``team`` namespace. Listed in
PLUGINS by its module path (``oauth_testing.people``) with the tests folder on PYTHONPATH.
"""

from flask import redirect, request

from hostcore import Principal, hookimpl, safe_next, sign_in

PEOPLE = {
    "ann": Principal("ann", frozenset({"admin"})),
    "tim": Principal("tim", frozenset({"write"}), frozenset({"team"})),
}
DISABLED: set[str] = set()


@hookimpl
def find_person(name, host):
    return None if name in DISABLED else PEOPLE.get(name)


@hookimpl
def register_routes(app, host):
    @app.route("/_/test/sign-in/<name>")
    def test_sign_in(name):
        sign_in(name)
        return redirect(safe_next(request.args.get("next"), "/_/apps"))
