"""A real S3-compatible server for tests: moto's server mode on a free loopback port.

Needs ``moto[server]`` and ``boto3`` (the s3 plugin's ``test`` extra). In a test module or
conftest::

    from hostcore.testing.s3 import s3_server  # noqa: F401  (the fixture)

    def test_something(s3_server):
        storage = S3Storage(tmp_path, {"bucket": s3_server.bucket, "endpoint_url": s3_server.url})

The fixture is session-wide: it starts moto's server (``python -m hostcore.testing.s3 -p PORT``:
moto's own server app, answering one request at a time: moto checks a conditional write's
``If-Match`` and stores the object in two steps without a lock, so two racing writers could both
pass the check, which S3 itself never allows), creates a bucket,
sets dummy AWS credentials and ``TEST_S3_ENDPOINT``/``TEST_S3_BUCKET`` in the environment (so
worker processes and servers started by the test find them) and stops the server at the end.
Give each test its own ``prefix`` (:func:`prefix_for`) to keep tests apart in the one bucket.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hostcore.testing.servers import free_port, start_process_group, stop_process_group

BUCKET = "hostcore-test"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass(frozen=True)
class S3Server:
    """A running moto server: its URL, the bucket made for tests, the environment that reaches it."""

    url: str
    bucket: str
    env: dict[str, str]


def prefix_for(root: Path) -> str:
    """A key prefix of its own for the test whose folder is ``root``."""
    return "t-" + hashlib.sha1(str(root).encode()).hexdigest()[:16]


def moto_server_cmd() -> list[str]:
    return [sys.executable, "-m", "hostcore.testing.s3"]


def serve_moto(host: str, port: int) -> None:
    """moto's server (what ``moto_server`` runs) with one request at a time, so a conditional
    write's check and store happen together, as on S3."""
    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def one_at_a_time(environ: Any, start_response: Any) -> Any:
        with lock:
            return list(app(environ, start_response))

    run_simple(host, port, one_at_a_time, threaded=True, request_handler=MotoRequestHandler)


def start_moto(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start moto's server on a free loopback port; wait until it answers. Returns (process, URL)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = start_process_group(
            [*moto_server_cmd(), "-H", "127.0.0.1", "-p", str(port)], marker="s3", what="moto's S3 server",
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url + "/moto-api/", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.05)
    stop_process_group(proc)
    raise RuntimeError(f"moto_server did not answer within 30 s:\n{log.read_text(errors='replace')}")


def make_bucket(url: str, bucket: str) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=url, region_name=CREDENTIALS["AWS_DEFAULT_REGION"])
    try:
        client.create_bucket(Bucket=bucket)
    finally:
        client.close()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server for the session, with a bucket and dummy credentials in the environment."""
    saved = {name: os.environ.get(name) for name in [*CREDENTIALS, "TEST_S3_ENDPOINT", "TEST_S3_BUCKET"]}
    proc, url = start_moto(tmp_path_factory.mktemp("moto") / "moto.log")
    env = {**CREDENTIALS, "TEST_S3_ENDPOINT": url, "TEST_S3_BUCKET": BUCKET}
    os.environ.update(env)
    try:
        make_bucket(url, BUCKET)
        yield S3Server(url, BUCKET, env)
    finally:
        stop_process_group(proc)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="moto's S3 server, one request at a time")
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    serve_moto(args.host, args.port)
