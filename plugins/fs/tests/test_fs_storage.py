from pathlib import Path

from hostcore.testing import StorageConformance
from hostcore_fs import FileStorage


class TestFileStorage(StorageConformance):
    @staticmethod
    def make_storage(root: Path) -> FileStorage:
        return FileStorage(root)
