from hostcore.testing.browser import browser  # noqa: F401  (a headless Chromium per test)
