"""Argument types the tool modules share: their descriptions and limits reach ``tools/list``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Slug = Annotated[
    str,
    Field(description="page identifier in namespace/page form, e.g. notes/my-page; no segment may start with _ or ."),
]
NamespaceName = Annotated[
    str, Field(description="namespace name, e.g. notes; not a page slug, and it may not start with _ or .")
]
Offset = Annotated[int, Field(ge=0, description="first character of the body to return")]
CharLimit = Annotated[int, Field(ge=1, le=100_000, description="maximum body characters to return")]
