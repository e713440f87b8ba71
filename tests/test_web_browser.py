"""End to end in headless Chromium (Debian's chromium and chromedriver, driven by Selenium).

Also a person logging in to a protected MCP server through the app's login
blueprint: the browser follows the app's redirect to the authorization
server (tests/oauth_peer.py) and back to the app's callback.

A real client call parks a form through WebHandler; a person (the browser)
signs in to a real Flask server, opens the pending input, fills the rendered
form and submits it; the call completes with the typed answer. A screenshot
of the rendered form is taken (set MIS_SCREENSHOT_DIR to keep it).
"""

from __future__ import annotations

import os
import shutil
import struct
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

flask = pytest.importorskip("flask")
pytest.importorskip("selenium")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("chromium and chromedriver are not installed", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from mcp_input_sync.web import PendingInputBroker, WebHandler  # noqa: E402
from mcp_input_sync.oauth import MemoryStore  # noqa: E402
from mcp_input_sync.web.flask import blueprint, login_blueprint  # noqa: E402
from mcp_input_sync.web.logins import Logins  # noqa: E402

from mcp_input_sync.testing import FakeServer  # noqa: E402

from .harness import schema_errors  # noqa: E402
from .oauth_peer import OAuthPeer  # noqa: E402
from .test_web_core import Background, wait_empty, wait_pending, web_client, web_server  # noqa: E402


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


@pytest.fixture
def logins(peer: OAuthPeer) -> Logins:
    return Logins(MemoryStore(), {"notes": peer.url}, client_name="browser-test")


@pytest.fixture
def site(logins: Logins) -> Iterator[tuple[str, PendingInputBroker]]:
    broker = PendingInputBroker()
    app = flask.Flask(__name__)
    app.secret_key = "browser-test"
    app.register_blueprint(blueprint(broker, lambda: flask.session.get("user")), url_prefix="/inputs")
    app.register_blueprint(login_blueprint(logins, lambda: flask.session.get("user")), url_prefix="/mcp-login")

    @app.get("/login/<user>")
    def login(user: str) -> Any:
        flask.session["user"] = user
        return flask.redirect("/inputs/")

    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", broker
    finally:
        httpd.shutdown()
        thread.join(10)
        httpd.server_close()


@pytest.fixture
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1000,1800"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(10)  # find_element waits for the page a click loads
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = web_server()
    yield fake
    fake.close()
    assert schema_errors(fake) == []


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def field(driver: Any, name: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f'[name="field:{name}"]')


def main_text(driver: Any) -> str:
    """The text of the page's ``<main>``; "" while a navigation replaces it.

    The old ``<main>`` read during a navigation is stale: Selenium says so with
    ``StaleElementReferenceException``, or Chromium with an inspector error
    ("Node with given id does not belong to the document").
    """
    try:
        return str(driver.find_element(By.TAG_NAME, "main").text)
    except StaleElementReferenceException:
        return ""
    except WebDriverException as exc:
        if "does not belong to the document" in str(exc):
            return ""
        raise


def wait_for_main(driver: Any, text: str) -> None:
    """Wait (bounded, 10 s) until the page's ``<main>`` says ``text``."""
    WebDriverWait(driver, 10).until(lambda d: text in main_text(d))


def test_a_person_answers_in_chromium(site: tuple[str, PendingInputBroker], browser: Any, server: FakeServer, tmp_path: Path) -> None:
    base, broker = site
    with web_client(server, WebHandler(broker)) as client:
        call = Background(lambda: client.call_tool("form", assigns={"user": "alice"}))
        (pending,) = wait_pending(broker, "alice")
        browser.get(f"{base}/login/alice")
        browser.find_element(By.PARTIAL_LINK_TEXT, "Tell us <who> you are").click()
        WebDriverWait(browser, 10).until(lambda d: d.title == "Information requested")
        assert "Tell us <who> you are" in browser.find_element(By.CLASS_NAME, "mis-message").text
        assert field(browser, "pin").get_attribute("type") == "password"
        assert field(browser, "name").get_attribute("value") == "Ada"  # the default

        shot = browser.get_screenshot_as_png()
        width, height = png_size(shot)
        assert width >= 800 and height >= 600 and len(shot) > 10_000
        keep = os.environ.get("MIS_SCREENSHOT_DIR")
        (Path(keep) if keep else tmp_path).joinpath("web_form.png").write_bytes(shot)

        # the browser's own checks stop a submission without the required fields
        browser.find_element(By.CSS_SELECTOR, 'button[value="accept"]').click()
        assert browser.current_url.endswith(f"/inputs/{pending.id}") and broker.pending("alice")

        name = field(browser, "name")
        name.clear()
        name.send_keys("Grace")
        field(browser, "age").send_keys("40")
        browser.find_element(By.CSS_SELECTOR, '[name="field:plan"][value="pro"]').click()
        field(browser, "agree").click()
        Select(field(browser, "size")).select_by_visible_text("Medium")
        tags = Select(field(browser, "tags"))
        tags.select_by_value("a")
        tags.select_by_value("c")
        browser.find_element(By.CSS_SELECTOR, '[name="field:days"][value="tue"]').click()
        field(browser, "code").send_keys("abc")  # fails the pattern: only the server knows
        field(browser, "pin").send_keys("4321")
        browser.find_element(By.CSS_SELECTOR, 'button[value="accept"]').click()
        error = browser.find_element(By.CLASS_NAME, "mis-error")
        assert error.text == "does not match the pattern"
        assert field(browser, "pin").get_attribute("value") == ""  # a secret is never sent back
        assert field(browser, "name").get_attribute("value") == "Grace"

        field(browser, "code").clear()
        field(browser, "code").send_keys("ABC")
        field(browser, "pin").send_keys("4321")
        browser.find_element(By.CSS_SELECTOR, 'button[value="accept"]').click()
        # the click loads a new page whose <main> replaces the old one: wait for its text (bounded)
        wait_for_main(browser, "Nothing is waiting")
        content = {
            "name": "Grace", "age": 40, "plan": "pro", "agree": True, "size": "m", "tags": ["a", "c"], "days": ["tue"],
            "code": "ABC", "pin": "4321",
        }
        assert call.answer() == {"result": {"action": "accept", "content": content}}
    wait_empty(broker)


def test_decline_skips_the_browser_checks(site: tuple[str, PendingInputBroker], browser: Any, server: FakeServer) -> None:
    base, broker = site
    with web_client(server, WebHandler(broker)) as client:
        call = Background(lambda: client.call_tool("form", assigns={"user": "bob"}))
        (pending,) = wait_pending(broker, "bob")
        browser.get(f"{base}/login/bob")
        browser.get(f"{base}/inputs/{pending.id}")
        browser.find_element(By.CSS_SELECTOR, 'button[value="decline"]').click()
        # the click loads a new page whose <main> replaces the old one: wait for its text (bounded)
        wait_for_main(browser, "Nothing is waiting")
        assert call.answer() == {"result": {"action": "decline"}}


def test_a_person_logs_in_to_a_protected_server_in_chromium(
    site: tuple[str, PendingInputBroker], logins: Logins, peer: OAuthPeer, browser: Any
) -> None:
    base, _ = site
    browser.get(f"{base}/login/alice")
    assert logins.status("alice") == {"notes": False}
    browser.get(f"{base}/mcp-login/notes/login?next=/inputs/")  # a page with a button: a GET starts nothing
    assert browser.title == "Log in to notes" and peer.counts["authorize"] == 0
    browser.find_element(By.CSS_SELECTOR, 'button[type="submit"]').click()  # app -> authorization server -> app's callback -> next
    # click() may return before the chain of redirects across two origins has ended: wait for its end (bounded)
    WebDriverWait(browser, 10).until(lambda d: d.current_url == f"{base}/inputs/")
    assert logins.status("alice") == {"notes": True} and logins.status("bob") == {"notes": False}
    registered = next(iter(peer.clients.values()))
    assert registered["redirect_uris"] == [f"{base}/mcp-login/callback"] and registered["application_type"] == "web"
    with logins.connect("alice", "notes", handler=None, protocol="legacy") as client:
        assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp offline_access"
