import pytest

from hostcore.testing.s3 import s3_server

__all__ = ["s3_server"]


@pytest.fixture(autouse=True)
def _s3(s3_server):
    """Every test here talks to the session's moto server."""
    return s3_server
