from pathlib import Path

from hostcore.testing import StorageConformance
from hostcore_git import GitStorage


class TestGitStorage(StorageConformance):
    @staticmethod
    def make_storage(root: Path) -> GitStorage:
        return GitStorage(root)
