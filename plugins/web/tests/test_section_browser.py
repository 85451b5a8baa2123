"""Editing a section in a real headless Chromium against a real ``hostcore serve``, while an
assistant edits the same page over MCP: another section's edit never collides with the person's;
the same section's shows both sides and merges. Screenshots go to test-artifacts/web-section-*.png."""

from __future__ import annotations

from selenium.webdriver.common.by import By

from .editing_in_chromium import type_in_editor
from .test_browser import mcp, served, sign_in  # noqa: F401  (the fixture)

PAGE = "# Runbook\n\nWhat to do.\n\n## Deploy\n\nShip it.\n\n## Rollback\n\nUndo it.\n"


def edit_link(browser, heading_id: str):
    return browser.find_element(By.CSS_SELECTOR, f"a.section-edit[href$='section={heading_id}']")


def assistant_replaces(served, slug: str, section_id: str, old: str, new: str) -> None:  # noqa: F811
    _status, read = mcp(served.base, served.token, "read_section", {"slug": slug, "section_id": section_id})
    status, done = mcp(served.base, served.token, "replace_text",
                       {"slug": slug, "section_id": section_id, "rev": read["rev"], "old_text": old, "new_text": new})  # fmt: skip
    assert status == 200 and done["changed"], done


def test_a_person_and_an_assistant_edit_one_page_by_sections(browser, served):  # noqa: F811
    slug = "notes/runbook"
    mcp(served.base, served.token, "save_page", {"slug": slug, "body": PAGE, "title": "Runbook"})
    sign_in(browser, served, "/" + slug)
    browser.screenshot("web-section-links")
    browser.click_and_wait(edit_link(browser, "deploy"))
    assert browser.find_element(By.ID, "text").get_attribute("value") == "## Deploy\n\nShip it.\n\n"
    type_in_editor(browser, "## Deploy\n\nShip it on Tuesdays.\n", replace=True, textarea="text")
    browser.screenshot("web-section-edit")
    assistant_replaces(served, slug, "rollback", "Undo it.", "Undo it, then tell the team.")  # meanwhile, another section
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor button[type=submit]"))
    assert browser.current_url == f"{served.base}/{slug}#deploy"
    shown = browser.find_element(By.CSS_SELECTOR, ".body").text
    assert "Ship it on Tuesdays." in shown and "Undo it, then tell the team." in shown

    browser.click_and_wait(edit_link(browser, "rollback"))
    type_in_editor(browser, "## Rollback\n\nUndo it, carefully.\n", replace=True, textarea="text")
    assistant_replaces(served, slug, "rollback", "then tell the team", "then page the on-call")  # the same section
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor button[type=submit]"))
    assert "Someone else changed this section" in browser.find_element(By.TAG_NAME, "h1").text
    assert "page the on-call" in browser.find_element(By.ID, "theirs").text
    assert "carefully" in browser.find_element(By.ID, "mine").text
    _status, now = mcp(served.base, served.token, "read_page", {"slug": slug, "section": "rollback"})
    assert now["body"] == "## Rollback\n\nUndo it, then page the on-call.\n"  # nothing overwritten
    browser.screenshot("web-section-conflict")
    merged = browser.find_element(By.ID, "text")
    merged.clear()
    merged.send_keys("## Rollback\n\nUndo it carefully, then page the on-call.\n")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor button[type=submit]"))
    assert browser.current_url == f"{served.base}/{slug}#rollback"
    _status, page = mcp(served.base, served.token, "read_page", {"slug": slug})
    assert page["body"] == "# Runbook\n\nWhat to do.\n\n## Deploy\n\nShip it on Tuesdays.\n\n## Rollback\n\nUndo it carefully, then page the on-call.\n"
