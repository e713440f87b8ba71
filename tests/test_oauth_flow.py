"""OAuth over real HTTP on 127.0.0.1: login, refresh, restart, step-up, the stores, and bad input.

The peer (tests/oauth_peer.py) is a protected MCP endpoint with its own
authorization server that issues expiring tokens and rotating refresh
tokens. The conformance runner's 44 auth rows are in test_conformance.py.
"""

from __future__ import annotations

import json
import logging
import stat
import threading
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
import requests
from freezegun import freeze_time

import mcp_input_sync as mis
from mcp_input_sync.oauth import Browser, FileStore, Headless, MemoryStore, OAuth
from mcp_input_sync.oauth._reach import FETCH_FAILED
from mcp_input_sync.oauth.stores import record_key

from .oauth_peer import OAuthPeer, race_renewals

JsonDict = dict[str, Any]
#: The scopes whoami answers after a first login: the PRM's, and offline_access, which the server lists.
MCP = "mcp offline_access"


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


def connect(peer: OAuthPeer, auth: OAuth, **options: Any) -> mis.Client:
    return mis.connect_http(peer.url, handler=mis.InputHandler(), auth=auth, protocol="legacy", timeout=10.0, **options)


def whoami(client: mis.Client) -> str:
    result = client.call_tool("whoami", {})
    return str(result["content"][0]["text"])


def headless(**kwargs: Any) -> OAuth:
    return OAuth(consent=Headless(), timeout=5.0, **kwargs)


# ---------------------------------------------------------------------------- the first login and what is stored


def test_the_first_401_logs_in_and_the_record_keeps_what_a_restart_needs(peer: OAuthPeer) -> None:
    store = MemoryStore()
    auth = headless(store=store)
    with connect(peer, auth) as client:
        assert whoami(client) == MCP
    assert peer.counts["register"] == 1 and peer.counts["authorize"] == 1 and peer.counts["code"] == 1
    registered = next(iter(peer.clients.values()))
    assert registered["application_type"] == "native" and "refresh_token" in registered["grant_types"]
    record = store.load(peer.url)
    assert record is not None and record["issuer"] == peer.origin and record["resource"] == peer.url
    assert record["metadata"]["token_endpoint"] == peer.origin + "/token"
    assert record["client"]["client_id"] == registered["client_id"]
    assert record["tokens"]["refresh_token"] and record["tokens"]["expires_at"] > 0
    assert auth.tokens(peer.url) is not None


def test_tokens_go_to_the_mcp_server_only(peer: OAuthPeer) -> None:
    with connect(peer, headless()) as client:
        whoami(client)
    for verb, path, headers in peer.seen:
        if path != "/mcp":
            assert not headers.get("authorization", "").startswith("Bearer"), (verb, path)
    assert any(h.get("authorization", "").startswith("Bearer at-") for h in peer.requests_to("/mcp"))


def test_a_redirect_of_an_mcp_request_to_another_origin_carries_no_token(peer: OAuthPeer) -> None:
    other = OAuthPeer()
    try:
        auth = headless()
        with connect(peer, auth) as client:
            whoami(client)
            peer.mcp_redirect = other.url
            with pytest.raises(mis.ClientError) as info:
                whoami(client)
            assert info.value.check == "redirect"
        assert other.requests_to("/mcp") == []  # not followed at all: no token, header or body there
    finally:
        other.close()


# ---------------------------------------------------------------------------- refresh


def test_a_token_near_expiry_is_refreshed_before_the_request(peer: OAuthPeer) -> None:
    peer.expires_in = 600
    auth = headless()
    with freeze_time("2026-12-01 10:00:00") as frozen:
        with connect(peer, auth) as client:
            first = auth.authorization(peer.url)
            frozen.tick(560)  # within the 60 s margin
            assert whoami(client) == MCP
            assert peer.counts["refresh"] == 1 and peer.counts["authorize"] == 1
            assert auth.authorization(peer.url) != first


def test_a_401_with_a_refresh_token_refreshes_instead_of_logging_in(peer: OAuthPeer) -> None:
    auth = headless()
    with connect(peer, auth) as client:
        whoami(client)
        with peer.lock:
            peer.access.clear()  # the access token is refused; the refresh token still works
        assert whoami(client) == MCP
    assert peer.counts["refresh"] == 1 and peer.counts["authorize"] == 1


def test_one_refresh_serves_every_thread_that_needs_it(peer: OAuthPeer) -> None:
    auth = headless()
    with connect(peer, auth) as client:
        whoami(client)
        with peer.lock:
            peer.access.clear()
        peer.token_gate = threading.Event()  # hold the refresh until every thread has met the 401
        seen_before, tokens_before = len(peer.requests_to("/mcp")), len(peer.requests_to("/token"))
        results: list[str] = []
        errors: list[BaseException] = []

        def call() -> None:
            try:
                results.append(whoami(client))
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(6)]
        for thread in threads:
            thread.start()
        pause = threading.Event()
        for _ in range(500):  # until all six have met the 401 and one refresh waits at the gate
            if len(peer.requests_to("/mcp")) >= seen_before + 6 and len(peer.requests_to("/token")) >= tokens_before + 1:
                break
            pause.wait(0.01)
        peer.token_gate.set()
        for thread in threads:
            thread.join(10)
    assert errors == [] and results == [MCP] * 6
    assert peer.counts["refresh"] == 1  # rotating refresh tokens: a second refresh would have failed


def test_a_restart_with_the_file_store_refreshes_without_a_second_login(peer: OAuthPeer, tmp_path: Path) -> None:
    peer.expires_in = 600
    with freeze_time("2026-12-01 10:00:00") as frozen:
        with connect(peer, headless(store=FileStore(tmp_path))) as client:
            whoami(client)
        frozen.tick(3600)  # the access token is long expired when the process comes back
        restarted = OAuth(store=FileStore(tmp_path), consent=None)  # no way to log in: it must not need one
        with connect(peer, restarted) as client:
            assert whoami(client) == MCP
    assert peer.counts["authorize"] == 1 and peer.counts["register"] == 1 and peer.counts["refresh"] == 1


def test_the_file_store_writes_private_files_per_server_and_per_issuer(peer: OAuthPeer, tmp_path: Path) -> None:
    folder = tmp_path / "tokens"
    store = FileStore(folder)
    with connect(peer, headless(store=store)) as client:
        whoami(client)
    files = sorted(p for p in folder.iterdir() if p.suffix == ".json")
    # the server's record (tokens), and its issuer's (the metadata, and the registration made there, shared by all)
    assert files == sorted([store.path(peer.url), store.path(f"issuer\n{peer.origin}")])
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files) and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert peer.url not in "".join(p.name for p in folder.iterdir())
    assert not any(p.name.startswith(".tmp-") for p in folder.iterdir())


def test_two_processes_sharing_a_file_store_refresh_once(peer: OAuthPeer, tmp_path: Path) -> None:
    with connect(peer, headless(store=FileStore(tmp_path))) as client:
        whoami(client)
    with peer.lock:
        peer.access.clear()
    # two providers with their own in-process locks stand for two processes: only the file lock joins them
    first, second = OAuth(store=FileStore(tmp_path)), OAuth(store=FileStore(tmp_path))
    sent = first.authorization(peer.url)
    assert sent == second.authorization(peer.url)
    outcomes = race_renewals(peer, [first, second], sent)
    assert outcomes == [None, None]
    assert peer.counts["refresh"] == 1
    assert first.authorization(peer.url) == second.authorization(peer.url) != sent


# ---------------------------------------------------------------------------- revocation and no way to log in


def test_a_revoked_login_logs_in_again(peer: OAuthPeer) -> None:
    auth = headless()
    with connect(peer, auth) as client:
        whoami(client)
        peer.revoke_all()
        assert whoami(client) == MCP
    assert peer.counts["authorize"] == 2 and peer.counts["refresh"] == 1


def test_without_consent_a_needed_login_is_a_clear_auth_error(peer: OAuthPeer) -> None:
    with pytest.raises(mis.ClientError) as caught:
        connect(peer, OAuth(consent=None))
    assert caught.value.kind == "auth" and caught.value.check == "login"
    assert "login" in caught.value.message


def test_a_server_that_keeps_refusing_stops_after_three_attempts(peer: OAuthPeer) -> None:
    auth = headless()
    with connect(peer, auth) as client:
        peer.always_401 = True
        with pytest.raises(mis.ClientError) as caught:
            whoami(client)
    assert caught.value.kind == "auth" and caught.value.check == "attempts" and "3" in caught.value.message


# ---------------------------------------------------------------------------- step-up


def test_insufficient_scope_asks_for_the_union_and_retries(peer: OAuthPeer) -> None:
    store = MemoryStore()
    with connect(peer, headless(store=store)) as client:
        assert whoami(client) == MCP
        result = client.call_tool("admin", {})
        assert result["content"][0]["text"] == "mcp offline_access admin"
    record = store.load(peer.url)
    assert record is not None and record["scopes"] == ["mcp", "offline_access", "admin"]
    assert peer.counts["authorize"] == 2


# ---------------------------------------------------------------------------- bad input: a clear error, no authorization request


def expect_refusal(peer: OAuthPeer, check: str, auth: Optional[OAuth] = None) -> mis.ClientError:
    with pytest.raises(mis.ClientError) as caught:
        connect(peer, auth or headless())
    assert caught.value.kind == "auth" and caught.value.check == check, caught.value
    return caught.value


def test_metadata_for_another_issuer_is_not_used(peer: OAuthPeer) -> None:
    peer.metadata = {"issuer": "http://127.0.0.1:1"}
    expect_refusal(peer, "issuer")
    assert peer.counts["authorize"] == 0 and peer.counts["register"] == 0


def test_a_resource_that_is_not_the_server_stops_before_authorization(peer: OAuthPeer) -> None:
    peer.prm = {"resource": "http://127.0.0.1:1/mcp"}
    expect_refusal(peer, "resource")
    assert peer.counts["authorize"] == 0


def test_a_server_without_s256_is_refused(peer: OAuthPeer) -> None:
    peer.metadata = {"code_challenge_methods_supported": ["plain"]}
    expect_refusal(peer, "pkce")
    assert peer.counts["authorize"] == 0


def test_a_huge_metadata_document_is_refused(peer: OAuthPeer) -> None:
    peer.metadata_body = b'{"issuer": "' + b"x" * (300 * 1024) + b'"}'
    expect_refusal(peer, "size")


def test_a_metadata_redirect_to_another_origin_is_refused(peer: OAuthPeer) -> None:
    peer.metadata_redirect = "http://localhost:1/.well-known/oauth-authorization-server"
    expect_refusal(peer, "redirect")


def test_a_wrong_iss_is_refused_before_the_code_is_used(peer: OAuthPeer) -> None:
    peer.iss_mode = "wrong"
    expect_refusal(peer, "iss")
    assert peer.counts["code"] == 0


def test_a_missing_iss_from_a_server_that_promised_it_is_refused(peer: OAuthPeer) -> None:
    peer.iss_mode = "absent"
    expect_refusal(peer, "iss")


def test_a_forged_state_is_refused(peer: OAuthPeer) -> None:
    peer.state_mode = "wrong"
    expect_refusal(peer, "state")
    assert peer.counts["code"] == 0


def test_a_token_endpoint_that_hangs_is_cut_off(peer: OAuthPeer) -> None:
    peer.token_gate = threading.Event()  # never set before the client gives up
    error = expect_refusal(peer, "network", OAuth(consent=Headless(), timeout=0.5))
    assert error.message.endswith(FETCH_FAILED)  # the one text of every failed exchange: a timeout is not told apart


def test_a_refused_registration_says_what_to_configure(peer: OAuthPeer) -> None:
    peer.registration_status = 400
    expect_refusal(peer, "registration")


def test_no_registration_endpoint_says_what_to_configure(peer: OAuthPeer) -> None:
    peer.metadata = {"registration_endpoint": None}
    error = expect_refusal(peer, "registration")
    assert "client_id" in error.message


# ---------------------------------------------------------------------------- nothing secret in logs, errors or reprs


def test_no_token_code_or_secret_reaches_a_log_a_repr_or_an_error(peer: OAuthPeer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    store = MemoryStore()
    auth = OAuth(consent=Headless(), store=store, client_id="pre", client_secret="s3cret-value", client_issuer=peer.origin)
    peer.clients["pre"] = {"client_id": "pre", "redirect_uris": ["http://127.0.0.1:3000/callback"]}
    with connect(peer, auth) as client:
        whoami(client)
        peer.always_401 = True
        with pytest.raises(mis.ClientError) as caught:
            whoami(client)
    record = store.load(peer.url)
    assert record is not None
    secrets = [record["tokens"]["access_token"], record["tokens"]["refresh_token"], "s3cret-value"]
    shown = " ".join([caplog.text, repr(auth), repr(store), repr(auth.tokens(peer.url)), str(caught.value), repr(caught.value),
                      repr(auth.settings), json.dumps(caught.value.data)])
    for secret in secrets:
        assert secret not in shown


# ---------------------------------------------------------------------------- consent: the browser, and a web app's two steps


def browser_that_follows(url: str) -> bool:
    """Stands for a user's browser: follows the authorization server's redirect to the loopback listener."""
    response = requests.get(url, timeout=5)
    assert response.status_code == 200 and "close this window" in response.text
    return True


def test_the_browser_consent_receives_the_redirect_on_a_loopback_port(peer: OAuthPeer, capsys: pytest.CaptureFixture[str]) -> None:
    auth = OAuth(consent=Browser(open_browser=browser_that_follows, timeout=10))
    with connect(peer, auth) as client:
        assert whoami(client) == MCP
    registered = next(iter(peer.clients.values()))
    uri = registered["redirect_uris"][0]
    assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback") and not uri.startswith("http://127.0.0.1:0/")
    assert "browser window was opened" in capsys.readouterr().err


def test_no_browser_and_no_terminal_fails_at_once_saying_how_to_log_in(peer: OAuthPeer) -> None:
    consent = Browser(open_browser=lambda url: False, interactive=lambda: False, timeout=300)
    error = expect_refusal(peer, "consent", OAuth(consent=consent))
    assert "mcp-input-sync login" in error.message


def test_no_browser_at_a_terminal_prints_the_address(peer: OAuthPeer, capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[str] = []
    consent = Browser(open_browser=lambda url: seen.append(url) or False, interactive=lambda: True, timeout=0.5)
    expect_refusal(peer, "consent", OAuth(consent=consent))
    err = capsys.readouterr().err
    assert "Open this address" in err and seen and seen[0] in err


def test_a_web_app_begins_and_finishes_in_two_requests(peer: OAuthPeer) -> None:
    store = MemoryStore()
    app = OAuth(store=store, account="user-7")
    pending = json.loads(json.dumps(app.begin(peer.url, "https://app.example/oauth/callback")))  # kept in the session
    assert pending["url"].startswith(peer.origin + "/authorize?")
    registered = next(iter(peer.clients.values()))
    assert registered["application_type"] == "web"
    location = requests.get(pending["url"], allow_redirects=False, timeout=5).headers["Location"]
    OAuth(store=store, account="user-7").finish(pending, location)  # another worker finishes
    with connect(peer, OAuth(store=store, account="user-7")) as client:
        assert whoami(client) == MCP
    with pytest.raises(mis.ClientError) as caught:  # another user has no login
        connect(peer, OAuth(store=store, account="user-8"))
    assert caught.value.check == "login"


def test_finish_refuses_a_tampered_pending_record(peer: OAuthPeer) -> None:
    app = OAuth()
    pending = app.begin(peer.url, "https://app.example/cb")
    location = requests.get(pending["url"], allow_redirects=False, timeout=5).headers["Location"]
    tampered = dict(pending, request=dict(pending["request"], state="other"))
    with pytest.raises(mis.ClientError) as caught:
        app.finish(tampered, location)
    assert caught.value.check == "state"
    with pytest.raises(mis.ClientError) as caught:
        app.finish({"server": 3}, location)
    assert caught.value.check == "pending"


def test_login_and_logout(peer: OAuthPeer) -> None:
    auth = headless()
    auth.login(peer.url)
    assert peer.counts["authorize"] == 1 and auth.tokens(peer.url) is not None
    assert auth.logout(peer.url) is True and auth.tokens(peer.url) is None
    assert auth.logout(peer.url) is False


def test_one_oauth_for_two_servers_sends_each_its_own_token(peer: OAuthPeer) -> None:
    other = OAuthPeer()
    try:
        auth = headless()
        with connect(peer, auth) as first, connect(other, auth) as second:
            assert whoami(first) == MCP and whoami(second) == MCP
        mine, theirs = auth.authorization(peer.url), auth.authorization(other.url)
        assert mine is not None and theirs is not None and mine != theirs
        assert all(h.get("authorization") in (None, mine) for h in peer.requests_to("/mcp"))
        assert all(h.get("authorization") in (None, theirs) for h in other.requests_to("/mcp"))
    finally:
        other.close()


def test_accounts_share_one_registration_per_issuer(peer: OAuthPeer) -> None:
    store = MemoryStore()
    for user in ("alice", "bob"):
        with connect(peer, OAuth(consent=Headless(), store=store, account=user)) as client:
            whoami(client)
    assert peer.counts["register"] == 1 and peer.counts["authorize"] == 2
    alice, bob = store.load(record_key(peer.url, "alice")), store.load(record_key(peer.url, "bob"))
    assert alice is not None and bob is not None
    assert alice["client"] == bob["client"] and alice["tokens"] != bob["tokens"]


def test_a_token_endpoint_error_is_named_not_quoted(peer: OAuthPeer) -> None:
    peer.token_gate = None
    original = peer._token

    def failing(headers: dict[str, str], form: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 500, {"Content-Type": "text/plain"}, b"stack trace with secrets"

    peer._token = failing  # type: ignore[method-assign]
    try:
        error = expect_refusal(peer, "network")  # a server error, not a refusal: no login is spent on it
    finally:
        peer._token = original  # type: ignore[method-assign]
    assert error.message.endswith(FETCH_FAILED) and "500" not in error.message and "secrets" not in error.message


def test_no_lock_is_held_while_a_request_is_open(peer: OAuthPeer) -> None:
    auth = headless()
    with connect(peer, auth) as client:
        whoami(client)
        results: list[Any] = []
        held = threading.Thread(target=lambda: results.append(client.call_tool("hold", {})))
        held.start()
        assert peer.holding.wait(10)  # the hold call is open at the server
        with peer.lock:
            peer.access.clear()
        assert whoami(client) == MCP  # a refresh, under the record's lock, while that call stays open
        assert held.is_alive() and peer.counts["refresh"] == 1
        peer.hold_gate.set()
        held.join(10)
    assert len(results) == 1 and not held.is_alive()


def test_ctrl_c_while_waiting_for_the_browser_cancels_cleanly(peer: OAuthPeer, ctrl_c: None) -> None:
    import _thread
    import socket

    seen: list[str] = []

    def user_presses_ctrl_c(url: str) -> bool:
        seen.append(url)
        threading.Timer(0.2, _thread.interrupt_main).start()
        return True

    auth = OAuth(consent=Browser(open_browser=user_presses_ctrl_c, timeout=30))
    with pytest.raises(KeyboardInterrupt):
        auth.login(peer.url)
    redirect_uri = next(iter(peer.clients.values()))["redirect_uris"][0]
    port = int(redirect_uri.split(":")[2].split("/")[0])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # the listener is gone
    assert auth.tokens(peer.url) is None and seen


def test_preregistered_credentials_bound_to_another_issuer_are_not_shown_here(peer: OAuthPeer) -> None:
    auth = OAuth(consent=Headless(), client_id="elsewhere-id", client_secret="elsewhere-secret", client_issuer="https://as.elsewhere.example")
    with connect(peer, auth) as client:
        assert whoami(client) == MCP
    assert peer.counts["register"] == 1  # registered here instead
    for _, path, headers in peer.seen:
        assert "elsewhere" not in json.dumps(headers), path


# ---------------------------------------------------------------------------- what review found (each once a bug)


def test_the_loopback_listener_outlasts_an_idle_connection_and_a_stray_redirect(peer: OAuthPeer) -> None:
    import socket
    from urllib.parse import parse_qs, urlsplit

    strays: list[int] = []

    def busy_browser(url: str) -> bool:
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        port = int(urlsplit(redirect).port or 0)
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)  # a preconnect that never sends a byte
        try:
            strays.append(requests.get(redirect + "?code=forged&state=not-the-one", timeout=5).status_code)
            browser_that_follows(url)
        finally:
            idle.close()
        return True

    auth = OAuth(consent=Browser(open_browser=busy_browser, timeout=10))
    with connect(peer, auth) as client:
        assert whoami(client) == MCP
    assert strays == [400]


def test_a_request_sent_again_after_a_refresh_can_still_be_aborted(peer: OAuthPeer) -> None:
    auth = headless()
    client = connect(peer, auth)
    errors: list[BaseException] = []
    try:
        whoami(client)
        with peer.lock:
            peer.access.clear()  # the call meets a 401, refreshes on its posting thread, and is sent again

        def call() -> None:
            try:
                client.call_tool("hold", {})
            except mis.ClientError as exc:
                errors.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert peer.holding.wait(10) and peer.counts["refresh"] == 1
        client.close(timeout=2.0)  # must abort the retried request; the leak check catches a thread left reading
        caller.join(5)
        assert not caller.is_alive() and errors and errors[0].kind in ("closed", "transport")
    finally:
        peer.hold_gate.set()
        client.close()


def test_a_refresh_that_fails_on_the_network_keeps_the_valid_token_and_backs_off(peer: OAuthPeer) -> None:
    peer.expires_in = 600
    auth = headless()
    original = peer._token
    with freeze_time("2026-12-01 10:00:00") as frozen:
        with connect(peer, auth) as client:
            whoami(client)
            peer._token = lambda headers, form: (503, {}, b"")  # type: ignore[method-assign, assignment, misc]
            frozen.tick(560)  # within the refresh margin, still valid
            tries = len(peer.requests_to("/token"))
            assert whoami(client) == MCP and whoami(client) == MCP  # the old token, no loop, no login
            assert len(peer.requests_to("/token")) == tries + 1  # one try, then 30 s of rest
            peer._token = original  # type: ignore[method-assign]
            frozen.tick(31)
            assert whoami(client) == MCP
            assert peer.counts["refresh"] == 1 and peer.counts["authorize"] == 1


def test_a_refused_refresh_token_is_forgotten_and_the_valid_token_still_used(peer: OAuthPeer) -> None:
    peer.expires_in = 600
    store = MemoryStore()
    auth = headless(store=store)
    with freeze_time("2026-12-01 10:00:00") as frozen:
        with connect(peer, auth) as client:
            whoami(client)
            with peer.lock:
                peer.refresh.clear()  # the authorization server no longer knows the refresh token
            frozen.tick(560)
            assert whoami(client) == MCP and whoami(client) == MCP
            record = store.load(peer.url)
            assert record is not None and record["tokens"]["refresh_token"] is None
            assert peer.counts["refresh"] == 1 and peer.counts["authorize"] == 1
            frozen.tick(60)  # expired now: a clean new login
            assert whoami(client) == MCP and peer.counts["authorize"] == 2


def test_threads_that_meet_a_403_together_step_up_once(peer: OAuthPeer) -> None:
    with connect(peer, headless()) as client:
        whoami(client)
        results: list[Any] = []

        def admin() -> None:
            results.append(client.call_tool("admin", {})["content"][0]["text"])

        threads = [threading.Thread(target=admin) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
    assert results == ["mcp offline_access admin"] * 4
    assert peer.counts["authorize"] == 2


def test_a_403_for_scopes_already_held_stops_at_once(peer: OAuthPeer) -> None:
    with connect(peer, headless()) as client:
        peer.scope_always_missing = True
        with pytest.raises(mis.ClientError) as caught:
            whoami(client)
    assert caught.value.check == "scope" and peer.counts["authorize"] == 1


def test_a_resource_metadata_server_that_is_down_is_not_a_2025_03_26_server(peer: OAuthPeer) -> None:
    peer.prm_status = 503
    error = expect_refusal(peer, "metadata")
    assert error.message.endswith(FETCH_FAILED) and "503" not in error.message
    assert peer.requests_to("/authorize") == [] and peer.counts["register"] == 0


def test_a_registration_the_server_forgot_is_dropped_and_made_again(peer: OAuthPeer) -> None:
    store = MemoryStore()
    with connect(peer, headless(store=store)) as client:
        whoami(client)
    headless(store=store).logout(peer.url)  # the tokens go; the app's registration stays in the store
    peer.invalid_client_once = True  # the token endpoint no longer knows that registration
    with pytest.raises(mis.ClientError) as caught:
        connect(peer, headless(store=store))
    assert caught.value.check == "token" and "invalid_client" in caught.value.message
    with connect(peer, headless(store=store)) as client:  # the next login registers anew, no one edits the store
        assert whoami(client) == MCP
    assert peer.counts["register"] == 2


def test_a_pending_login_carries_no_client_secret(peer: OAuthPeer) -> None:
    peer.clients["pre"] = {"client_id": "pre", "redirect_uris": ["https://app.example/cb"]}
    app = OAuth(client_id="pre", client_secret="very-secret-value", client_issuer=peer.origin)
    pending = app.begin(peer.url, "https://app.example/cb")
    assert "very-secret-value" not in json.dumps(pending) and len(json.dumps(pending)) < 3000
    location = requests.get(pending["url"], allow_redirects=False, timeout=5).headers["Location"]
    app.finish(json.loads(json.dumps(pending)), location)
    assert app.tokens(peer.url) is not None


def test_a_secret_without_its_issuer_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="client_issuer"):
        OAuth(client_id="id", client_secret="secret")


def test_a_damaged_file_or_a_failing_store_is_a_typed_error(peer: OAuthPeer, tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.folder.mkdir(parents=True, exist_ok=True)
    store.path(peer.url).write_bytes(b"\xff\xfe not json")
    assert store.load(peer.url) is None  # a damaged file reads as no login
    with store.lock("k", 1.0), store.lock("k", 1.0):  # re-entrant for one thread
        pass

    class Broken(MemoryStore):
        def load(self, key: str) -> Optional[dict[str, Any]]:
            raise ConnectionError("redis://user:hunter2@cache:6379 unreachable")

    with pytest.raises(mis.ClientError) as caught:
        connect(peer, OAuth(consent=Headless(), store=Broken()))
    assert caught.value.check == "store" and "ConnectionError" in caught.value.message
    assert "hunter2" not in caught.value.message
