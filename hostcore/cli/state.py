"""``hostcore backup``, ``restore`` and ``doctor``: the shared state (accounts, tokens, OAuth
clients and grants, the session key), which exists nowhere but ``shared.sqlite`` or Redis."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from hostcore.host.backups import backup, repair, restore
from hostcore.host.shared import SqliteShared
from hostcore.seams.shared import SharedState

T = TypeVar("T")


def _by_kind(counts: Counter[str]) -> str:
    return f"{sum(counts.values())} records" + (f" ({', '.join(f'{k} {n}' for k, n in sorted(counts.items()))})" if counts else "")


def _on_shared(obj: Any, action: Callable[[SharedState], T]) -> tuple[T, str]:
    """``action``'s result on the instance's shared state (the host built, not started, then
    closed), and where that state lives."""
    from hostcore.app import build_host

    host = build_host(obj.instance, start=False)
    try:
        return action(host.shared), str(host.shared.path) if isinstance(host.shared, SqliteShared) else "Redis (REDIS_URL)"
    finally:
        host.close()


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_obj
def backup_command(obj: Any, file: Path) -> None:
    """Copy the shared state (accounts, tokens, OAuth clients and grants) to FILE, a new file.

    Consistent while the wiki serves; FILE is private to you (it holds password hashes and token
    digests). `hostcore restore FILE` puts the records back, in this home or the other.
    """
    counts, home = _on_shared(obj, lambda shared: backup(shared, file))
    click.echo(f"copied {_by_kind(counts)} of {home} to {file}")


@click.command("restore")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_obj
def restore_command(obj: Any, file: Path) -> None:
    """Write the records of FILE (made by `hostcore backup`) into the shared state, in one step.

    A record of FILE replaces the one of the same kind and key; others are kept; expired ones are
    skipped. Safe while the wiki serves.
    """
    counts, home = _on_shared(obj, lambda shared: restore(shared, file))
    click.echo(f"restored {_by_kind(counts)} from {file} into {home}")


@click.command("doctor")
@click.pass_obj
def doctor_command(obj: Any) -> None:
    """Check the shared state and repair a damaged shared.sqlite (stop the server first).

    What SQLite can still read is moved into a new file; the damaged one is kept beside it,
    renamed. Records that could not be read are named by kind: restore them from a backup
    (`hostcore restore FILE`) or make them again.
    """
    from hostcore.app import build_host

    host = build_host(obj.instance, start=False)
    try:
        if not isinstance(host.shared, SqliteShared):
            finding = host.shared.check()
            click.echo(finding.found)
            click.echo("nothing to repair on this machine: the shared state is in Redis (`hostcore backup` copies it)")
            if finding.problem:
                click.echo(f"problem: {finding.problem}")
                sys.exit(1)
            return
        done = repair(host.shared)
    finally:
        host.close()
    if done.problem is None:
        click.echo(f"{host.shared.path}: sound, nothing to repair")
        return
    click.echo(f"{host.shared.path} was damaged ({done.problem})")
    click.echo(f"kept {_by_kind(done.kept)} in a new {host.shared.path.name}; the damaged file is {done.aside}")
    if done.unread:
        click.echo(
            f"some records could not be read ({'; '.join(done.unread)}) and are lost: restore them from a backup "
            "(`hostcore restore FILE`), or make them again (`hostcore token create`, `hostcore user create`; "
            "assistants connected with OAuth connect again)"
        )
