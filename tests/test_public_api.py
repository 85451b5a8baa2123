"""The public API (``hostcore/__init__.py``) imports each name when it is first asked for, so
``import hostcore``, ``hostcore --help`` and the extraction subprocess load neither Flask, pydantic,
the MCP SDK nor numpy; and every name of ``__all__`` still imports, for plugins and type checkers alike."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hostcore
from hostcore import testing

HEAVY = ("flask", "werkzeug", "pydantic", "mcp", "mcp_types", "numpy", "limits")
ROOT = Path(__file__).resolve().parent.parent


def loaded_after(code: str, cwd: Path, stdin: bytes = b"") -> list[str]:
    """The heavy top-level packages a fresh interpreter has loaded after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})), file=sys.stderr)"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=cwd, input=stdin, capture_output=True, timeout=120)
    modules = json.loads(proc.stderr.decode().strip().splitlines()[-1])
    return [m for m in HEAVY if m in modules]


def test_every_public_name_imports():
    for name in hostcore.__all__:
        assert getattr(hostcore, name) is not None, name
    namespace: dict = {}
    exec(f"from hostcore import {', '.join(hostcore.__all__)}", namespace)
    assert set(hostcore.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        hostcore.nothing_here  # noqa: B018


def test_type_checkers_see_the_names_the_module_serves():
    """The ``if TYPE_CHECKING:`` imports (what mypy reads) and the table ``__getattr__`` serves agree,
    and together they are ``__all__``."""
    tree = ast.parse((ROOT / "hostcore" / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    typed = {alias.name: node.module for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert typed == hostcore._MODULE_OF
    assert set(typed) | {"__version__", "create_app"} == set(hostcore.__all__)


def test_import_hostcore_loads_nothing_heavy(tmp_path):
    assert loaded_after("import hostcore", tmp_path) == []
    assert loaded_after("from hostcore import hookimpl, Extractor, ExtractionFailed, NotFound", tmp_path) == []


@pytest.mark.serve
def test_hostcore_help_loads_nothing_heavy(tmp_path):
    run_help = "import sys\nsys.argv = ['hostcore', '--help']\nfrom hostcore.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass"
    assert loaded_after(run_help, tmp_path) == []  # no instance here
    instance = tmp_path / "instance"  # an instance whose plugins add commands: still only what lists them
    instance.mkdir()
    (instance / "hostcore.toml").write_text('PLUGINS = ["fs", "tokens"]\nSTORAGE = "fs"\n')
    assert loaded_after(run_help, tmp_path) == []
    shown = testing.cli(instance, "--help").stdout
    assert "token" in shown and "serve" in shown, shown


def test_the_extraction_subprocess_loads_nothing_heavy(tmp_path):
    child = ("import runpy, sys\nsys.argv = ['extract_child', 'hostcore.indexes.text_extractor:PlainTextExtractor', "
             "'text/plain', str(2**30), '5']\ntry:\n    runpy.run_module('hostcore.indexes.extract_child', run_name='__main__')\n"
             "except SystemExit:\n    pass")  # fmt: skip
    assert loaded_after(child, tmp_path, stdin=b"some text") == []
