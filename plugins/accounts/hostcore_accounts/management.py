"""Managing people's accounts: what ``hostcore user`` and the admin's people pages both do.

Every check lives here, once, for both: who may manage accounts (an admin of the whole wiki; the
command line acts as ``hostcore.SYSTEM``), what scopes and namespaces are valid, that the last
active admin of the whole wiki is never disabled or narrowed (nobody could manage accounts in the
browser then), and that disabling an account or setting its password ends its sessions at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hostcore import SCOPES, Forbidden, NotFound, Principal, ValidationError, check_namespace, end_sessions

if TYPE_CHECKING:
    from . import Accounts


def check_access(scopes: list[str], namespaces: list[str] | None) -> tuple[list[str], list[str] | None]:
    """(scopes, namespaces) sorted and without repeats. Raises ValidationError naming the field."""
    bad = [s for s in scopes if s not in SCOPES]
    if not scopes or bad:
        raise ValidationError(f"use one or more of {', '.join(SCOPES)} (got {', '.join(bad) or 'none'})", field="scope")
    for ns in namespaces or []:
        check_namespace(ns, "namespace")
    return sorted(set(scopes)), sorted(set(namespaces)) if namespaces else None


def whole_admin(record: dict[str, Any]) -> bool:
    """An active account with the admin scope over every namespace."""
    return "admin" in record["scopes"] and not record.get("namespaces") and not record.get("disabled")


class Management:
    """The accounts as ``by`` may manage them. Raises InsufficientScope (no admin scope) or
    Forbidden (an admin of some namespaces only) on creation: only an admin of the whole wiki
    manages people."""

    def __init__(self, store: Accounts, by: Principal) -> None:
        by.require("admin")
        if by.namespaces is not None:
            raise Forbidden("only an admin of every namespace manages accounts; yours is limited to some")
        self.store = store
        self.by = by

    def accounts(self) -> list[dict[str, Any]]:
        """Every account (without its password hash), by name, with ``last_sign_in``."""
        out = []
        for record in sorted(self.store.all(), key=lambda r: r["name"]):
            shown = {k: v for k, v in record.items() if k != "hash"}
            shown["has_password"] = bool(record.get("hash"))
            shown["last_sign_in"] = self.store.last_sign_in(record["name"])
            out.append(shown)
        return out

    def get(self, name: str) -> dict[str, Any]:
        record = self.store.get(name)
        if record is None:
            raise NotFound(f"no account named {name!r}; `hostcore user list` shows them", field="name")
        return record

    def create(self, name: str, password: str, scopes: list[str], namespaces: list[str] | None = None) -> dict[str, Any]:
        scopes, namespaces = check_access(scopes, namespaces)
        return self.store.create(name, password, scopes, namespaces)

    def _keeps_an_admin(self, name: str, after: dict[str, Any]) -> None:
        """Refuse a change after which no active account administers the whole wiki."""
        if whole_admin(after):
            return
        others = [r for r in self.store.all() if r["name"] != name and whole_admin(r)]
        if not others and whole_admin(self.get(name)):
            raise ValidationError(
                f"{name} is the last active admin of every namespace; make another account one first", field="name"
            )

    def set_access(self, name: str, scopes: list[str], namespaces: list[str] | None) -> dict[str, Any]:
        """Change an account's scopes and namespaces; its sessions and tokens follow at their next request."""
        record = self.get(name)
        scopes, namespaces = check_access(scopes, namespaces)
        self._keeps_an_admin(name, {**record, "scopes": scopes, "namespaces": namespaces})
        return self.store.update(name, scopes=scopes, namespaces=namespaces)

    def set_disabled(self, name: str, disabled: bool) -> int:
        """Disable (ending every session of the person, on every worker) or enable an account;
        returns how many sessions ended."""
        record = self.get(name)
        if disabled:
            self._keeps_an_admin(name, {**record, "disabled": True})
        self.store.update(name, disabled=disabled)
        return end_sessions(self.store.host, name) if disabled else 0

    def reset_password(self, name: str, password: str) -> int:
        """Set an account's password; every session of the person ends. Returns how many."""
        record = self.get(name)
        if record.get("upstream") and not record.get("hash"):
            raise ValidationError(f"{name} signs in through {record['upstream'].get('issuer', 'a provider')}; it has no password here",
                                  field="name")  # fmt: skip
        return self.store.set_password(name, password)

