"""The page editor, the sidebar and breadcrumbs in a real headless Chromium against a real
``hostcore serve``: typing with a live preview from the wiki's renderer, wiki-link completion,
Ctrl+S, uploads by drop and by the file input, the lost race, a phone's width and the keyboard
alone. Screenshots go to test-artifacts/web-*.png (docs/web.md shows them)."""

from __future__ import annotations

import base64

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from hostcore.testing.documents import png_image

from .editing_in_chromium import (
    EASYMDE,
    PHONE,
    as_phone,
    editor_ready,
    editor_text,
    refusals,
    save_with_keyboard,
    type_in_editor,
    watch_for_refusals,
)
from .test_browser import loaded, mcp, served, sign_in  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(
    not EASYMDE.exists(), reason=f"{EASYMDE.name} was not fetched (`make install` fetches it with npm)"
)


def drop_file(browser, selector: str, name: str, mime: str, data: bytes) -> None:
    """Drop a file at the foot of the element ``selector`` finds, as a person dragging it from their desktop."""
    browser.execute_script("""
        const [selector, name, mime, b64] = arguments;
        const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], name, {type: mime}));
        const target = document.querySelector(selector);
        const box = target.getBoundingClientRect();
        const at = {bubbles: true, cancelable: true, dataTransfer: transfer, clientX: box.left + 20, clientY: box.bottom - 5};
        target.dispatchEvent(new DragEvent("dragenter", at));
        target.dispatchEvent(new DragEvent("dragover", at));
        target.dispatchEvent(new DragEvent("drop", at));
    """, selector, name, mime, base64.b64encode(data).decode())  # fmt: skip


def test_write_with_the_preview_complete_a_wiki_link_and_save_with_ctrl_s(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/drafts/plan", "body": "Old plan.\n", "title": "Plan"})
    watch_for_refusals(browser)
    sign_in(browser, served, "/_/edit/notes/drafts/plan")
    editor_ready(browser)
    crumbs = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "nav.crumbs li")]
    assert crumbs == ["Wiki", "Team notes", "drafts", "Plan", "Edit"]
    assert browser.find_element(By.CSS_SELECTOR, ".editor-preview-side").is_displayed()  # side by side at desktop width
    type_in_editor(browser, "# Plan\n\nShip **on time**, then read [[set", replace=True)
    def offered(d):  # the list follows each key typed after "[["; wait for the answer to all of "set"
        items = [li.text for li in d.find_elements(By.CSS_SELECTOR, "ul.completion li")]
        return items if items and all("set" in i.casefold() for i in items) else None

    menu = WebDriverWait(browser, 10).until(offered)
    assert menu[0].startswith("Setup") and "notes/setup" in menu[0]
    field = browser.find_element(By.CSS_SELECTOR, ".CodeMirror textarea")
    assert field.get_attribute("aria-expanded") == "true" and field.get_attribute("aria-activedescendant") == "body-page-0"
    ActionChains(browser).send_keys(Keys.ENTER).send_keys(" and ").perform()
    assert editor_text(browser) == "# Plan\n\nShip **on time**, then read [[setup]] and "
    preview = browser.find_element(By.CSS_SELECTOR, ".editor-preview-side")
    WebDriverWait(browser, 10).until(lambda _: preview.find_elements(By.CSS_SELECTOR, "a.wikilink[href='/notes/setup']"))
    assert preview.find_element(By.TAG_NAME, "strong").text == "on time"  # the wiki's renderer: the page as it will be
    assert preview.find_element(By.TAG_NAME, "h1").get_attribute("id") == "plan"
    browser.screenshot("web-editor")
    assert refusals(browser) == []  # no style, script or font refused by the page's policy, no script error
    save_with_keyboard(browser)
    assert browser.current_url == served.base + "/notes/drafts/plan"
    _status, page = mcp(served.base, served.token, "read_page", {"slug": "notes/drafts/plan"})
    assert page["body"].startswith("# Plan\n\nShip **on time**, then read [[setup]] and"), page["body"]
    assert "Ship on time, then read" in browser.find_element(By.CSS_SELECTOR, ".body").text


def test_drop_an_image_and_choose_a_file_to_attach_them(browser, served, tmp_path):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/album", "body": "Pictures.\n", "title": "Album"})
    sign_in(browser, served, "/_/edit/notes/album")
    type_in_editor(browser, "\n")
    drop_file(browser, ".EasyMDEContainer .CodeMirror-scroll", "Holiday photo.png", "image/png", png_image(120, 80))
    WebDriverWait(browser, 15).until(lambda d: "Attached" in d.find_element(By.ID, "body-status").text)
    assert "![Holiday-photo](/_/files/notes/album/Holiday-photo.png)" in editor_text(browser)
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".editor-preview-side img"))
    assert loaded(browser, ".editor-preview-side img") == 120  # shown from the wiki, in the preview
    notes = tmp_path / "minutes.txt"
    notes.write_text("We met.\n")
    browser.find_element(By.ID, "body-file").send_keys(str(notes))
    WebDriverWait(browser, 15).until(lambda d: "minutes.txt" in editor_text(d))
    assert "[minutes.txt](/_/files/notes/album/minutes.txt)" in editor_text(browser)
    browser.screenshot("web-editor-upload")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor .savebar button"))
    assert loaded(browser, ".body img") == 120
    _status, page = mcp(served.base, served.token, "read_page", {"slug": "notes/album"})
    assert "minutes.txt" in page["body"] and "Holiday-photo.png" in page["body"]


def test_a_save_that_lost_the_race_still_shows_both_sides(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/racing", "body": "One.\n", "title": "Racing"})
    sign_in(browser, served, "/_/edit/notes/racing")
    type_in_editor(browser, "One, from the browser.", replace=True)
    _status, page = mcp(served.base, served.token, "read_page", {"slug": "notes/racing"})
    mcp(
        served.base,
        served.token,
        "save_page",
        {"slug": "notes/racing", "basehash": page["hash"], "body": "One, by an assistant.\n"},
    )
    save_with_keyboard(browser)
    assert "Someone else changed" in browser.find_element(By.TAG_NAME, "h1").text
    assert "by an assistant" in browser.find_element(By.ID, "theirs").text
    assert "from the browser" in browser.find_element(By.ID, "mine").text
    _status, now = mcp(served.base, served.token, "read_page", {"slug": "notes/racing"})
    assert now["body"] == "One, by an assistant.\n"


def test_edit_with_the_keyboard_alone(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/keys", "body": "Typed.\n", "title": "Keys"})
    sign_in(browser, served, "/notes/keys")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)  # the skip link first
    assert browser.switch_to.active_element.text == "Skip to content"
    browser.get(served.base + "/_/edit/notes/keys")
    editor_ready(browser)
    title = browser.find_element(By.ID, "title")
    title.click()
    focused = []
    for _ in range(30):  # Tab from the title reaches the text, past the tags, the pin and the toolbar
        ActionChains(browser).send_keys(Keys.TAB).perform()
        active = browser.switch_to.active_element
        focused.append(active.get_attribute("aria-label") or active.get_attribute("name") or active.tag_name)
        if active.find_elements(By.XPATH, "ancestor::div[contains(@class, 'CodeMirror')]"):
            break
    else:
        raise AssertionError(f"Tab never reached the text: {focused}")
    assert "Bold" in focused and "tags" in focused
    ActionChains(browser).key_down(Keys.CONTROL).key_down(Keys.END).key_up(Keys.END).key_up(Keys.CONTROL).send_keys(
        " And more."
    ).perform()
    ActionChains(browser).send_keys(Keys.ESCAPE).perform()  # Esc leaves the text for the Save button
    assert browser.switch_to.active_element.text == "Save"
    html = browser.find_element(By.TAG_NAME, "html")
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    WebDriverWait(browser, 15).until(
        lambda _: browser.current_url == served.base + "/notes/keys" and html != browser.find_element(By.TAG_NAME, "html")
    )
    _status, page = mcp(served.base, served.token, "read_page", {"slug": "notes/keys"})
    assert page["body"].startswith("Typed.") and "And more." in page["body"], page["body"]


def test_the_sidebar_tree_and_the_editor_at_a_phones_width(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/drafts/idea", "body": "An idea.\n", "title": "Idea"})
    phone = browser
    as_phone(phone)
    sign_in(phone, served, "/notes/drafts/idea")
    tree = phone.find_element(By.ID, "page-tree")
    assert tree.get_attribute("open") is None  # folded: the page comes first
    assert not phone.find_element(By.CSS_SELECTOR, "nav.tree a[aria-current=page]").is_displayed()
    phone.screenshot("web-phone-page")
    summary = tree.find_element(By.TAG_NAME, "summary")
    summary.send_keys(Keys.ENTER)  # the keyboard opens it
    current = phone.find_element(By.CSS_SELECTOR, "nav.tree a[aria-current=page]")
    assert current.is_displayed() and current.text == "Idea"
    titles = [
        a.text
        for a in phone.find_elements(
            By.CSS_SELECTOR, "nav.tree > details > ul > li > a, nav.tree > details > ul > li > details > summary"
        )
    ]
    assert titles[:2] == ["Guide", "Setup"]  # the namespace's tree setting first, then by name
    phone.screenshot("web-phone-tree")
    phone.get(served.base + "/_/edit/notes/drafts/idea")
    editor_ready(phone)
    assert not phone.find_element(By.CSS_SELECTOR, ".editor-preview-side").is_displayed()  # one column on a phone
    width = phone.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE[0], width  # nothing wider than the screen
    save = phone.find_element(By.CSS_SELECTOR, ".savebar button")
    assert save.is_displayed() and save.location["y"] + save.size["height"] <= PHONE[1]  # Save in reach, not below the fold
    phone.screenshot("web-phone-editor")
    type_in_editor(phone, "Written on a phone.", replace=True)
    phone.click_and_wait(save)
    assert phone.current_url == served.base + "/notes/drafts/idea"
    assert phone.find_element(By.CSS_SELECTOR, ".body").text == "Written on a phone."


def test_the_sidebar_and_breadcrumbs_on_a_page_at_desktop_width(browser, served):  # noqa: F811
    sign_in(browser, served, "/notes/setup")
    tree = browser.find_element(By.ID, "page-tree")
    assert tree.get_attribute("open") == "true"
    current = browser.find_element(By.CSS_SELECTOR, "nav.tree a[aria-current=page]")
    assert current.text == "Setup" and current.is_displayed()
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "nav.crumbs li")] == ["Wiki", "Team notes", "Setup"]
    browser.screenshot("web-sidebar")
    browser.get(served.base + "/_/nothing-here")  # an error page: the site's header and a way back
    assert browser.find_element(By.CSS_SELECTOR, "header.site a.brand").text == "Wiki"
    browser.get(served.base + "/_/history/notes/setup")
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "nav.crumbs li")] == [
        "Wiki",
        "Team notes",
        "Setup",
        "History",
    ]
    assert browser.find_element(By.CSS_SELECTOR, "nav.tree a[aria-current=page]").text == "Setup"


def paste_file(browser, name: str, mime: str, data: bytes) -> None:
    """Paste a file (a screenshot copied to the clipboard) into the editor's text."""
    browser.execute_script("""
        const [name, mime, b64] = arguments;
        const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
        const clipboard = new DataTransfer();
        clipboard.items.add(new File([bytes], name, {type: mime}));
        const input = document.querySelector('.EasyMDEContainer .CodeMirror').CodeMirror.getInputField();
        input.dispatchEvent(new ClipboardEvent("paste", {bubbles: true, cancelable: true, clipboardData: clipboard}));
    """, name, mime, base64.b64encode(data).decode())  # fmt: skip


def test_paste_an_image_and_preview_a_new_page(browser, served):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/shots", "body": "Screens:\n", "title": "Shots"})
    sign_in(browser, served, "/_/edit/notes/shots")
    type_in_editor(browser, "Screens: ")
    paste_file(browser, "image.png", "image/png", png_image(90, 60))
    WebDriverWait(browser, 15).until(lambda d: "image.png" in editor_text(d))
    assert "![image](/_/files/notes/shots/image.png)" in editor_text(browser)
    paste_file(browser, "image.png", "image/png", png_image(70, 50))  # a second screenshot, the same name
    WebDriverWait(browser, 15).until(lambda d: "image-2.png" in editor_text(d))
    _status, listed = mcp(served.base, served.token, "read_page", {"slug": "notes/shots"})
    assert listed["body"] == "Screens:\n"  # attached, not saved into the text until the person saves
    browser.get(served.base + "/_/new?namespace=notes")
    type_in_editor(browser, "A new page linking [[guide]].", replace=True)
    preview = browser.find_element(By.CSS_SELECTOR, ".editor-preview-side")
    WebDriverWait(browser, 10).until(lambda _: preview.find_elements(By.CSS_SELECTOR, "a.wikilink[href='/notes/guide']"))
    assert not browser.find_elements(By.ID, "body-file")  # nothing to attach to before the page exists
