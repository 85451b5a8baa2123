"""The test tiers for every test of the repository (hostcore's and the plugins'): the markers,
``--fast`` and stopping whatever servers a run leaves (see hostcore/testing/tiers.py)."""

pytest_plugins = ["hostcore.testing.tiers"]
