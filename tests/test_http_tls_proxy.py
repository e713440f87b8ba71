"""Client certificates (mutual TLS) and explicit proxies over HTTP: ``connect_http(cert=..., proxies=...)``,
the same in a configuration file's entry, and ``OAuth(proxies=...)`` (issue 34, item 6).

The mutual-TLS server is the testing kit's fake served over HTTPS (tests/fake_https.py), asking every client
for a certificate from a test CA (``ssl.CERT_REQUIRED``); the plain-HTTP server is the official SDK's legacy
peer. The proxy (tests/forward_proxy.py) is the only one that can resolve ``mcp.proxied.test``: a client
given that name reaches the server through the proxy or not at all.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Optional
from urllib.parse import urlsplit

import pytest
import trustme

import mcp_input_sync as mis
from mcp_input_sync.oauth import Headless, OAuth
from mcp_input_sync.testing import ToolCall
from mcp_input_sync.transports.http import HttpTransport

from .fake_https import FakeOverHttps
from .forward_proxy import ForwardProxy
from .harness import recorded_server, schema_errors, tool_text
from .http_peers import http_peer
from .oauth_peer import OAuthPeer

#: A name only the test proxy resolves (to 127.0.0.1).
PROXIED = "mcp.proxied.test"
HOSTS = {PROXIED: "127.0.0.1"}
#: A password that must never show in a repr, a message or a log.
PASSWORD = "pr0xy-s3cret-pw"
#: The most seconds a refused connection may take to fail (it is retried twice, 0.5 s and 1 s apart).
REFUSED_WITHIN = 10.0


class Identity(NamedTuple):
    """The client CA the server trusts, and a client certificate it issued: one PEM file, and the same as two."""

    ca: trustme.CA
    pem: Path
    cert: Path
    key: Path


@pytest.fixture(autouse=True)
def no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's proxy settings and CA bundles play no part unless a test sets them."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    authority = trustme.CA()
    issued = authority.issue_cert("alice@example.com")
    pem, cert, key = tmp_path / "alice.pem", tmp_path / "alice.crt", tmp_path / "alice.key"
    issued.private_key_and_cert_chain_pem.write_to_path(str(pem))
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    return Identity(authority, pem, cert, key)


@pytest.fixture
def mtls(tmp_path: Path, identity: Identity) -> Iterator[FakeOverHttps]:
    """A legacy fake with a ``hello`` tool over HTTPS, refusing every client without a certificate from ``identity.ca``."""
    fake = recorded_server(timeout=10.0)

    @fake.tool
    def hello(call: ToolCall) -> str:
        return f"hello {call.arguments['who']}"

    with FakeOverHttps(fake, tmp_path, names=(PROXIED,), client_ca=identity.ca) as server:
        yield server
    assert schema_errors(fake) == []


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    with ForwardProxy(hosts=HOSTS) as running:
        yield running


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with http_peer("sdk_legacy_server.py") as url:
        yield url


def proxied(url: str) -> str:
    """``url`` with the name only the proxy resolves in place of 127.0.0.1."""
    assert "://127.0.0.1:" in url
    return url.replace("://127.0.0.1:", f"://{PROXIED}:", 1)


def whole(exc: BaseException) -> str:
    """An error's text and its causes' (reprs too), as a traceback would show them."""
    parts: list[str] = []
    seen: list[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and all(current is not other for other in seen):
        seen.append(current)
        parts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


# ---------------------------------------------------------------------------- client certificates


def test_a_server_that_asks_for_a_client_certificate_gets_the_one_given_as_cert(mtls: FakeOverHttps, identity: Identity) -> None:
    for cert in (str(identity.pem), identity.pem, (str(identity.cert), str(identity.key)), [identity.cert, identity.key]):
        with mis.connect_http(mtls.url, verify=str(mtls.ca_path), cert=cert, handler=None) as client:  # type: ignore[arg-type]
            assert tool_text(client.call_tool("hello", {"who": "alice"})) == "hello alice"
    assert [seen.body["method"] for seen in mtls.requests if seen.verb == "POST" and seen.body.get("method") == "tools/call"] == ["tools/call"] * 4


def test_without_a_client_certificate_the_connection_fails_clearly_and_at_once(mtls: FakeOverHttps) -> None:
    began = time.monotonic()
    with pytest.raises(mis.ClientError) as refused:
        mis.connect_http(mtls.url, verify=str(mtls.ca_path))
    assert time.monotonic() - began < REFUSED_WITHIN
    assert refused.value.kind == "transport"
    message = refused.value.message
    assert message.startswith(f"cannot reach {mtls.url}: "), message
    assert "client certificate" in message and "cert=" in message, message
    assert mtls.requests == []  # not one HTTP request got past the handshake


def test_a_certificate_the_server_does_not_trust_or_cannot_use_fails_clearly(mtls: FakeOverHttps, tmp_path: Path) -> None:
    stranger = trustme.CA().issue_cert("mallory@example.com")
    foreign = tmp_path / "mallory.pem"
    stranger.private_key_and_cert_chain_pem.write_to_path(str(foreign))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for cert in (foreign, junk):
        began = time.monotonic()
        with pytest.raises(mis.ClientError) as refused:
            mis.connect_http(mtls.url, verify=str(mtls.ca_path), cert=str(cert), retry=False)
        assert time.monotonic() - began < REFUSED_WITHIN
        assert refused.value.kind == "transport"
        assert "the server may have refused the client certificate (cert=)" in refused.value.message, refused.value.message
    assert mtls.requests == []


def test_a_certificate_file_that_does_not_exist_or_a_cert_of_the_wrong_form_is_refused_before_anything_is_sent(
    mtls: FakeOverHttps, tmp_path: Path, identity: Identity
) -> None:
    missing = tmp_path / "nowhere" / "alice.pem"
    for cert in (str(missing), (str(identity.cert), str(missing))):
        with pytest.raises(ValueError, match="cert names a file that does not exist: .*nowhere"):
            mis.connect_http(mtls.url, verify=str(mtls.ca_path), cert=cert)
    for wrong in (42, b"/etc/alice.pem", (str(identity.cert),), (str(identity.cert), str(identity.key), "third"), {"cert": "x"}):
        with pytest.raises(TypeError, match="cert must be a path"):
            mis.connect_http(mtls.url, verify=str(mtls.ca_path), cert=wrong)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a path is empty"):
        mis.connect_http(mtls.url, verify=str(mtls.ca_path), cert="")
    assert mtls.requests == [] and mtls.server.connections == 0


# ---------------------------------------------------------------------------- proxies


def test_every_request_goes_through_the_proxies_given(sdk_url: str, proxy: ForwardProxy) -> None:
    url = proxied(sdk_url)
    with mis.connect_http(url, proxies={"http": proxy.url}, handler=None) as client:
        assert tool_text(client.call_tool("echo", {"text": "via the proxy"})) == "via the proxy"
        assert "echo" in {tool["name"] for tool in client.list_tools()}
    carried = proxy.carried()
    assert {p.kind for p in carried} == {"forward"} and {p.target for p in carried} == {url}
    posted = [p.method for p in carried if p.verb == "POST"]
    assert posted[:2] == ["initialize", "notifications/initialized"] and {"tools/call", "tools/list"} <= set(posted), posted
    assert "GET" in [p.verb for p in carried] and carried[-1].verb == "DELETE"  # the legacy GET stream, and the session's end


def test_the_proxies_option_wins_over_the_environment_and_no_proxy_does_not_apply_to_it(
    sdk_url: str, proxy: ForwardProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ForwardProxy() as other:
        monkeypatch.setenv("HTTP_PROXY", other.url)
        monkeypatch.setenv("NO_PROXY", f"127.0.0.1,localhost,{PROXIED}")
        # as requests does it: NO_PROXY sends a request past the environment's proxy...
        with mis.connect_http(sdk_url, handler=None) as client:
            client.list_tools()
        assert other.carried() == [] and proxy.carried() == []
        # ... but never past the proxies given
        with mis.connect_http(proxied(sdk_url), proxies={"http": proxy.url}, handler=None) as client:
            client.list_tools()
        assert other.carried() == [] and len(proxy.carried()) >= 3
        monkeypatch.delenv("NO_PROXY")
        through_proxy = len(proxy.carried())
        with mis.connect_http(sdk_url, proxies={"http": proxy.url}, handler=None) as client:  # over HTTP_PROXY
            client.list_tools()
        assert other.carried() == [] and len(proxy.carried()) > through_proxy
        with mis.connect_http(sdk_url, proxies={"http": None}, handler=None) as client:  # None: no proxy, whatever HTTP_PROXY says
            client.list_tools()
        assert other.carried() == []
        with mis.connect_http(sdk_url, handler=None) as client:  # without proxies=, HTTP_PROXY is used
            client.list_tools()
        assert other.carried()


def test_https_goes_through_a_tunnel_with_the_client_certificate_inside(mtls: FakeOverHttps, identity: Identity) -> None:
    with ForwardProxy(hosts=HOSTS, credentials=("alice", PASSWORD)) as proxy:
        with mis.connect_http(
            proxied(mtls.url), verify=str(mtls.ca_path), cert=str(identity.pem), proxies={"https": proxy.url_with("alice", PASSWORD)}
        ) as client:
            assert tool_text(client.call_tool("hello", {"who": "tunnel"})) == "hello tunnel"
        tunnels = proxy.carried()
        assert tunnels and {(p.kind, p.target) for p in tunnels} == {("CONNECT", f"{PROXIED}:{urlsplit(mtls.url).port}")}
        assert all(p.authorization and p.authorization.startswith("Basic ") for p in tunnels)
    assert [seen.body["method"] for seen in mtls.requests if seen.verb == "POST"][:1] == ["initialize"]


def test_a_proxys_password_never_shows_in_an_error_a_repr_or_a_log(
    mtls: FakeOverHttps, identity: Identity, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with ForwardProxy(hosts=HOSTS, credentials=("alice", PASSWORD)) as proxy:
        wrong = {"https": proxy.url_with("alice", "not-" + PASSWORD + "-either")}
        with pytest.raises(mis.ClientError) as refused:
            mis.connect_http(proxied(mtls.url), verify=str(mtls.ca_path), cert=str(identity.pem), proxies=wrong, retry=False)
        message = refused.value.message
        assert f"through the proxy {proxy.url} (the proxies option)" in message and "407" in message, message
        good = {"https": proxy.url_with("alice", PASSWORD)}
        with mis.connect_http(proxied(mtls.url), verify=str(mtls.ca_path), cert=str(identity.pem), proxies=good) as client:
            client.list_tools()
            shown = repr(client) + str(client.stats)
        with pytest.raises(ValueError) as bad_key:
            mis.connect_http(proxied(mtls.url), proxies={f"http://alice:{PASSWORD}@proxy": "http://proxy:3128"})
        with pytest.raises(ValueError) as bad_port:
            mis.connect_http(proxied(mtls.url), proxies={"https": f"http://alice:{PASSWORD}@proxy:99999"})
    for text in (whole(refused.value), shown, whole(bad_key.value), whole(bad_port.value), caplog.text):
        assert PASSWORD not in text and "alice:" not in text, text


def test_proxies_of_the_wrong_form_are_refused_before_anything_is_sent(proxy: ForwardProxy) -> None:
    url = f"http://{PROXIED}:9/mcp"
    for wrong, kind, says in (
        ("http://proxy:3128", TypeError, "proxies must be a mapping"),
        ({"https": 3128}, TypeError, "must be a proxy URL"),
        ({"HTTPS": proxy.url}, ValueError, "'HTTPS' is not a key requests looks up"),
        ({"ftp": proxy.url}, ValueError, "is not a key"),
        ({"https": "http://"}, ValueError, "is not a proxy URL"),
    ):
        with pytest.raises(kind, match=says):
            mis.connect_http(url, proxies=wrong)  # type: ignore[arg-type]
    assert proxy.carried() == []


# ---------------------------------------------------------------------------- a transport made again


def test_a_fresh_transport_keeps_the_certificate_and_the_proxies(mtls: FakeOverHttps, identity: Identity, proxy: ForwardProxy) -> None:
    first = HttpTransport(proxied(mtls.url), verify=str(mtls.ca_path), cert=str(identity.pem), proxies={"https": proxy.url})
    again = first.fresh()
    first.close(1.0)
    with mis.Client(again, handler=None) as client:
        assert tool_text(client.call_tool("hello", {"who": "again"})) == "hello again"
    assert proxy.carried("CONNECT")  # the name resolves at the proxy alone: the fresh transport went through it


def test_a_client_that_reconnects_goes_through_the_proxy_with_its_certificate(mtls: FakeOverHttps, identity: Identity) -> None:
    first = ForwardProxy(hosts=HOSTS)
    port = urlsplit(first.url).port
    assert port is not None
    client = mis.connect_http(proxied(mtls.url), verify=str(mtls.ca_path), cert=str(identity.pem), proxies={"https": first.url}, retry=False)
    try:
        assert tool_text(client.call_tool("hello", {"who": "before"})) == "hello before"
        first.close()  # every tunnel shut, nothing listening: the next call cannot reach the server
        with pytest.raises(mis.ClientError) as lost:
            client.call_tool("hello", {"who": "lost"})
        assert lost.value.kind == "transport"
        with ForwardProxy(hosts=HOSTS, port=port) as second:  # the same proxy address, listening again
            assert tool_text(client.call_tool("hello", {"who": "after"})) == "hello after"
            assert second.carried("CONNECT")
    finally:
        client.close()
        first.close()
    assert [seen.body.get("method") for seen in mtls.requests if seen.verb == "POST"].count("initialize") == 2  # a second handshake


# ---------------------------------------------------------------------------- OAuth, and configuration files


def test_oauths_proxies_carry_the_authorization_exchanges(proxy: ForwardProxy) -> None:
    peer = OAuthPeer()
    try:
        proxies: dict[str, Optional[str]] = {"http": proxy.url}
        with mis.connect_http(peer.url, auth=OAuth(consent=Headless(), timeout=5.0, proxies=proxies), proxies=proxies, protocol="legacy") as client:
            assert client.call_tool("whoami", {})["content"][0]["text"]
        paths = {urlsplit(passed.target).path for passed in proxy.carried()}
        assert {"/mcp", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/register", "/authorize", "/token"} <= paths
        assert len(proxy.carried()) == len(peer.seen)  # nothing reached the peer past the proxy
    finally:
        peer.close()
    with pytest.raises(TypeError, match="proxies must be a mapping"):
        OAuth(proxies="http://proxy.example.com:3128")  # type: ignore[arg-type]


def test_a_configuration_files_cert_and_proxies_reach_the_server_and_its_authorization_server(
    tmp_path: Path, mtls: FakeOverHttps, identity: Identity, proxy: ForwardProxy
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "certs").mkdir()
    (folder / "certs" / "alice.pem").write_bytes(identity.pem.read_bytes())
    peer = OAuthPeer()
    try:
        peer.machine_secrets = {"worker": "w-s3cret"}
        config = folder / ".mcp.json"
        entries: dict[str, Any] = {
            "secure": {"url": proxied(mtls.url), "cert": "certs/alice.pem", "proxies": {"https": proxy.url_with("alice", PASSWORD)}},
            "granted": {"url": peer.url, "proxies": {"http": proxy.url},
                        "oauth": {"grant": "client_credentials", "clientId": "worker", "clientSecret": "w-s3cret", "issuer": peer.origin}},
        }
        config.write_text(json.dumps({"mcpServers": entries}))
        servers = mis.load_config(config)
        assert servers["secure"].cert == str(folder / "certs" / "alice.pem")  # type: ignore[attr-defined]
        assert PASSWORD not in repr(servers["secure"]) and "'https': 'http://***@127.0.0.1:" in repr(servers["secure"])
        with mis.connect("secure", config=config, verify=str(mtls.ca_path)) as client:
            assert tool_text(client.call_tool("hello", {"who": "file"})) == "hello file"
        assert proxy.carried("CONNECT")
        with mis.connect(servers["granted"], protocol="legacy") as client:
            assert client.call_tool("whoami", {})["content"][0]["text"] == "mcp"
        forwarded = [p.target for p in proxy.carried("forward")]
        assert f"{peer.origin}/token" in forwarded and peer.url in forwarded, forwarded
        assert len(forwarded) == len(peer.seen)
    finally:
        peer.close()


def test_proxies_given_to_connect_win_over_the_files(sdk_url: str, proxy: ForwardProxy) -> None:
    with ForwardProxy(hosts=HOSTS) as filed:
        servers = mis.load_config({"mcpServers": {"sdk": {"url": proxied(sdk_url), "proxies": {"http": filed.url}}}})
        with mis.connect(servers["sdk"], proxies={"http": proxy.url}) as client:
            client.list_tools()
        assert proxy.carried() and filed.carried() == []
        with mis.connect(servers["sdk"]) as client:
            client.list_tools()
        assert filed.carried()
