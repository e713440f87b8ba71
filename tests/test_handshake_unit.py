"""The handshake without a client: a real session over a scripted transport, one table row per server.

Each row scripts how a server answers ``initialize`` and ``server/discover``
(a result, an error, or silence) and says what :meth:`Handshake.negotiate`
returns and what went on the wire. The handshake sends nothing once it has
decided: ``notifications/initialized`` is the legacy engine's to send. Beside
it: the era cache owner (:class:`EraCache`) a client takes, and the read-only
modern stamp.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Optional, Union

import pytest

from mcp_input_sync._era import ClientEra, EraCache
from mcp_input_sync._handshake import Handshake, Negotiated
from mcp_input_sync._port import Port
from mcp_input_sync._protocol.modern import META_LOG_LEVEL, META_VERSION, MetaStamp
from mcp_input_sync._session import Session
from mcp_input_sync._stats import Stats
from mcp_input_sync.errors import ClientError
from mcp_input_sync.options import Options

from .scripted import AnswersOnSend

JsonDict = dict[str, Any]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"

#: A scripted answer: a result, an error (``{"error": ...}``) or SILENT.
SILENT: Any = object()

Script = dict[str, Any]

LEGACY_RESULT: JsonDict = {
    "protocolVersion": LEGACY,
    "capabilities": {"logging": {}},
    "serverInfo": {"name": "old", "version": "1"},
    "instructions": "be kind",
}
DISCOVER_RESULT: JsonDict = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
NOT_FOUND = {"error": {"code": -32601, "message": "method not found"}}
MODERN_ONLY = {"error": {"code": -32602, "message": "unsupported", "data": {"supported": [MODERN]}}}


class ScriptedServer(AnswersOnSend):
    """Answers each request at once, on the sending thread, from ``script`` (method -> answer)."""

    def __init__(self, script: Script, era_key: Optional[str] = None, ties_by_stream: bool = False) -> None:
        super().__init__()
        self.script = script
        self.era_key = era_key
        self.ties_by_stream = ties_by_stream
        self.told: list[tuple[str, str]] = []

    def reply_to(self, message: JsonDict) -> Optional[JsonDict]:
        answer = self.script.get(message["method"], NOT_FOUND)
        return None if answer is SILENT else answer

    def set_protocol(self, era: str, version: str) -> None:
        self.told.append((era, version))

    @property
    def methods(self) -> list[str]:
        return [message.get("method", "") for message, _ in self.sent]


class NoRequests:
    """The session's receiver: these servers send no requests of their own."""

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        raise AssertionError(f"unexpected server request {method}")

    def on_cancelled(self, request_id: Any) -> None:
        pass

    def invalid(self, message: JsonDict) -> None:
        raise AssertionError(f"invalid message {message}")

    def reject_unreadable(self, request_id: Any, code: int, message: str) -> None:
        pass

    def answer_failed(self, request_id: Any) -> None:
        pass


class Configured:
    """Records each ``configure(version, caps, origin)`` the handshake makes (the desk's, in a client)."""

    def __init__(self) -> None:
        self.versions: list[str] = []

    def __call__(self, version: str, caps: JsonDict, origin: Optional[str]) -> None:
        self.versions.append(version)


def handshake_over(
    server: ScriptedServer, cache: Optional[EraCache] = None, level: Callable[[], Optional[str]] = lambda: None, **options: Any
) -> tuple[Handshake, Configured]:
    """A started session over ``server`` and a handshake on it (nothing else of a client)."""
    opts = Options.parse({"timeout": 2.0, "discover_timeout": 0.05, **options})  # a silent server costs the whole timeout
    port = Port(server)
    session = Session(
        port, stats=Stats(), server_id="scripted", default_assigns={}, depth_limit=64,
        route=lambda method, params: None, is_live=lambda: True, on_broken=lambda: None, receiver=NoRequests(),
    )
    port.configure("scripted", opts.limits, session.on_lost)
    port.start(session.on_line, session.on_transport_closed)
    configured = Configured()
    handshake = Handshake(
        session=session, port=port, configure=configured, options=opts, handler=None, client_name="unit",
        server_id="scripted", log_level=level, era_cache=EraCache() if cache is None else cache,
    )
    return handshake, configured


# ---------------------------------------------------------------------------- what each server's answers negotiate

LEGACY_NEGOTIATED = Negotiated("legacy", LEGACY, None, {"logging": {}}, {"name": "old", "version": "1"}, "be kind")

ROWS: list[tuple[str, str, Script, Union[Negotiated, str], list[str]]] = [
    # (row, protocol option, script, negotiated or the error kind, methods sent in order)
    ("legacy server", "auto", {"initialize": LEGACY_RESULT}, LEGACY_NEGOTIATED, ["initialize"]),
    ("modern-only server listing its versions", "auto", {"initialize": MODERN_ONLY}, Negotiated("modern", MODERN), ["initialize"]),
    (
        "initialize refused, then the probe", "auto",
        {"initialize": NOT_FOUND, "server/discover": DISCOVER_RESULT},
        Negotiated("modern", MODERN, DISCOVER_RESULT), ["initialize", "server/discover"],
    ),
    (
        "initialize silent, the probe answers", "auto",
        {"initialize": SILENT, "server/discover": DISCOVER_RESULT},
        Negotiated("modern", MODERN, DISCOVER_RESULT), ["initialize", "server/discover"],
    ),
    (
        "prefer-modern, the probe refused: legacy", "prefer-modern",
        {"server/discover": NOT_FOUND, "initialize": LEGACY_RESULT}, LEGACY_NEGOTIATED, ["server/discover", "initialize"],
    ),
    (
        "prefer-modern, the probe silent: initialize falls back", "prefer-modern",
        {"server/discover": SILENT, "initialize": LEGACY_RESULT}, LEGACY_NEGOTIATED, ["server/discover", "initialize"],
    ),
    ("prefer-modern, a modern server", "prefer-modern", {"server/discover": DISCOVER_RESULT}, Negotiated("modern", MODERN, DISCOVER_RESULT), ["server/discover"]),
    ("forced legacy, refused", "legacy", {"initialize": NOT_FOUND}, "remote", ["initialize"]),
    ("forced modern, a legacy server", MODERN, {"server/discover": NOT_FOUND}, "protocol", ["server/discover"]),
    ("forced modern, silence", "modern", {"server/discover": SILENT}, "timeout", ["server/discover"]),
    ("a version nobody speaks", "auto", {"initialize": dict(LEGACY_RESULT, protocolVersion="1999-01-01")}, "protocol", ["initialize"]),
]


@pytest.mark.parametrize("row, protocol, script, expected, methods", ROWS, ids=[row[0] for row in ROWS])
def test_negotiate_returns_what_was_decided_and_sends_nothing_after_it(
    row: str, protocol: str, script: Script, expected: Union[Negotiated, str], methods: list[str]
) -> None:
    server = ScriptedServer(script)
    handshake, configured = handshake_over(server, protocol=protocol)
    if isinstance(expected, str):
        with pytest.raises(ClientError) as info:
            handshake.negotiate()
        assert info.value.kind == expected
    else:
        assert handshake.negotiate() == expected
        assert server.told == [(expected.era, expected.version)]  # the transport is told the decision once
        assert configured.versions[-1] == expected.version  # the checks follow the decision
    assert server.methods == methods  # no notifications/initialized: the legacy engine sends it when it starts


def test_the_probe_carries_the_modern_stamp_and_its_version_travels_with_it() -> None:
    server = ScriptedServer({"server/discover": DISCOVER_RESULT})
    handshake, _ = handshake_over(server, level=lambda: "warning", protocol="prefer-modern")
    handshake.negotiate()
    (probe, info), = server.sent
    assert probe["params"]["_meta"][META_VERSION] == MODERN and probe["params"]["_meta"][META_LOG_LEVEL] == "warning"
    assert info.version == MODERN and info.method == "server/discover"


def test_a_silent_server_runs_out_of_time_and_the_error_says_what_was_tried() -> None:
    server = ScriptedServer({"initialize": SILENT, "server/discover": SILENT})
    handshake, _ = handshake_over(server, timeout=0.3, discover_timeout=0.05)
    with pytest.raises(ClientError) as info:
        handshake.negotiate()
    assert info.value.kind == "timeout" and info.value.data["tried"] == ["initialize (no answer in 0.05 s)", "server/discover (no answer)"]


class SlowToStart(ScriptedServer):
    """Answers ``initialize`` from another thread once ``release`` is set; ``server/discover`` refused at once."""

    def __init__(self) -> None:
        super().__init__({"initialize": SILENT})
        self.release = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def reply_to(self, message: JsonDict) -> Optional[JsonDict]:
        if message["method"] == "initialize":
            self.thread = threading.Thread(target=self._answer_later, args=(message["id"],))
            self.thread.start()
        return super().reply_to(message)

    def _answer_later(self, request_id: Any) -> None:
        if self.release.wait(5):
            assert self._on_message is not None
            self._on_message(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": LEGACY_RESULT}).encode())


def test_a_server_slow_to_start_that_refuses_the_probe_first_is_still_met_by_initialize() -> None:
    # server-everything under load: initialize unanswered past discover_timeout, then
    # "method not found" to the probe before the initialize answer
    server = SlowToStart()
    handshake, _ = handshake_over(server, timeout=5.0, discover_timeout=0.05)
    session_start = handshake.session.start

    def start(method: str, params: Any, **kwargs: Any) -> Any:
        call = session_start(method, params, **kwargs)
        if method == "server/discover":  # the refusal is in: now the late initialize answer
            server.release.set()
        return call

    handshake.session.start = start  # type: ignore[method-assign]
    try:
        assert handshake.negotiate() == LEGACY_NEGOTIATED
    finally:
        server.release.set()
        assert server.thread is not None
        server.thread.join(5)
    assert server.methods == ["initialize", "server/discover"]


# ---------------------------------------------------------------------------- the era cache owner


def test_a_remembered_era_is_used_without_a_probe_and_only_for_its_preference_and_endpoint() -> None:
    cache = EraCache()
    cache.remember("legacy", "http://a.example/mcp", "legacy", "2025-06-18")
    server = ScriptedServer({"initialize": dict(LEGACY_RESULT, protocolVersion="2025-06-18")}, era_key="http://a.example/mcp")
    handshake, _ = handshake_over(server, cache)
    negotiated = handshake.negotiate()
    assert handshake.from_cache and negotiated.version == "2025-06-18"
    assert server.sent[0][0]["params"]["protocolVersion"] == "2025-06-18"  # the remembered version is offered
    other = ScriptedServer({"initialize": LEGACY_RESULT}, era_key="http://b.example/mcp")
    handshake, _ = handshake_over(other, cache)
    assert handshake.negotiate().version == LEGACY and not handshake.from_cache


def test_remember_and_reprobe_write_the_cache_the_client_passed_and_no_other() -> None:
    mine, theirs = EraCache(), EraCache()
    server = ScriptedServer({"initialize": LEGACY_RESULT}, era_key="stdio:abc")
    handshake, _ = handshake_over(server, mine)
    negotiated = handshake.negotiate()
    handshake.remember(negotiated.era, negotiated.version)
    assert mine.endpoints() == {("legacy", "stdio:abc"): ("legacy", LEGACY)} and theirs.endpoints() == {}
    handshake, _ = handshake_over(server, mine)
    handshake.negotiate()
    assert handshake.from_cache
    handshake.reprobe()  # the remembered era did not hold when its engine started
    assert mine.endpoint_era("legacy", "stdio:abc") is None and not handshake.from_cache


def test_a_forced_version_reads_and_writes_no_cache() -> None:
    cache = EraCache()
    cache.remember("legacy", "stdio:abc", "modern", MODERN)
    server = ScriptedServer({"initialize": LEGACY_RESULT}, era_key="stdio:abc")
    handshake, _ = handshake_over(server, cache, protocol="legacy")
    assert handshake.negotiate().era == "legacy"
    handshake.remember("legacy", LEGACY)
    assert cache.endpoints() == {("legacy", "stdio:abc"): ("modern", MODERN)}


@pytest.mark.parametrize(
    "protocol, era_key, ties_by_stream, mixes",
    [("auto", "http://a.example/mcp", True, True), ("prefer-modern", "http://a.example/mcp", True, False),
     ("auto", "stdio:abc", False, False), ("legacy", "http://a.example/mcp", True, False)],
)
def test_eras_mix_over_http_only_when_the_handshake_era_is_preferred(protocol: str, era_key: str, ties_by_stream: bool, mixes: bool) -> None:
    script = {"initialize": LEGACY_RESULT, "server/discover": NOT_FOUND}
    handshake, _ = handshake_over(ScriptedServer(script, era_key=era_key, ties_by_stream=ties_by_stream), protocol=protocol)
    handshake.negotiate()
    assert handshake.mixes_eras is mixes


def test_the_era_cache_keeps_endpoints_and_tools_apart_and_hands_out_copies() -> None:
    cache = EraCache()
    assert cache.endpoint_era("legacy", "u") is None and cache.tool_era("u", "t") is None
    cache.remember("legacy", "u", "modern", MODERN)
    cache.learn_tool("u", "t", "modern")
    assert cache.endpoint_era("legacy", "u") == ("modern", MODERN) and cache.endpoint_era("modern", "u") is None
    assert cache.tool_era("u", "t") == "modern" and cache.tool_era("v", "t") is None
    cache.endpoints().clear()
    cache.tools().clear()
    assert cache.endpoints() and cache.tools()
    cache.forget("legacy", "u")
    cache.forget("legacy", "u")  # twice: no error
    assert cache.endpoints() == {} and "u" not in repr(cache)


def test_the_cache_is_safe_to_share_between_threads() -> None:
    cache = EraCache()

    def learn(n: int) -> None:
        for i in range(200):
            cache.learn_tool(f"endpoint-{n}", f"tool-{i}", "modern")

    threads = [threading.Thread(target=learn, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert not any(thread.is_alive() for thread in threads)
    assert len(cache.tools()) == 800


# ---------------------------------------------------------------------------- the one place of the era, and the stamp


def test_a_client_era_is_none_until_decided_and_a_reprobe_may_decide_again() -> None:
    era = ClientEra()
    assert era.name is None
    era.decide("modern")
    era.decide("legacy")
    assert era.name == "legacy" and repr(era) == "ClientEra('legacy')"


def test_a_stamp_is_read_only_and_a_version_switch_makes_a_new_one() -> None:
    levels = iter(["info", None])
    stamp = MetaStamp(MODERN, {"roots": {}}, {"name": "unit", "version": "0"}, lambda: next(levels))
    with pytest.raises(AttributeError):
        stamp.version = "2027-01-01"
    switched = stamp.at_version("2027-01-01")
    assert (stamp.version, switched.version) == (MODERN, "2027-01-01")
    assert switched.capabilities is stamp.capabilities and switched.level is stamp.level
    assert stamp({"a": 1})["_meta"][META_LOG_LEVEL] == "info"  # the level is read at each request
    assert META_LOG_LEVEL not in switched(None)["_meta"]


def test_a_forced_2026_era_refused_by_the_server_names_the_option_to_change() -> None:
    handshake, _ = handshake_over(ScriptedServer({"server/discover": NOT_FOUND}), protocol="modern")
    with pytest.raises(ClientError) as info:
        handshake.negotiate()
    assert info.value.kind == "protocol" and "protocol='modern'" in info.value.message and 'protocol="auto"' in info.value.message
