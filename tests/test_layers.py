"""The layers hold: each part of hostcore imports only the parts below it, and plugins only the
public API and the plugins their ``setup.cfg`` declares.

An AST walk over every module, like Hold My Docs' ``imports_test.go``: no import tool, no
runtime import. Imports under ``if TYPE_CHECKING:`` are annotations only and are not counted,
so a layer may name a higher layer's type without depending on it.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

import pytest

from hostcore import errors

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "hostcore"

# Lowest first. A module may import its own layer and any layer listed before it.
LAYERS: list[tuple[str, ...]] = [
    ("hostcore.errors",),
    ("hostcore.domain",),
    ("hostcore.seams",),
    ("hostcore.indexes",),
    ("hostcore.host",),
    ("hostcore.service",),
    ("hostcore.tools",),
    ("hostcore.mcp",),
    ("hostcore.http",),
    ("hostcore.browser",),
    ("hostcore.app",),
    ("hostcore.cli",),
    ("hostcore.testing",),
]
PUBLIC_API = "hostcore"  # hostcore/__init__.py: what plugins may import
PLUGIN_MAY_ALSO_IMPORT = ("hostcore.testing",)  # in their tests: the conformance suites

# What each layer must never import, whatever its rank: the service layer knows no web framework
# and no protocol, so every adapter can call it.
FORBIDDEN_THIRD_PARTY = {
    "hostcore.errors": ("flask", "werkzeug", "mcp", "mcp_types", "click", "pluggy"),
    "hostcore.domain": ("flask", "werkzeug", "mcp", "mcp_types", "click", "pluggy"),
    "hostcore.service": ("flask", "werkzeug", "mcp", "mcp_types", "click", "gunicorn", "anyio"),
    "hostcore.tools": ("flask", "werkzeug", "mcp", "mcp_types", "click"),
    "hostcore.indexes": ("flask", "werkzeug", "mcp", "mcp_types", "click"),
}


# The one error family: every HostcoreError is defined in hostcore/errors.py, nowhere else.
ERROR_FAMILY = {name for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, errors.HostcoreError)}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def known_modules() -> set[str]:
    return {module_name(path, ROOT) for path in PACKAGE.rglob("*.py")}


def runtime_imports(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module) of each import executed at run time; relative ones resolved.

    ``from a.b import c`` counts as importing ``a.b.c`` when that is a module, else ``a.b``.
    """
    modules = known_modules()
    tree = ast.parse(path.read_text(), str(path))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
            found.extend((node.lineno, t) for t in sorted(targets))
    return found


def rank(module: str) -> int | None:
    for i, layer in enumerate(LAYERS):
        if any(module == prefix or module.startswith(prefix + ".") for prefix in layer):
            return i
    return None


def layer_of(module: str) -> str:
    for layer in LAYERS:
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                return prefix
    return module


def core_modules() -> list[tuple[Path, str]]:
    return [(path, module_name(path, ROOT)) for path in sorted(PACKAGE.rglob("*.py"))]


def errors_defined_outside(path: Path, module: str) -> list[str]:
    """An error class of the family defined in ``module``, which is not hostcore.errors."""
    if module == "hostcore.errors":
        return []
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.name} is an error defined outside hostcore/errors.py; move it there"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base).rpartition(".")[2] in ERROR_FAMILY for base in node.bases)
    ]


def core_violations() -> list[str]:
    out = []
    for path, module in core_modules():
        out += errors_defined_outside(path, module)
        if module == PUBLIC_API:
            continue  # the public surface re-exports from every layer below the adapters
        own = rank(module)
        assert own is not None, f"{module} is in no layer: add its folder to LAYERS in {__file__}"
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for line, target in runtime_imports(path, package):
            where = f"{path.relative_to(ROOT)}:{line}"
            if target == PUBLIC_API:
                out.append(f"{where}: {module} imports the public surface `hostcore`; import the module itself")
                continue
            if target.startswith("hostcore."):
                theirs = rank(target)
                if theirs is not None and theirs > own:
                    out.append(f"{where}: {module} ({layer_of(module)}) imports {target} ({layer_of(target)}), a higher layer")
            top = target.split(".")[0]
            for forbidden in FORBIDDEN_THIRD_PARTY.get(layer_of(module), ()):
                if top == forbidden:
                    out.append(f"{where}: {module} imports {target}; {layer_of(module)} must not depend on {forbidden}")
    return out


def test_each_layer_imports_only_layers_below_it():
    assert core_violations() == []


def test_every_core_module_is_in_a_layer():
    assert [module for _, module in core_modules() if module != PUBLIC_API and rank(module) is None] == []


def distribution_names(requirements: str) -> set[str]:
    """The distributions a ``setup.cfg`` requirement list names, normalised (PEP 503)."""
    names = (re.match(r"[A-Za-z0-9._-]+", line.split("#")[0].strip()) for line in requirements.splitlines())
    return {re.sub(r"[-_.]+", "-", found.group()).lower() for found in names if found}


def plugin_distributions(root: Path) -> dict[Path, tuple[str, set[str], set[str], set[str]]]:
    """Each plugin folder -> (its distribution, its packages, what install_requires declares,
    and what its tests may also use: the ``test`` extra)."""
    out = {}
    for cfg_path in sorted((root / "plugins").glob("*/setup.cfg")):
        cfg = configparser.ConfigParser()
        cfg.read(cfg_path)
        packages = {p.strip() for p in cfg.get("options", "packages", fallback="").replace(",", " ").split()}
        required = distribution_names(cfg.get("options", "install_requires", fallback=""))
        tests = distribution_names(cfg.get("options.extras_require", "test", fallback=""))
        out[cfg_path.parent] = (distribution_names(cfg.get("metadata", "name"))).pop(), packages, required, tests
    return out


def plugin_violations(root: Path) -> list[str]:
    """Imports of hostcore beyond its public API (tests: and ``hostcore.testing``), and of another
    plugin whose distribution the importing plugin's setup.cfg does not declare."""
    plugins = plugin_distributions(root)
    owner = {package: dist for dist, packages, _, _ in plugins.values() for package in packages}
    bad = []
    for folder, (_dist, own, required, tests) in plugins.items():
        for path in sorted(p for p in folder.rglob("*.py") if ".egg-info" not in p.parts):
            in_tests = "tests" in path.relative_to(folder).parts
            for line, target in runtime_imports(path, ""):
                top, where = target.split(".")[0], f"{path.relative_to(root)}:{line}"
                if top == PUBLIC_API and target != PUBLIC_API:
                    if not (in_tests and any(target == m or target.startswith(m + ".") for m in PLUGIN_MAY_ALSO_IMPORT)):
                        bad.append(f"{where}: imports {target}; use `from hostcore import ...`")
                elif top in owner and top not in own and owner[top] not in (required | tests if in_tests else required):
                    declare = "install_requires (or, for its tests alone, the test extra)" if in_tests else "install_requires"
                    bad.append(
                        f"{where}: imports {top}, of {owner[top]}, which {folder.relative_to(root)}/setup.cfg does not declare; "
                        f"add it to {declare}, or use the plugin's service: host.service(KEY)"
                    )
    return bad


def test_plugins_import_only_the_public_api_and_what_they_declare():
    assert plugin_violations(ROOT) == []


def import_graph() -> dict[str, set[str]]:
    modules = {module for _, module in core_modules()}
    graph: dict[str, set[str]] = {}
    for path, module in core_modules():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        graph[module] = {t for _, t in runtime_imports(path, package) if t in modules and t != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_no_import_circles():
    graph = import_graph()
    # the public surface is imported by plugins, never by the core itself (checked above)
    graph.pop(PUBLIC_API, None)
    assert find_cycle(graph) == []


# --- the checker itself can fail ------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("hostcore.service.bad", "from hostcore.mcp.endpoint import McpEndpoint\n", "a higher layer"),
        ("hostcore.service.bad", "import flask\n", "must not depend on flask"),
        ("hostcore.domain.bad", "from hostcore.seams.storage import Put\n", "a higher layer"),
        ("hostcore.tools.bad", "from hostcore import tool\n", "imports the public surface"),
        ("hostcore.host.bad", "from hostcore.errors import NotFound\nclass Gone(NotFound):\n    pass\n", "outside hostcore/errors.py"),
        ("hostcore.service.ok", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hostcore.host.host import Host\n", None),
    ],
)
def test_checker_catches_violations(tmp_path, monkeypatch, module, source, expected):
    root = tmp_path
    path = root.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(parents=True)
    path.write_text(source)
    monkeypatch.setattr(__import__(__name__), "ROOT", root, raising=False)
    monkeypatch.setitem(globals(), "ROOT", root)
    monkeypatch.setitem(globals(), "PACKAGE", root / "hostcore")
    found = core_violations()
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


SETUP = """[metadata]
name = hostcore-{name}
[options]
packages = hostcore_{name}
install_requires =
    hostcore
{requires}[options.extras_require]
test =
{tests}"""


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        ("hostcore_b/__init__.py", "from hostcore import hookimpl\nfrom hostcore_a import KEY\n", None),
        ("hostcore_c/__init__.py", "from hostcore_a import KEY\n", "imports hostcore_a, of hostcore-a, which plugins/c/setup.cfg"),
        ("hostcore_c/__init__.py", "import hostcore.host.host\n", "imports hostcore.host.host; use `from hostcore import"),
        ("hostcore_c/__init__.py", "from . import views\nfrom hostcore_c.views import page\n", None),
        ("tests/test_c.py", "from hostcore.testing import StorageConformance\nfrom hostcore_b import x\n", None),
        ("tests/test_c.py", "from hostcore_a import x\n", "add it to install_requires (or, for its tests alone, the test extra)"),
        ("tests/test_c.py", "from hostcore.host import host\n", "use `from hostcore import"),
    ],
)
def test_plugin_checker_catches_undeclared_imports(tmp_path, path, source, expected):
    for name, requires, tests in (("a", "", ""), ("b", "    hostcore-a\n", ""), ("c", "", "    hostcore-b\n")):
        folder = tmp_path / "plugins" / name
        (folder / f"hostcore_{name}").mkdir(parents=True)
        (folder / "setup.cfg").write_text(SETUP.format(name=name, requires=requires, tests=tests))
    file = tmp_path / "plugins" / ("b" if path.startswith("hostcore_b") else "c") / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(source)
    found = plugin_violations(tmp_path)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


def test_cycle_finder_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []
