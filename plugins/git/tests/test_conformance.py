from pathlib import Path

from hostcore_git import GitStorage

from hostcore.testing import StorageConformance


class TestGitStorage(StorageConformance):
    @staticmethod
    def make_storage(root: Path) -> GitStorage:
        return GitStorage(root)
