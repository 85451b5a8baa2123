"""Every hook is documented (one heading each, with its exact signature) and has a test named after
it (``test_hook_<name>``), the way datasette's ``tests/test_docs.py`` holds its hooks to their docs;
every tool is documented; the examples of docs/writing_plugins.md run as written."""

import ast
import inspect
import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pluggy
import pytest

from hostcore import SYSTEM, ConfigError, NotFound, Unavailable
from hostcore.app import build_host
from hostcore.cli.commands import EMBEDDED_EMBEDDER, EMBEDDED_PLUGINS, EMBEDDED_SEARCH, EMBEDDED_STORAGE
from hostcore.cli.reference import render
from hostcore.seams import hookspecs
from hostcore.testing.documents import png_image

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
    embedded = {"PLUGINS": EMBEDDED_PLUGINS, "STORAGE": EMBEDDED_STORAGE, "SEARCH": EMBEDDED_SEARCH, "EMBEDDER": EMBEDDED_EMBEDDER}
    host = build_host(tmp_path, embedded, start=False)
    generated = render(host.tools.values(), host.resources.values(), host.prompts.values())
    assert (ROOT / "docs" / "tools.md").read_text() == generated, "regenerate: hostcore tools --markdown > docs/tools.md"
    for name in host.tools:
        assert f"\n## {name}\n" in generated
    for uri in host.resources:
        assert f"\n## `{uri}`\n" in generated
    for name in host.prompts:
        assert f"\n## {name}\n" in generated


def code_blocks(doc: str, heading: str, lang: str) -> list[str]:
    """The ``lang`` code blocks of the section under ``## heading``."""
    section = doc.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", section, re.S)


@pytest.mark.serve
def test_writing_plugins_example_runs_as_documented(tmp_path):
    """The word-count plugin of docs/writing_plugins.md, installed by its entry point and listed in
    PLUGINS as the docs say: its tool loads, its command reaches the wiki as SYSTEM, and its log
    records appear formatted on the CLI's stderr and in gunicorn's error log."""
    from hostcore.testing import cli, start_server, stop_process_group

    doc = (ROOT / "docs" / "writing_plugins.md").read_text()
    smallest = code_blocks(doc, "The smallest plugin", "python")
    source = "\n".join(smallest + code_blocks(doc, "Commands", "python") + code_blocks(doc, "Logging", "python"))
    site = tmp_path / "site"
    (site / "hostcore_wordcount").mkdir(parents=True)
    (site / "hostcore_wordcount" / "__init__.py").write_text(source)
    entry_point = re.search(r"^hostcore =\n(.*?)$", code_blocks(doc, "The smallest plugin", "ini")[0], re.M).group(1)
    dist = site / "hostcore_wordcount-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hostcore-wordcount\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[hostcore]\n{entry_point.strip()}\n")
    env = {"PYTHONPATH": str(site)}

    instance = tmp_path / "instance"
    cli(instance, "init", env=env)
    [plugins_line] = [b.strip() for b in code_blocks(doc, "The smallest plugin", "toml") if b.startswith("PLUGINS = ")]
    config = instance / "hostcore.toml"
    config.write_text(re.sub(r"^PLUGINS = .*$", plugins_line, config.read_text(), flags=re.M))
    assert cli(instance, "check", env=env).stdout.endswith("config OK\n")
    assert re.search(r"^word_count\tread\t", cli(instance, "tools", env=env).stdout, re.M)

    counted = cli(instance, "word-count", "notes/index", env=env)
    assert counted.stdout == "15\n"  # the words of the welcome page `init` writes
    assert re.search(r"^\S+ \S+ \[INFO\] hostcore_wordcount: counting words in hostcore$", counted.stderr, re.M), counted.stderr

    proc, _base, _port, log = start_server(instance, workers=1, env=env)
    stop_process_group(proc)
    assert re.search(r"\[\d+\] \[INFO\] counting words in hostcore$", log.read_text(), re.M), log.read_text()


def project_files(doc: str, heading: str) -> dict[str, str]:
    """The code blocks of the section under ``## heading`` that open with a ``# <path>`` comment: path -> text."""
    found = {}
    for block in code_blocks(doc, heading, r"\w+"):
        first = re.match(r"# (\S+)\n", block)
        if first:
            found[first.group(1)] = block
    return found


@pytest.mark.slow  # runs pytest in a process of its own
def test_testing_example_runs_as_documented(tmp_path):
    """The smallest plugin's project as the docs write it (setup.cfg, pyproject.toml, the module)
    with the root conftest.py and the tests of "Testing a plugin": setuptools reads its setup.cfg,
    and pytest, run there as its author would run it, passes every test."""
    doc = (ROOT / "docs" / "writing_plugins.md").read_text()
    files = project_files(doc, "The smallest plugin") | project_files(doc, "Testing a plugin")
    wanted = ["hostcore_wordcount/__init__.py", "setup.cfg", "pyproject.toml", "conftest.py", "tests/test_wordcount.py"]
    assert set(wanted) <= set(files), sorted(files)
    project = tmp_path / "hostcore-wordcount"
    for path in wanted:
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(files[path])
    from setuptools.config.setupcfg import read_configuration

    options = read_configuration(project / "setup.cfg")["options"]
    assert options["entry_points"] == {"hostcore": ["wordcount = hostcore_wordcount"]}
    assert options["extras_require"] == {"test": ["pytest", "hostcore-tokens"]}  # what conftest.py imports
    # a process of its own: the tiers plugin the conftest loads sets state of this process's run
    tested = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=project,
                            env={**os.environ, "PYTHONPATH": str(project)}, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert tested.returncode == 0 and " 3 passed" in tested.stdout, tested.stdout + tested.stderr


def test_service_layer_example_runs_as_documented(tmp_path):
    example = code_blocks((ROOT / "docs" / "writing_plugins.md").read_text(), "The service layer", "python")[0]
    host = build_host(tmp_path, {"PLUGINS": ["fs"], "STORAGE": "fs"})
    try:
        exec(example, {"host": host})
        assert host.wiki(SYSTEM).page("notes/plan").body == "# Plan\n\nA second draft.\nAnd more.\n"  # merged
    finally:
        host.close()


def test_extractor_example_runs_as_documented(tmp_path, monkeypatch):
    """The CSV extractor of "A text extractor", as a package on PYTHONPATH (the extraction
    subprocess imports it there), and the test the section shows, passing."""
    doc = (ROOT / "docs" / "writing_plugins.md").read_text()
    files = project_files(doc, "A text extractor")
    site = tmp_path / "site"
    for path in ("hostcore_csvrows/extract.py", "hostcore_csvrows/__init__.py"):
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(files[path])
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    import hostcore_csvrows  # type: ignore[import-not-found]

    [test] = [block for block in code_blocks(doc, "A text extractor", "python") if block.startswith("def test_")]
    namespace: dict = {}
    exec(test, namespace)
    host = build_host(tmp_path / "instance", {"PLUGINS": ["fs"], "STORAGE": "fs"}, [hostcore_csvrows])
    try:
        wiki = host.wiki(SYSTEM)
        wiki.save_namespace("notes")
        namespace["test_an_upload_is_extracted_and_found"](host, wiki)
        statuses = {}  # the other two text_status values the section names
        for filename, data in (("empty.csv", b""), ("photo.png", png_image(8, 8))):
            ticket = wiki.upload_attachment("notes/fruit", filename)
            statuses[filename] = wiki.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], data)["text_status"]
        assert statuses == {"empty.csv": "failed", "photo.png": "unsupported"}
        with pytest.raises(Unavailable, match="the CSV cannot be read"):  # the file is kept, the reason named
            wiki.read_attachment("notes/fruit", "empty.csv")
    finally:
        host.close()


def test_service_methods_take_the_tools_arguments_by_their_names(tmp_path):
    """As "The service layer" says: each tool has a ``Wiki`` method of its name that takes its
    arguments by the same names, but for the ones the section names."""
    from hostcore.service.wiki import Wiki

    embedded = {"PLUGINS": EMBEDDED_PLUGINS, "STORAGE": EMBEDDED_STORAGE, "SEARCH": EMBEDDED_SEARCH, "EMBEDDER": EMBEDDED_EMBEDDER}
    host = build_host(tmp_path, embedded, start=False)
    unlike: dict[str, list[str]] = {}
    for name, tool in host.tools.items():
        parameters = inspect.signature(getattr(Wiki, name)).parameters
        if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):  # save_namespace(name, basehash, **settings)
            continue
        if missing := sorted(set(inspect.signature(tool.fn).parameters) - tool.inject - set(parameters)):
            unlike[name] = missing
    host.close()
    assert unlike == {"read_page": ["revision", "section"], "edit_page": ["dryRun"]}
    section = (ROOT / "docs" / "writing_plugins.md").read_text().split("\n## The service layer\n", 1)[1].split("\n## ", 1)[0]
    for said in ("`section_name` for the tool's `section`", "`read_page_at(slug=, revision=", "`dry_run` for\n`dryRun`"):
        assert said in section, said


def test_the_architecture_lists_what_plugins_may_use_of_the_host():
    """The member table of "The host plugins see" is PluginHost's members, no more, no fewer."""
    from hostcore import PluginHost

    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("\n## The host plugins see\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `host\.(\w+)", section, re.M))
    members = {name for name in dir(PluginHost) if not name.startswith("_")} | set(PluginHost.__annotations__)
    assert listed == members


def test_backend_settings_example_checks_and_defaults(tmp_path):
    namespace: dict = {}
    exec(code_blocks((ROOT / "docs" / "writing_plugins.md").read_text(), "Backend settings", "python")[0], namespace)

    class Bucket(namespace["BucketStorage"]):  # the example's settings; storage itself is not its point
        def _read(self, path):
            raise NotFound(path)

        def _list(self, prefix):
            return []

        def _apply(self, ops, change):
            return {}

    storage = Bucket(tmp_path, {"url": "https://bucket.example", "timeout": 3})
    assert (storage.timeout, storage.config["verify"]) == (3, True)
    with pytest.raises(ConfigError, match="expected float, got str 'soon'"):
        Bucket(tmp_path, {"timeout": "soon"})
    with pytest.raises(ConfigError, match="has no setting 'verfiy'; did you mean 'verify'"):
        Bucket(tmp_path, {"verfiy": False})


# --- what the docs say about the code, checked against the code ------------------------------


def named_paths(doc: str) -> set[str]:
    """Repository paths a doc names (``hostcore/...``, ``plugins/...``, ``tests/...``, ``bench/...``,
    ``docs/...``), placeholders such as ``plugins/<name>/`` left out."""
    found = re.findall(r"(?<![\w/.-])((?:hostcore|plugins|tests|bench|docs)/[\w./-]*[\w/])", doc)
    return {path for path in found if "<" not in path}


def test_every_path_the_architecture_names_exists():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    paths = named_paths(doc)
    assert len(paths) > 20, paths
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def layer_rows(doc: str) -> dict[str, str]:
    """Folder -> what its row of the layers table says lives there."""
    return dict(re.findall(r"^\| [^|]+ \| `(hostcore/[\w/]+/)` \| (.*?) \| [^|]+ \|$", doc, re.M))


def test_the_layers_table_names_every_module_of_each_layer():
    rows = layer_rows((ROOT / "docs" / "architecture.md").read_text())
    assert {"hostcore/service/", "hostcore/mcp/", "hostcore/seams/", "hostcore/indexes/"} <= set(rows), rows
    unnamed = {
        f"{folder}{path.stem}"
        for folder, what in rows.items()
        for path in (ROOT / folder).glob("*.py")
        if path.stem != "__init__" and f"`{path.stem}`" not in what and f"`{path.name}`" not in what
    }
    assert sorted(unnamed) == []


FIGURE = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns)\b"  # durations
    r"|\bp(?:50|90|95|99)\b"  # percentiles
    r"|\b\d[\d,.]*\s?(?:writes|saves|requests|reads|calls|pages|queries|commits)/s\b"  # rates
    r"|\b\d+(?:\.\d+)?\s?%"  # gains
    r"|\b\d+\.\d+\s?s\b"  # fractions of a second
    r"|\b(?:about|around|roughly|under|over) (?:a|one) (?:micro|milli)second\b"
    r"|\b(?:\d+|two|three|four|five|ten|twenty|fifty|a hundred)\s?(?:x|times) (?:faster|slower|dearer|cheaper|more|less|fewer)\b",
    re.IGNORECASE,
)
"""What a benchmark figure in prose looks like: a measured duration, percentile, rate, gain or ratio."""


def comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    source = path.read_text()
    found = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def benchmark_figures(paths: list[Path], root: Path = ROOT) -> list[str]:
    return [
        f"{path.relative_to(root)}:{line}: {match.group()!r}"
        for path in paths
        for line, text in comments_and_docstrings(path)
        for match in FIGURE.finditer(text)
    ]


def code_files() -> list[Path]:
    """The modules of hostcore and of every plugin, tests left out."""
    found = [*(ROOT / "hostcore").rglob("*.py"), *ROOT.glob("plugins/*/hostcore_*/**/*.py")]
    return sorted(p for p in found if "tests" not in p.relative_to(ROOT).parts)


def test_no_benchmark_figures_in_code_comments():
    """Figures go stale in code: they live in bench/ output and the docs; a comment says why."""
    assert benchmark_figures(code_files()) == []


def test_the_figure_check_finds_figures(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""Fast: p95 fell from 186 to 57 ms."""\n\nX = 1  # 12% more saves/s, 0.3 s at start; 1 s timeout\n')
    assert benchmark_figures([sample], tmp_path) == [
        "sample.py:3: '12%'", "sample.py:3: '0.3 s'", "sample.py:1: 'p95'", "sample.py:1: '57 ms'"
    ]


def state_keys(path: Path) -> set[str]:
    """Literal keys of ``<something>.state[...]``, ``.state.get/setdefault/pop(...)`` in a module
    (module-level string constants resolved)."""
    tree = ast.parse(path.read_text())
    constants = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }

    def literal(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "state":
            keys.add(literal(node.slice))
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "setdefault", "pop")
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "state" and node.args
        ):  # fmt: skip
            keys.add(literal(node.args[0]))
    return {k for k in keys if k is not None}


def plugin_of(path: Path) -> str:
    """The name the plugin holding ``path`` is listed by in PLUGINS (its entry point in the
    ``hostcore`` group); "hostcore" for the core."""
    parts = path.relative_to(ROOT).parts
    if parts[0] == "hostcore":
        return "hostcore"
    found = re.search(r"^hostcore =\n\s+(\S+) = ", (ROOT / parts[0] / parts[1] / "setup.cfg").read_text(), re.M)
    assert found, path
    return found.group(1)


def test_plugins_keep_state_in_slots_as_the_docs_say():
    """Both plugin docs send a plugin's state to a ``hostcore.Slot`` and neither to ``host.state``
    (a bag of string keys plugins could collide in); no plugin uses it, and the core's keys start
    with "hostcore"."""
    for doc in ("plugin_hooks.md", "writing_plugins.md"):
        text = (ROOT / "docs" / doc).read_text()
        assert "hostcore.Slot" in text and "host.slot(" in text and "host.state" not in text, doc
    wrong = [
        f"{path.relative_to(ROOT)}: {key!r}"
        for path in code_files()
        for key in state_keys(path)
        if plugin_of(path) != "hostcore" or not key.startswith("hostcore")
    ]
    assert wrong == []


def service_calls() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Over the service layer's modules: method -> the ``self.`` methods it calls, and event -> the
    methods that notify it, or plan it (``Plan("<event>", ...)``: ``_announce`` sends a plan's event
    once it landed, so the method that made the plan is the one that sends it)."""
    calls: dict[str, set[str]] = {}
    sends: dict[str, set[str]] = {}
    for path in (ROOT / "hostcore" / "service").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name == "_announce":
                continue
            for call in ast.walk(node):
                if not isinstance(call, ast.Call):
                    continue
                if isinstance(call.func, ast.Name) and call.func.id == "Plan" and call.args and isinstance(call.args[0], ast.Constant):
                    sends.setdefault(call.args[0].value, set()).add(node.name)
                if not isinstance(call.func, ast.Attribute):
                    continue
                if isinstance(call.func.value, ast.Name) and call.func.value.id == "self":
                    calls.setdefault(node.name, set()).add(call.func.attr)
                if call.func.attr == "notify" and call.args and isinstance(call.args[0], ast.Constant):
                    sends.setdefault(call.args[0].value, set()).add(node.name)
    return calls, sends


def operations_sending(event: str) -> set[str]:
    """The public service operations that can send ``event``, directly or through helpers."""
    calls, sends = service_calls()
    reaching, grew = set(sends.get(event, ())), True
    while grew:
        more = {caller for caller, called in calls.items() if called & reaching} - reaching
        reaching |= more
        grew = bool(more)
    return {name for name in reaching if not name.startswith("_")}


@pytest.mark.parametrize("event", ["page_saved", "page_deleted", "page_moved"])
def test_each_page_event_names_every_operation_that_sends_it(event):
    doc = (ROOT / "docs" / "plugin_hooks.md").read_text()
    section = doc.split(f"\n## {event}\n", 1)[1].split("\n## ", 1)[0]
    senders = operations_sending(event)
    assert senders, event
    assert sorted(name for name in senders if not re.search(rf"\b{name}\b", section)) == []
