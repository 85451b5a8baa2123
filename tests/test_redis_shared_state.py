"""With ``REDIS_URL``, accounts, tokens, OAuth clients and grants live only in Redis: a Redis that
keeps nothing on disk (or will not say) is refused at start-up unless the operator accepts it,
``hostcore check`` says what it found, and ``hostcore backup`` / ``restore`` copy the records out
and back. A real ``redis-server``, with and without persistence, restarted for real."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis as redis_py
from hostcore_accounts import accounts

from hostcore import ConfigError, create_app, testing
from hostcore.host.host import Host
from hostcore.testing import RedisServer, redis_server
from hostcore_tokens import store

CONFIG_FILE = """\
PLUGINS = ["fs", "tokens", "accounts"]
STORAGE = "fs"
PUBLIC_URL = "http://wiki.test"
REDIS_URL = "{url}"
"""
PASSWORD = "correct horse battery"


def instance_on(tmp_path: Path, srv: RedisServer, extra: str = "") -> Path:
    instance = tmp_path / "instance"
    instance.mkdir(exist_ok=True)
    (instance / "hostcore.toml").write_text(CONFIG_FILE.format(url=srv.url) + extra)
    return instance


def start(instance: Path) -> Host:
    return create_app(instance_path=instance).extensions["hostcore"]


@pytest.mark.redis
@pytest.mark.serve
def test_a_redis_that_keeps_nothing_is_refused_unless_the_operator_accepts_it(tmp_path: Path) -> None:
    with redis_server(persistent=False) as srv:
        instance = instance_on(tmp_path, srv)
        with pytest.raises(ConfigError) as refused:
            start(instance)
        assert str(refused.value) == (
            "REDIS_URL: Redis (REDIS_URL) keeps nothing on disk (appendonly no, save ''): a Redis restarted without its "
            "data loses every account, token, OAuth client and grant (kept only there). Give it persistence "
            "(appendonly yes), or set REDIS_REQUIRE_PERSISTENCE = false to accept the loss"
        )
        checked = testing.cli(instance, "check", check=False)
        assert checked.returncode == 1 and "problem: Redis (REDIS_URL) keeps nothing on disk" in checked.stdout
        made = testing.cli(instance, "token", "create", "--name", "lost", "--scope", "read", check=False)
        assert made.returncode == 1 and "keeps nothing on disk" in made.stderr  # a token made there would be lost
        served = testing.cli(instance, "serve", "--bind", f"127.0.0.1:{testing.free_port()}", check=False)
        assert served.returncode == 1 and "error: REDIS_URL: Redis (REDIS_URL) keeps nothing on disk" in served.stderr

        instance_on(tmp_path, srv, "REDIS_REQUIRE_PERSISTENCE = false\n")
        start(instance).close()
        checked = testing.cli(instance, "check")
        assert "keeps nothing on disk (appendonly no, save ''); accepted (REDIS_REQUIRE_PERSISTENCE = false)" in checked.stdout


@pytest.mark.redis
def test_a_redis_that_will_not_say_is_named_and_may_be_vouched_for(tmp_path: Path) -> None:
    with redis_server() as srv:
        redis_py.Redis.from_url(srv.url).execute_command("ACL", "SETUSER", "default", "-config")  # as managed services do
        instance = instance_on(tmp_path, srv)
        with pytest.raises(ConfigError, match=r"REDIS_URL: Redis \(REDIS_URL\) refuses CONFIG GET \(.*\), so whether it "
                                              r"keeps its data at a restart is unknown: .* If it does \(a managed Redis "
                                              r"with persistence\), set REDIS_REQUIRE_PERSISTENCE = false to say so"):  # fmt: skip
            start(instance)
        instance_on(tmp_path, srv, "REDIS_REQUIRE_PERSISTENCE = false\n")
        start(instance).close()


@pytest.mark.redis
def test_records_survive_a_redis_restart_and_a_backup_brings_them_back_after_a_loss(tmp_path: Path) -> None:
    with redis_server() as srv:
        instance = instance_on(tmp_path, srv)
        host = start(instance)
        try:
            token = store(host).create("laptop", ["write"])
            accounts(host).create("ann", PASSWORD, ["write"])
            assert "keeps its data (appendonly yes" in testing.cli(instance, "check").stdout

            srv.stop()
            srv.start()
            assert store(host).verify(token) is not None and accounts(host).verify("ann", PASSWORD) is not None

            saved = tmp_path / "shared.sqlite.backup"
            copied = testing.cli(instance, "backup", str(saved)).stdout
            kinds = "account-sign-ins 1, accounts 1, token 1, token-name 1, token-used 1, web 1"
            assert copied == f"copied 6 records ({kinds}) of Redis (REDIS_URL) to {saved}\n"
            assert saved.stat().st_mode & 0o777 == 0o600
            refused = testing.cli(instance, "backup", str(saved), check=False)  # never over a file
            assert refused.returncode == 1 and f"FILE: {saved} exists" in refused.stderr

            redis_py.Redis.from_url(srv.url).flushall()  # lost, as by a Redis restarted without its data
            assert store(host).verify(token) is None and accounts(host).verify("ann", PASSWORD) is None
            restored = testing.cli(instance, "restore", str(saved)).stdout
            assert restored == f"restored 6 records ({kinds}) from {saved} into Redis (REDIS_URL)\n"
            assert store(host).verify(token) is not None and accounts(host).verify("ann", PASSWORD) is not None
            assert [t["name"] for t in store(host).list()] == ["laptop"]
        finally:
            host.close()
