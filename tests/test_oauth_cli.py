"""The command line against a protected server: login in the browser ($BROWSER), the file store, logout, cron.

The "browser" is a small script named by ``$BROWSER`` (Python's webbrowser
module honours it) that follows the authorization server's redirect to the
command's loopback listener, as a person's browser would after logging in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from mcp_input_sync.oauth import FileStore

from .oauth_peer import OAuthPeer

ROOT = Path(__file__).resolve().parents[1]

FOLLOW = """
import sys
import requests

page = requests.get(sys.argv[1], timeout=10)
sys.exit(0 if page.status_code == 200 and "close this window" in page.text else 1)
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
