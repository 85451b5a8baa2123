from pathlib import Path

from hostcore_fs import FileStorage

from hostcore.testing import StorageConformance


class TestFileStorage(StorageConformance):
    @staticmethod
    def make_storage(root: Path) -> FileStorage:
        return FileStorage(root)
