"""Comments per heading in a real headless Chromium against a real ``hostcore serve``: an
assistant's comment (over MCP) shows under its heading; a person opens the thread, posts, edits
and deletes with the keyboard alone, on a desktop and on a phone."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from .editing_in_chromium import PHONE, as_phone
from .test_browser import mcp, served, sign_in  # noqa: F401  (the fixture)

BODY = "Read this first.\n\n## Install\n\nRun the installer.\n\n## Usage\n\nOpen the wiki.\n"


def tab_to(browser: Any, element: WebElement, most: int = 200) -> None:
    """Press Tab until ``element`` has the focus (fails after ``most`` presses): the keyboard's way there."""
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    for _ in range(most):
        if browser.switch_to.active_element == element:
            return
        browser.switch_to.active_element.send_keys(Keys.TAB)
    raise AssertionError(f"Tab never reached {element.get_attribute('outerHTML')[:120]}")


def thread(browser: Any, section: str) -> WebElement:
    return browser.find_element(By.ID, f"comments-{section}")


def test_post_edit_and_delete_a_comment_with_the_keyboard_alone(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/deploy", "body": BODY, "title": "Deployment guide"})
    status, posted = mcp(served.base, served.token, "post_comment",
                         {"slug": "notes/deploy", "section_id": "usage", "text": "Which port? @admin"})  # fmt: skip
    assert status == 200 and posted["text"] == "Which port? admin"
    sign_in(browser, served, "/notes/deploy")
    usage = thread(browser, "usage")
    assert usage.find_element(By.CSS_SELECTOR, "summary").text.startswith("1 comment")
    heading = browser.find_element(By.ID, "usage")
    assert usage.location["y"] > heading.location["y"]  # right under its heading
    assert browser.execute_script("return arguments[0].previousElementSibling.id", usage) == "usage"

    start = thread(browser, "install").find_element(By.TAG_NAME, "a")  # no comments yet: a link opens the thread
    tab_to(browser, start)
    html = browser.find_element(By.TAG_NAME, "html")
    start.send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: html != d.find_element(By.TAG_NAME, "html"))
    install = thread(browser, "install")
    assert install.get_attribute("open") is not None
    box = install.find_element(By.CSS_SELECTOR, "form.post textarea")
    assert browser.switch_to.active_element == box  # straight into the text box
    box.send_keys("Needs root on Linux.")
    browser.switch_to.active_element.send_keys(Keys.TAB)
    post = browser.switch_to.active_element
    assert post.text == "Post"
    html = browser.find_element(By.TAG_NAME, "html")
    post.send_keys(Keys.ENTER)
    WebDriverWait(browser, 15).until(lambda d: html != d.find_element(By.TAG_NAME, "html"))
    assert browser.current_url.endswith("/notes/deploy?thread=install#comments-install")
    install = thread(browser, "install")
    assert install.get_attribute("open") is not None
    assert [e.text for e in install.find_elements(By.CSS_SELECTOR, "li.comment .text")] == ["Needs root on Linux."]
    usage = thread(browser, "usage").find_element(By.CSS_SELECTOR, "summary")
    tab_to(browser, usage)
    usage.send_keys(Keys.ENTER)  # the keyboard opens a thread with comments
    assert thread(browser, "usage").get_attribute("open") is not None
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", browser.find_element(By.ID, "install"))
    browser.screenshot("web-comments")

    own = thread(browser, "install").find_element(By.CSS_SELECTOR, "details.own summary")
    own.send_keys(Keys.ENTER)
    edit = thread(browser, "install").find_element(By.CSS_SELECTOR, "details.own textarea")
    edit.send_keys(Keys.END, " And sudo.")
    browser.click_and_wait(thread(browser, "install").find_element(By.CSS_SELECTOR, "details.own button"))
    texts = [e.text for e in thread(browser, "install").find_elements(By.CSS_SELECTOR, "li.comment .text")]
    assert texts == ["Needs root on Linux. And sudo."]
    assert thread(browser, "install").find_element(By.CSS_SELECTOR, ".edited").text == "edited"
    _status, read = mcp(served.base, served.token, "read_comment_thread", {"slug": "notes/deploy", "section_id": "install"})
    assert read["comments"][0]["text"] == "Needs root on Linux. And sudo." and read["comments"][0]["client"] == "web"

    as_phone(browser)
    browser.get(served.base + "/notes/deploy?thread=install#comments-install")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE[0], width
    box = thread(browser, "install").find_element(By.CSS_SELECTOR, "form.post textarea")
    assert box.size["width"] <= PHONE[0] and box.is_displayed()
    browser.screenshot("web-phone-comments")
    delete = thread(browser, "install").find_element(By.CSS_SELECTOR, "form.delete button")
    browser.click_and_wait(delete)
    assert thread(browser, "install").find_elements(By.CSS_SELECTOR, "li.comment") == []
    _status, listed = mcp(served.base, served.token, "list_comment_threads", {"slug": "notes/deploy"})
    assert [t["section_id"] for t in listed["threads"]] == ["usage"]
