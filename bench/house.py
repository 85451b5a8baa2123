"""The house in figures: the largest modules and functions, and the import graph between
hostcore's layers and from the plugins, read from the sources (an AST walk, as
``tests/test_layers.py`` does; nothing is imported or run).

    .venv/bin/python bench/house.py            # the 15 largest of each, and the graph
    .venv/bin/python bench/house.py --most 40

Imports under ``if TYPE_CHECKING:`` are annotations only and are left out, as the layer test
leaves them out. A function's size is its lines from ``def`` to its last statement, docstring
included; a method is named ``Class.method``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.test_layers import runtime_imports  # noqa: E402  (the layer test's own walk)


def sources() -> list[Path]:
    """hostcore's modules and the plugins' (their tests left out)."""
    found = sorted((ROOT / "hostcore").rglob("*.py"))
    found += sorted(p for p in (ROOT / "plugins").glob("*/hostcore_*/**/*.py"))
    return found


def unit(path: Path) -> str:
    """The layer (``hostcore.service``) or plugin (``plugin:web``) a file belongs to."""
    parts = path.relative_to(ROOT).parts
    if parts[0] == "plugins":  # plugins/<dir>/hostcore_<name>/...: named as its package is
        return f"plugin:{parts[2][len('hostcore_') :]}"
    if len(parts) == 2:  # hostcore/app.py, hostcore/errors.py, hostcore/__init__.py
        return "hostcore" if parts[1] == "__init__.py" else f"hostcore.{parts[1][:-3]}"
    return f"hostcore.{parts[1]}"


def package_of(path: Path) -> str:
    """The dotted package holding ``path`` (``hostcore.service``, ``hostcore_web``), for relative imports."""
    parts = path.relative_to(ROOT).parts
    return ".".join(parts[2:-1] if parts[0] == "plugins" else parts[:-1])


def target(name: str) -> str | None:
    """The unit an imported module name belongs to, or None outside hostcore and its plugins."""
    parts = name.split(".")
    if parts[0] == "hostcore":
        return "hostcore" if len(parts) == 1 else f"hostcore.{parts[1]}"
    if parts[0].startswith("hostcore_"):
        return f"plugin:{parts[0][len('hostcore_') :]}"
    return None


def functions(tree: ast.Module) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                end = child.end_lineno or child.lineno
                found.append((prefix + child.name, end - child.lineno + 1))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(tree, "")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--most", type=int, default=15, help="how many modules and functions to list")
    most = parser.parse_args().most
    modules: list[tuple[int, str]] = []
    funcs: list[tuple[int, str]] = []
    edges: Counter[tuple[str, str]] = Counter()
    for path in sources():
        text = path.read_text()
        tree = ast.parse(text)
        name = str(path.relative_to(ROOT))
        modules.append((len(text.splitlines()), name))
        funcs += [(lines, f"{name}:{qualified}") for qualified, lines in functions(tree)]
        here = unit(path)
        for _line, imported in runtime_imports(path, package_of(path)):
            there = target(imported)
            if there is not None and there != here:
                edges[(here, there)] += 1
    sizes = sorted(n for n, _ in modules)
    print(f"{len(modules)} modules, {sum(sizes)} lines; median {sizes[len(sizes) // 2]}, largest {sizes[-1]}")
    print(f"\nthe {most} largest modules (lines)")
    for lines, name in sorted(modules, reverse=True)[:most]:
        print(f"  {lines:6}  {name}")
    lengths = sorted(n for n, _ in funcs)
    print(f"\n{len(funcs)} functions; median {lengths[len(lengths) // 2]} lines, "
          f"{sum(1 for n in lengths if n > 60)} over 60, largest {lengths[-1]}")  # fmt: skip
    print(f"\nthe {most} largest functions (lines)")
    for lines, name in sorted(funcs, reverse=True)[:most]:
        print(f"  {lines:6}  {name}")
    print("\nimport graph (run-time imports between units; count of import statements)")
    for source in sorted({s for s, _ in edges}):
        targets = ", ".join(f"{t} {n}" for (s, t), n in sorted(edges.items()) if s == source)
        print(f"  {source} -> {targets}")


if __name__ == "__main__":
    main()
