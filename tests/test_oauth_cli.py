"""The command line against a protected server: login in the browser ($BROWSER), the file store, logout, cron.

The "browser" is a small script named by ``$BROWSER`` (Python's webbrowser
module honours it) that follows the authorization server's redirect to the
command's loopback listener, as a person's browser would after logging in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

import mcp_input_sync as mis
from mcp_input_sync.oauth import Browser, FileStore, MemoryStore, OAuth

from .oauth_peer import OAuthPeer

ROOT = Path(__file__).resolve().parents[1]

FOLLOW = """
import sys
import requests

page = requests.get(sys.argv[1], timeout=10)
sys.exit(0 if page.status_code == 200 and "close this window" in page.text else 1)
"""


#: What a browser sends with a top-level navigation, such as the authorization server's redirect.
NAVIGATION = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-Site": "cross-site"}

FOLLOW_AS_A_BROWSER = """
import sys
import requests

page = requests.get(sys.argv[1], timeout=10, headers={"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"})
sys.exit(0 if page.status_code == 400 and "Login stopped" in page.text else 1)
"""


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


def run(tmp_path: Path, browser: str, *words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "BROWSER": browser, "PYTHONPATH": str(ROOT)}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "mcp_input_sync", *words], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL, cwd=tmp_path
    )


def test_login_call_logout_and_a_cron_job_without_a_login(peer: OAuthPeer, tmp_path: Path) -> None:
    follow = tmp_path / "follow.py"
    follow.write_text(FOLLOW)
    browser = f"{sys.executable} {follow} %s"

    done = run(tmp_path, browser, "login", peer.url)
    assert done.returncode == 0, done.stderr
    assert f"logged in to {peer.url}" in done.stdout
    folder = tmp_path / "config" / "mcp-input-sync" / "tokens"
    record = FileStore(folder).path(peer.url)
    assert record.exists()

    # the login is remembered: a call with no browser at all needs none
    done = run(tmp_path, "false", "call", "--url", peer.url, "whoami")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "mcp offline_access"
    assert peer.counts["authorize"] == 1

    done = run(tmp_path, "false", "logout", peer.url)
    assert done.returncode == 0 and f"logged out of {peer.url}" in done.stdout
    assert not record.exists()
    assert "no login was kept" in run(tmp_path, "false", "logout", peer.url).stdout

    # no login, no browser, nobody at the terminal: fail at once, saying how to log in
    done = run(tmp_path, "false", "call", "--url", peer.url, "whoami")
    assert done.returncode == 4
    assert "mcp-input-sync login" in done.stderr and "check" not in done.stdout


def test_a_call_on_a_protected_server_logs_in_through_the_browser(peer: OAuthPeer, tmp_path: Path) -> None:
    follow = tmp_path / "follow.py"
    follow.write_text(FOLLOW)
    done = run(tmp_path, f"{sys.executable} {follow} %s", "tools", "--url", peer.url)
    assert done.returncode == 0, done.stderr
    assert "whoami" in done.stdout and "browser window was opened" in done.stderr
    assert FileStore(tmp_path / "config" / "mcp-input-sync" / "tokens").path(peer.url).exists()


def test_login_takes_a_url_not_a_command(tmp_path: Path) -> None:
    assert run(tmp_path, "false", "login", "http://127.0.0.1:9/mcp", "--", "python", "server.py").returncode == 2


# ---------------------------------------------------------------------------- a state that does not match (issue 22)


def test_a_mismatched_state_ends_the_browser_login_at_once_with_an_auth_error(peer: OAuthPeer) -> None:
    peer.state_mode = "wrong"
    pages: list[requests.Response] = []

    def browser(url: str) -> bool:
        pages.append(requests.get(url, headers=NAVIGATION, timeout=5))
        return True

    auth = OAuth(consent=Browser(open_browser=browser, timeout=300), store=MemoryStore())
    started = time.monotonic()
    try:
        with pytest.raises(mis.ClientError) as caught:
            auth.login(peer.url)
    finally:
        auth.close()
    assert time.monotonic() - started < 30  # not the 300 s of the consent's timeout
    assert caught.value.kind == "auth" and caught.value.check == "state"
    assert "state that does not match this login" in caught.value.message
    assert pages[0].status_code == 400 and "Login stopped" in pages[0].text
    assert peer.counts["code"] == 0  # no code was traded


def test_a_forged_redirect_that_is_not_a_navigation_cannot_end_a_real_login(peer: OAuthPeer) -> None:
    strays: list[int] = []

    def browser(url: str) -> bool:
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        for headers in ({"Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}, {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, {}):
            strays.append(requests.get(redirect + "?code=forged&state=not-this-one", headers=headers, timeout=5).status_code)
        strays.append(requests.get(redirect + "?state=not-this-one", headers=NAVIGATION, timeout=5).status_code)  # no code, no error
        return requests.get(url, headers=NAVIGATION, timeout=5).status_code == 200

    auth = OAuth(consent=Browser(open_browser=browser, timeout=10), store=MemoryStore())
    try:
        auth.login(peer.url)
        assert auth.tokens(peer.url) is not None
    finally:
        auth.close()
    assert strays == [400, 400, 400, 400]


def test_the_login_command_stops_at_once_on_a_mismatched_state(peer: OAuthPeer, tmp_path: Path) -> None:
    peer.state_mode = "wrong"
    follow = tmp_path / "follow.py"
    follow.write_text(FOLLOW_AS_A_BROWSER)
    done = run(tmp_path, f"{sys.executable} {follow} %s", "login", peer.url)  # bounded by run's 60 s, under the 300 s wait
    assert done.returncode == 4
    assert "[auth] Authorization failed: The browser came back" in done.stderr and "does not match" in done.stderr
