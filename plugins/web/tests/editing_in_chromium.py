"""Driving the page editor (EasyMDE over the form's textarea) as a person does: click into the
text and type; read what the editor holds. Shared by the browser tests of the web plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hostcore_web
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.wait import WebDriverWait

EASYMDE = Path(hostcore_web.__file__).parent / "static" / "vendor" / "easymde.min.js"


def editor_ready(browser: Any, timeout: float = 15) -> Any:
    """The editor's text area (CodeMirror), once EasyMDE has replaced the textarea."""
    return WebDriverWait(browser, timeout).until(
        lambda d: (d.find_elements(By.CSS_SELECTOR, ".EasyMDEContainer .CodeMirror") or [None])[0]
    )


def type_in_editor(browser: Any, text: str, *, replace: bool = False, textarea: str = "body") -> None:
    """Click into the editor and type ``text`` (after selecting everything when ``replace``); into
    the plain textarea ``textarea`` (its id) on a wiki without EasyMDE."""
    if not EASYMDE.exists():
        area = browser.find_element(By.ID, textarea)
        if replace:
            area.clear()
        area.send_keys(text)
        return
    editor = editor_ready(browser)
    editor.find_element(By.CSS_SELECTOR, ".CodeMirror-lines").click()
    keys = ActionChains(browser)
    if replace:
        keys.key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL)
    for line_no, line in enumerate(text.split("\n")):
        if line_no:
            keys.send_keys(Keys.ENTER)
        if line:
            keys.send_keys(line)
    keys.perform()


def editor_text(browser: Any) -> str:
    """What the editor holds now."""
    return str(browser.execute_script("return document.querySelector('.EasyMDEContainer .CodeMirror').CodeMirror.getValue()"))


def save_with_keyboard(browser: Any) -> None:
    """Ctrl+S, and wait for the next page."""
    html = browser.find_element(By.TAG_NAME, "html")
    ActionChains(browser).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    WebDriverWait(browser, 15).until(lambda _: _stale(html))
    WebDriverWait(browser, 15).until(lambda d: d.execute_script("return document.readyState") == "complete")


def _stale(element: Any) -> bool:
    from hostcore.testing.browser import _gone

    return _gone(element)


PHONE = (390, 844)


def as_phone(browser: Any, width: int = PHONE[0], height: int = PHONE[1]) -> None:
    """Show pages as a phone does (a desktop Chromium window cannot be made narrower than about
    500 pixels, so its size alone is no phone)."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})  # fmt: skip


def watch_for_refusals(browser: Any) -> None:
    """From the next page on, note what the content security policy refuses and every uncaught
    script error (read them with :func:`refusals`): the editor must need neither inline styles
    nor anything from another site."""
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__refused = [];
        document.addEventListener("securitypolicyviolation", e => window.__refused.push(e.violatedDirective + " " + e.blockedURI));
        window.addEventListener("error", e => window.__refused.push("error " + e.message));
    """})  # fmt: skip


def refusals(browser: Any) -> list[str]:
    return list(browser.execute_script("return window.__refused || ['not watched']"))
