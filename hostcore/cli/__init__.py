"""The command-line adapter: ``hostcore init|serve|check|token|reindex|...`` (click)."""

from hostcore.cli.commands import main, run

__all__ = ["main", "run"]
