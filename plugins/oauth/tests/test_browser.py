"""The consent and connected-apps pages in a real headless Chromium against ``hostcore serve``:
sign in on /_/login, approve an app with one namespace, see it on /_/apps, disconnect it.
Screenshots of each page go to test-artifacts/oauth-*.png."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx2
from oauthflow import MCP_HEADERS, PASSWORD, authorize_url, pkce
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

REDIRECT = "http://127.0.0.1:33419/browser-callback"


def mcp_call(url: str, token: str, tool: str, arguments: dict) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return httpx2.post(url, json=body, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def result(answer: httpx2.Response) -> dict:
    assert answer.status_code == 200, answer.text
    text = answer.text
    return json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)["result"]


def test_sign_in_approve_one_namespace_see_the_app_and_disconnect(browser, served):
    client_id = httpx2.post(served.base + "/_/oauth/register", json={"client_name": "Browser Test App", "redirect_uris": [REDIRECT],
                                                                    "token_endpoint_auth_method": "none"}).json()["client_id"]  # fmt: skip
    verifier, challenge = pkce()
    browser.get(served.base + authorize_url(client_id, REDIRECT, challenge, resource=served.url))
    assert urlsplit(browser.current_url).path == "/_/login"
    browser.find_element(By.ID, "name").send_keys("ann")
    browser.find_element(By.ID, "password").send_keys(PASSWORD)
    browser.screenshot("oauth-1-sign-in")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]:not(.secondary)"))

    assert urlsplit(browser.current_url).path == "/_/oauth/authorize"
    assert browser.find_element(By.ID, "app-name").text == "Browser Test App"
    assert "127.0.0.1:33419" in browser.find_element(By.ID, "redirect-host").text
    assert "by the app itself" in browser.find_element(By.ID, "metadata-host").text
    every = browser.find_element(By.CSS_SELECTOR, "input[name=grant_namespace][value='*']")
    every.click()  # no longer every namespace ...
    browser.find_element(By.CSS_SELECTOR, "input[name=grant_namespace][value=team]").click()  # ... only team
    browser.screenshot("oauth-2-consent")
    browser.find_element(By.ID, "approve").click()  # to the app's redirect URI (nothing listens there)
    WebDriverWait(browser, 15).until(lambda d: d.current_url.startswith(REDIRECT))

    back = urlsplit(browser.current_url)
    assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT
    code = parse_qs(back.query)["code"][0]
    assert parse_qs(back.query)["state"] == ["st-42"]
    tokens = httpx2.post(served.base + "/_/oauth/token", data={"grant_type": "authorization_code", "client_id": client_id, "code": code,
                                                               "redirect_uri": REDIRECT, "code_verifier": verifier,
                                                               "resource": served.url}).json()  # fmt: skip
    token = tokens["access_token"]
    assert not result(mcp_call(served.url, token, "list_pages", {"namespace": "team"})).get("isError")
    assert result(mcp_call(served.url, token, "list_pages", {"namespace": "notes"}))["isError"]  # only team

    browser.get(served.base + "/_/apps")
    app = browser.find_element(By.CSS_SELECTOR, "section.app")
    assert "Browser Test App" in app.text and "team" in app.text and "read write" in app.text
    browser.screenshot("oauth-3-connected-apps")
    browser.click_and_wait(app.find_element(By.CSS_SELECTOR, "button[type=submit]"))
    assert "Disconnected Browser Test App" in browser.find_element(By.ID, "done").text
    assert browser.find_element(By.ID, "none").text == "No app is connected."
    browser.screenshot("oauth-4-disconnected")
    assert mcp_call(served.url, token, "list_pages", {}).status_code == 401
