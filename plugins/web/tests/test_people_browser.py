"""The admin's people pages (the accounts plugin's, in the site's frame) in a real headless
Chromium against a real ``hostcore serve``: an account created and changed with the keyboard
alone, disabled and enabled, its password reset, at a desktop's and a phone's width. Screenshots
go to test-artifacts/web-people*.png (docs/web.md shows them)."""

from __future__ import annotations

from hostcore_accounts import accounts
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from hostcore import create_app
from hostcore.testing import cli, create_token

from .editing_in_chromium import as_phone
from .test_browser import Elsewhere, mcp, served, sign_in  # noqa: F401  (the fixture)
from .test_namespace_admin_browser import crumbs, fits, keys, submit_with_enter, tab_to


def account(served, name):  # noqa: F811
    app = create_app(instance_path=served.instance)
    try:
        return accounts(app.extensions["hostcore"]).get(name)
    finally:
        app.extensions["hostcore"].close()


def test_an_admin_creates_and_changes_an_account_with_the_keyboard_alone(browser, served):  # noqa: F811
    sign_in(browser, served, "/")
    browser.find_element(By.LINK_TEXT, "People").send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.endswith("/_/people"))
    assert browser.find_element(By.CSS_SELECTOR, "header.site") and crumbs(browser) == ["Wiki", "People"]
    tab_to(browser, "name")
    keys(browser, "nina")
    tab_to(browser, "scope")  # read
    keys(browser, Keys.SPACE)
    tab_to(browser, "namespaces")
    keys(browser, "notes")
    tab_to(browser, "password")
    keys(browser, "a long password")
    tab_to(browser, "repeat_password")
    keys(browser, "a long password")
    submit_with_enter(browser)
    assert "Account nina created" in browser.find_element(By.ID, "done").text
    record = account(served, "nina")
    assert (record["scopes"], record["namespaces"], record["disabled"]) == (["read", "write"], ["notes"], False)
    browser.screenshot("web-people")
    browser.find_element(By.LINK_TEXT, "nina").send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.endswith("/_/people/nina"))
    assert crumbs(browser) == ["Wiki", "Account nina"]
    field = tab_to(browser, "namespaces")
    field.send_keys(Keys.CONTROL, "a")
    keys(browser, Keys.DELETE)
    submit_with_enter(browser)
    assert "Access changed" in browser.find_element(By.ID, "done").text
    assert account(served, "nina")["namespaces"] is None
    tab_to(browser, "Disable nina")
    submit_with_enter(browser)
    assert "every session of theirs ended" in browser.find_element(By.ID, "done").text and account(served, "nina")["disabled"]
    browser.screenshot("web-person")
    tab_to(browser, "Enable nina")
    submit_with_enter(browser)
    assert account(served, "nina")["disabled"] is False
    tab_to(browser, "password")
    keys(browser, "a new long password")
    tab_to(browser, "repeat_password")
    keys(browser, "a new long passwort")
    submit_with_enter(browser)
    assert "differ" in browser.find_element(By.ID, "person-error").text
    assert browser.switch_to.active_element.get_attribute("id") == "reset-repeat"  # the field at fault has the focus
    tab_to(browser, "password")
    keys(browser, "a new long password")
    tab_to(browser, "repeat_password")
    keys(browser, "a new long password")
    submit_with_enter(browser)
    assert "Password set" in browser.find_element(By.ID, "done").text


def test_the_people_pages_at_a_phones_width(browser, served):  # noqa: F811
    as_phone(browser)
    sign_in(browser, served, "/_/people")
    assert fits(browser) and browser.find_element(By.ID, "account-name").is_displayed()
    browser.screenshot("web-phone-people")
    browser.get(served.base + "/_/people/admin")
    assert fits(browser) and browser.find_element(By.ID, "person-ns").is_displayed()
    browser.find_element(By.XPATH, "//button[text()='Disable admin']").click()
    WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, "person-error"))
    assert "last active admin" in browser.find_element(By.ID, "person-error").text


def test_a_persons_own_account_pages_at_a_phones_width_with_the_keyboard_alone(browser, served):  # noqa: F811
    password = "the first password of quinn"
    cli(served.instance, "user", "create", "quinn", "--scope", "write", "--password-stdin", input=password + "\n")
    other = Elsewhere(served.base).sign_in("quinn", password)
    as_phone(browser)
    browser.get(f"{served.base}/_/login?next=/_/account/sessions")
    browser.find_element(By.ID, "name").send_keys("quinn")
    browser.find_element(By.ID, "password").send_keys(password, Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.endswith("/_/account/sessions"))
    assert fits(browser) and len(browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")) == 2
    assert crumbs(browser) == ["Wiki", "Sessions"]
    browser.screenshot("web-phone-sessions")
    tab_to(browser, "Sign out every other session")
    submit_with_enter(browser)
    assert "Signed out 1 other session" in browser.find_element(By.ID, "done").text and not other.signed_in()
    browser.get(served.base + "/_/account/tokens")
    assert fits(browser)
    tab_to(browser, "name")
    keys(browser, "quinn-phone", Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, "new-token"))
    assert fits(browser) and browser.find_element(By.ID, "new-token").is_displayed()
    browser.screenshot("web-phone-tokens")
    browser.get(served.base + "/_/account/password")
    assert fits(browser)
    tab_to(browser, "current_password")
    keys(browser, password)
    tab_to(browser, "new_password")
    keys(browser, "the second password of quinn")
    tab_to(browser, "repeat_password")
    keys(browser, "the second password of quinn")
    submit_with_enter(browser)
    assert "Your password is changed" in browser.find_element(By.ID, "done").text
    assert Elsewhere(served.base).sign_in("quinn", "the second password of quinn").signed_in()


def test_an_admin_revokes_a_token_made_on_the_command_line_with_the_keyboard(browser, served):  # noqa: F811
    made = create_token(served.instance, "nightly-job", ["read"])
    assert mcp(served.base, made, "list_namespaces", {})[0] == 200
    as_phone(browser)
    sign_in(browser, served, "/_/account/tokens")
    row = browser.find_element(By.XPATH, "//tr[td[1][text()='nightly-job']]")
    assert "none (command line)" in row.text and fits(browser)
    tab_to(browser, "Revoke nightly-job")
    submit_with_enter(browser)
    assert not browser.find_elements(By.XPATH, "//tr[td[1][text()='nightly-job']]")
    assert mcp(served.base, made, "list_namespaces", {})[0] == 401
