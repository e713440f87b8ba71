"""connect_http's client certificates (``cert=``, mutual TLS) and explicit proxies (``proxies=``), and the same from a
configuration file: against a local HTTPS server that requires a client certificate, reached directly or only through
a local forward proxy that wants a password (the server's name resolves nowhere else)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterator

import pytest
import trustme

import mcp_input_sync as mis
from mcp_input_sync.testing import ToolCall
from mcp_input_sync.transports.http import HttpTransport

from .fake_https import FakeOverHttps
from .forward_proxy import ForwardProxy
from .harness import recorded_server, tool_text

PASSWORD = "s3cret-proxy-pw"


class Certs:
    """A client CA the server trusts, the client's certificate as one PEM file and as a pair, and a stranger's."""

    def __init__(self, folder: Path) -> None:
        self.ca = trustme.CA()
        leaf = self.ca.issue_cert("client@example.test")
        self.pem = folder / "client.pem"
        leaf.private_key_and_cert_chain_pem.write_to_path(str(self.pem))
        self.pair = (str(folder / "client-cert.pem"), str(folder / "client-key.pem"))
        leaf.cert_chain_pems[0].write_to_path(self.pair[0])
        leaf.private_key_pem.write_to_path(self.pair[1])
        self.stranger = folder / "stranger.pem"
        trustme.CA().issue_cert("someone@else.test").private_key_and_cert_chain_pem.write_to_path(str(self.stranger))


@pytest.fixture
def certs(tmp_path: Path) -> Certs:
    return Certs(tmp_path)


@pytest.fixture
def server(tmp_path: Path, certs: Certs) -> Iterator[FakeOverHttps]:
    fake = recorded_server(timeout=10.0)

    @fake.tool
    def hello(call: ToolCall) -> str:
        return f"hello {call.arguments['who']}"

    with FakeOverHttps(fake, tmp_path, names=("mcp.invalid", "127.0.0.1"), client_ca=certs.ca) as made:
        yield made


def port_of(server: FakeOverHttps) -> int:
    return int(server.url.rsplit(":", 1)[1].split("/")[0])


# ============================================================================ client certificates


def test_a_server_that_asks_for_a_client_certificate_gets_it(server: FakeOverHttps, certs: Certs) -> None:
    for cert in (str(certs.pem), certs.pair, certs.pem):
        with mis.connect_http(server.url, verify=str(server.ca_path), cert=cert) as client:  # type: ignore[arg-type]
            assert tool_text(client.call_tool("hello", {"who": "mtls"})) == "hello mtls"


def test_without_the_certificate_or_with_a_stranger_s_the_handshake_fails_clearly(server: FakeOverHttps, certs: Certs) -> None:
    for cert in (None, str(certs.stranger)):
        with pytest.raises(mis.ClientError) as failed:
            mis.connect_http(server.url, verify=str(server.ca_path), cert=cert, timeout=5)
        assert failed.value.kind == "transport"
        assert "127.0.0.1" in str(failed.value)
    assert server.requests == []  # not one HTTP request went over a refused handshake


def test_a_bad_cert_argument_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        mis.connect_http("https://127.0.0.1:9/mcp", cert=str(tmp_path / "missing.pem"))
    with pytest.raises(TypeError, match="cert"):
        mis.connect_http("https://127.0.0.1:9/mcp", cert=("a", "b", "c"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="proxies"):
        mis.connect_http("https://127.0.0.1:9/mcp", proxies=["http://proxy:3128"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a proxy URL") as bad:
        mis.connect_http("https://127.0.0.1:9/mcp", proxies={"https": f"ftp://user:{PASSWORD}@proxy"})
    assert PASSWORD not in str(bad.value)


def test_a_reconnect_s_fresh_transport_keeps_the_certificate_and_the_proxies(server: FakeOverHttps, certs: Certs) -> None:
    with ForwardProxy({"mcp.invalid": port_of(server)}, password=PASSWORD) as proxy:
        first = HttpTransport(
            f"https://mcp.invalid:{port_of(server)}/mcp", verify=str(server.ca_path), cert=str(certs.pem), proxies={"https": proxy.url(PASSWORD)},
        )
        with mis.Client(first.fresh()) as client:
            assert tool_text(client.call_tool("hello", {"who": "again"})) == "hello again"
        assert proxy.tunnels >= 1


# ============================================================================ proxies


def test_every_request_goes_through_the_proxy_it_is_given(server: FakeOverHttps, certs: Certs, caplog: pytest.LogCaptureFixture) -> None:
    url = f"https://mcp.invalid:{port_of(server)}/mcp"  # resolvable only by the proxy
    with pytest.raises(mis.ClientError) as direct:
        mis.connect_http(url, verify=str(server.ca_path), cert=str(certs.pem), timeout=5)
    assert direct.value.check == "unreachable"
    with ForwardProxy({"mcp.invalid": port_of(server)}, password=PASSWORD) as proxy, caplog.at_level(logging.DEBUG):
        with mis.connect_http(url, verify=str(server.ca_path), cert=str(certs.pem), proxies={"https": proxy.url(PASSWORD)}) as client:
            assert tool_text(client.call_tool("hello", {"who": "proxied"})) == "hello proxied"
            assert PASSWORD not in repr(client)
        assert proxy.tunnels >= 1
        with pytest.raises(mis.ClientError) as refused:
            mis.connect_http(url, verify=str(server.ca_path), cert=str(certs.pem), proxies={"https": proxy.url("wrong")}, timeout=5)
        assert refused.value.kind == "transport" and proxy.refused >= 1
    for text in (str(refused.value), repr(refused.value), *(r.getMessage() for r in caplog.records)):
        assert PASSWORD not in text and "wrong@" not in text


def test_explicit_proxies_win_over_the_environment_s(server: FakeOverHttps, certs: Certs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with ForwardProxy({"mcp.invalid": port_of(server)}) as proxy:
        url = f"https://mcp.invalid:{port_of(server)}/mcp"
        with mis.connect_http(url, verify=str(server.ca_path), cert=str(certs.pem), proxies={"https": proxy.url()}) as client:
            assert tool_text(client.call_tool("hello", {"who": "env"})) == "hello env"
        assert proxy.tunnels >= 1


# ============================================================================ configuration files


def test_a_configuration_file_entry_names_its_certificate_and_proxies(
    tmp_path: Path, server: FakeOverHttps, certs: Certs, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "certs").mkdir()
    certs.pem.rename(tmp_path / "certs" / "client.pem")
    with ForwardProxy({"mcp.invalid": port_of(server)}, password=PASSWORD) as proxy:
        monkeypatch.setenv("PROXY_URL", proxy.url(PASSWORD))
        config = tmp_path / ".mcp.json"
        config.write_text(json.dumps({"mcpServers": {"secure": {
            "url": f"https://mcp.invalid:{port_of(server)}/mcp", "cert": "certs/client.pem", "proxies": {"https": "${PROXY_URL}"},
        }}}))
        described = mis.load_config(config)["secure"]
        assert isinstance(described, mis.HttpServer)
        assert described.cert == str(tmp_path / "certs" / "client.pem")
        assert PASSWORD not in repr(described) and "${PROXY_URL}" in repr(described)
        with mis.connect(described, verify=str(server.ca_path)) as client:
            assert tool_text(client.call_tool("hello", {"who": "config"})) == "hello config"
        assert proxy.tunnels >= 1


@pytest.mark.parametrize(
    "entry, key",
    [
        ({"cert": 5}, "cert"),
        ({"cert": ["a", "b", "c"]}, "cert"),
        ({"proxies": "http://proxy:3128"}, "proxies"),
        ({"proxies": {"https": 3128}}, "proxies"),
        ({"proxies": {"https": "proxy:3128"}}, "proxies.https"),
    ],
)
def test_a_bad_certificate_or_proxies_entry_is_a_config_error_naming_its_key(tmp_path: Path, entry: dict[str, object], key: str) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"s": {"url": "https://example.test/mcp", **entry}}}))
    with pytest.raises(mis.ConfigError) as bad:
        mis.load_config(config)
    assert key in str(bad.value)
