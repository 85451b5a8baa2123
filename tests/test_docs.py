"""Every hook is documented (one heading each) and exercised by a test; every tool is documented."""

import re
from pathlib import Path

import pluggy

from hostcore.seams import hookspecs
from hostcore.app import build_host
from hostcore.cli.commands import EMBEDDED_PLUGINS, EMBEDDED_SEARCH, EMBEDDED_STORAGE
from hostcore.cli.reference import render

ROOT = Path(__file__).resolve().parent.parent


def hook_names() -> list[str]:
    marker = pluggy.HookspecMarker("hostcore")
    return sorted(
        name for name, fn in vars(hookspecs).items() if callable(fn) and hasattr(fn, marker.project_name + "_spec")
    )


def test_every_hook_has_a_heading():
    doc = (ROOT / "docs" / "plugin_hooks.md").read_text()
    headings = set(re.findall(r"^## (\w+)$", doc, re.M))
    assert hook_names(), "no hookspecs found"
    assert set(hook_names()) <= headings, set(hook_names()) - headings


def test_every_hook_is_exercised_by_a_test():
    sources = "\n".join(p.read_text() for p in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("plugins/*/tests/*.py")])
    untested = [name for name in hook_names() if f"def {name}(" not in sources]
    assert not untested, f"hooks no test implements: {untested}"


def test_tool_reference_is_generated_from_the_tools(tmp_path):
    host = build_host(tmp_path, {"PLUGINS": EMBEDDED_PLUGINS, "STORAGE": EMBEDDED_STORAGE, "SEARCH": EMBEDDED_SEARCH}, start=False)
    generated = render(host.tools.values())
    assert (ROOT / "docs" / "tools.md").read_text() == generated, "regenerate: hostcore tools --markdown > docs/tools.md"
    for name in host.tools:
        assert f"\n## {name}\n" in generated
