"""The test tiers for every test of the repository (hostcore's and the plugins'): the markers,
``--fast`` and stopping whatever servers a run leaves (see hostcore/testing/tiers.py)."""

import dataclasses

import pytest

pytest_plugins = ["hostcore.testing.tiers"]


@pytest.fixture(autouse=True, scope="session")
def cheap_password_hashes():
    """Argon2id at its cheapest in this process, as Django's test settings choose a fast hasher:
    the real profile (``hostcore_accounts.PROFILE``, which a test checks) costs each sign-in of the
    throttling tests most of a second on two cores, by design. Servers the tests start in other
    processes (``hostcore serve``) hash with the real one."""
    try:
        import hostcore_accounts
        from argon2 import PasswordHasher, profiles
    except ImportError:  # the accounts plugin is not installed: nothing hashes passwords
        yield
        return
    real = hostcore_accounts._hasher
    cheapest = dataclasses.replace(profiles.CHEAPEST, salt_len=16, hash_len=16)  # its 4-byte hash would collide
    hostcore_accounts._hasher = PasswordHasher.from_parameters(cheapest)
    hostcore_accounts._dummy_hash = None
    yield
    hostcore_accounts._hasher = real
    hostcore_accounts._dummy_hash = None
