import os
from pathlib import Path

from hostcore.testing import StorageConformance
from hostcore.testing.s3 import prefix_for
from hostcore_s3 import S3Storage


def s3_storage(root: Path, **config: object) -> S3Storage:
    """An S3Storage on the test server's bucket, under a prefix of the test's own."""
    settings = {"bucket": os.environ["TEST_S3_BUCKET"], "endpoint_url": os.environ["TEST_S3_ENDPOINT"], "prefix": prefix_for(root)}
    return S3Storage(root, {**settings, **config})


class TestS3Storage(StorageConformance):
    @staticmethod
    def make_storage(root: Path) -> S3Storage:
        return s3_storage(root)
