import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hostcore.cli.commands import main, public_url_of_bind, public_url_warning
from hostcore.host.config import read_file


def test_init_token_plugins_check(tmp_path):
    runner = CliRunner()
    inst = str(tmp_path / "inst")
    result = runner.invoke(main, ["--instance", inst, "init"])
    assert result.exit_code == 0, result.output
    assert re.search(r"First admin token .*: hc_[\w-]{40,}", result.stdout)
    again = runner.invoke(main, ["init", "--instance", inst])
    assert again.exit_code == 0 and "already an instance" in again.stderr

    created = runner.invoke(
        main, ["token", "create", "--instance", inst, "--name", "bot", "--scope", "read", "--namespace", "notes"]
    )
    assert created.exit_code == 0, created.output
    assert re.fullmatch(r"hc_[\w-]{40,}\n", created.stdout)
    listed = runner.invoke(main, ["--instance", inst, "token", "list"])
    assert "bot\tread\tnotes" in listed.stdout and created.stdout.strip() not in listed.stdout
    revoked = runner.invoke(main, ["token", "revoke", "bot", "--instance", inst])
    assert revoked.exit_code == 0 and "bot" not in runner.invoke(main, ["--instance", inst, "token", "list"]).stdout
    bad = runner.invoke(main, ["token", "create", "--instance", inst, "--name", "x", "--scope", "root"])
    assert bad.exit_code != 0 and "root" in bad.output

    plugins = runner.invoke(main, ["plugins", "--instance", inst])
    assert re.search(r"^tokens\thostcore-tokens 0\.1\.0\t.*authenticate", plugins.stdout, re.M)
    assert re.search(r"^hostcore\.tools\.pages\thostcore \(built in\)\tregister_tools$", plugins.stdout, re.M)
    assert runner.invoke(main, ["check", "--instance", inst]).exit_code == 0
    # PUBLIC_URL is left to `hostcore serve`, which derives it from --bind until an operator sets it
    assert "PUBLIC_URL" not in read_file(tmp_path / "inst")


def test_check_names_every_problem(tmp_path):
    (tmp_path / "hostcore.toml").write_text('PLUGINS = ["fs"]\nSTORAGE = 3\nPUBLIC_URL = "ftp://x"\n')
    result = CliRunner().invoke(main, ["check", "--instance", str(tmp_path)])
    assert result.exit_code == 1
    assert "problem: STORAGE: expected str" in result.stdout and "problem: PUBLIC_URL" in result.stdout


@pytest.mark.serve
def test_a_folder_that_is_not_an_instance_is_named_and_left_alone(tmp_path):
    """A mistyped --instance: each command says the folder has no hostcore.toml and how to make
    one, and creates nothing there (the hostcore command, as an operator types it)."""
    typo = tmp_path / "wki"
    hostcore = Path(sys.executable).with_name("hostcore")
    for args in (["serve", "--bind", "127.0.0.1:8999"], ["tools"], ["reindex"], ["check"], ["token", "list"]):
        result = subprocess.run([hostcore, "--instance", typo, *args], capture_output=True, text=True, timeout=60)
        assert result.returncode != 0, result
        assert f"{typo} is not an instance (it has no hostcore.toml): `hostcore --instance {typo} init`" in (
            result.stdout + result.stderr
        ), (args, result)
        assert not typo.exists()


def test_check_reports_unknown_plugin(tmp_path):
    (tmp_path / "hostcore.toml").write_text('PLUGINS = ["nope"]\n')
    result = CliRunner().invoke(main, ["check", "--instance", str(tmp_path)])
    assert result.exit_code == 1 and "no plugin named 'nope'" in result.stdout


@pytest.mark.parametrize(
    ("bind", "url"),
    [
        ("127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("wiki.lan:80", "http://wiki.lan:80"),
        ("localhost", "http://localhost:8000"),  # gunicorn's port when none is given
        ("0.0.0.0:8080", "http://127.0.0.1:8080"),
        (":8080", "http://127.0.0.1:8080"),
        ("[::]:8080", "http://[::1]:8080"),
        ("[::1]:81", "http://[::1]:81"),
        ("[::1]", "http://[::1]:8000"),
        ("unix:/run/hostcore.sock", None),
    ],
)
def test_public_url_of_bind(bind, url):
    assert public_url_of_bind(bind) == url


@pytest.mark.parametrize("bind", ["127.0.0.1:http", "127.0.0.1:0", "127.0.0.1:70000"])
def test_bad_bind_names_the_option(bind):
    with pytest.raises(click.BadParameter, match="expected HOST:PORT") as err:
        public_url_of_bind(bind)
    assert err.value.param_hint == "--bind"


def testpublic_url_warnings():
    assert public_url_warning("127.0.0.1:9000", "http://127.0.0.1:9000") is None
    assert public_url_warning("127.0.0.1:9000", "https://wiki.example.org") is None  # behind a proxy
    assert "remove it to follow --bind" in public_url_warning("127.0.0.1:9000", "http://127.0.0.1:8080")
    assert "every interface" in public_url_warning("0.0.0.0:8080", "http://127.0.0.1:8080")
    assert public_url_warning("0.0.0.0:8080", "http://192.168.1.5:8080") is None


def test_check_lists_every_problem_in_one_pass(tmp_path):
    (tmp_path / "hostcore.toml").write_text(
        'PLUGINS = ["git", "nope"]\nSTORAGE = "git"\nMAX_REQUEST_BYTES = "8M"\n'
        'AUTHORIZATION_SERVERS = ["https://auth.example"]\n[PLUGIN_CONFIG.git]\nremtoe = "/srv/backup.git"\n'
    )
    runner = CliRunner(env={"HOSTCORE_SEACRH": "sqlite", "HOSTCORE_PLUGIN_CONFIG__GIT__FSYNC": '"no"'})
    result = runner.invoke(main, ["check", "--instance", str(tmp_path)])
    assert result.exit_code == 1
    problems = re.findall(r"^problem: (\S+): ", result.stdout, re.M)
    assert problems == [
        "MAX_REQUEST_BYTES",
        "HOSTCORE_SEACRH",
        "PLUGINS",
        "PLUGIN_CONFIG.git.remtoe",
        "HOSTCORE_PLUGIN_CONFIG__GIT__FSYNC",
    ], result.stdout
    assert "no plugin named 'nope'" in result.stdout and "did you mean 'remote'?" in result.stdout


def test_check_says_which_plugin_provides_a_missing_backend(tmp_path):
    (tmp_path / "hostcore.toml").write_text('PLUGINS = ["fs", "tokens"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n')
    result = CliRunner().invoke(main, ["check", "--instance", str(tmp_path)])
    assert result.exit_code == 1
    assert "problem: STORAGE: no storage backend named 'git' is loaded (loaded: fs); add 'git' to PLUGINS" in result.stdout
    assert "problem: SEARCH: no search backend named 'sqlite' is loaded (loaded: none); add 'sqlite' to PLUGINS" in result.stdout


@pytest.mark.serve
def test_a_serving_process_freezes_its_heap_once_the_app_is_made(tmp_path):
    """Worker processes (``hostcore serve``, ``wsgi.py``) take what they built at start out of the
    garbage collector's full passes (they otherwise stall a big page's render every few thousand
    allocations): a fresh interpreter, as a worker is, builds the app and finds its heap frozen."""
    import subprocess
    import sys

    from hostcore import SYSTEM, create_app

    app = create_app({"PLUGINS": ["fs"], "STORAGE": "fs", "SEARCH": ""}, instance_path=tmp_path / "inst")
    app.extensions["hostcore"].wiki(SYSTEM).save_namespace("notes", title="Notes")
    app.extensions["hostcore"].close()
    (tmp_path / "inst" / "hostcore.toml").write_text('PLUGINS = ["fs"]\nSTORAGE = "fs"\nSEARCH = ""\n')
    code = (
        "import gc, sys\nfrom hostcore.app import serving_app\nbefore = gc.get_freeze_count()\n"
        "app = serving_app(sys.argv[1])\nprint(before, gc.get_freeze_count(), gc.get_threshold()[0], app.extensions['hostcore'].config['STORAGE'])"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "inst")], capture_output=True, text=True, check=True)
    before, after, young, storage = out.stdout.split()
    assert int(before) == 0 and int(after) > 10_000 and int(young) == 10_000 and storage == "fs"


def test_the_connection_board_gives_each_live_worker_its_own_slot():
    """The master gives each worker about to be forked a slot no live worker holds; a worker that
    exited leaves its slot to the next; the counts are those of the workers that published."""
    from types import SimpleNamespace

    from hostcore.cli.workers import Board

    board = Board(slots=2)
    first, second, third = (SimpleNamespace(pid=None) for _ in range(3))
    assert board.claim(first, live=set()) == 0
    first.pid = 101  # the master learns the pid after the fork
    assert board.claim(second, live={101}) == 1
    second.pid = 102
    assert board.claim(third, live={101, 102}) == -1  # full: the worker runs unbalanced
    board.publish(0, 7)
    board.publish(1, 3)
    assert sorted(board.counts()) == [3, 7]
    board.release(0)  # child_exit of the first worker
    assert board.counts() == [3]
    assert board.claim(third, live={102}) == 0
    assert board.counts() == [3]  # the new worker has not published yet


def test_the_board_counts_each_workers_requests_while_they_are_answered(monkeypatch):
    """Each worker publishes the requests its threads are answering; the board sums the live
    workers' (what the embedding gives way to), and a request that raised counts no more."""
    import threading

    from gunicorn.workers.gthread import ThreadWorker

    from hostcore.cli.workers import Board, Worker

    board = Board(slots=2)
    seen: list[int] = []

    def answer(self, req, conn):
        seen.append(board.in_flight())
        if req == "bad":
            raise OSError("the client went away")
        return True

    monkeypatch.setattr(ThreadWorker, "handle_request", answer)
    worker = Worker.__new__(Worker)
    worker.board, worker.slot, worker.nr_conns = board, 0, 1
    worker._serving, worker._flight_lock = threading.local(), threading.Lock()  # what init_process makes
    board.publish(0, 1)
    board.publish(1, 1)
    board.flying(1, 2)  # the other worker answers two
    assert board.in_flight() == 2 and sorted(board.counts()) == [1, 1]
    assert worker.handle_request("req", None) is True
    with pytest.raises(OSError):
        worker.handle_request("bad", None)
    assert seen == [3, 3] and board.in_flight() == 2
    board.release(1)
    assert board.in_flight() == 0


def test_a_worker_warms_every_thread_of_its_pool_before_serving(tmp_path):
    """Each thread of a worker's pool makes its MCP transport (event loop and SDK instance) before
    the first connection, not on its first request (64 writers starting at once met every thread
    cold in the same second). A real app and a real pool; gunicorn's worker without its socket."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    from types import SimpleNamespace

    from hostcore.app import create_app
    from hostcore.cli.workers import Worker

    app = create_app({"PLUGINS": ["git", "tokens"], "STORAGE": "git"}, instance_path=tmp_path / "instance")
    bridge = app.extensions["hostcore.mcp"]._bridge
    worker = Worker.__new__(Worker)  # gunicorn builds it with its arbiter; warm_threads needs only these
    worker.cfg, worker.tpool, worker.app = SimpleNamespace(threads=5, reload=False), ThreadPoolExecutor(5), SimpleNamespace(wsgi=lambda: app)
    worker.load_wsgi()  # as gunicorn does: the worker then serves the app wrapped (see hostcore.cli.intake)
    try:
        worker.warm_threads()
        barrier = threading.Barrier(5)

        def made() -> tuple[int, bool]:
            barrier.wait(timeout=30)  # five jobs at once: one on each thread of the pool
            return threading.get_ident(), getattr(bridge._local, "loop", None) is not None

        seen = [job.result() for job in [worker.tpool.submit(made) for _ in range(5)]]
        assert len({ident for ident, _ in seen}) == 5
        assert all(loop for _, loop in seen)
    finally:
        worker.tpool.shutdown()
        app.extensions["hostcore"].close()


def test_a_worker_hands_the_interpreter_lock_over_sooner_before_it_serves(monkeypatch):
    """A request beside a thread computing in Python (the embedding catching up) waits for the
    interpreter lock at each handover: the worker shortens Python's wait before asking the holder
    to let go (Python's default) to SWITCH_INTERVAL, before it serves, for every thread of the process."""
    import sys

    from gunicorn.workers.gthread import ThreadWorker

    from hostcore.cli import arenas
    from hostcore.cli.workers import SWITCH_INTERVAL, Worker

    served_with: list[float] = []
    monkeypatch.setattr(ThreadWorker, "run", lambda self: served_with.append(sys.getswitchinterval()))
    monkeypatch.setattr(Worker, "warm_threads", lambda self: None)
    monkeypatch.setattr(arenas, "trim_malloc_periodically", lambda: None)
    before = sys.getswitchinterval()
    assert before > SWITCH_INTERVAL  # Python's own default is what the worker changes
    worker = Worker.__new__(Worker)  # no board: gunicorn run without hostcore's pre_fork
    try:
        worker.run()
    finally:
        sys.setswitchinterval(before)
    assert served_with == [SWITCH_INTERVAL]


def test_a_worker_held_back_by_the_board_looks_again_soon(monkeypatch):
    """A worker ahead of the least loaded one stops listening and, in gthread's loop, would look
    at the board again only after an event or its 1 s wait: 64 clients connecting at once were
    taken two at a time. Held back, it waits HELD_BACK_WAIT; level with the others, gthread's wait."""
    from gunicorn.workers.gthread import ThreadWorker

    from hostcore.cli.workers import HELD_BACK_WAIT, Board, Worker

    waits: list[float] = []
    monkeypatch.setattr(ThreadWorker, "wait_for_and_dispatch_events", lambda self, timeout: waits.append(timeout))
    board = Board(slots=2)
    worker = Worker.__new__(Worker)
    worker.board, worker.slot, worker.worker_connections = board, 0, 1000
    board.publish(1, 3)  # the other worker holds 3
    for held in (4, 6, 3):
        worker.nr_conns = held
        limit = worker.worker_connections  # what gthread's loop reads before each wait
        worker.wait_for_and_dispatch_events(1.0)
        assert (limit > held) == (held <= 3 + 1)  # listens while within SLACK of the least loaded
    assert waits == [1.0, HELD_BACK_WAIT, 1.0]


def test_help_imports_no_storage_search_model_or_web_library(tmp_path):
    """`hostcore --help` (and a mistyped command) answers at once: none of git, numpy, the
    embedder, Flask, pydantic or the MCP SDK is imported for it, only click and the commands.
    Run where no instance is (an ./instance, as `make serve` leaves, adds its plugins' commands)."""
    code = (
        "import sys\n"
        "from hostcore.cli import run\n"
        "sys.argv = ['hostcore', '--help']\n"
        "try:\n    run()\nexcept SystemExit:\n    pass\n"
        "heavy = ('pygit2', 'numpy', 'wordllama', 'tantivy', 'flask', 'pydantic', 'mcp', 'gunicorn', 'authlib', 'markdown_it')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HOSTCORE_INSTANCE"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env)
    assert "Usage: hostcore" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"


def test_the_server_parent_prepares_what_every_worker_would_repeat(tmp_path):
    """`hostcore serve` builds the host unstarted before forking its workers, then prepares the
    tools' schemas and the routes' imports there, so each worker inherits them; without starting
    a thread (a forked worker would inherit a dead one). The host alone (what `hostcore status`,
    `token` and `check` build) imports no MCP server transport; preparing the workers does."""
    code = (
        "import sys, threading\n"
        "from pathlib import Path\n"
        "from hostcore.app import build_host, prepare_workers\n"
        "from hostcore.seams import tool\n"
        "host = build_host(Path(sys.argv[1]), {'PLUGINS': ['fs', 'web'], 'STORAGE': 'fs'}, start=False)\n"
        "transport = ('mcp.server.streamable_http', 'hostcore.mcp.transport')\n"
        "alone = [m for m in transport if m in sys.modules]\n"
        "before = set(threading.enumerate())\n"
        "prepare_workers(host)\n"
        "cached = all(tool._SCHEMAS.get(id(t.input_model), (None,))[0] is t.input_model for t in host.tools.values())\n"
        "print(cached, 'hostcore_web.views' in sys.modules, not set(threading.enumerate()) - before,\n"
        "      not alone, all(m in sys.modules for m in transport))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "instance")], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True", "True", "True", "True"]


ARENA_PROBE = """
import ctypes, sys, tempfile, threading
from hostcore.cli.arenas import cap_malloc_arenas
print(cap_malloc_arenas())
barrier = threading.Barrier(8)
def work():
    barrier.wait()
    for _ in range(50):
        kept = [bytearray(4000) for _ in range(200)]
        del kept
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile() as out:
    f = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(f))
    libc.fclose(ctypes.c_void_p(f))
    print(open(out.name).read().count("<heap nr="))
"""


@pytest.mark.parametrize(("operator", "cap", "most"), [(None, "2", 2), ("8", "None", 8)])
def test_serve_caps_malloc_arenas_unless_the_operator_set_them(operator, cap, most):
    """Eight threads allocating at once get glibc arenas of their own, each keeping its peak;
    capped as `hostcore serve` caps them, they share two. MALLOC_ARENA_MAX stands when set."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | ({"MALLOC_ARENA_MAX": operator} if operator else {})
    said, arenas = subprocess.run([sys.executable, "-c", ARENA_PROBE], capture_output=True, text=True, check=True, env=env).stdout.split()
    assert said == cap and 1 <= int(arenas) <= most
    if operator:
        assert int(arenas) > 2  # what the cap saves: without it the threads took more


TRIM_PROBE = """
import sys, time
from pathlib import Path
from hostcore.cli.arenas import trim_malloc_periodically

def anonymous_mb():
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Anonymous:"):
            return int(line.split()[1]) // 1024

objects = [bytes(600) for _ in range(300_000)]  # 180 MB of small blocks in the heap
kept = objects[::100]  # one in a hundred stays: the freed ones are holes, not the heap's top
del objects
held = anonymous_mb()
trim_malloc_periodically(float(sys.argv[1]))
time.sleep(1.0)
print(held, anonymous_mb(), len(kept))
"""


@pytest.mark.parametrize("every", [0.2, 60.0])
def test_workers_hand_free_heap_memory_back_to_the_system(every):
    """Memory freed between blocks still in use stays with the process until malloc_trim: the
    serve workers' trimming thread gives it back (a worker after searches and saves held 80 MB)."""
    held, after, _ = map(int, subprocess.run([sys.executable, "-c", TRIM_PROBE, str(every)], capture_output=True, text=True, check=True).stdout.split())
    assert held > 150
    if every < 1:
        assert after < held - 100
    else:  # not trimmed yet: the memory stays, which is what the thread is for
        assert after > held - 20
