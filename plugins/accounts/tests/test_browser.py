"""The sign-in page in a real headless Chromium against a real `hostcore serve` (gunicorn, 2 workers).

The ``browser`` fixture comes from hostcore.testing.browser through conftest.py."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By

from hostcore.testing import cli, start_server, stop_process_group


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    instance = tmp_path_factory.mktemp("browser") / "instance"
    init = cli(instance, "init")
    password = re.search(r"admin, password \(shown once; keep it safe\): (\w+)", init.stdout).group(1)
    proc, base, _port, _log = start_server(instance)
    try:
        yield base, password
    finally:
        stop_process_group(proc)


def sign_in(driver, name: str, password: str) -> None:
    driver.find_element(By.ID, "name").clear()
    driver.find_element(By.ID, "name").send_keys(name)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.click_and_wait(driver.find_element(By.CSS_SELECTOR, "main form button[type=submit]:not(.secondary)"))


def test_sign_in_refuses_a_wrong_password_then_signs_in_and_out(browser, served):
    base, password = served
    browser.get(base + "/_/login?next=/_/login")
    assert browser.title == "Sign in"
    assert browser.find_element(By.CSS_SELECTOR, "header.site a.brand").text == "Wiki"  # in the site's frame, its header on top
    # the stylesheet loaded under the page's CSP (the button is styled, not the browser's grey)
    button = browser.find_element(By.CSS_SELECTOR, "main button[type=submit]")
    assert button.value_of_css_property("background-color") == "rgba(31, 95, 191, 1)"
    browser.screenshot("accounts-sign-in")

    sign_in(browser, "admin", "not the password")
    error = browser.find_element(By.CSS_SELECTOR, "[role=alert]")
    assert "do not match" in error.text
    assert browser.find_element(By.ID, "name").get_attribute("value") == "admin"
    assert browser.get_cookie("hostcore_session") is not None  # the CSRF token's session, nobody in it
    browser.screenshot("accounts-sign-in-refused")

    sign_in(browser, "admin", password)
    assert browser.current_url == base + "/_/login"
    assert "signed in as admin." in browser.find_element(By.TAG_NAME, "main").text
    assert not browser.find_elements(By.CSS_SELECTOR, "[role=alert]")
    browser.screenshot("accounts-signed-in")

    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "button.secondary"))
    assert "signed in as" not in browser.find_element(By.TAG_NAME, "main").text
