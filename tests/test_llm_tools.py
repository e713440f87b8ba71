"""A server's tools for the host's model, and the blocking tool loop (docs/llm.md#a-servers-tools).

The model is a stand-in endpoint on 127.0.0.1 driven through the real
``openai`` and ``anthropic`` packages (tests/llm_peers.py); the tools are
the kit's FakeServer's, one of which asks the user a question mid-call.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.group import ServerGroup
from mcp_input_sync.llm import Tools, chat_anthropic, chat_openai, provider_name
from mcp_input_sync.testing import FakeServer

from .llm_peers import ProviderStandIn, check_anthropic, check_openai, completion, message

SEAT = {"type": "object", "properties": {"seat": {"type": "string"}}, "required": ["seat"]}


@pytest.fixture
def provider() -> Iterator[ProviderStandIn]:
    stand_in = ProviderStandIn()
    yield stand_in
    stand_in.close()


class Seats(mis.InputHandler):
    """Answers the seat question with the caller's assigns."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
        self.asked.append(dict(ctx.assigns))
        return {"action": "accept", "content": {"seat": ctx.assigns.get("seat", "aisle")}}


def fake_with_tools() -> FakeServer:
    fake = FakeServer()

    @fake.tool("flights.search", description="Find flights", input_schema={"type": "object", "properties": {"to": {"type": "string"}}})
    def search(call: Any) -> Any:
        return {"content": [{"type": "text", "text": f"2 flights to {call.arguments.get('to')}"}], "structuredContent": {"n": 2}}

    @fake.tool("book seat")
    def book(call: Any) -> str:
        answer = call.elicit("Which seat?", SEAT)
        return f"booked {answer['content']['seat']}"

    @fake.tool("broken")
    def broken(call: Any) -> Any:
        return {"content": [{"type": "text", "text": "no flights today"}], "isError": True}

    return fake


def test_names_become_ones_both_providers_take_unique_and_mapped_back() -> None:
    assert provider_name("search") == "search"
    assert provider_name("weather/get.forecast") == "weather_get_forecast"
    assert provider_name("book seat") == "book_seat"
    assert provider_name("9lives") == "t_9lives"
    assert len(provider_name("x" * 100)) == 64
    with FakeServer() as fake:
        for name in ("a/b", "a_b", "a.b"):
            fake.add_tool(name, lambda call: "ok")
        with fake.client() as client:
            tools = Tools(client)
    assert tools.names == {"a_b": "a/b", "a_b_2": "a_b", "a_b_3": "a.b"}


def test_tools_are_listed_for_each_provider_and_called_by_their_provider_name() -> None:
    with fake_with_tools() as fake, fake.client(Seats()) as client:
        tools = Tools(client, names=["flights.search", "book seat"])
        assert [t["function"]["name"] for t in tools.for_openai()] == ["flights_search", "book_seat"]
        assert tools.for_anthropic()[0] == {"name": "flights_search", "description": "Find flights", "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}}
        assert tools.call("flights_search", {"to": "Porto"})["structuredContent"] == {"n": 2}
        assert tools.run("made_up", {})["isError"] is True
        assert fake.requests_seen("tools/call") == [{"name": "flights.search", "arguments": {"to": "Porto"}}]
        with pytest.raises(ValueError):
            Tools(client, names=["nope"])


def test_a_group_s_tools_keep_their_server_in_the_name() -> None:
    with fake_with_tools() as fake, fake.client(Seats()) as client:
        group = ServerGroup({"travel": client}, {})
        tools = Tools(group)
        assert "travel_flights_search" in tools.names and tools.names["travel_flights_search"] == "travel/flights.search"
        assert tools.call("travel_flights_search", {"to": "Lima"})["content"][0]["text"] == "2 flights to Lima"


def openai_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_the_openai_loop_runs_the_tools_the_model_asks_for_and_stops_at_its_answer(provider: ProviderStandIn) -> None:
    provider.script(
        completion(None, finish="tool_calls", tool_calls=[  # type: ignore[arg-type]
            openai_call("c1", "flights_search", {"to": "Porto"}),
            openai_call("c2", "book_seat", {}),
            openai_call("c3", "delete_everything", {}),
        ]),
        completion("Booked a window seat on one of 2 flights."),
    )
    handler = Seats()
    with fake_with_tools() as fake, fake.client(handler) as client:
        tools = Tools(client)
        result = chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "Book me to Porto"}], tools, call_options={"assigns": {"seat": "window"}})
        called = [c["name"] for c in fake.requests_seen("tools/call")]
    assert result.finished and result.text == "Booked a window seat on one of 2 flights."
    assert sorted(called) == ["book seat", "flights.search"]  # the made-up tool was never called
    assert handler.asked == [{"seat": "window"}]  # the server's question reached the handler, with the caller's assigns
    first, second = provider.bodies("/v1/chat/completions")
    check_openai(first)
    check_openai(second)
    tool_messages = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert tool_messages["c1"] == "2 flights to Porto" and tool_messages["c2"] == "booked window"
    assert tool_messages["c3"].startswith("Error: unknown tool")
    assert [len(step.tool_calls) for step in result.steps] == [3, 0] and result.steps[0].usage["total_tokens"] == 8
    assert result.transcript[-1] == {"role": "assistant", "content": "Booked a window seat on one of 2 flights."}


def test_the_anthropic_loop_sends_errors_back_as_error_results_and_stops_at_max_steps(provider: ProviderStandIn) -> None:
    use = {"type": "tool_use", "id": "tu1", "name": "broken", "input": {}}
    provider.script(message(use, stop="tool_use"), message(dict(use, id="tu2"), stop="tool_use"))
    with fake_with_tools() as fake, fake.client(Seats()) as client:
        result = chat_anthropic(provider.anthropic(), "claude-sonnet", [{"role": "user", "content": "Fly"}], Tools(client), max_tokens=100, max_steps=2)
    assert not result.finished and result.text == "" and len(result.steps) == 2
    first, second = provider.bodies("/v1/messages")
    check_anthropic(first)
    check_anthropic(second)
    (tool_result,) = second["messages"][-1]["content"]
    assert tool_result == {"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "no flights today"}], "is_error": True}


def test_tools_asked_for_together_run_at_once(provider: ProviderStandIn) -> None:
    both = threading.Barrier(2, timeout=10)
    fake = FakeServer()

    @fake.tool("left")
    def left(call: Any) -> str:
        both.wait()  # returns only when the other tool runs too
        return "l"

    @fake.tool("right")
    def right(call: Any) -> str:
        both.wait()
        return "r"

    provider.script(
        completion(None, finish="tool_calls", tool_calls=[openai_call("a", "left", {}), openai_call("b", "right", {})]),  # type: ignore[arg-type]
        completion("done"),
    )
    with fake, fake.client() as client:
        assert chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "go"}], Tools(client)).text == "done"


def test_a_fastmcp_tool_that_asks_the_user_during_the_loop_reaches_the_handler_with_the_assigns(provider: ProviderStandIn) -> None:
    from .harness import PEERS_DIR
    from .test_oauth_fastmcp import FASTMCP_PYTHON

    if not FASTMCP_PYTHON.exists():
        pytest.skip("run peers/setup.sh to install FastMCP")

    class Stays(mis.InputHandler):
        def handle_elicitation(self, params: dict[str, Any], ctx: mis.InputContext) -> dict[str, Any]:
            return {"action": "accept", "content": {"city": ctx.assigns["city"], "nights": 3}}

    provider.script(
        completion(None, finish="tool_calls", tool_calls=[openai_call("c1", "elicit_pydantic", {})]),  # type: ignore[arg-type]
        completion("Booked 3 nights in Porto."),
    )
    server = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
    with mis.connect_stdio(server, handler=Stays(), protocol="legacy", timeout=30) as client:
        tools = Tools(client, names=["elicit_pydantic", "echo"])
        chat = chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "Book Porto"}], tools, call_options={"assigns": {"city": "Porto"}})
    assert chat.text == "Booked 3 nights in Porto."
    (call,) = chat.steps[0].tool_calls
    assert call.tool == "elicit_pydantic" and "city=Porto nights=3" in call.result["content"][0]["text"]


def test_a_pools_tools_are_listed_on_a_leased_client_and_each_call_leases_one() -> None:
    with fake_with_tools() as fake:
        pool = mis.ClientPool(lambda: fake.client(Seats()).open(), max_size=2)
        try:
            tools = Tools(pool, names=["flights.search"])
            assert tools.call("flights_search", {"to": "Oslo"})["content"][0]["text"] == "2 flights to Oslo"
        finally:
            pool.close()
