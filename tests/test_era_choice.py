"""Which era a client uses with servers that speak both, and what it says when a tool wanted the other one.

Real peers: FastMCP 4.1.6 (tests/peers/fastmcp_server.py: ``ctx.elicit`` and
``InputRequiredResult`` tools) and the official SDK 2.3.0
(tests/peers/sdk_dual_server.py), over stdio and Streamable HTTP. Beside
them: the pure matching of the frameworks' texts, FakeServer in memory, the
bound of ``timeout`` on the whole connection attempt, and the era
remembered per stdio command line and per HTTP endpoint.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync._era import EraCache
from mcp_input_sync._protocol import eras
from mcp_input_sync.testing import FakeServer

from .harness import PEERS_DIR
from .http_peers import free_port, http_peer
from .test_oauth_fastmcp import FASTMCP_PYTHON

SDK_DUAL = [sys.executable, str(PEERS_DIR / "sdk_dual_server.py")]
FASTMCP = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
needs_fastmcp = pytest.mark.skipif(not FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP (pinned)")


class Answers(mis.InputHandler):
    """Accepts every form with the name Ada (FastMCP's Person form with an age too)."""

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        fields = set((params.get("requestedSchema") or {}).get("properties") or {})
        content: dict[str, Any] = {"name": "Ada"}
        if "age" in fields:
            content["age"] = 36
        return {"action": "accept", "content": content}


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result.get("content", []))


# ---------------------------------------------------------------------------- the frameworks' texts, pure

SDK_NO_BACK_CHANNEL = "Cannot send 'elicitation/create': this transport context has no back-channel for server-initiated requests."
FASTMCP_ELICIT = "elicitation via server-initiated requests is unavailable on 2026-07-28 connections."
FASTMCP_MRTR = (
    "Tool 'mrtr' returned an InputRequiredResult to request client input, but the multi-round-trip result type "
    "(SEP-2322) only exists at MCP 2026-07-28; this connection negotiated '2025-11-25'."
)


def one_text(value: str, is_error: bool = True) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": is_error}


def test_the_frameworks_texts_name_the_era_a_tool_needs() -> None:
    assert eras.era_needed_by_error(eras.MODERN, -32600, SDK_NO_BACK_CHANNEL) == eras.EraNeed(eras.LEGACY)
    assert eras.era_needed_by_error(eras.LEGACY, -32602, FASTMCP_MRTR) == eras.EraNeed(eras.MODERN)
    assert eras.era_needed_by_error(eras.LEGACY, -32603, "Handler returned an invalid result") == eras.EraNeed(eras.MODERN, certain=False)
    assert eras.era_needed_by_result(eras.MODERN, one_text(FASTMCP_ELICIT)) == eras.EraNeed(eras.LEGACY)
    sampled = "Error calling tool 'sample': Cannot send 'sampling/createMessage': this transport context has no back-channel for server-initiated requests."
    assert eras.era_needed_by_result(eras.MODERN, one_text(sampled)) == eras.EraNeed(eras.LEGACY)


def test_other_texts_eras_and_shapes_are_not_read_as_an_era_need() -> None:
    assert eras.era_needed_by_error(eras.LEGACY, -32600, SDK_NO_BACK_CHANNEL) is None  # the era the text implies only
    assert eras.era_needed_by_error(eras.MODERN, -32602, FASTMCP_MRTR) is None
    assert eras.era_needed_by_error(eras.MODERN, -32600, SDK_NO_BACK_CHANNEL + " and more") is None
    assert eras.era_needed_by_error(eras.LEGACY, -32603, "Internal error") is None
    assert eras.era_needed_by_result(eras.LEGACY, one_text(FASTMCP_ELICIT)) is None
    assert eras.era_needed_by_result(eras.MODERN, one_text(FASTMCP_ELICIT, is_error=False)) is None  # an echo
    two = {"content": [{"type": "text", "text": FASTMCP_ELICIT}] * 2, "isError": True}
    assert eras.era_needed_by_result(eras.MODERN, two) is None
    assert eras.era_needed_by_result(eras.MODERN, one_text("you said: " + FASTMCP_ELICIT)) is None


def test_the_advice_says_the_call_was_not_resent_and_what_to_pass() -> None:
    told = eras.era_advice("book", "2026-07-28", eras.EraNeed(eras.LEGACY))
    assert "'book' needs the 2025-11-25 era" in told and "not sent again" in told
    assert 'protocol="legacy"' in told and "--protocol legacy" in told
    learnt = eras.era_advice("pay", "2025-11-25", eras.EraNeed(eras.MODERN), learnt=True)
    assert "next calls of 'pay' in 2026-07-28" in learnt and "--protocol 2026-07-28" in learnt


# ---------------------------------------------------------------------------- first contact, in memory


def test_auto_opens_the_handshake_era_without_a_probe() -> None:
    with FakeServer(era="legacy") as fake:
        with fake.client(protocol="auto") as client:  # the fake forces its own era unless told
            assert client.era == "legacy"
        assert [m.get("method") for m in fake.received][:1] == ["initialize"]
        assert not fake.requests_seen("server/discover")


def test_auto_takes_the_modern_era_when_initialize_is_refused_with_a_modern_version() -> None:
    with FakeServer(era="modern") as fake:
        with fake.client(protocol="auto") as client:
            assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
        assert fake.requests_seen("server/discover")  # asked once the era was known, for the server's facts


def test_prefer_modern_probes_first() -> None:
    with FakeServer(era="legacy") as fake:
        with fake.client(protocol="prefer-modern", discover_timeout=0.5) as client:
            assert client.era == "legacy"
        assert [m.get("method") for m in fake.received][:1] == ["server/discover"]


def test_an_unknown_preference_is_refused_when_the_client_is_built() -> None:
    with pytest.raises(ValueError):
        mis.Client(FakeServer().transport, protocol="prefer-anything")


# ---------------------------------------------------------------------------- timeout bounds the whole attempt


@pytest.mark.parametrize("protocol", ["auto", "prefer-modern", "legacy", "modern"])
def test_timeout_bounds_the_whole_connection_attempt(protocol: str) -> None:
    started = time.monotonic()
    with pytest.raises(mis.ClientError) as info:
        mis.connect_stdio(["sleep", "100"], timeout=2, discover_timeout=1, protocol=protocol)
    elapsed = time.monotonic() - started
    assert elapsed < 4.0, elapsed  # about 2 s; loose, a correctness bound
    assert info.value.kind == "timeout"
    if protocol in ("auto", "prefer-modern"):
        assert "tried:" in info.value.message and "timeout=2 s" in info.value.message
    if protocol == "prefer-modern":
        assert "server/discover" in info.value.message and "restart" in info.value.message


def test_an_era_learnt_for_a_stdio_command_line_is_remembered() -> None:
    unique = json.dumps({"tools": {}, "experimental": {"run": time.time_ns()}})  # a command line no other test used
    scripted = [sys.executable, str(PEERS_DIR / "scripted_server.py"), "--silent-probe", "--legacy-capabilities", unique]
    cache = EraCache()  # this test's own: the process's is left alone
    options: dict[str, Any] = {"protocol": "prefer-modern", "discover_timeout": 1.0, "timeout": 10, "era_cache": cache}
    started = time.monotonic()
    with mis.connect_stdio(scripted, **options) as first:
        assert first.era == "legacy"
    assert time.monotonic() - started >= 1.0  # the probe went unanswered for discover_timeout
    started = time.monotonic()
    with mis.connect_stdio(scripted, **options) as second:
        assert second.era == "legacy"
    assert time.monotonic() - started < 1.0  # no probe this time (it waited discover_timeout the first time)
    assert ("legacy", "2025-11-25") in cache.endpoints().values()


# ---------------------------------------------------------------------------- the official SDK's servers


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with http_peer("sdk_dual_server.py") as url:
        yield url


def runs(client: mis.Client) -> dict[str, int]:
    counts: dict[str, int] = json.loads(text(client.call_tool("runs")))
    return counts


def test_sdk_stdio_auto_serves_ctx_elicit_and_hints_at_the_era_of_an_input_required_tool() -> None:
    with mis.connect_stdio(SDK_DUAL, handler=Answers(), timeout=20) as client:
        assert client.era == "legacy"
        assert text(client.call_tool("elicit")) == "elicit: accept Ada"
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("mrtr")
        assert (info.value.kind, info.value.code) == ("remote", -32603)  # ambiguous: a hint only
        assert "InputRequiredResult" in info.value.message and 'protocol="2026-07-28"' in info.value.message
        assert runs(client)["mrtr"] == 1


def test_sdk_stdio_2026_raises_a_clear_era_error_for_ctx_elicit_and_does_not_resend() -> None:
    with mis.connect_stdio(SDK_DUAL, handler=Answers(), protocol="2026-07-28", timeout=20) as client:
        assert text(client.call_tool("mrtr")) == "mrtr: Ada"
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("elicit")
        error = info.value
        assert (error.kind, error.check, error.code) == ("protocol", "era", -32600)
        assert "not sent again" in error.message and 'protocol="legacy"' in error.message
        assert error.data["needs"] == "2025-11-25" and error.data["tool"] == "elicit"
        assert runs(client)["elicit"] == 1


def test_sdk_http_learns_the_era_per_tool_beside_the_session(sdk_url: str) -> None:
    cache = EraCache()
    with mis.connect_http(sdk_url, handler=Answers(), timeout=20, era_cache=cache) as client:
        assert client.era == "legacy"
        assert text(client.call_tool("elicit")) == "elicit: accept Ada"
        with pytest.raises(mis.ClientError):
            client.call_tool("mrtr")  # -32603 is ambiguous: nothing is learnt from it
        assert cache.tool_era(sdk_url, "mrtr") is None
        assert text(client.call_tool("echo", {"text": "still here"})) == "still here"


def test_a_wrong_path_is_a_transport_error_naming_the_url_even_after_the_right_one_opened(sdk_url: str) -> None:
    with mis.connect_http(sdk_url, timeout=20) as client:
        assert client.era == "legacy"
    wrong = sdk_url.replace("/mcp", "/wrong")
    for protocol in ("auto", "prefer-modern", "legacy"):
        with pytest.raises(mis.ClientError) as info:
            mis.connect_http(wrong, protocol=protocol, timeout=20)
        assert info.value.kind == "transport", (protocol, info.value)
        assert wrong in info.value.message and "404" in info.value.message


def test_a_refused_connection_names_the_url_and_no_internal_class() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp?token=secret"
    with pytest.raises(mis.ClientError) as info:
        mis.connect_http(url, timeout=5)
    message = info.value.message
    assert info.value.kind == "transport" and f"http://127.0.0.1:{url.split(':')[2].split('/')[0]}/mcp" in message
    assert "Pool" not in message and "_HTTP" not in message and "secret" not in message


# ---------------------------------------------------------------------------- FastMCP 4.1.6


@pytest.fixture(scope="module")
def fastmcp_url() -> Iterator[str]:
    if not FASTMCP_PYTHON.exists():
        pytest.skip("run peers/setup.sh to install FastMCP (pinned)")
    with http_peer("fastmcp_server.py", python=str(FASTMCP_PYTHON), seconds=60) as url:
        yield url


@needs_fastmcp
def test_fastmcp_stdio_auto_serves_ctx_elicit_and_names_the_era_of_input_required_tools() -> None:
    with mis.connect_stdio(FASTMCP, handler=Answers(), timeout=30) as client:
        assert client.era == "legacy"
        assert text(client.call_tool("elicit_dataclass")) == "accepted name=Ada age=36"
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("mrtr_form")
        error = info.value
        assert (error.kind, error.check, error.code) == ("protocol", "era", -32602)
        assert "'mrtr_form' needs the 2026-07-28 era" in error.message and "--protocol 2026-07-28" in error.message
    with mis.connect_stdio(FASTMCP, handler=Answers(), protocol="2026-07-28", timeout=30) as client:
        assert text(client.call_tool("mrtr_form")) == "hello Ada"


@needs_fastmcp
def test_fastmcp_http_sends_each_tool_in_the_era_it_needs(fastmcp_url: str) -> None:
    cache = EraCache()
    with mis.connect_http(fastmcp_url, handler=Answers(), timeout=30, era_cache=cache) as client:
        assert client.era == "legacy"
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("mrtr_form")  # learnt from the refusal, never resent
        assert info.value.check == "era" and "next calls of 'mrtr_form' in 2026-07-28" in info.value.message
        assert cache.tool_era(fastmcp_url, "mrtr_form") == "modern"
        assert text(client.call_tool("mrtr_form")) == "hello Ada"  # 2026-07-28, beside the session
        assert text(client.call_tool("elicit_dataclass")) == "accepted name=Ada age=36"  # the session
        pending = client.call_tool("mrtr_form", defer_input=True)
        assert isinstance(pending, mis.PendingCall)
        resumed = client.resume(pending, {"name": {"action": "accept", "content": {"name": "Lin"}}})
        assert isinstance(resumed, dict) and text(resumed) == "hello Lin"
    with mis.connect_http(fastmcp_url, handler=Answers(), timeout=30, era_cache=cache) as again:  # remembered in the cache
        assert text(again.call_tool("mrtr_form")) == "hello Ada"


@needs_fastmcp
def test_fastmcp_2026_raises_a_clear_era_error_for_ctx_elicit(fastmcp_url: str) -> None:
    with mis.connect_http(fastmcp_url, handler=Answers(), protocol="2026-07-28", timeout=30) as client:
        with pytest.raises(mis.ClientError) as info:
            client.call_tool("elicit_dataclass")
        error = info.value
        assert (error.kind, error.check) == ("protocol", "era") and error.data["result"]["isError"] is True
        assert "--protocol legacy" in error.message


def test_a_stdio_command_line_is_remembered_under_a_hash_that_keeps_no_env_value() -> None:
    from mcp_input_sync.transports.stdio import StdioTransport

    key = StdioTransport(["server", "--flag"], env={"API_KEY": "s3cret-value"}).era_key
    assert key is not None and key.startswith("stdio:") and "s3cret" not in key
    assert StdioTransport(["server", "--flag"], env={"API_KEY": "s3cret-value"}).era_key == key
    assert StdioTransport(["server", "--flag"], env={"API_KEY": "another"}).era_key != key
    assert StdioTransport(["server"], env={"API_KEY": "s3cret-value"}).era_key != key
