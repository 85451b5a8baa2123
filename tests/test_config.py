from collections.abc import Mapping
from typing import ClassVar

import pytest

from hostcore import SYSTEM, ConfigError, Setting, StartupError, create_app, hookimpl, tool
from hostcore.host.config import env_overrides, load_config


def test_file_env_and_secrets(tmp_path, monkeypatch):
    (tmp_path / "hostcore.toml").write_text(
        'PLUGINS = ["fs"]\nTITLE = "From file"\n[PLUGIN_CONFIG.fs]\npath = "data"\nsecret = {"$env" = "HC_TEST_SECRET"}\n'
    )
    monkeypatch.setenv("HC_TEST_SECRET", "s3cret")
    monkeypatch.setenv("HOSTCORE_TITLE", "From env")
    monkeypatch.setenv("HOSTCORE_PLUGIN_CONFIG__FS__PATH", "pages")
    monkeypatch.setenv("HOSTCORE_MAX_REQUEST_BYTES", "4194304")
    config = load_config(tmp_path)
    assert config["TITLE"] == "From env"
    assert config["MAX_REQUEST_BYTES"] == 4194304
    assert config["PLUGIN_CONFIG"]["fs"] == {"path": "pages", "secret": "s3cret"}


def test_missing_secret_names_variable(tmp_path):
    (tmp_path / "hostcore.toml").write_text('PLUGINS = ["fs"]\n[PLUGIN_CONFIG.fs]\nkey = {"$env" = "HC_NOT_SET_X"}\n')
    with pytest.raises(ConfigError, match="PLUGIN_CONFIG.fs.key: environment variable HC_NOT_SET_X is not set"):
        load_config(tmp_path, environ={})


def test_every_problem_is_named(tmp_path):
    (tmp_path / "hostcore.toml").write_text(
        'PLUGINS = "fs"\nPUBLIC_URL = "wiki.example"\nBOGUS = 1\nMAX_REQUEST_BYTES = 10\nLOG_LEVEL = "LOUD"\n'
    )
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, environ={})
    message = str(err.value)
    for fragment in ("PLUGINS: expected list", "PUBLIC_URL", "BOGUS: hostcore has no setting 'BOGUS'", "MAX_REQUEST_BYTES", "LOG_LEVEL: 'LOUD'"):
        assert fragment in message


def test_env_nesting():
    assert env_overrides({"HOSTCORE_PLUGINS": '["git"]', "HOSTCORE_PLUGIN_CONFIG__GIT__REMOTE": "/x", "OTHER": "1"}) == {
        "PLUGINS": ["git"],
        "PLUGIN_CONFIG": {"git": {"remote": "/x"}},
    }


def test_unknown_plugin_stops_startup(tmp_path):
    with pytest.raises(StartupError, match="no plugin named 'gti' is installed"):
        create_app({"PLUGINS": ["gti"]}, instance_path=tmp_path)


def test_misspelled_hook_stops_startup(tmp_path):
    class Typo:
        @hookimpl
        def register_tool(self, register, host):  # missing "s"
            pass

    with pytest.raises(StartupError, match="register_tool.*check the spelling"):
        create_app({"PLUGINS": ["fs"]}, instance_path=tmp_path, plugins=[Typo()])


def test_duplicate_tool_stops_startup(tmp_path):
    @tool(read_only=True, name="read_page")
    def clash(slug: str) -> dict:
        """A second read_page."""
        return {}

    class Dup:
        @hookimpl
        def register_tools(self, register, host):
            register(clash)

    with pytest.raises(StartupError, match="two plugins register a tool named 'read_page'"):
        create_app({"PLUGINS": ["fs"]}, instance_path=tmp_path, plugins=[Dup()])


def test_duplicate_storage_backend_stops_startup(tmp_path):
    from hostcore_fs import FileStorage

    class Again:
        @hookimpl
        def register_storage_backends(self, register):
            register(FileStorage)

    with pytest.raises(StartupError, match="storage backend named 'fs'"):
        create_app({"PLUGINS": ["fs"]}, instance_path=tmp_path, plugins=[Again()])


def test_unknown_storage_names_loaded_ones(tmp_path):
    with pytest.raises(StartupError, match="STORAGE: no storage backend named 's3'.*loaded: fs"):
        create_app({"PLUGINS": ["fs"], "STORAGE": "s3"}, instance_path=tmp_path)


def test_nothing_loads_merely_because_installed(tmp_path):
    app = create_app({"PLUGINS": ["fs"]}, instance_path=tmp_path)
    host = app.extensions["hostcore"]
    assert not host.pm.has_plugin("tokens")
    assert host.pm.hook.authenticate(request=None, host=host) is None


def test_search_backend_registration_is_checked(tmp_path):
    from hostcore import SearchBackend, SearchResults

    class Grep(SearchBackend):
        name = "grep"

        def update(self, docs=(), removed=()):
            pass

        def search(self, query, *, namespaces, offset=0, limit=20):
            return SearchResults([], False)

        def hashes(self):
            return {}

    class Twice:
        @hookimpl
        def register_search_backends(self, register):
            register(Grep)
            register(Grep)

    with pytest.raises(StartupError, match="search backend named 'grep'"):
        create_app({"PLUGINS": ["fs"], "SEARCH": "grep"}, instance_path=tmp_path, plugins=[Twice()])

    class Once:
        @hookimpl
        def register_search_backends(self, register):
            register(Grep)

    app = create_app({"PLUGINS": ["fs"], "SEARCH": "grep"}, instance_path=tmp_path, plugins=[Once()])
    assert isinstance(app.extensions["hostcore"].search, Grep)


def test_a_derived_default_yields_to_the_file_and_the_environment(tmp_path):
    """``hostcore serve`` hands the PUBLIC_URL it derives from --bind in as a default: an operator's
    value in hostcore.toml or HOSTCORE_PUBLIC_URL still wins."""
    derived = {"PUBLIC_URL": "http://127.0.0.1:9123"}
    assert load_config(tmp_path, environ={}, defaults=derived)["PUBLIC_URL"] == "http://127.0.0.1:9123"
    assert load_config(tmp_path, environ={})["PUBLIC_URL"] == "http://127.0.0.1:8080"
    env = {"HOSTCORE_PUBLIC_URL": "https://env.example.org"}
    assert load_config(tmp_path, environ=env, defaults=derived)["PUBLIC_URL"] == "https://env.example.org"
    (tmp_path / "hostcore.toml").write_text('PUBLIC_URL = "https://wiki.example.org"\n')
    assert load_config(tmp_path, environ={}, defaults=derived)["PUBLIC_URL"] == "https://wiki.example.org"
def test_backend_settings_are_checked_at_startup(tmp_path):
    config = {"PLUGINS": ["fs", "git"], "PLUGIN_CONFIG": {"git": {"remtoe": "/x", "fsync": "yes", "path": "repo"}}}
    with pytest.raises(StartupError) as err:
        create_app(config, instance_path=tmp_path)
    assert err.value.data["problems"] == [
        "PLUGIN_CONFIG.git.remtoe: the git backend has no setting 'remtoe'; did you mean 'remote'? "
        "its settings: fsync, path, remote",
        "PLUGIN_CONFIG.git.fsync: expected bool, got str 'yes'",
    ]
    assert not (tmp_path / "wiki").exists(), "nothing is built from a config with problems"


@pytest.mark.parametrize("plugin, kind", [("fs", "STORAGE"), ("git", "STORAGE"), ("sqlite", "SEARCH"), ("tantivy", "SEARCH")])
def test_every_first_party_backend_declares_its_settings(tmp_path, plugin, kind):
    config = {"PLUGINS": ["fs", plugin], kind: plugin, "PLUGIN_CONFIG": {plugin: {"bogus": 1}}}
    with pytest.raises(StartupError, match=rf"PLUGIN_CONFIG\.{plugin}\.bogus: the {plugin} backend has no setting 'bogus'"):
        create_app(config, instance_path=tmp_path)


class Wordstats:
    """A plugin named ``wordstats`` whose storage backend is named ``wsdir``."""

    __name__ = "wordstats"

    @hookimpl
    def register_storage_backends(self, register):
        from hostcore_fs import FileStorage

        class DirectoryStorage(FileStorage):
            name = "wsdir"
            settings: ClassVar[Mapping[str, Setting]] = {"fsync": Setting(bool, True, "flush each file before it is acknowledged")}

        register(DirectoryStorage)


def test_a_backend_is_configured_by_its_own_name_not_its_plugins(tmp_path):
    """The table of a backend is named after the backend, as STORAGE names it, even when its plugin
    has another name: its path applies, its settings reach it, a misspelt key is refused."""
    config = {"PLUGINS": ["fs"], "STORAGE": "wsdir", "PLUGIN_CONFIG": {"wsdir": {"path": "pages", "fsync": False}}}
    host = create_app(config, instance_path=tmp_path / "a", plugins=[Wordstats()]).extensions["hostcore"]
    try:
        host.wiki(SYSTEM).save_namespace("notes")
        assert (tmp_path / "a" / "pages" / "notes" / ".namespace.yaml").is_file()
        assert host.storage.config == {"fsync": False}
    finally:
        host.close()
    misspelt = {**config, "PLUGIN_CONFIG": {"wsdir": {"fsnyc": False}}}
    with pytest.raises(StartupError) as err:
        create_app(misspelt, instance_path=tmp_path / "b", plugins=[Wordstats()])
    assert err.value.data["problems"] == [
        "PLUGIN_CONFIG.wsdir.fsnyc: the wsdir backend has no setting 'fsnyc'; did you mean 'fsync'? its settings: fsync, path"
    ]


def test_a_table_of_nobody_is_refused(tmp_path):
    """A table must name a plugin in PLUGINS or a loaded backend; the message says which fix applies."""
    config = {"PLUGINS": ["fs"], "PLUGIN_CONFIG": {"fs": {}, "wsdri": {"path": "x"}, "git": {"remote": "/x"}}}
    with pytest.raises(StartupError) as err:
        create_app(config, instance_path=tmp_path, plugins=[Wordstats()])
    assert err.value.data["problems"] == [
        "PLUGIN_CONFIG.wsdri: no plugin in PLUGINS and no loaded backend is named 'wsdri' (backends: fs, wsdir); "
        "name the table after its plugin, or after its backend (the name STORAGE, SEARCH or EMBEDDER takes), or remove it",
        "PLUGIN_CONFIG.git: plugin 'git' is not in PLUGINS; add it or remove this table",
    ]


def test_a_backend_gets_its_declared_defaults(tmp_path):
    from hostcore_git import GitStorage

    storage = GitStorage(tmp_path / "repo")
    assert storage.config == {"remote": None, "fsync": True}
    storage.close()
    with pytest.raises(ConfigError, match="expected bool, got int 1"):
        GitStorage(tmp_path / "repo", {"fsync": 1})


def test_env_settings_are_named_by_their_variable(tmp_path):
    environ = {"HOSTCORE_SEACRH": "sqlite", "HOSTCORE_PLUGIN_CONFIG": '{"fs": 3}', "HOSTCORE_TITLE": "ok"}
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, {"PLUGINS": ["fs"]}, environ=environ)
    from hostcore.host.config import SETTINGS

    assert "ALLOWED_HOSTS" in SETTINGS and "TITLE" in SETTINGS
    assert err.value.data["problems"] == [
        "HOSTCORE_SEACRH: hostcore has no setting 'SEACRH'; did you mean 'SEARCH'? its settings: "
        + ", ".join(sorted(SETTINGS)),
        "HOSTCORE_PLUGIN_CONFIG (fs): must be a table of settings",
    ]


def test_authorization_servers_is_a_setting(tmp_path):
    app = create_app({"PLUGINS": ["fs"], "AUTHORIZATION_SERVERS": ["https://auth.example"]}, instance_path=tmp_path)
    metadata = app.test_client().get("/.well-known/oauth-protected-resource/_/mcp").json
    assert metadata["authorization_servers"] == ["https://auth.example"]
    with pytest.raises(ConfigError, match="AUTHORIZATION_SERVERS: 'auth.example' must start with http:// or https://"):
        load_config(tmp_path, {"AUTHORIZATION_SERVERS": ["auth.example"]}, environ={})


def test_trusted_proxies_is_a_small_count(tmp_path):
    for bad in (-1, 6, "1"):
        with pytest.raises(ConfigError, match="TRUSTED_PROXIES"):
            create_app({"PLUGINS": ["fs"], "STORAGE": "fs", "TRUSTED_PROXIES": bad}, instance_path=tmp_path)
