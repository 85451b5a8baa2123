"""The namespace pages of an admin in a real headless Chromium against a real ``hostcore serve``:
create with the keyboard alone, an error beside its field, a lost race, delete after the page
naming what goes and restore, at a desktop's and a phone's width. Screenshots go to
test-artifacts/web-namespace*.png (docs/web.md shows them)."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from .editing_in_chromium import as_phone
from .test_browser import mcp, served, sign_in  # noqa: F401  (the fixture)


def tab_to(browser: Any, name: str, limit: int = 80) -> Any:
    """Press Tab until the field (or button) named ``name`` (its name, else its aria-label, else
    its text) has the focus; return it."""
    seen = []
    for _ in range(limit):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        active = browser.switch_to.active_element
        label = active.get_attribute("name") or active.get_attribute("aria-label") or active.text or active.tag_name
        seen.append(label)
        if label == name:
            return active
    raise AssertionError(f"Tab never reached {name}: {seen}")


def keys(browser: Any, *typed: str) -> None:
    ActionChains(browser).send_keys(*typed).perform()


def submit_with_enter(browser: Any) -> None:
    html = browser.find_element(By.TAG_NAME, "html")
    keys(browser, Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda _: html != browser.find_element(By.TAG_NAME, "html"))
    WebDriverWait(browser, 15).until(lambda d: d.execute_script("return document.readyState") == "complete")


def crumbs(browser: Any) -> list[str]:
    return [li.text for li in browser.find_elements(By.CSS_SELECTOR, "nav.crumbs li")]


def fits(browser: Any) -> bool:
    """Nothing of the page reaches past the screen's right edge (no sideways scrolling, nothing
    cut off by a container): every visible element of ``main`` ends within the screen."""
    return bool(browser.execute_script("""
        return document.documentElement.scrollWidth <= innerWidth + 1 &&
            [...document.querySelectorAll("main *")].every(e => {
                const box = e.getBoundingClientRect();
                return box.width === 0 || box.right <= innerWidth + 1;
            });
    """))


def test_create_a_namespace_with_the_keyboard_alone(browser, served):  # noqa: F811
    sign_in(browser, served, "/")
    browser.find_element(By.LINK_TEXT, "New namespace").send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.endswith("/_/namespaces/new"))
    assert browser.find_element(By.CSS_SELECTOR, "header.site")
    assert crumbs(browser) == ["Wiki", "New namespace"]
    tab_to(browser, "name")
    keys(browser, "handbook")
    tab_to(browser, "title")
    keys(browser, "Handbook")
    tab_to(browser, "public")
    keys(browser, Keys.SPACE)
    tab_to(browser, "skin")
    keys(browser, "j")  # type-ahead picks "journal"
    tab_to(browser, "tree")
    keys(browser, "start", Keys.ENTER, "../escape")
    tab_to(browser, "Create namespace")
    submit_with_enter(browser)
    error = browser.find_element(By.ID, "err-tree")
    assert "tree" in browser.switch_to.active_element.get_attribute("name")  # the field in error has the focus
    assert error.is_displayed() and browser.find_element(By.ID, "f-tree").get_attribute("aria-invalid") == "true"
    assert browser.find_element(By.ID, "f-name").get_attribute("value") == "handbook"  # what was typed stays
    browser.screenshot("web-namespace-error")
    field = browser.switch_to.active_element
    field.send_keys(Keys.CONTROL, "a")
    keys(browser, Keys.DELETE, "start", Keys.ENTER, "guides")
    tab_to(browser, "Create namespace")
    submit_with_enter(browser)
    assert browser.current_url == served.base + "/handbook/"
    _status, saved = mcp(served.base, served.token, "read_namespace", {"name": "handbook"})
    assert (saved["title"], saved["public"], saved["skin"], saved["tree"]) == ("Handbook", True, "journal", ["start", "guides"])


def test_settings_race_then_save_over_theirs(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_namespace", {"name": "racing", "title": "Racing"})
    sign_in(browser, served, "/_/namespaces/racing/settings")
    assert crumbs(browser) == ["Wiki", "Racing", "Settings of Racing"]
    browser.screenshot("web-namespace-settings")
    _status, now = mcp(served.base, served.token, "read_namespace", {"name": "racing"})
    mcp(served.base, served.token, "save_namespace", {"name": "racing", "basehash": now["hash"], "description": "Set by an assistant"})
    description = browser.find_element(By.ID, "f-description")
    description.send_keys("Mine, from the browser")
    browser.click_and_wait(browser.find_element(By.XPATH, "//button[text()='Save settings']"))
    alert = browser.find_element(By.ID, "form-error")
    assert "nothing was overwritten" in alert.text and "Set by an assistant" in alert.text
    browser.screenshot("web-namespace-conflict")
    _status, kept = mcp(served.base, served.token, "read_namespace", {"name": "racing"})
    assert kept["description"] == "Set by an assistant"
    browser.click_and_wait(browser.find_element(By.XPATH, "//button[text()='Save mine over theirs']"))
    _status, saved = mcp(served.base, served.token, "read_namespace", {"name": "racing"})
    assert saved["description"] == "Mine, from the browser"


def test_delete_names_what_goes_and_restore_brings_it_back(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_namespace", {"name": "old", "title": "Old projects"})
    for slug in ("old/index", "old/2019/launch", "old/2020/review"):
        mcp(served.base, served.token, "save_page", {"slug": slug, "body": f"# {slug}\n", "title": slug.rsplit("/", 1)[1]})
    sign_in(browser, served, "/old/")
    browser.find_element(By.LINK_TEXT, "Settings").send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.endswith("/_/namespaces/old/settings"))
    browser.find_element(By.LINK_TEXT, "Delete this namespace").send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.endswith("/_/namespaces/old/delete"))
    assert crumbs(browser) == ["Wiki", "Old projects", "Delete namespace old"]
    what = browser.find_element(By.ID, "what-goes").text
    assert "3 pages" in what and "0 attachments" in what and "restore" in what
    going = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#pages-going li")]
    assert going == ["old/2019/launch", "old/2020/review", "old/index"]
    browser.screenshot("web-namespace-delete")
    tab_to(browser, "Delete old and its 3 pages")
    submit_with_enter(browser)
    assert "Deleted namespace old: 3 pages and 0 attachments." in browser.find_element(By.ID, "done").text
    assert browser.find_element(By.ID, "restore-name").get_attribute("value") == "old"
    _status, listed = mcp(served.base, served.token, "list_namespaces", {})
    assert "old" not in [n["name"] for n in listed["namespaces"]]
    browser.screenshot("web-namespaces")
    tab_to(browser, "Restore")
    submit_with_enter(browser)
    assert browser.current_url == served.base + "/old/"
    _status, page = mcp(served.base, served.token, "read_page", {"slug": "old/2019/launch"})
    assert page["body"] == "# old/2019/launch\n"


def test_the_pages_at_a_phones_width(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_namespace", {"name": "pocket", "title": "Pocket"})
    mcp(served.base, served.token, "save_page", {"slug": "pocket/note", "body": "A note.\n", "title": "Note"})
    as_phone(browser)
    sign_in(browser, served, "/_/namespaces")
    assert fits(browser) and browser.find_element(By.LINK_TEXT, "New namespace").is_displayed()
    browser.screenshot("web-phone-namespaces")
    browser.get(served.base + "/_/namespaces/pocket/settings")
    assert fits(browser) and browser.find_element(By.ID, "f-title").is_displayed()
    assert crumbs(browser)[-1] == "Settings of Pocket"
    browser.screenshot("web-phone-namespace-settings")
    browser.get(served.base + "/_/namespaces/pocket/delete")
    assert fits(browser) and browser.find_element(By.CSS_SELECTOR, "button.danger").is_displayed()
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "button.danger"))
    assert "Deleted namespace pocket: 1 page and 0 attachments." in browser.find_element(By.ID, "done").text
    browser.click_and_wait(browser.find_element(By.XPATH, "//button[text()='Restore']"))
    assert browser.current_url == served.base + "/pocket/"
