"""The s3 storage beyond the shared conformance suite: races, batches cut halfway, history, config."""

import json
import multiprocessing
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest

from hostcore import Change, ConfigError, Conflict, Delete, NotFound, Put, Unavailable, ValidationError, blob_hash
from hostcore.testing import Relay
from hostcore.testing.s3 import prefix_for
from hostcore_s3 import S3Storage
from hostcore_s3.storage import INTERNAL

from .test_conformance import s3_storage

CHANGE = Change("tester", "save_page: test via pytest")
HERE = Path(__file__).parent


@pytest.fixture
def storage(tmp_path: Path):
    store = s3_storage(tmp_path)
    yield store
    store.close()


def raw(storage: S3Storage):
    """A plain boto3 client on the test bucket: S3 seen from outside hostcore."""
    return boto3.client("s3", endpoint_url=os.environ["TEST_S3_ENDPOINT"])


def internal_keys(storage: S3Storage, kind: str) -> list[str]:
    answer = raw(storage).list_objects_v2(Bucket=storage.bucket, Prefix=f"{storage.prefix}{INTERNAL}/{kind}/")
    return [item["Key"] for item in answer.get("Contents", ())]


ROUNDS = 3


def _racer(root: str, index: int, barrier, out) -> None:
    """Each round: read the page's hash, wait until all 16 have, write with it as basehash."""
    storage = s3_storage(Path(root))
    try:
        for _round in range(ROUNDS):
            barrier.wait()
            expect = storage.hash("race/p.md")
            barrier.wait()
            try:
                storage.apply([Put("race/p.md", f"writer {index} round {_round}\n".encode(), expect=expect)], Change(f"w{index}", "race"))
                out.put((_round, index, "won"))
            except Conflict as exc:
                out.put((_round, index, exc.data["hash"]))
    finally:
        storage.close()


def test_sixteen_racing_writers_one_winner_each_round(storage: S3Storage, tmp_path: Path) -> None:
    storage.apply([Put("race/p.md", b"base\n", expect=None)], CHANGE)
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(16), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(str(tmp_path), i, barrier, out)) for i in range(16)]
    for proc in procs:
        proc.start()
    results: dict[int, dict[int, str]] = {}
    for _ in range(16 * ROUNDS):
        round_, index, result = out.get(timeout=120)
        results.setdefault(round_, {})[index] = result
    for proc in procs:
        proc.join(timeout=60)
    hashes = []
    for round_ in range(ROUNDS):
        winners = [i for i, r in results[round_].items() if r == "won"]
        assert len(winners) == 1, results[round_]
        winner_hash = blob_hash(f"writer {winners[0]} round {round_}\n".encode())
        assert sorted(r for r in results[round_].values() if r != "won") == [winner_hash] * 15
        hashes.append(winner_hash)
    assert storage.hash("race/p.md") == hashes[-1]
    assert internal_keys(storage, "pending") == []
    assert len(storage.history("race/p.md", limit=10)) == 1 + ROUNDS


def test_conditional_delete_loses_to_a_newer_write(storage: S3Storage) -> None:
    h = storage.apply([Put("n/a.md", b"one", expect=None)], CHANGE)["n/a.md"]
    etag = storage._head("n/a.md").etag
    storage.apply([Put("n/a.md", b"two", expect=h)], CHANGE)
    with pytest.raises(Conflict) as err:
        storage._step({"path": "n/a.md", "old": h, "new": None}, etag, None)
    assert err.value.data["hash"] == blob_hash(b"two")
    assert storage.read("n/a.md") == b"two"


def cut_move(root: Path, steps: int, old: str, new: str) -> None:
    proc = subprocess.run([sys.executable, str(HERE / "cut_writer.py"), str(root), str(steps), old, new], capture_output=True, timeout=60)
    assert proc.returncode == -9, proc.stderr.decode()


def test_move_cut_halfway_is_completed_by_the_next_writer(storage: S3Storage, tmp_path: Path) -> None:
    storage.apply([Put("n/old.md", b"moving", expect=None)], CHANGE)
    cut_move(tmp_path, 1, "n/old.md", "n/new.md")
    assert internal_keys(storage, "pending") and raw(storage).head_object(Bucket=storage.bucket, Key=storage.prefix + "n/new.md")
    storage.apply([Put("n/other.md", b"x", expect=None)], CHANGE)
    assert storage.list() == ["n/new.md", "n/other.md"]
    assert internal_keys(storage, "pending") == []
    moved = storage.history("n/new.md")
    assert [r.message for r in moved] == ["move_page: cut halfway", "save_page: test via pytest"]
    assert storage.read_at("n/new.md", moved[1].id) == b"moving"


def test_move_cut_halfway_is_completed_by_a_reader(storage: S3Storage, tmp_path: Path) -> None:
    storage.apply([Put("n/old.md", b"moving", expect=None)], CHANGE)
    cut_move(tmp_path, 1, "n/old.md", "n/new.md")
    reader = s3_storage(tmp_path)
    assert reader.list() == ["n/new.md"]
    with pytest.raises(NotFound):
        reader.read("n/old.md")


def test_cut_move_whose_source_changed_since_is_rolled_back(storage: S3Storage, tmp_path: Path) -> None:
    storage.apply([Put("n/old.md", b"moving", expect=None)], CHANGE)
    cut_move(tmp_path, 1, "n/old.md", "n/new.md")
    # someone outside hostcore changes the source before anyone repairs the cut move
    raw(storage).put_object(Bucket=storage.bucket, Key=storage.prefix + "n/old.md", Body=b"changed outside")
    storage.apply([Put("n/other.md", b"x", expect=None)], CHANGE)
    assert storage.list() == ["n/old.md", "n/other.md"]
    assert storage.read_with_hash("n/old.md") == (b"changed outside", blob_hash(b"changed outside"))
    assert [r.message for r in storage.history()] == ["save_page: test via pytest"] * 2


def test_batch_losing_a_race_halfway_undoes_what_it_wrote(storage: S3Storage, tmp_path: Path) -> None:
    h = storage.apply([Put("n/old.md", b"moving", expect=None)], CHANGE)["n/old.md"]
    rival = s3_storage(tmp_path)
    real_step = storage._step

    def step_then_rival_writes(step, etag, data):
        answer = real_step(step, etag, data)
        if step["path"] == "n/new.md":
            rival.apply([Put("n/old.md", b"rival edit", expect=h)], CHANGE)
        return answer

    storage._step = step_then_rival_writes  # type: ignore[method-assign]
    with pytest.raises(Conflict) as err:
        storage.apply([Put("n/new.md", b"moving", expect=None), Delete("n/old.md", expect=h)], CHANGE)
    assert err.value.data == {"path": "n/old.md", "hash": blob_hash(b"rival edit")}
    assert storage.list() == ["n/old.md"] and storage.read("n/old.md") == b"rival edit"
    assert internal_keys(storage, "pending") == []


def test_undoing_a_lost_batch_keeps_a_rivals_write_of_the_same_bytes(storage: S3Storage, tmp_path: Path) -> None:
    """A step finding the path already holding its new bytes (another writer's acknowledged write
    of the same content) did not write them: when a later step loses its race, the undo must not
    put the old bytes back over that writer's change."""
    h = storage.apply([Put("n/x.md", b"old", expect=None)], CHANGE)["n/x.md"]
    rival = s3_storage(tmp_path)
    real_step = storage._step
    raced: list[dict[str, str | None]] = []

    def rival_first(step, etag, data):
        if not raced:  # after this batch's checks, before its first step: the rival lands both paths
            raced.append(rival.apply([Put("n/x.md", b"same", expect=h), Put("n/y.md", b"rival", expect=None)], CHANGE))
        return real_step(step, etag, data)

    storage._step = rival_first  # type: ignore[method-assign]
    with pytest.raises(Conflict) as err:
        storage.apply([Put("n/x.md", b"same", expect=h), Put("n/y.md", b"mine", expect=None)], CHANGE)
    assert err.value.data == {"path": "n/y.md", "hash": blob_hash(b"rival")}
    assert storage.read("n/x.md") == b"same" and storage.read("n/y.md") == b"rival"  # the rival's change, whole
    assert internal_keys(storage, "pending") == []


def test_history_follows_moves_and_reads_every_revision(storage: S3Storage) -> None:
    a = storage.apply([Put("n/a.md", b"one", expect=None)], CHANGE)["n/a.md"]
    b = storage.apply([Put("n/a.md", b"two", expect=a)], Change("ann", "edit_page: n/a via claude"))["n/a.md"]
    assert b is not None
    storage.apply([Put("n/b.md", b"two", expect=None), Delete("n/a.md", expect=b)], Change("bob", "move_page: n/a -> n/b", moves=(("n/a.md", "n/b.md"),)))
    storage.apply([Delete("n/b.md")], Change("cy", "delete_page: n/b"))
    revs = storage.history("n/b.md")
    assert [r.author for r in revs] == ["cy", "bob", "ann", "tester"]
    assert revs[1].paths == ("n/a.md", "n/b.md") and revs[1].folders == ("n",)
    assert [storage.read_at("n/b.md", r.id) for r in revs[1:]] == [b"two", b"two", b"one"]
    with pytest.raises(NotFound):
        storage.read_at("n/b.md", revs[0].id)
    assert [r.author for r in storage.history(offset=1, limit=2)] == ["bob", "ann"]
    with pytest.raises(NotFound):
        storage.read_at("n/b.md", "0" * 40)
    assert storage.apply([Put("n/c.md", b"same", expect=None)], CHANGE) and storage.apply([Put("n/c.md", b"same")], CHANGE)
    assert len(storage.history("n/c.md")) == 1  # writing the same bytes records nothing


def test_objects_written_outside_hostcore_are_read_and_hashed(storage: S3Storage) -> None:
    raw(storage).put_object(Bucket=storage.bucket, Key=storage.prefix + "n/outside.md", Body=b"from aws s3 cp")
    assert storage.hash("n/outside.md") == blob_hash(b"from aws s3 cp")
    assert storage.hashes() == {"n/outside.md": blob_hash(b"from aws s3 cp")}
    storage.apply([Put("n/outside.md", b"edited", expect=blob_hash(b"from aws s3 cp"))], CHANGE)
    assert storage.read("n/outside.md") == b"edited"


def test_hostcore_folder_is_neither_listed_nor_writable(storage: S3Storage) -> None:
    storage.apply([Put("n/a.md", b"a", expect=None)], CHANGE)
    assert storage.list() == ["n/a.md"] and storage.folders() == ["n"]
    with pytest.raises(ValidationError, match="keeps for itself"):
        storage.apply([Put(f"{INTERNAL}/log/x.json", b"{}")], CHANGE)
    with pytest.raises(NotFound):
        storage.read(f"{INTERNAL}/log/x.json")


def test_file_and_folder_cannot_share_a_name(storage: S3Storage) -> None:
    storage.apply([Put("n/a", b"file", expect=None)], CHANGE)
    with pytest.raises(ValidationError, match="is a file"):
        storage.apply([Put("n/a/b.md", b"x", expect=None)], CHANGE)
    storage.apply([Put("n/dir/b.md", b"x", expect=None)], CHANGE)
    with pytest.raises(ValidationError, match="is a folder"):
        storage.apply([Put("n/dir", b"x", expect=None)], CHANGE)


def test_config_errors_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"PLUGIN_CONFIG\.s3\.bucket is not set"):
        S3Storage(tmp_path, {"endpoint_url": os.environ["TEST_S3_ENDPOINT"]})
    with pytest.raises(ConfigError, match="bucket 'no-such-bucket' does not exist"):
        S3Storage(tmp_path, {"bucket": "no-such-bucket", "endpoint_url": os.environ["TEST_S3_ENDPOINT"]})
    with pytest.raises(ConfigError, match="has no setting 'buckett'"):
        S3Storage(tmp_path, {"buckett": "x"})
    assert prefix_for(tmp_path) != prefix_for(tmp_path / "other")


def test_history_sees_changes_of_other_processes_and_skewed_clocks(storage: S3Storage, tmp_path: Path) -> None:
    storage.apply([Put("n/a.md", b"one", expect=None)], CHANGE)
    assert len(storage.history()) == 1
    other = s3_storage(tmp_path)  # another process or host on the same bucket and prefix
    other.apply([Put("n/b.md", b"two", expect=None)], Change("other", "save_page: n/b"))
    assert [r.author for r in storage.history()] == ["other", "tester"]
    # an entry from a host whose clock is a minute behind sorts after the newest: still listed
    late = {"id": "", "author": "late", "email": "", "message": "save_page: n/c", "time": 0.0, "moves": [], "ops": [{"path": "n/c.md", "old": None, "new": blob_hash(b"c")}]}
    late_id = f"{(1 << 56) - (time.time_ns() // 1000 - 60_000_000):014x}" + "0" * 26
    raw(storage).put_object(Bucket=storage.bucket, Key=f"{storage.prefix}{INTERNAL}/log/{late_id}.json", Body=json.dumps({**late, "id": late_id}).encode())
    assert [r.author for r in storage.history()] == ["other", "tester"]  # not yet announced
    raw(storage).put_object(Bucket=storage.bucket, Key=f"{storage.prefix}{INTERNAL}/head", Body=late_id.encode())
    assert [r.author for r in storage.history()] == ["other", "tester", "late"]


def test_last_changed_is_when_each_object_was_written(storage: S3Storage) -> None:
    before = datetime.now(UTC) - timedelta(seconds=5)
    storage.apply([Put("n/a.md", b"a", expect=None), Put("m/b.md", b"b", expect=None)], CHANGE)
    changed = storage.last_changed(["n/a.md", "m/b.md", "n/missing.md"])
    assert set(changed) == {"n/a.md", "m/b.md"}
    assert all(before <= when <= datetime.now(UTC) + timedelta(seconds=5) for when in changed.values())


def test_two_deleters_of_one_version_one_wins(storage: S3Storage, tmp_path: Path) -> None:
    h = storage.apply([Put("n/a.md", b"a", expect=None)], CHANGE)["n/a.md"]
    etag = storage._head("n/a.md").etag
    s3_storage(tmp_path).apply([Delete("n/a.md", expect=h)], CHANGE)
    with pytest.raises(Conflict) as err:
        storage._step({"path": "n/a.md", "old": h, "new": None}, etag, None)
    assert err.value.data["hash"] == ""


def test_a_change_cut_by_an_unreachable_server_is_repaired_by_its_own_process(storage: S3Storage, tmp_path: Path) -> None:
    h = storage.apply([Put("n/old.md", b"moving", expect=None)], CHANGE)["n/old.md"]
    real_call = storage._call

    def unreachable_for_deletes(method, **kwargs):
        if method == "delete_object" and kwargs["Key"].endswith("n/old.md"):
            raise Unavailable("the S3 storage cannot be reached (test); try again")
        return real_call(method, **kwargs)

    storage._call = unreachable_for_deletes  # type: ignore[method-assign]
    with pytest.raises(Unavailable, match=r"cut halfway: it is then completed or undone .* read the page again"):
        storage.apply([Put("n/new.md", b"moving", expect=None), Delete("n/old.md", expect=h)], Change("t", "move", moves=(("n/old.md", "n/new.md"),)))
    storage._call = real_call  # type: ignore[method-assign]
    storage.apply([Put("n/other.md", b"x", expect=None)], CHANGE)
    assert storage.list() == ["n/new.md", "n/other.md"]
    assert internal_keys(storage, "pending") == []


def test_a_change_record_stored_but_unanswered_is_repaired_by_its_own_process(storage: S3Storage) -> None:
    """The change record's put lands but its answer is lost: the save is Unavailable, saying it
    may have been cut halfway, and this process's next look completes it (not only a record
    older than repair_after)."""
    h = storage.apply([Put("n/a.md", b"one\n", expect=None)], CHANGE)["n/a.md"]
    real_call = storage._call

    def answer_lost_for_records(method, **kwargs):
        answer = real_call(method, **kwargs)
        if method == "put_object" and f"{INTERNAL}/pending/" in kwargs["Key"]:
            raise Unavailable("the S3 storage cannot be reached (test); try again")
        return answer

    storage._call = answer_lost_for_records  # type: ignore[method-assign]
    with pytest.raises(Unavailable, match="may have been cut halfway"):
        storage.apply([Put("n/a.md", b"two\n", expect=h)], CHANGE)
    storage._call = real_call  # type: ignore[method-assign]
    assert len(internal_keys(storage, "pending")) == 1 and storage.repair_after >= 30
    storage.apply([Put("n/b.md", b"b", expect=None)], CHANGE)  # the next look
    assert internal_keys(storage, "pending") == []
    assert storage.read("n/a.md") == b"two\n" and [r.message for r in storage.history("n/a.md")] == [CHANGE.message] * 2


def test_an_answer_cut_halfway_is_unavailable_and_nothing_changes(storage: S3Storage, tmp_path: Path) -> None:
    """S3 sends the headers of an object and the network breaks in its body: the read is
    Unavailable (a clear error, no stack trace in the log), not a half-read page."""
    body = b"".join(b"line %d of a long page\n" % i for i in range(20_000))
    h = storage.apply([Put("n/long.md", body, expect=None)], CHANGE)["n/long.md"]
    relay = Relay(os.environ["TEST_S3_ENDPOINT"])
    try:
        relay.limit = 64 * 1024  # bytes a connection may carry from S3: a HEAD passes, the page is cut
        cut = s3_storage(tmp_path, endpoint_url=relay.url)
        with pytest.raises(Unavailable) as err:
            cut.read("n/long.md")
        assert "cannot be reached" in str(err.value)
        relay.limit = None  # for the connections made from now on
        assert cut.read_with_hash("n/long.md") == (body, h)
        assert storage.list() == ["n/long.md"] and internal_keys(storage, "pending") == []
        cut.close()
    finally:
        relay.stop()
