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
