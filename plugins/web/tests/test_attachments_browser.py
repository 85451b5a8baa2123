"""A page's attachments in a real headless Chromium against a real ``hostcore serve``: upload from
the page's file input, see the image, the PDF in its sandboxed preview and a document's text,
replace and delete, on a desktop and a phone, with the keyboard where it matters."""

from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

from hostcore.testing.documents import pdf_document, png_image

from .editing_in_chromium import EASYMDE, PHONE, as_phone, editor_text
from .test_browser import loaded, mcp, served, sign_in  # noqa: F401  (the fixture)
from .test_editor_browser import drop_file


def upload_from_the_page(browser, path) -> None:
    browser.find_element(By.ID, "attach-file").send_keys(str(path))
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.upload button"))


def file_item(browser, filename: str):
    return next(li for li in browser.find_elements(By.CSS_SELECTOR, ".attachments li.file")
                if li.find_element(By.CSS_SELECTOR, ".name").text == filename)  # fmt: skip


def test_upload_see_replace_and_delete_attachments_on_the_page(browser, served, tmp_path):  # noqa: F811
    mcp(served.base, served.token, "save_page", {"slug": "notes/trip", "body": "# Trip\n\nWhere we went.\n", "title": "Trip"})
    (tmp_path / "beach.png").write_bytes(png_image(320, 160))
    (tmp_path / "itinerary.pdf").write_bytes(pdf_document(["Day one: the beach. Day two: the hills."]))
    (tmp_path / "notes.txt").write_text("Bring sun cream and a map.\n")
    sign_in(browser, served, "/notes/trip")
    assert browser.find_element(By.CSS_SELECTOR, "#attachments .hint").text == "No attachments yet."
    for name in ("beach.png", "itinerary.pdf", "notes.txt"):
        upload_from_the_page(browser, tmp_path / name)
        assert browser.current_url == served.base + "/notes/trip#attachments"
    assert loaded(browser, ".attachments li.file-image img") == 320
    frame = browser.find_element(By.CSS_SELECTOR, ".attachments iframe.pdf")
    assert frame.get_attribute("src") == served.base + "/_/web/pdf/notes/trip/itinerary.pdf"
    served_as = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(arguments[0]).then(r => done([r.status, r.headers.get('content-type'), r.headers.get('content-security-policy')]));
    """, frame.get_attribute("src"))  # fmt: skip
    assert served_as[0] == 200 and served_as[1] == "application/pdf" and served_as[2].startswith("sandbox;")
    text = file_item(browser, "notes.txt")
    summary = text.find_element(By.CSS_SELECTOR, "details.text summary")
    summary.send_keys(Keys.ENTER)  # the keyboard opens the text
    assert text.find_element(By.CSS_SELECTOR, "details.text pre").text == "Bring sun cream and a map."
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, "attachments"))
    time.sleep(2)  # the PDF viewer draws its page in its own time, and nothing in this page says when
    browser.screenshot("web-attachments")

    (tmp_path / "sunset.png").write_bytes(png_image(200, 100, (200, 60, 40), (250, 200, 80)))
    image = file_item(browser, "beach.png")
    image.find_element(By.CSS_SELECTOR, "details.manage summary").click()
    image.find_element(By.CSS_SELECTOR, "input[type=file]").send_keys(str(tmp_path / "sunset.png"))
    browser.click_and_wait(image.find_element(By.XPATH, ".//button[text()='Replace']"))
    assert loaded(browser, ".attachments li.file-image img") == 200  # the same name, the new picture

    text = file_item(browser, "notes.txt")
    text.find_element(By.CSS_SELECTOR, "details.manage summary").click()
    browser.click_and_wait(text.find_element(By.XPATH, ".//button[text()='Delete notes.txt']"))
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".attachments .name")]
    assert names == ["beach.png", "itinerary.pdf"]
    _status, listed = mcp(served.base, served.token, "read_attachment", {"slug": "notes/trip", "filename": "itinerary.pdf"})
    assert "Day one" in listed["body"]  # the service's own view of what the page shows

    as_phone(browser)
    browser.get(served.base + "/notes/trip#attachments")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE[0], width
    assert browser.find_element(By.CSS_SELECTOR, ".attachments li.file-image img").size["width"] <= PHONE[0]
    browser.screenshot("web-phone-attachments")


@pytest.mark.skipif(not EASYMDE.exists(), reason=f"{EASYMDE.name} was not fetched (`make install` fetches it with npm)")
def test_a_dropped_image_in_a_section_edit_attaches_it_too(browser, served):  # noqa: F811
    """The section editor is the same editor: a file dropped there attaches to the page."""
    mcp(
        served.base,
        served.token,
        "save_page",
        {"slug": "notes/sectioned", "body": "# Top\n\n## Photos\n\nNone yet.\n", "title": "Sectioned"},
    )
    sign_in(browser, served, "/notes/sectioned")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "a.section-edit[href$='section=photos']"))
    drop_file(browser, ".EasyMDEContainer .CodeMirror-scroll", "view.png", "image/png", png_image(60, 40))
    WebDriverWait(browser, 15).until(lambda d: "view.png" in editor_text(d))
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor .savebar button"))
    assert loaded(browser, ".body img") == 60 and loaded(browser, ".attachments li.file-image img") == 60
