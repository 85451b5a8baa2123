"""``hostcore``: init, serve, mcp, check, plugins, reindex, and the commands plugins add.

Every command takes ``--instance DIR`` (or ``$HOSTCORE_INSTANCE``, default ``./instance``), before
or after the command name. Plugin commands come from the ``register_commands`` hook of the plugins
the instance's config names, so the instance is found before the command line is resolved.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from hostcore.cli.migration import export_command, import_command
from hostcore.cli.state import backup_command, doctor_command, restore_command
from hostcore.errors import HostcoreError
from hostcore.host.config import CONFIG_FILE, instance_folder, load_config, not_an_instance
from hostcore.host.files import exposed, listing, private_umask
from hostcore.host.plugins import describe, make_plugin_manager

if TYPE_CHECKING:
    from hostcore.host.host import Host

# A command imports what it uses (the app: Flask, the MCP SDK, the tools) when it runs, so that
# `hostcore --help`, and the commands that need no host, start in a fraction of a second.

EMBEDDED_PLUGINS = ["git", "tokens", "tantivy", "docs", "wordllama", "accounts", "oauth", "web"]
EMBEDDED_STORAGE = "git"
EMBEDDED_SEARCH = "tantivy"
EMBEDDED_EMBEDDER = "wordllama"

WELCOME_BODY = "# Welcome\n\nThis wiki is shared by people and AI assistants. Link pages with `[[notes/index]]`.\n"
"""The welcome page ``init`` writes: its wiki-link is an example, in code, so neither a link nor a backlink."""

CONFIG_TEMPLATE = """\
# hostcore instance configuration. Every key can be overridden by a HOSTCORE_<KEY> variable.
PLUGINS = {plugins}
STORAGE = "{storage}"
SEARCH = "{search}"
# Document search by meaning (search_attachments, similar_pages): the embedder, or "" for none.
EMBEDDER = "{embedder}"
# The URL clients use; `hostcore serve` derives it from --bind until it is set here.
# PUBLIC_URL = "https://wiki.example.org"
# ALLOWED_HOSTS = ["wiki.example.org"]
# ALLOWED_ORIGINS = ["https://wiki.example.org"]
# TRUSTED_PROXIES = 1   # behind a reverse proxy that sets X-Forwarded-For
# Secrets: {{"$env" = "NAME"}} reads an environment variable, e.g.
# [PLUGIN_CONFIG.git]
# remote = {{"$env" = "WIKI_BACKUP_REMOTE"}}
"""


class CliContext:
    """What commands receive with ``@click.pass_obj``: the instance folder and a lazy host."""

    def __init__(self, instance: Path | None = None) -> None:
        self.instance = instance or instance_folder()
        self._host: Host | None = None

    def host(self) -> Host:
        from hostcore.app import build_host

        if self._host is None:
            self._host = build_host(self.instance)
        return self._host

    def close(self) -> None:
        """Close the host if a command built one: its background threads (passage indexing,
        catch-up) stop before the interpreter does, so none is cut off mid-call at exit."""
        if self._host is not None:
            host, self._host = self._host, None
            host.close()


def _instance_from_args(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg == "--instance" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--instance="):
            return arg.split("=", 1)[1]
    return None


def _set_instance(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.ensure_object(CliContext).instance = instance_folder(value)


instance_option = click.option(
    "--instance",
    metavar="DIR",
    expose_value=False,
    is_eager=True,
    callback=_set_instance,
    help="instance folder (default: $HOSTCORE_INSTANCE or ./instance)",
)


def _add_instance_option(command: click.Command) -> None:
    if not any(p.name == "instance" for p in command.params):
        instance_option(command)
    for sub in getattr(command, "commands", {}).values():
        _add_instance_option(sub)


class HostcoreGroup(click.Group):
    """Loads plugin commands for the instance named on the command line before resolving it."""

    _loaded: Path | None = None
    _load_error: HostcoreError | str | None = None

    def _load_plugin_commands(self, instance: Path) -> None:
        if self._loaded == instance:
            return
        self._loaded, self._load_error = instance, None
        try:
            config = load_config(instance)
            self._load_error = not_an_instance(instance, config)
            if self._load_error:
                self._loaded = None  # `init` may make it one: look again next time
                return  # and nothing names a plugin yet
            pm = make_plugin_manager(config["PLUGINS"], defaults=False)
        except HostcoreError as exc:
            self._load_error = exc  # built-in commands still work; `hostcore check` explains
            return
        pm.hook.register_commands(cli=self)
        for command in self.commands.values():
            _add_instance_option(command)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        ctx.ensure_object(CliContext)
        named = _instance_from_args(args)
        if named:
            ctx.obj.instance = instance_folder(named)
        self._load_plugin_commands(ctx.obj.instance)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and self._load_error is not None:
            raise click.ClickException(f"{cmd_name!r} may come from a plugin that is not loaded: {self._load_error}")
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands(ctx.ensure_object(CliContext).instance)
        return super().list_commands(ctx)


@click.group(cls=HostcoreGroup)
@instance_option
@click.pass_context
def main(ctx: click.Context) -> None:
    """hostcore: a wiki that people and AI assistants share."""
    private_umask()  # before `init` makes the instance folder and its config
    ctx.call_on_close(ctx.ensure_object(CliContext).close)


@main.command()
@instance_option
@click.pass_obj
def init(obj: CliContext) -> None:
    """Create an instance folder with the embedded defaults and print the first admin token."""
    from hostcore.domain.principal import SYSTEM

    config = obj.instance / CONFIG_FILE
    if config.exists():
        click.echo(f"{obj.instance} is already an instance; keeping it", err=True)
        return
    obj.instance.mkdir(parents=True, exist_ok=True)
    config.write_text(
        CONFIG_TEMPLATE.format(
            plugins="[" + ", ".join(f'"{p}"' for p in EMBEDDED_PLUGINS) + "]",
            storage=EMBEDDED_STORAGE,
            search=EMBEDDED_SEARCH,
            embedder=EMBEDDED_EMBEDDER,
        ),
        "utf-8",
    )
    try:
        host = obj.host()
    except HostcoreError:
        config.unlink()
        raise
    wiki = host.wiki(SYSTEM)
    if host.storage.list():  # a wiki another host serves (one bucket): join it as it is
        click.echo("the storage holds a wiki already; its pages are kept as they are", err=True)
    else:
        wiki.save_namespace("notes", title="Notes", description="Shared notes of people and assistants")
        wiki.save_page(
            "notes/index",
            title="Welcome",
            body=WELCOME_BODY,
        )
    click.echo(f"created {obj.instance}", err=True)
    for line in host.pm.hook.instance_created(host=host):
        if line:
            click.echo(line)


WILDCARD_HOSTS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "[::]": "[::1]"}


def _bind_address(bind: str) -> tuple[str, str] | None:
    """(host, port) of gunicorn's ``--bind`` ``HOST[:PORT]`` (port 8000 when left out); None for a
    unix socket or file descriptor."""
    if bind.startswith(("unix:", "fd://")):
        return None
    host, sep, port = bind.rpartition(":")
    if not sep or bind.endswith("]"):
        host, port = bind, "8000"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"{bind!r}: expected HOST:PORT, e.g. 127.0.0.1:8080", param_hint="--bind")
    return host, port


def public_url_of_bind(bind: str) -> str | None:
    """The URL at which this machine reaches ``--bind``, a wildcard host read as loopback; None for
    a unix socket or file descriptor, which only a proxy in front reaches, under a URL of its own."""
    address = _bind_address(bind)
    if address is None:
        return None
    host, port = address
    return f"http://{WILDCARD_HOSTS.get(host, host)}:{port}"


def _is_loopback(url: str) -> bool:
    name = urlsplit(url).hostname or ""
    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def public_url_warning(bind: str, public_url: str) -> str | None:
    """What to tell an operator whose clients would be sent to the wrong place, if anything."""
    address = _bind_address(bind)
    if address is None or not _is_loopback(public_url):
        return None
    if public_url != public_url_of_bind(bind):
        return (f"PUBLIC_URL is {public_url} (hostcore.toml or HOSTCORE_PUBLIC_URL) but serving on {bind}: 401s, "
                "OAuth metadata and search send clients there; remove it to follow --bind")  # fmt: skip
    if address[0] in WILDCARD_HOSTS:
        return (f"listening on every interface, but PUBLIC_URL is {public_url}: for clients on other machines "
                "set PUBLIC_URL to the URL they use (and ALLOWED_HOSTS to any other name they use)")  # fmt: skip
    return None


@main.command()
@instance_option
@click.option("--bind", default="127.0.0.1:8080", show_default=True, help="HOST:PORT to listen on")
@click.option("--workers", default=2, show_default=True, help="worker processes")
@click.option("--threads", default=16, show_default=True, help="threads per worker")
@click.pass_obj
def serve(obj: CliContext, bind: str, workers: int, threads: int) -> None:
    """Serve the wiki with gunicorn. PUBLIC_URL, unless set, is derived from --bind."""
    from gunicorn.app.base import BaseApplication

    from hostcore.app import build_host, prepare_workers, serving_app
    from hostcore.cli.arenas import cap_malloc_arenas
    from hostcore.cli.workers import SETTINGS as BALANCED

    cap_malloc_arenas()  # before anything allocates in threads: the workers inherit the cap

    instance = obj.instance
    derived = public_url_of_bind(bind)
    # The workers build their apps from this closure after the fork: the derived URL is a default,
    # below the instance file and HOSTCORE_PUBLIC_URL.
    defaults = {"PUBLIC_URL": derived} if derived else None
    host = build_host(instance, start=False, defaults=defaults)  # fail fast, in the foreground, on a bad config
    host.check_shared()  # and on a Redis that would lose accounts and tokens
    prepare_workers(host)
    public_url = host.config["PUBLIC_URL"].rstrip("/")

    class Server(BaseApplication):
        def load_config(self) -> None:
            settings = {
                "bind": bind, "workers": workers, "threads": threads,
                # gunicorn's control socket lives at one per-user path; instances would take it from each other.
                "control_socket_disable": True,
            } | BALANCED  # fmt: skip
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self) -> Any:  # the instance was made private above, before the fork
            return serving_app(instance_path=instance, defaults=defaults, private=False)

    os.environ["HOSTCORE_INSTANCE"] = str(instance)
    click.echo(f"hostcore serving {instance} on {bind} (MCP endpoint: {public_url}/_/mcp)", err=True)
    warning = public_url_warning(bind, public_url)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    Server().run()


@main.command("mcp")
@instance_option
@click.option("--stdio", is_flag=True, help="serve MCP over stdin and stdout (the only transport here; HTTP is `serve`'s)")
@click.option("--token", envvar="HOSTCORE_TOKEN", metavar="TOKEN", help="the token to act as (default: $HOSTCORE_TOKEN)")
@click.pass_obj
def mcp_(obj: CliContext, stdio: bool, token: str | None) -> None:
    """Serve MCP over stdio for one token, beside `serve`, for local clients that start it themselves."""
    if not stdio:
        raise click.UsageError("pass --stdio: this command serves MCP over stdin and stdout (`hostcore serve` serves HTTP)")
    if not token:
        raise click.UsageError("give the token to act as in HOSTCORE_TOKEN (or --token); `hostcore token create` makes one")
    from hostcore.mcp import stdio as stdio_transport

    try:
        stdio_transport.serve(obj.host(), token)
    finally:
        obj.close()


def host_problems(host: Host) -> list[str]:
    """What `check` finds wrong with a host that starts: files other users may read, the shared
    state (damaged, or in a Redis that would lose it). Says what it found of the shared state."""
    finding = host.shared.check()
    click.echo(finding.found)
    problems = [finding.problem] if finding.problem else []
    found = exposed(host.folders)
    if found:
        problems.append(
            f"{len(found)} files or folders other users may read or enter: {listing(found)}; any command that "
            f"starts the wiki (`hostcore serve`) makes them private to their user, or run `chmod -R go= {host.instance_path}`"
        )
    return problems


@main.command()
@instance_option
@click.pass_obj
def check(obj: CliContext) -> None:
    """Validate the instance's config, plugins, files and shared state; name every problem."""
    from hostcore.app import build_host, inspect_instance

    problems: list[str] = []
    try:
        problems += inspect_instance(obj.instance)[2]
        if not problems:
            host = build_host(obj.instance, start=False, private=False)  # the backends open their folders
            try:
                problems += host_problems(host)
            finally:
                host.close()
    except HostcoreError as exc:
        problems += exc.data.get("problems", [str(exc)])
    for problem in problems:
        click.echo(f"problem: {problem}")
    if problems:
        sys.exit(1)
    click.echo(f"{obj.instance}: config OK")


@main.command("plugins")
@instance_option
@click.pass_obj
def plugins_(obj: CliContext) -> None:
    """Show what loaded, from which distribution, and which hooks each plugin implements."""
    pm = make_plugin_manager(load_config(obj.instance)["PLUGINS"])
    for p in describe(pm):
        version = f" {p['version']}" if p["version"] else ""
        click.echo(f"{p['name']}\t{p['distribution']}{version}\t{', '.join(p['hooks'])}")


@main.command("tools")
@instance_option
@click.option("--markdown", is_flag=True, help="print the full reference as Markdown")
@click.pass_obj
def tools_(obj: CliContext, markdown: bool) -> None:
    """List the instance's MCP tools (with --markdown: the tool reference)."""
    from hostcore.app import build_host
    from hostcore.cli.reference import render

    host = build_host(obj.instance, start=False)
    if markdown:
        click.echo(render(host.tools.values(), host.resources.values(), host.prompts.values()), nl=False)
        return
    for t in host.tools.values():
        click.echo(f"{t.name}\t{t.scope}\t{t.title}")


@main.command()
@instance_option
@click.pass_obj
def reindex(obj: CliContext) -> None:
    """Rebuild the search index, the passage index and the plugins' derived indexes (and catch up
    the link graph) from storage.

    Works on any instance whose storage is readable: damaged index files are set aside as the host
    opens them, and the start-up hooks (which would rebuild in the background) do not run.
    """
    from hostcore.app import build_host
    from hostcore.domain.pages import slug_from_path
    from hostcore.indexes.indexer import LINK_GRAPH, PASSAGE_INDEX, SEARCH_INDEX

    host = build_host(obj.instance, start=False)
    indexes = host.indexes
    if host.search is not None:
        total = sum(1 for path in host.storage.list() if slug_from_path(path))
        with click.progressbar(length=total, label="indexing pages", file=sys.stderr) as bar:
            indexed = indexes.reindex(SEARCH_INDEX, bar.update)
        click.echo(f"indexed {indexed} pages")
    indexes.reindex(LINK_GRAPH, empty=False)
    for index in indexes:  # the plugins' own derived indexes
        if index.name not in (SEARCH_INDEX, LINK_GRAPH, PASSAGE_INDEX):
            click.echo(f"rebuilt the {index.name}: {indexes.reindex(index.name)} {index.unit}")
    indexes.reindex(PASSAGE_INDEX)
    passages = host.passages
    embedding = passages.embedder is not None  # else attachments' words only
    label = "embedding passages" if embedding else "indexing attachments' passages"
    with click.progressbar(length=passages.pending(), label=label, file=sys.stderr) as bar:
        documents = passages.catch_up(progress=bar.update)
    click.echo(f"embedded the passages of {documents} pages and attachments" if embedding else f"indexed the passages of {documents} attachments")
    host.close()


@main.command()
@instance_option
@click.pass_obj
def status(obj: CliContext) -> None:
    """Show the state of the derived indexes: the passage index's documents, passages and pending."""
    from hostcore.app import build_host

    host = build_host(obj.instance, start=False)
    try:
        state = host.indexes.status("passage index")
        by = f"embedder {state['embedder']}" if state["embedder"] else "keyword only (EMBEDDER is empty)"
        pace = f", indexing about {state['per_second']:.0f} a second" if state["pending"] and state["per_second"] else ""
        click.echo(f"passages: {by}, {state['documents']} documents indexed ({state['passages']} passages), {state['pending']} pending{pace}")
    finally:
        host.close()


for _command in (export_command, import_command, backup_command, restore_command, doctor_command):
    _add_instance_option(_command)
    main.add_command(_command)


def run() -> None:
    """Entry point: turn hostcore errors into one clear line and exit status 1."""
    try:
        main(standalone_mode=True)
    except HostcoreError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
