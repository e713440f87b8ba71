"""connect_http over HTTPS: the server's certificate is verified, and a private CA is trusted the way requests documents."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Optional

import pytest

import mcp_input_sync as mis
from mcp_input_sync.testing import ToolCall

from .fake_https import FakeOverHttps
from .harness import recorded_server, schema_errors, tool_text


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: Optional[BaseException] = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def test_an_untrusted_certificate_is_refused_and_the_ca_bundle_requests_names_is_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = recorded_server(timeout=10.0)

    @fake.tool
    def hello(call: ToolCall) -> str:
        return f"hello {call.arguments['who']}"

    with FakeOverHttps(fake, tmp_path) as server:
        assert server.url.startswith("https://127.0.0.1:")
        monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
        monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
        with pytest.raises(mis.ClientError) as refused:
            mis.connect_http(server.url)
        assert refused.value.kind == "transport"
        assert any(isinstance(cause, ssl.SSLCertVerificationError) for cause in _causes(refused.value)), _causes(refused.value)
        assert server.requests == []  # not one HTTP request went over the refused connection

        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(server.ca_path))
        with mis.connect_http(server.url, handler=None) as client:
            assert client.era == "legacy"
            assert tool_text(client.call_tool("hello", {"who": "tls"})) == "hello tls"
    assert schema_errors(fake) == []


def test_the_verify_option_trusts_the_ca_it_names_even_over_requests_ca_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = recorded_server(timeout=10.0)

    @fake.tool
    def hello(call: ToolCall) -> str:
        return f"hello {call.arguments['who']}"

    with FakeOverHttps(fake, tmp_path) as server:
        monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
        monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
        with mis.connect_http(server.url, verify=str(server.ca_path)) as client:
            assert tool_text(client.call_tool("hello", {"who": "verify"})) == "hello verify"
        # an explicit verify is not overridden by an environment variable naming another bundle
        other = tmp_path / "other-ca.pem"
        other.write_text("")
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(other))
        with mis.connect_http(server.url, verify=str(server.ca_path)) as client:
            assert tool_text(client.call_tool("hello", {"who": "again"})) == "hello again"
        with pytest.raises(mis.ClientError) as refused:
            mis.connect_http(server.url, verify=str(other))
        assert refused.value.kind == "transport"
    assert schema_errors(fake) == []
