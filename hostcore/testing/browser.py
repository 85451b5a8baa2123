"""A real headless Chromium for tests of people's pages (Debian's ``chromium`` and ``chromium-driver``).

Use the ``browser`` fixture (import it into your conftest.py) or :func:`chromium`::

    # conftest.py
    from hostcore.testing.browser import browser  # noqa: F401

    # test_pages.py
    def test_sign_in(browser, server):
        browser.get(server.base + "/_/login")
        browser.find_element(By.ID, "name").send_keys("alice")
        browser.screenshot("sign-in")   # test-artifacts/sign-in.png

Screenshots go to ``test-artifacts/`` under the current folder (``$HOSTCORE_TEST_ARTIFACTS``
overrides it); look at them. Selenium is given the Debian driver's path, so it never downloads one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from hostcore.testing.servers import check_tier

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver",)
WINDOW = (1024, 768)


def artifacts() -> Path:
    """The folder screenshots go to (made if missing)."""
    folder = Path(os.environ.get("HOSTCORE_TEST_ARTIFACTS", "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _find(names: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return next((p for p in extra if Path(p).exists()), None)


def _gone(element: Any) -> bool:
    """Whether ``element`` no longer belongs to the page shown. Selenium's ``staleness_of`` only
    knows the stale-reference error; while the next page replaces the document, chromedriver may
    answer "Node with given id does not belong to the document" instead (it failed a browser test
    under load), which says the same."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return True
        raise
    return False


class Browser(webdriver.Chrome):
    """A Chrome WebDriver with :meth:`screenshot` and :meth:`click_and_wait`."""

    def click_and_wait(self, element: Any, timeout: float = 15) -> None:
        """Click ``element`` (a submit button, a link) and wait until the next page has replaced this one."""
        html = self.find_element(By.TAG_NAME, "html")
        element.click()
        WebDriverWait(self, timeout).until(lambda _: _gone(html))
        WebDriverWait(self, timeout).until(lambda d: d.execute_script("return document.readyState") == "complete")

    def screenshot(self, name: str) -> Path:
        """Save the current page as ``test-artifacts/<name>.png`` and return its path."""
        path = artifacts() / f"{name}.png"
        if not self.save_screenshot(str(path)):
            raise AssertionError(f"could not save the screenshot {path}")
        return path


@contextmanager
def chromium(width: int = WINDOW[0], height: int = WINDOW[1]) -> Iterator[Browser]:
    """A headless Chromium, quit on exit. Fails (never skips) with the packages to install when it is missing."""
    check_tier("browser", "a headless Chromium")
    binary = _find(BROWSERS)
    driver = _find(DRIVERS, ("/usr/lib/chromium/chromedriver",))
    if binary is None or driver is None:
        pytest.fail("the browser tests need Chromium and its driver: run `make servers` as root, or "
                    "`apt-get install chromium chromium-driver`")  # fmt: skip
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", "--no-first-run", "--disable-extensions"):  # fmt: skip
        options.add_argument(arg)
    # Chromium leaves its singleton socket folder (org.chromium.Chromium.*) in TMPDIR after it quits:
    # give it a folder of its own, removed afterwards, so test runs leave nothing in /tmp.
    with tempfile.TemporaryDirectory(prefix="hostcore-chromium-") as scratch:
        service = Service(executable_path=driver, env={**os.environ, "TMPDIR": scratch})
        session = Browser(options=options, service=service)
        session.set_page_load_timeout(30)
        try:
            yield session
        finally:
            session.quit()


@pytest.fixture
def browser() -> Iterator[Any]:
    """A fresh headless Chromium per test (cookies start empty)."""
    with chromium() as session:
        yield session
