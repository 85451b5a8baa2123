"""One family of errors, raised anywhere and translated once, at the adapter.

Every error carries a stable ``code`` (the MCP tool error code), an optional ``field``
(the argument at fault) and optional structured ``data`` (for conflicts: the current hash).
The message says what went wrong and what to do next.
"""

from __future__ import annotations

from typing import Any


class HostcoreError(Exception):
    """Base of every error hostcore raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, field: str | None = None, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.data = data

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message

    def to_dict(self) -> dict[str, Any]:
        """The structured form sent to clients: code, message, field and any data."""
        out: dict[str, Any] = {"code": self.code, "message": str(self)}
        if self.field:
            out["field"] = self.field
        out.update(self.data)
        return out


HTTP_STATUS = {
    "validation_error": 400, "unauthorized": 401, "not_found": 404, "forbidden": 403, "insufficient_scope": 403,
    "conflict": 409, "too_large": 413, "rate_limited": 429, "unavailable": 503, "internal_error": 500, "no_history": 501,
}  # fmt: skip
"""The HTTP status of each error code, for adapters that answer over plain HTTP (not tools/call)."""


class ValidationError(HostcoreError):
    code = "validation_error"


class NotFound(HostcoreError):
    code = "not_found"


class Conflict(HostcoreError):
    """A compare-and-set failed. ``data['hash']`` is the current hash ("" when gone)."""

    code = "conflict"


class Unauthorized(HostcoreError):
    """Credentials are missing or invalid: the transport answers 401 with WWW-Authenticate."""

    code = "unauthorized"


class InsufficientScope(HostcoreError):
    code = "insufficient_scope"


class Forbidden(HostcoreError):
    code = "forbidden"


class TooLarge(HostcoreError):
    code = "too_large"
class RateLimited(HostcoreError):
    """Over a rate limit; ``data['retry_after']`` is the whole seconds to wait."""

    code = "rate_limited"


class Unavailable(HostcoreError):
    code = "unavailable"


class NoHistory(HostcoreError):
    """The storage backend keeps no record of past versions, so what needs them (blame) cannot be answered."""

    code = "no_history"


class DiskFull(Unavailable):
    """A write refused because the disk holding the wiki (or its indexes) is full. Nothing changed."""

    def __init__(self, message: str = "") -> None:
        super().__init__(
            message
            or "no space left on the wiki's disk; nothing was changed. Reading and searching go on; ask the "
            "wiki's operator to free space on that disk, then try again"
        )


class ExtractionFailed(HostcoreError):
    """An attachment could not be read as text; the message says why (shown with the attachment)."""

    code = "unavailable"


class TicketRefused(HostcoreError):
    """An upload URL that cannot be used (unknown, expired or used); ``status`` is the HTTP status."""

    code = "not_found"

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class InternalError(HostcoreError):
    """An unexpected failure; the message carries a reference to the server log entry."""

    code = "internal_error"


class ConfigError(HostcoreError):
    """The configuration is wrong; the message names the key and the fix."""

    code = "config_error"


class StartupError(ConfigError):
    """A plugin or the host cannot start; raised from ``startup`` hooks and ``create_app``."""

    code = "startup_error"
