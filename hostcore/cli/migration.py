"""``hostcore export`` and ``hostcore import``: move a wiki between storage backends.

Both work on the storage an instance's config names (``--instance``), so a wiki moves from git to
S3 by exporting from the old instance and importing into a new one whose ``hostcore.toml`` names
the other backend. The logic and the format are :mod:`hostcore.service.migration`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hostcore.errors import HostcoreError
from hostcore.host.config import CONFIG_FILE

if TYPE_CHECKING:
    from hostcore.cli.commands import CliContext
    from hostcore.host.host import Host

STATE_FILE = "import-state.json"  # in the target instance's folder: how far an import got


class ProgressBar:
    """A progress bar on stderr per phase of an export or import."""

    def __init__(self) -> None:
        self._bar: Any = None

    def phase(self, label: str, total: int) -> None:
        self.close()
        self._bar = click.progressbar(length=max(total, 1), label=label, file=sys.stderr)
        self._bar.__enter__()

    def advance(self, count: int = 1) -> None:
        if self._bar is not None and count:
            self._bar.update(count)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@contextmanager
def _storage_host(obj: CliContext) -> Iterator[tuple[Host, ProgressBar]]:
    """The instance's host (its start-up hooks not run) and a progress bar; hostcore errors as
    click errors."""
    if not (obj.instance / CONFIG_FILE).exists():
        raise click.ClickException(
            f"{obj.instance} has no {CONFIG_FILE}; name the instance with --instance (for a new target, write its "
            f"{CONFIG_FILE} naming STORAGE first)"
        )
    from hostcore.app import build_host  # imported when a command runs: `hostcore --help` needs none of it

    bar = ProgressBar()
    try:
        host = build_host(obj.instance, start=False)
        try:
            yield host, bar
        finally:
            bar.close()
            host.close()
    except HostcoreError as exc:
        raise click.ClickException(str(exc)) from None


@click.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.pass_obj
def export_command(obj: CliContext, folder: Path) -> None:
    """Write the wiki (every file, and the history its storage keeps) to FOLDER, a new folder.

    Only reads: the wiki may keep serving. `hostcore import` reads FOLDER into another instance.
    """
    from hostcore.service.migration import export_wiki

    with _storage_host(obj) as (host, bar):
        done = export_wiki(host.storage, folder, bar)
    click.echo(
        f"exported {done['files']} files and {done['revisions']} revisions ({done['blobs']} versions, "
        f"{done['bytes']} bytes) from {host.storage.name} to {folder}; history: {done['history']}"
    )


@click.command("import")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="import into a storage that holds files: they are replaced (its history is kept)")
@click.pass_obj
def import_command(obj: CliContext, folder: Path, replace: bool) -> None:
    """Read an export FOLDER into the instance's storage, which must be empty (see --replace).

    Checks the whole export first; replays its history change by change where the storage keeps
    history. Interrupted, it resumes when run again on the same export.
    """
    from hostcore.service.migration import import_wiki

    state = obj.instance / STATE_FILE
    with _storage_host(obj) as (host, bar):
        done = import_wiki(host.storage, folder, state, replace=replace, progress=bar)
    resumed = f" (resumed after {done['resumed_at']})" if done["resumed_at"] else ""
    click.echo(
        f"imported {done['files']} files and {done['replayed']} of {done['revisions']} revisions{resumed} into "
        f"{host.storage.name}; history: {done['history']}"
    )
