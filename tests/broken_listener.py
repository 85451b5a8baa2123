"""A plugin whose ``page_saved`` listener always fails; named in PLUGINS as ``tests.broken_listener``."""

from hostcore import hookimpl


@hookimpl
def page_saved(page):
    raise RuntimeError(f"broken listener saw {page.slug}")
