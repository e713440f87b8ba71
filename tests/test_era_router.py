"""The era router alone (issue 33, item 5): which engine a call goes to, and what it learns.

Over HTTP, preferring the handshake era, the client holds an
:class:`EraRouter` above the legacy engine and a 2026-07-28 engine beside it
(docs/modern.md#which-era). Here both engines are recording doubles; the
legacy one fails a tool the way :class:`LegacyEngine` does, with the error
``wrong_era`` makes of FastMCP's refusal. The real engines behind a router
are tested end to end in tests/test_era_choice.py; the last test checks that
the assembly builds a router only when eras may mix.
"""

from __future__ import annotations

import threading
from typing import Any, Optional, cast

import pytest

from mcp_input_sync import _assembly
from mcp_input_sync._calls import CallSpec
from mcp_input_sync._engines.base import EraEngine, wrong_era
from mcp_input_sync._engines.router import EraRouter
from mcp_input_sync._era import EraCache
from mcp_input_sync._port import Port
from mcp_input_sync._protocol.deadlines import CallClock
from mcp_input_sync._runtime import RealBudget
from mcp_input_sync.errors import ClientError
from mcp_input_sync.options import Options
from mcp_input_sync.testing import FakeServer

ENDPOINT = "https://mcp.example/mcp"
VERSION = "2025-11-25"
#: FastMCP's answer, in the handshake era, to a tool that asks for input the 2026-07-28 way.
MRTR_REFUSAL = ClientError("remote", "tool 'mrtr' only exists at MCP 2026-07-28", code=-32602)
#: The official SDK's ambiguous answer: a hint, not a certainty.
SDK_HINT = ClientError("remote", "Handler returned an invalid result", code=-32603)


class Engine:
    """Records what it was asked; ``fails`` maps a tool to the remote error its call gets."""

    def __init__(self, era: str, fails: Optional[dict[str, ClientError]] = None) -> None:
        self.era = era
        self.fails = fails or {}
        self.asked: list[tuple[Any, ...]] = []

    @property
    def version(self) -> Optional[str]:
        return VERSION if self.era == "legacy" else "2026-07-28"

    def call(self, method: str, params: dict[str, Any], spec: CallSpec) -> Any:
        self.asked.append(("call", method, params.get("name")))
        remote = self.fails.get(str(params.get("name")))
        if remote is not None and remote.kind != "remote":  # an engine's own error, as it is
            raise remote
        if remote is not None:  # as LegacyEngine.call: the era error, caused by the server's own
            raise (wrong_era(self.era, self.version, method, params, exc=remote) or remote) from remote
        return {"content": [], "era": self.era}

    def __getattr__(self, name: str) -> Any:
        """Every other EraEngine method: record the call, return the engine's era."""
        if name.startswith("__"):
            raise AttributeError(name)

        def method(*args: Any, **kwargs: Any) -> Any:
            self.asked.append((name, *args))
            return self.era

        return method


def router(fails: Optional[dict[str, ClientError]] = None, cache: Optional[EraCache] = None) -> tuple[EraRouter, Engine, Engine, EraCache]:
    legacy, modern, cache = Engine("legacy", fails), Engine("modern"), cache or EraCache()
    return EraRouter(cast(EraEngine, legacy), cast(EraEngine, modern), ENDPOINT, cache), legacy, modern, cache


def spec() -> CallSpec:
    return CallSpec(CallClock(0.0, 5.0, 5.0))


def era_of(route: EraRouter, name: str) -> Any:
    """The era of the engine that answered a call of tool ``name``."""
    return cast(Any, route.call("tools/call", {"name": name}, spec()))["era"]


def test_a_tool_goes_to_the_session_engine_until_one_is_learnt_to_need_2026_07_28() -> None:
    route, legacy, modern, cache = router()
    assert era_of(route, "add") == "legacy"
    cache.learn_tool(ENDPOINT, "mrtr", "modern")
    assert era_of(route, "mrtr") == "modern"
    assert era_of(route, "add") == "legacy"
    assert legacy.asked == [("call", "tools/call", "add"), ("call", "tools/call", "add")]
    assert modern.asked == [("call", "tools/call", "mrtr")]


def test_only_tool_calls_of_this_endpoint_are_routed_by_what_was_learnt() -> None:
    cache = EraCache()
    cache.learn_tool("https://other.example/mcp", "mrtr", "modern")  # another endpoint's tool of that name
    cache.learn_tool(ENDPOINT, "greeting", "modern")
    route, legacy, modern, _ = router(cache=cache)
    assert route.engine_for("tools/call", {"name": "mrtr"}) is cast(Any, legacy)
    assert route.engine_for("prompts/get", {"name": "greeting"}) is cast(Any, legacy)  # a prompt is no tool
    assert route.engine_for("tools/call", {"name": "greeting"}) is cast(Any, modern)


def test_an_era_refusal_is_learnt_raised_as_learnt_and_never_sent_again() -> None:
    route, legacy, modern, cache = router({"mrtr": MRTR_REFUSAL})
    with pytest.raises(ClientError) as first:
        route.call("tools/call", {"name": "mrtr"}, spec())
    error = first.value
    assert (error.kind, error.check, error.data["needs"], error.data["tool"]) == ("protocol", "era", "2026-07-28", "mrtr")
    assert error.__cause__ is MRTR_REFUSAL  # the server's own words stay the cause
    unlearnt = wrong_era("legacy", VERSION, "tools/call", {"name": "mrtr"}, exc=MRTR_REFUSAL)
    assert unlearnt is not None and str(error) != str(unlearnt)  # the message says the era was learnt
    assert cache.tool_era(ENDPOINT, "mrtr") == "modern"
    assert legacy.asked == [("call", "tools/call", "mrtr")]  # the failed call is not retried: it may have had effects
    assert modern.asked == []
    assert era_of(route, "mrtr") == "modern"  # the next call goes beside


@pytest.mark.parametrize("remote", [SDK_HINT, ClientError("remote", "no such tool", code=-32602)], ids=["hint", "other"])
def test_an_error_that_is_no_certain_era_refusal_is_raised_as_it_is_and_not_learnt(remote: ClientError) -> None:
    route, legacy, _, cache = router({"mrtr": remote})
    with pytest.raises(ClientError) as raised:
        route.call("tools/call", {"name": "mrtr"}, spec())
    assert raised.value.check is None and raised.value.kind == "remote"
    assert cache.tools() == {}


def test_an_error_of_the_engine_beside_is_not_learnt_from() -> None:
    route, _, modern, cache = router()
    cache.learn_tool(ENDPOINT, "mrtr", "modern")
    refusal = ClientError("protocol", "wants the other era", data={"needs": "2026-07-28"}, check="era")
    modern.fails["mrtr"] = refusal
    with pytest.raises(ClientError) as raised:
        route.call("tools/call", {"name": "mrtr"}, spec())
    assert raised.value is refusal and cache.tools() == {(ENDPOINT, "mrtr"): "modern"}


def test_resume_goes_beside_and_await_task_and_the_rest_to_the_session_engine() -> None:
    route, legacy, modern, _ = router()
    pending, call = cast(Any, object()), spec()
    assert route.resume(pending, {"a": 1}, call) == "modern"  # only a 2026-07-28 call defers its input
    assert cast(Any, route.await_task("t1", call)) == "legacy"  # tasks are the session's (2025-11-25)
    assert modern.asked == [("resume", pending, {"a": 1}, call)]
    assert legacy.asked == [("await_task", "t1", call)]


def test_the_session_engine_starts_hears_and_lists_and_the_router_closes_only_the_engine_beside() -> None:
    route, legacy, modern, _ = router()
    clock = CallClock(0.0, 5.0, 5.0)
    assert (route.era, route.version) == ("legacy", VERSION)
    route.started(VERSION, {"tools": {}})
    route.request("ping", None, is_call=False, clock=clock)
    route.hear()
    route.subscribe_resource("file:///a", True)
    route.set_log_level("debug", clock)
    route.roots_changed()
    route.note_tools([{"name": "add"}])
    route.close(answer=True)
    assert [asked[0] for asked in legacy.asked] == [
        "started", "request", "hear", "subscribe_resource", "set_log_level", "roots_changed", "note_tools"
    ]
    assert modern.asked == [("close", True)]  # the legacy engine is the runtime's: the client closes it once


@pytest.mark.parametrize("mixes", [True, False], ids=["http-like", "one-era"])
def test_the_assembly_builds_a_router_only_when_eras_may_mix(mixes: bool) -> None:
    """A memory transport that says it ties by stream and has an endpoint key stands for HTTP."""
    before = set(threading.enumerate())
    server = FakeServer("legacy")
    transport: Any = server.transport
    if mixes:
        transport.ties_by_stream, transport.era_key = True, ENDPOINT
    opts, port = Options.parse({"timeout": 5.0}), Port(server.transport)
    core = _assembly.build_core(port, opts, "unit", "fake", lambda: True, lambda: None)
    runtime = _assembly.start_runtime(core, port, opts, "unit", "fake")
    budget = RealBudget(5.0)
    try:
        port.start(core.session.on_line, core.session.on_transport_closed)
        engine, facts = _assembly.connect(core, runtime, port, opts, "unit", "fake", EraCache())
        assert core.session.receiver is runtime.legacy  # the legacy engine hears the server either way
        if mixes:
            assert isinstance(engine, EraRouter) and engine.legacy is runtime.legacy and engine.modern.era == "modern"
            assert engine.version == facts.version and engine.endpoint == ENDPOINT
        else:
            assert engine is runtime.legacy  # no router: a call passes through nothing more
        engine.close(answer=True)
    finally:
        runtime.legacy.close(answer=True)
        port.close(1.0)
        runtime.desk.close()
        runtime.watchdog.stop(budget)
        runtime.pool.shutdown(budget)
        core.pump.stop(budget)
        server.close()
    assert budget.wait_until(lambda: not (set(threading.enumerate()) - before), 5.0, step=0.01)
