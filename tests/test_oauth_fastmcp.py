"""OAuth against an authorization server nobody here wrote: FastMCP 4.1.6 with its in-memory OAuth provider.

The server (tests/peers/fastmcp_oauth_server.py, run in the venv peers/setup.sh
makes) is FastMCP's own stack: the MCP SDK's authorization handlers (metadata,
dynamic registration, authorize, token with client_secret_basic), expiring
access tokens and rotating refresh tokens. Its two test routes stand for
what only time or an administrator does: expire every access token, revoke
every token. Both eras: FastMCP speaks 2026-07-28 (auto detection) and the
initialize handshake (``protocol="legacy"``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest
import requests
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync.oauth import FileStore, Headless, MemoryStore, OAuth

from .http_peers import http_peer

PEERS = Path(os.environ.get("MIS_PEERS", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-input-sync-peers"))
FASTMCP_PYTHON = PEERS / "venv-fastmcp" / "bin" / "python"

pytestmark = pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")


class Server:
    def __init__(self, url: str) -> None:
        self.url = url
        self.origin = url[: -len("/mcp")]

    def expire(self) -> None:
        requests.post(self.origin + "/test/expire", timeout=10).raise_for_status()

    def revoke(self) -> None:
        requests.post(self.origin + "/test/revoke", timeout=10).raise_for_status()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with http_peer("fastmcp_oauth_server.py", python=str(FASTMCP_PYTHON), seconds=60) as url:
        yield Server(url)


class Counted(OAuth):
    """An OAuth that counts its logins (authorization requests) and token requests."""

    def __init__(self, **kwargs: Any) -> None:
        self.logins = 0
        kwargs.setdefault("consent", Headless(answer=self._log_in))
        super().__init__(timeout=10.0, **kwargs)
        self.token_requests = 0
        post_form = self.fetcher.post_form

        def counted(request: Any) -> Any:
            self.token_requests += 1
            return post_form(request)

        self.fetcher.post_form = counted  # type: ignore[method-assign]

    def _log_in(self, url: str) -> str:
        self.logins += 1
        location = self.fetcher.redirect_location(url)
        assert location is not None
        return location


def connect(server: Server, auth: OAuth, protocol: str = "auto") -> mis.Client:
    return mis.connect_http(server.url, handler=mis.InputHandler(), auth=auth, protocol=protocol, timeout=20.0)


def whoami(client: mis.Client) -> str:
    return str(client.call_tool("whoami", {})["content"][0]["text"])


@pytest.mark.parametrize("protocol", ["prefer-modern", "legacy"])
def test_login_and_calls_from_several_threads_in_both_eras(server: Server, protocol: str) -> None:
    auth = Counted()
    with connect(server, auth, protocol) as client:
        assert client.era == ("modern" if protocol == "prefer-modern" else "legacy")
        assert whoami(client) == "mcp"
        results: list[Any] = []
        errors: list[BaseException] = []

        def work(n: int) -> None:
            try:
                results.append(client.call_tool("add", {"a": n, "b": 1})["content"][0]["text"])
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == [] and sorted(results, key=int) == [str(n + 1) for n in range(8)]
    assert auth.logins == 1


def test_one_refresh_serves_every_thread_at_expiry(server: Server) -> None:
    auth = Counted()
    with freeze_time() as frozen:
        with connect(server, auth) as client:
            whoami(client)
            before = auth.authorization(server.url)
            frozen.tick(3600 - 30)  # every thread now finds the token within the refresh margin
            errors: list[BaseException] = []

            def work() -> None:
                try:
                    assert whoami(client) == "mcp"
                except BaseException as exc:  # noqa: BLE001
                    errors.append(exc)

            threads = [threading.Thread(target=work) for _ in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
    assert errors == []  # FastMCP rotates refresh tokens: a second refresh with the spent one would fail
    assert auth.logins == 1 and auth.token_requests == 2  # the code, then one refresh
    assert auth.authorization(server.url) != before


def test_a_token_the_server_expired_early_ends_in_a_clean_new_login(server: Server) -> None:
    # FastMCP's provider drops the refresh token with an expired access token it is shown, so the
    # refresh is refused: the client logs in again, or says it cannot when nobody can log in.
    store = MemoryStore()
    auth = Counted(store=store)
    with connect(server, auth) as client:
        whoami(client)
        server.expire()
        assert whoami(client) == "mcp"
    assert auth.logins == 2 and auth.token_requests == 3  # code, refused refresh, code
    server.expire()
    with pytest.raises(mis.ClientError) as caught:
        connect(server, Counted(store=store, consent=None))
    assert caught.value.kind == "auth" and caught.value.check == "login"


def test_a_token_near_its_expiry_is_refreshed_before_it_is_sent(server: Server) -> None:
    auth = Counted()
    with freeze_time() as frozen:
        with connect(server, auth) as client:
            whoami(client)
            frozen.tick(3600 - 30)  # FastMCP's tokens live an hour: within the one-minute margin now
            assert whoami(client) == "mcp"
    assert auth.logins == 1 and auth.token_requests == 2


def test_a_restart_with_the_file_store_needs_no_second_login(server: Server, tmp_path: Path) -> None:
    with freeze_time() as frozen:
        first = Counted(store=FileStore(tmp_path))
        with connect(server, first) as client:
            whoami(client)
        frozen.tick(3600 - 30)  # the process comes back when the token is about to expire
        restarted = Counted(store=FileStore(tmp_path), consent=None)  # it could not log in if it had to
        with connect(server, restarted) as client:
            assert whoami(client) == "mcp"
    assert restarted.logins == 0 and restarted.token_requests == 1  # one refresh, from the stored metadata and client


def test_a_revoked_login_logs_in_again_or_says_so(server: Server) -> None:
    store = MemoryStore()
    auth = Counted(store=store)
    with connect(server, auth) as client:
        whoami(client)
        server.revoke()
        assert whoami(client) == "mcp"  # the refresh is refused, so a clean new login
    assert auth.logins == 2
    server.revoke()
    with pytest.raises(mis.ClientError) as caught:
        connect(server, Counted(store=store, consent=None))
    assert caught.value.kind == "auth" and caught.value.check == "login"


def test_the_stored_record_names_fastmcps_issuer_and_registration(server: Server) -> None:
    store = MemoryStore()
    with connect(server, Counted(store=store)) as client:
        whoami(client)
    record = store.load(server.url)
    assert record is not None
    assert record["issuer"] == server.origin + "/" and record["resource"] == server.url
    assert record["client"]["source"] == "dynamic" and record["client"]["method"] == "client_secret_basic"
    assert record["tokens"]["refresh_token"] and record["tokens"]["expires_at"]
