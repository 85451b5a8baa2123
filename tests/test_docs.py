"""Every hook is documented (one heading each, with its exact signature) and has a test named after
it (``test_hook_<name>``), the way datasette's ``tests/test_docs.py`` holds its hooks to their docs;
every tool is documented."""

import inspect
import re
from pathlib import Path

import pluggy

from hostcore.app import build_host
from hostcore.cli.commands import EMBEDDED_PLUGINS, EMBEDDED_SEARCH, EMBEDDED_STORAGE
from hostcore.cli.reference import render
from hostcore.seams import hookspecs

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


def documented_signatures() -> dict[str, list[str]]:
    """Hook name -> the arguments its docs heading shows first: ``## name`` then `` `name(a, b)` ``."""
    doc = (ROOT / "docs" / "plugin_hooks.md").read_text()
    found = {}
    for name, arguments in re.findall(r"^## (\w+)\n\n`(?:\1)\(([^)]*)\)", doc, re.M):
        found[name] = [a.strip() for a in arguments.split(",") if a.strip()]
    return found


def test_documented_signatures_match_the_hookspecs():
    documented = documented_signatures()
    for name in hook_names():
        spec = list(inspect.signature(getattr(hookspecs, name)).parameters)
        assert documented.get(name) == spec, f"docs/plugin_hooks.md shows {name}({documented.get(name)}), the spec takes {spec}"


def test_every_hook_has_a_test_named_after_it():
    sources = "\n".join(p.read_text() for p in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("plugins/*/tests/*.py")])
    untested = [name for name in hook_names() if not re.search(rf"^def test_hook_{name}\(", sources, re.M)]
    assert not untested, f"write a test_hook_<name> for: {untested}"


def test_tool_reference_is_generated_from_the_tools(tmp_path):
    host = build_host(tmp_path, {"PLUGINS": EMBEDDED_PLUGINS, "STORAGE": EMBEDDED_STORAGE, "SEARCH": EMBEDDED_SEARCH}, start=False)
    generated = render(host.tools.values())
    assert (ROOT / "docs" / "tools.md").read_text() == generated, "regenerate: hostcore tools --markdown > docs/tools.md"
    for name in host.tools:
        assert f"\n## {name}\n" in generated
