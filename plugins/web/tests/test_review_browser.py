"""Reviewing change requests in a real headless Chromium against a real ``hostcore serve``: an
assistant's token that may only propose writes through MCP, and a person finds the request, reads
its diff inline and side by side, and approves it with the keyboard alone; a page that drifted is
resolved in the page; the review page fits a phone's width. Screenshots go to
test-artifacts/web-review*.png and web-phone-review.png (docs/web.md shows them)."""

from __future__ import annotations

from typing import Any

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from hostcore.testing import create_token

from .editing_in_chromium import as_phone
from .test_browser import mcp, served, sign_in  # noqa: F401  (the fixture)
from .test_namespace_admin_browser import fits, keys, submit_with_enter, tab_to


def _propose(served: Any, name: str, arguments: dict[str, Any], tool: str = "edit_page") -> str:  # noqa: F811
    token = create_token(served.instance, name, ["propose"])
    status, result = mcp(served.base, token, tool, arguments)
    assert status == 200 and result["proposed"].startswith("cr-") and result["review_url"].endswith(result["proposed"]), result
    return str(result["proposed"])


def _hash(served: Any, slug: str) -> str:  # noqa: F811
    status, page = mcp(served.base, served.token, "read_page", {"slug": slug})
    assert status == 200
    return str(page["hash"])


def test_a_person_reviews_and_approves_an_assistants_change_with_the_keyboard_alone(browser, served):  # noqa: F811
    slug = "notes/setup"
    made = _propose(served, "review-bot", {"slug": slug, "basehash": _hash(served, slug),
                                           "edits": [{"oldText": "Install **hostcore**", "newText": "Install **hostcore** with pipx"}]})  # fmt: skip
    sign_in(browser, served, "/_/review")
    assert made in browser.page_source and "review-bot" in browser.find_element(By.TAG_NAME, "main").text
    tab_to(browser, f"edit_page: {slug}")
    submit_with_enter(browser)
    assert browser.current_url.endswith(f"/_/review/{made}")
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "pre.diff ins")] == [" with pipx"]
    assert browser.find_element(By.ID, "risk").text == "structural"
    browser.screenshot("web-review")
    tab_to(browser, "Side by side")
    submit_with_enter(browser)
    assert browser.find_elements(By.CSS_SELECTOR, "table.diff.split ins")
    tab_to(browser, "note")
    keys(browser, "reads well")
    tab_to(browser, "Approve and apply")
    submit_with_enter(browser)
    assert browser.find_element(By.ID, "state").text.startswith("applied by admin via web")
    assert not browser.find_elements(By.ID, "approve")
    _status, page = mcp(served.base, served.token, "read_page", {"slug": slug})
    assert "Install **hostcore** with pipx" in page["body"]


def test_a_drifted_page_is_resolved_in_the_page(browser, served):  # noqa: F811
    slug = "notes/race"
    base = _hash(served, slug)
    made = _propose(served, "race-bot", {"slug": slug, "basehash": base, "edits": [{"oldText": "Line two.", "newText": "Line 2, proposed."}]})
    status, theirs = mcp(served.base, served.token, "edit_page",
                         {"slug": slug, "basehash": base, "edits": [{"oldText": "Line two.", "newText": "Line two, theirs."}]})  # fmt: skip
    assert status == 200 and theirs["changed"]
    sign_in(browser, served, f"/_/review/{made}")
    assert browser.find_element(By.ID, "theirs-0").text.splitlines()[1] == "Line two, theirs."
    assert browser.find_element(By.ID, "proposed-0").text.splitlines()[1] == "Line 2, proposed."
    area = tab_to(browser, "resolved-0")
    ActionChains(browser).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).perform()
    keys(browser, "Line one.", Keys.ENTER, "Line 2, theirs and proposed.", Keys.ENTER)
    assert area.get_attribute("value") == "Line one.\nLine 2, theirs and proposed.\n"
    browser.screenshot("web-review-resolve")
    tab_to(browser, "Approve and apply")
    submit_with_enter(browser)
    assert browser.find_element(By.ID, "state").text.startswith("applied")
    _status, page = mcp(served.base, served.token, "read_page", {"slug": slug})
    assert page["body"] == "Line one.\nLine 2, theirs and proposed.\n"


def test_the_review_page_at_a_phones_width_rejects_with_the_keyboard(browser, served):  # noqa: F811
    made = _propose(served, "phone-bot", {"slug": "notes/guide", "markdown": "A line the assistant adds at the end of the guide."},
                    "append_to_page")  # fmt: skip
    sign_in(browser, served, f"/_/review/{made}")
    as_phone(browser)
    browser.get(f"{served.base}/_/review/{made}?view=split")
    assert fits(browser)
    browser.screenshot("web-phone-review")
    browser.get(f"{served.base}/_/review/{made}")
    assert fits(browser)
    reject_note = browser.find_element(By.ID, "reject-note")
    tab_to(browser, "Reject", limit=200)  # past the apply form's note, to the reject form's button
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    assert browser.switch_to.active_element == reject_note
    keys(browser, "not in the guide")
    submit_with_enter(browser)
    assert browser.find_element(By.ID, "state").text.startswith("rejected") and browser.find_element(By.ID, "note").text == "not in the guide"
    browser.get(f"{served.base}/_/review")
    assert made not in browser.page_source and fits(browser)
