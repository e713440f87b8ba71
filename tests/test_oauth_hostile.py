"""A hostile MCP server or authorization server against the authorization flow (issue 21, items 5 and 7).

The MCP security best practices' section on server-side request forgery
during authorization discovery, and OWASP's SSRF guidance: a URL a server
names is fetched only over https (http to loopback for a loopback server),
never at an address more local than the server's own (checked where the
connection is made, so DNS rebinding gains nothing), every failure reads
the same, and nothing follows a redirect to another origin. Also the
login's smaller promises: the PKCE verifier stays out of the browser's
cookie, a GET from another site starts no login, the token folder is 0700,
the headless consent's URL stays out of urllib3's log, and a printed
authorization URL is the one opened.

A server that looks public is made by ranking the test server's URL as
public (``_reach.server_rank``); names resolve through ``_reach.resolve``,
which the tests replace. Everything listens on 127.0.0.1.
"""

from __future__ import annotations

import io
import logging
import os
import re
import socket
import stat
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

import mcp_input_sync as mis
from mcp_input_sync._protocol.oauth import OAuthRefused
from mcp_input_sync._protocol.oauth_metadata import AuthServerMetadata, check_as_metadata
from mcp_input_sync.oauth import Browser, FileStore, Headless, MemoryStore, OAuth, _reach, flow
from mcp_input_sync.oauth._fetch import Fetcher
from mcp_input_sync.oauth._reach import FETCH_FAILED, GLOBAL, LINK_LOCAL, LOOPBACK, NEVER, PRIVATE, Reach, rank, reach_for
from mcp_input_sync.web.logins import pending_key

from .oauth_peer import OAuthPeer
from .test_faults_http import UNPARSABLE, no_lookup  # noqa: F401 - a fixture


class Listener:
    """An "internal service" on 127.0.0.1: it counts the connections that reach it and answers none."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="hostile-listener", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5.0)
        self.sock.close()


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    server = OAuthPeer()
    yield server
    server.close()


@pytest.fixture
def internal() -> Iterator[Listener]:
    service = Listener()
    yield service
    service.close()


@pytest.fixture
def names(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Sequence[str]]]:
    """Host name -> the answers its resolutions give in turn (the last one repeats)."""
    table: dict[str, list[Sequence[str]]] = {}

    def resolve(host: str, port: int) -> Sequence[str]:
        answers = table.get(host)
        if not answers:
            raise socket.gaierror("no such name")
        return answers.pop(0) if len(answers) > 1 else answers[0]

    monkeypatch.setattr(_reach, "resolve", resolve)
    return table


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every connection urllib3 would open to a host other than 127.0.0.1: kept here, and refused before any packet."""
    from urllib3.util import connection

    tried: list[tuple[str, int]] = []
    real = connection.create_connection

    def guarded(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        if address[0] != "127.0.0.1":
            tried.append(address)
            raise OSError("the tests connect to 127.0.0.1 only")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(connection, "create_connection", guarded)
    return tried


@pytest.fixture
def public(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every MCP server counts as a public one (as if the test server were on the internet)."""
    monkeypatch.setattr(_reach, "server_rank", lambda url: GLOBAL)


def connect(peer: OAuthPeer, auth: OAuth) -> mis.Client:
    return mis.connect_http(peer.url, handler=mis.InputHandler(), auth=auth, protocol="legacy", timeout=10)


def refusal(peer: OAuthPeer, auth: OAuth | None = None) -> mis.ClientError:
    with pytest.raises(mis.ClientError) as caught:
        connect(peer, auth or OAuth(consent=Headless()))
    assert caught.value.kind == "auth"
    return caught.value


def metadata(issuer: str, **endpoints: str) -> AuthServerMetadata:
    return AuthServerMetadata(issuer, endpoints.get("authorization", issuer + "/authorize"), endpoints.get("token", issuer + "/token"),
                              registration_endpoint=endpoints.get("registration"))


# ---------------------------------------------------------------------------- addresses and ranks


def test_each_address_is_ranked_by_its_value_not_its_spelling() -> None:
    assert rank("93.184.216.34") == GLOBAL and rank("2606:4700::1111") == GLOBAL
    for private in ("10.0.0.5", "172.16.3.4", "192.168.1.1", "100.64.0.1", "fc00::1", "fd12::3"):
        assert rank(private) == PRIVATE, private
    for link_local in ("169.254.169.254", "fe80::1", "fe80::1%eth0"):
        assert rank(link_local) == LINK_LOCAL, link_local
    for loopback in ("127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "::ffff:127.0.0.1", "::ffff:7f00:1"):
        assert rank(loopback) == LOOPBACK, loopback
    assert rank("::ffff:169.254.169.254") == LINK_LOCAL
    for never in ("224.0.0.1", "ff02::1", "240.0.0.1", "255.255.255.255"):
        assert rank(never) == NEVER, never


# Teredo (2001::/32): server 65.54.227.120 (or 10.0.0.1), client as the last 32 bits inverted
TEREDO_TO_LOOPBACK = "2001:0:4136:e378:8000:63bf:80ff:fffe"  # client 127.0.0.1
TEREDO_PUBLIC = "2001:0:4136:e378:8000:63bf:a247:28f1"  # client 93.184.215.14
TEREDO_VIA_PRIVATE = "2001:0:a00:1:8000:63bf:a247:28f1"  # server 10.0.0.1


def test_site_local_is_private_and_an_ipv6_address_is_ranked_by_the_ipv4_one_it_carries() -> None:
    # issue 31: Python's is_global calls fec0::/10 and all of 2002::/16 public, and all of 2001::/32 private
    for site_local in ("fec0::1", "fec0:0:0:ffff::1", "feff::1"):
        assert rank(site_local) == PRIVATE, site_local
    sixtofour = {"2002:5db8:d70e::1": GLOBAL, "2002:c0a8:101::1": PRIVATE, "2002:a9fe:a9fe::": LINK_LOCAL,
                 "2002:7f00:1::1": LOOPBACK, "2002::1": LOOPBACK, "2002:e000:1::": NEVER}
    teredo = {TEREDO_PUBLIC: GLOBAL, TEREDO_VIA_PRIVATE: PRIVATE, TEREDO_TO_LOOPBACK: LOOPBACK, "2001::1": NEVER}
    for address, expected in {**sixtofour, **teredo}.items():
        assert rank(address) == expected, address


def test_a_server_is_ranked_by_its_url_and_a_name_never_above_private(names: dict[str, list[Sequence[str]]]) -> None:
    assert reach_for("http://localhost:8000/mcp").level == LOOPBACK and reach_for("http://127.0.0.1:8000/mcp").http_loopback
    assert reach_for("https://[::1]/mcp").level == LOOPBACK
    assert reach_for("https://10.1.2.3/mcp").level == PRIVATE and not reach_for("https://10.1.2.3/mcp").http_loopback
    assert reach_for("https://169.254.10.10/mcp").level == LINK_LOCAL
    names["corp.internal"] = [["10.0.0.7"]]
    names["me.example"] = [["127.0.0.1"]]  # a name that says "loopback" may be a rebinding: private at most
    names["split.example"] = [["93.184.216.34", "10.0.0.7"]]  # a public answer among them: public
    assert reach_for("https://corp.internal/mcp").level == PRIVATE
    assert reach_for("https://me.example/mcp").level == PRIVATE
    assert reach_for("https://split.example/mcp").level == GLOBAL
    assert reach_for("https://nowhere.example/mcp").level == GLOBAL
    assert reach_for("https://mcp.example.com/mcp", private_networks=True).level == LOOPBACK


def test_a_public_servers_flow_reaches_public_https_only(names: dict[str, list[Sequence[str]]]) -> None:
    reach = Reach(GLOBAL, http_loopback=False)
    names["as.example"] = [["93.184.216.34"]]
    reach.check_url("https://as.example/token")
    for bad in (
        "http://as.example/token",  # plain http, to a public host
        "http://127.0.0.1:8080/",  # the client's own loopback, any port
        "https://127.0.0.1:8080/",
        "https://[::ffff:127.0.0.1]/",
        "https://169.254.169.254/latest/meta-data/",
        "https://[fe80::1]/",
        "https://10.0.0.1/admin",
        "https://0.0.0.0:6379/",
        "https://localhost:9200/",
        "https://[fec0::1]/",  # site-local
        "https://[2002:7f00:1::1]/",  # 6to4 of 127.0.0.1
        "https://[2002:a9fe:a9fe::]/latest/meta-data/",  # 6to4 of the cloud metadata address
        f"https://[{TEREDO_TO_LOOPBACK}]/",
    ):
        with pytest.raises(OAuthRefused) as caught:
            Reach(GLOBAL, http_loopback=False).check_url(bad)
        assert caught.value.check == "address" and caught.value.message == FETCH_FAILED, bad
    names["metadata.attacker.example"] = [["169.254.169.254"]]
    names["two.attacker.example"] = [["93.184.216.34", "127.0.0.1"]]  # one bad address is enough
    names["hex.attacker.example"] = [["127.0.0.1"]]  # as 0x7f000001 resolves: the value counts
    names["six.attacker.example"] = [["2606:4700::1111", "2002:a9fe:a9fe::"]]
    names["site.attacker.example"] = [["fec0::1"]]
    for named in ("https://metadata.attacker.example/", "https://two.attacker.example/", "https://hex.attacker.example/",
                  "https://six.attacker.example/", "https://site.attacker.example/"):
        with pytest.raises(OAuthRefused):
            Reach(GLOBAL, http_loopback=False).check_url(named)


def test_a_private_server_may_name_private_hosts_but_not_the_clients_own_or_link_local(names: dict[str, list[Sequence[str]]]) -> None:
    reach = Reach(PRIVATE, http_loopback=False)
    reach.check_url("https://10.0.0.9/token")
    reach.check_url("https://93.184.216.34/token")
    for bad in ("https://127.0.0.1/", "https://169.254.169.254/", "http://10.0.0.9/token", "https://224.0.0.1/"):
        with pytest.raises(OAuthRefused):
            Reach(PRIVATE, http_loopback=False).check_url(bad)
    reach.check_url("https://[fec0::1]/token")  # site-local: private
    reach.check_url(f"https://[{TEREDO_PUBLIC}]/token")
    for tunnelled in ("https://[2002:7f00:1::1]/", "https://[2002:a9fe:a9fe::]/", f"https://[{TEREDO_TO_LOOPBACK}]/"):
        with pytest.raises(OAuthRefused):
            Reach(PRIVATE, http_loopback=False).check_url(tunnelled)
    loopback = Reach(LOOPBACK, http_loopback=True)
    loopback.check_url("http://127.0.0.1:9000/token")
    loopback.check_url("http://localhost:9000/token")
    with pytest.raises(OAuthRefused):
        loopback.check_url("http://192.168.1.5/token")  # http goes to loopback only, even for a loopback server


# ---------------------------------------------------------------------------- the whole flow, against a hostile server


@pytest.mark.usefixtures("public")
def test_a_public_server_cannot_send_the_client_to_the_cloud_metadata_address(peer: OAuthPeer) -> None:
    peer.resource_metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    error = refusal(peer)
    assert error.check == "address" and error.message.endswith(FETCH_FAILED)
    assert peer.counts["register"] == 0 and peer.counts["authorize"] == 0


@pytest.mark.usefixtures("public")
def test_a_public_server_cannot_send_the_client_to_its_own_loopback(peer: OAuthPeer, internal: Listener) -> None:
    for named in (f"http://127.0.0.1:{internal.port}/.well-known/x", f"https://127.0.0.1:{internal.port}/.well-known/x"):
        peer.resource_metadata = named
        assert refusal(peer).check == "address"
    assert internal.accepted == 0


@pytest.mark.usefixtures("public")
def test_a_name_that_rebinds_to_an_internal_address_is_refused_where_the_connection_is_made(
    peer: OAuthPeer, internal: Listener, names: dict[str, list[Sequence[str]]]
) -> None:
    # the check before the request sees a public address; the connection's own resolution, the internal one
    names["rebind.attacker.example"] = [["93.184.216.34"], ["127.0.0.1"]]
    peer.resource_metadata = f"https://rebind.attacker.example:{internal.port}/.well-known/oauth-protected-resource"
    error = refusal(peer)
    assert error.check == "address" and error.message.endswith(FETCH_FAILED)
    assert internal.accepted == 0


@pytest.mark.parametrize(
    ("level", "address"),
    [(GLOBAL, "fec0::1"), (GLOBAL, "2002:7f00:1::1"), (GLOBAL, "2002:a9fe:a9fe::"),
     (PRIVATE, TEREDO_TO_LOOPBACK), (PRIVATE, "2002:7f00:1::1")],
)
def test_a_name_that_rebinds_to_an_address_carrying_a_more_local_one_is_refused_where_the_connection_is_made(
    peer: OAuthPeer, names: dict[str, list[Sequence[str]]], outside: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch,
    level: int, address: str,
) -> None:
    # issue 31: site-local, 6to4 and Teredo addresses; no connection leaves 127.0.0.1 (the outside fixture refuses one)
    monkeypatch.setattr(_reach, "server_rank", lambda url: level)
    names["rebind.attacker.example"] = [["93.184.216.34"], [address]]
    peer.resource_metadata = "https://rebind.attacker.example/.well-known/oauth-protected-resource"
    error = refusal(peer)
    assert error.check == "address" and error.message.endswith(FETCH_FAILED)
    assert outside == []


def test_registration_and_token_posts_go_nowhere_a_public_server_may_not_reach(internal: Listener) -> None:
    fetcher = Fetcher(timeout=5.0)
    try:
        bound = fetcher.toward("https://93.184.216.34/mcp")
        admin = f"https://127.0.0.1:{internal.port}/admin/users/delete-all"
        hostile = metadata("https://as.example", registration=admin, token=admin)
        with pytest.raises(OAuthRefused) as caught:
            flow.register(bound, flow.Settings("app"), hostile, "http://127.0.0.1:3000/cb", "native", None)
        assert caught.value.check == "address"
        with pytest.raises(OAuthRefused):
            bound.post_json(f"http://127.0.0.1:{internal.port}/admin/users/delete-all", {"all": True})
        assert internal.accepted == 0
    finally:
        fetcher.close()


def test_every_failure_to_fetch_reads_the_same(peer: OAuthPeer, internal: Listener) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    messages = set()
    peer.prm_status = 404  # the named document is not there
    messages.add(refusal(peer).message)
    peer.prm_status = 503  # the server is down
    messages.add(refusal(peer).message)
    peer.prm_status = 200
    peer.resource_metadata = f"http://127.0.0.1:{closed_port}/.well-known/oauth-protected-resource"  # a closed port
    messages.add(refusal(peer).message)
    peer.resource_metadata = f"http://127.0.0.1:{internal.port}/.well-known/oauth-protected-resource"  # a port that answers nothing
    messages.add(refusal(peer, OAuth(consent=Headless(), timeout=0.5)).message)
    peer.resource_metadata = None
    peer.metadata_redirect = f"http://localhost:{closed_port}/.well-known/oauth-authorization-server"  # away, to another origin
    messages.add(refusal(peer).message)
    assert len(messages) == 1 and messages.pop().endswith(FETCH_FAILED)


def test_a_loopback_server_still_logs_in_over_http_on_loopback(peer: OAuthPeer) -> None:
    with connect(peer, OAuth(consent=Headless())) as client:
        assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp offline_access"


# ---------------------------------------------------------------------------- what a person sees and keeps


@pytest.mark.parametrize("hidden", ["\u202e", "\u200b", "\u2066", "\u00ad", "\ufeff", "\u0430"])
def test_an_endpoint_with_characters_other_than_printable_ascii_is_refused(peer: OAuthPeer, hidden: str) -> None:
    peer.metadata = {"authorization_endpoint": peer.origin + f"/author{hidden}ize"}
    out = io.StringIO()
    auth = OAuth(consent=Browser(open_browser=lambda url: False, interactive=lambda: True, out=out, timeout=1.0))
    assert refusal(peer, auth).check == "endpoint"
    assert out.getvalue() == "" and peer.counts["authorize"] == 0
    with pytest.raises(OAuthRefused):
        check_as_metadata({"issuer": "https://as.example", "authorization_endpoint": f"https://as.example{hidden}/a",
                           "token_endpoint": "https://as.example/t"}, "https://as.example")


def test_the_headless_consents_url_stays_out_of_urllib3s_debug_log(peer: OAuthPeer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        with connect(peer, OAuth(consent=Headless())) as client:
            client.call_tool("whoami", {})
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/authorize" in logged  # the request is logged, its query is not
    assert "state=" not in logged and "code_challenge" not in logged


def test_a_token_folder_open_to_others_is_closed_before_a_record_goes_in(tmp_path: Path) -> None:
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    FileStore(folder).save("https://mcp.example/mcp", {"tokens": "secret"})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


# ---------------------------------------------------------------------------- the Flask login views

flask = pytest.importorskip("flask")


def login_app(peer: OAuthPeer, store: Any) -> Any:
    from mcp_input_sync.web.flask import login_blueprint
    from mcp_input_sync.web.logins import Logins

    app = flask.Flask(__name__)
    app.secret_key = "hostile-test"
    app.register_blueprint(login_blueprint(Logins(store, {"notes": peer.url}), lambda: flask.session.get("user")), url_prefix="/mcp-login")
    return app


def press_login(browser: Any) -> Any:
    page = browser.get("/mcp-login/notes/login?next=/")
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', page.get_data(as_text=True)))
    return browser.post("/mcp-login/notes/login", data=fields)


def cookie_session(app: Any, browser: Any) -> dict[str, Any]:
    cookie = browser.get_cookie(app.config["SESSION_COOKIE_NAME"])
    assert cookie is not None
    data: dict[str, Any] = app.session_interface.get_signing_serializer(app).loads(cookie.value)
    return data


def test_the_pkce_verifier_never_reaches_the_browsers_cookie(peer: OAuthPeer) -> None:
    import requests

    store = MemoryStore()
    app = login_app(peer, store)
    browser = app.test_client()
    with browser.session_transaction() as session:
        session["user"] = "alice"
    started = press_login(browser)
    assert started.status_code == 303
    kept = store.load(pending_key("alice", "notes"))
    assert kept is not None
    verifier = kept["pending"]["request"]["verifier"]
    seen = cookie_session(app, browser)
    assert verifier not in repr(seen)
    assert set(seen["mcp_input_sync_login"]) == {"user", "server", "next", "ticket", "state"}
    back = requests.get(started.headers["Location"], allow_redirects=False, timeout=10).headers["Location"]
    done = browser.get(back[len("http://localhost"):])
    assert done.status_code == 303 and store.load(pending_key("alice", "notes")) is None  # used once


def test_a_get_from_another_site_starts_no_login_and_cancels_none(peer: OAuthPeer) -> None:
    import requests

    app = login_app(peer, MemoryStore())
    browser = app.test_client()
    with browser.session_transaction() as session:
        session["user"] = "alice"
    started = press_login(browser)
    before = cookie_session(app, browser)["mcp_input_sync_login"]
    counts = dict(peer.counts), len(peer.seen)
    # what a page of another site can make the browser do: a GET (a link, an image), a POST without the token
    assert browser.get("/mcp-login/notes/login?next=/evil").status_code == 200
    assert browser.post("/mcp-login/notes/login", data={"next": "/evil"}).status_code == 400
    assert (dict(peer.counts), len(peer.seen)) == counts  # no discovery, no registration
    assert cookie_session(app, browser)["mcp_input_sync_login"] == before
    # a forged callback cancels nothing either
    assert browser.get("/mcp-login/callback?code=forged&state=forged").status_code == 400
    back = requests.get(started.headers["Location"], allow_redirects=False, timeout=10).headers["Location"]
    assert browser.get(back[len("http://localhost"):]).status_code == 303


@pytest.mark.parametrize("host", UNPARSABLE)
def test_an_authorization_server_urllib3_cannot_parse_fails_like_any_fetch(peer: OAuthPeer, host: str, no_lookup: list[Any]) -> None:
    # before: urllib3's LocationParseError escaped the fetcher and read as a failing token store (check "store")
    peer.prm = {"authorization_servers": [f"https://{host}"]}
    failed = refusal(peer)
    assert failed.check == "network" and FETCH_FAILED in str(failed), failed
    assert no_lookup == []  # refused while parsing, before any lookup
