"""What one answer of the host's model may make the tool loop do (docs/llm.md#the-tool-loop, issue 31 finding 5).

A model's answer may ask for any number of tool calls, and each is a call
on the user's server: a step runs at most ``max_tool_calls`` of them (the
others go back to the model refused, never to the server), on at most
``TOOL_THREADS`` threads, within ``step_timeout``; every thread is joined
before the loop goes on. The model is the stand-in of tests/llm_peers.py
through the real ``openai`` and ``anthropic`` packages; the tools are the
kit's FakeServer's.
"""

from __future__ import annotations

import _thread
import json
import logging
import threading
import time
from typing import Any, Iterator

import pytest

from mcp_input_sync.llm import Tools, chat_anthropic, chat_openai
from mcp_input_sync.llm._loop import MAX_TOOL_CALLS, TOOL_THREADS
from mcp_input_sync.testing import FakeServer

from .llm_peers import ProviderStandIn, check_anthropic, check_openai, completion, message

LOOP_THREAD = "mcp-input-sync-llm-tool-"


@pytest.fixture
def provider() -> Iterator[ProviderStandIn]:
    stand_in = ProviderStandIn()
    yield stand_in
    stand_in.close()


def asks(n: int, name: str = "count", *, first: str = "") -> dict[str, Any]:
    """A chat completion asking for ``n`` calls of ``name`` (the first of ``first`` when given)."""
    names = [first or name] + [name] * (n - 1)
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": called, "arguments": json.dumps({"i": i})}} for i, called in enumerate(names)]
    return completion(None, finish="tool_calls", tool_calls=calls)  # type: ignore[arg-type]


class Counting:
    """A fake server whose ``count`` tool records how many of its calls run at once, and the loop's threads alive then."""

    def __init__(self, together: int = 1) -> None:
        self.fake = FakeServer()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.threads = 0
        meet = threading.Barrier(together, timeout=10)

        @self.fake.tool("count")
        def count(call: Any) -> str:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.threads = max(self.threads, sum(t.name.startswith(LOOP_THREAD) for t in threading.enumerate()))
            try:
                if together > 1:
                    meet.wait()  # returns when `together` calls run at once
                return f"n{call.arguments['i']}"
            finally:
                with self.lock:
                    self.running -= 1


def test_a_step_runs_at_most_max_tool_calls_and_the_rest_never_reach_the_server(provider: ProviderStandIn, caplog: pytest.LogCaptureFixture) -> None:
    provider.script(asks(200), completion("done"))
    counting = Counting()
    with counting.fake, counting.fake.client() as client, caplog.at_level(logging.WARNING, logger="mcp_input_sync"):
        chat = chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "count"}], Tools(client))
        sent = counting.fake.requests_seen("tools/call")
    assert chat.finished and chat.text == "done"
    assert MAX_TOOL_CALLS == 16 and sorted(c["arguments"]["i"] for c in sent) == list(range(16))  # the first 16, in the model's order
    second = provider.bodies("/v1/chat/completions")[1]
    check_openai(second)
    answers = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert len(answers) == 200  # every call the model asked for gets its answer, as the API requires
    assert answers[:16] == [f"n{i}" for i in range(16)]
    assert all(a.startswith("Error: not called: the model asked for 200 tool calls in one step, and the host runs at most 16") for a in answers[16:])
    warnings = [r.getMessage() for r in caplog.records if "tool calls" in r.getMessage()]
    assert warnings == ["mcp_input_sync: the model asked for 200 tool calls in one step; 184 refused (max_tool_calls=16)"]


def test_max_tool_calls_is_the_hosts_to_set_for_anthropic_too(provider: ProviderStandIn) -> None:
    uses = [{"type": "tool_use", "id": f"tu{i}", "name": "count", "input": {"i": i}} for i in range(5)]
    provider.script(message(*uses, stop="tool_use"), message())
    counting = Counting()
    with counting.fake, counting.fake.client() as client:
        chat = chat_anthropic(provider.anthropic(), "claude-sonnet", [{"role": "user", "content": "count"}], Tools(client), max_tokens=100, max_tool_calls=2)
        assert len(counting.fake.requests_seen("tools/call")) == 2
    assert chat.finished
    second = provider.bodies("/v1/messages")[1]
    check_anthropic(second)
    results = second["messages"][-1]["content"]
    assert [r["tool_use_id"] for r in results] == [f"tu{i}" for i in range(5)]
    assert [r.get("is_error", False) for r in results] == [False, False, True, True, True]
    assert "the host runs at most 2" in results[4]["content"][0]["text"]


def test_a_steps_calls_share_a_few_threads(provider: ProviderStandIn) -> None:
    provider.script(asks(12), completion("done"))
    counting = Counting(together=TOOL_THREADS)  # the calls meet by fours: they do run at once
    with counting.fake, counting.fake.client() as client:
        chat = chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "count"}], Tools(client))
        assert len(counting.fake.requests_seen("tools/call")) == 12
    assert chat.text == "done" and all(call.result.get("isError") is not True for call in chat.steps[0].tool_calls)
    assert TOOL_THREADS == 4 and counting.most == 4 and counting.threads == 4


def hanging() -> tuple[FakeServer, list[Any]]:
    """A fake whose ``hang`` tool waits (10 s at most) until the client cancels it; the calls it got."""
    fake = FakeServer()
    got: list[Any] = []

    @fake.tool("hang")
    def hang(call: Any) -> str:
        got.append(call)
        return "cancelled" if call.cancelled.wait(10) else "never cancelled"

    return fake, got


def interrupting(hangs: int) -> tuple[FakeServer, list[Any]]:
    """:func:`hanging`, and an ``interrupt`` tool that presses Ctrl-C once ``hangs`` calls of ``hang`` run (10 s at most)."""
    fake = FakeServer()
    got: list[Any] = []
    running = threading.Condition()

    @fake.tool("hang")
    def hang(call: Any) -> str:
        with running:
            got.append(call)
            running.notify_all()
        return "cancelled" if call.cancelled.wait(10) else "never cancelled"

    @fake.tool("interrupt")
    def interrupt(call: Any) -> str:
        with running:
            running.wait_for(lambda: len(got) == hangs, timeout=10)
        _thread.interrupt_main()
        return "interrupted"

    return fake, got


def test_past_step_timeout_the_running_calls_are_cancelled_and_no_more_are_sent(provider: ProviderStandIn) -> None:
    provider.script(asks(6, "hang"), completion("gave up"))
    fake, got = hanging()
    with fake, fake.client() as client:
        began = time.monotonic()
        chat = chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "go"}], Tools(client), step_timeout=0.3)
        took = time.monotonic() - began
        assert len(fake.requests_seen("tools/call")) == 4  # one wave of four; the other two were never sent
        assert len(fake.wait_for("notifications/cancelled", 4, timeout=5)) == 4
    assert chat.text == "gave up" and took < 5
    texts = [call.result["content"][0]["text"] for call in chat.steps[0].tool_calls]
    assert all(call.result["isError"] is True for call in chat.steps[0].tool_calls)
    assert texts[4:] == ["not called: the step's tool calls were cancelled or ran out of time"] * 2, texts


def test_the_callers_cancel_stops_the_steps_calls(provider: ProviderStandIn) -> None:
    provider.script(asks(6, "hang", first="cancel"), completion("stopped"))
    fake, got = hanging()
    stop = threading.Event()

    @fake.tool("cancel")
    def cancel(call: Any) -> str:
        stop.set()  # the host cancels while the step runs
        return "set"

    with fake, fake.client() as client:
        chat = chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "go"}], Tools(client), call_options={"cancel": stop})
        # the call returns once it sent notifications/cancelled; the fake hears it on its own thread (bounded wait)
        assert len(fake.requests_seen("tools/call")) <= 4 and all(call.cancelled.wait(5) for call in got)
    assert chat.text == "stopped"
    assert all(call.result["isError"] is True for call in chat.steps[0].tool_calls[1:])


def test_ctrl_c_during_a_step_cancels_its_calls_and_leaves_no_thread(provider: ProviderStandIn, ctrl_c: None) -> None:
    provider.script(asks(3, "hang", first="interrupt"))
    fake, got = interrupting(hangs=2)
    with fake, fake.client() as client:
        with pytest.raises(KeyboardInterrupt):
            chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "go"}], Tools(client))
        assert len(fake.wait_for("notifications/cancelled", 2, timeout=5)) == 2
    assert len(got) == 2 and not [t.name for t in threading.enumerate() if t.name.startswith(LOOP_THREAD)]


@pytest.mark.parametrize("bad", [{"max_tool_calls": 0}, {"max_tool_calls": True}, {"step_timeout": 0}, {"step_timeout": float("nan")}])
def test_the_bounds_must_be_positive(provider: ProviderStandIn, bad: dict[str, Any]) -> None:
    with FakeServer() as fake, fake.client() as client, pytest.raises(ValueError):
        chat_openai(provider.openai(), "gpt-4.1", [{"role": "user", "content": "go"}], Tools(client), **bad)
    assert provider.bodies("/v1/chat/completions") == []  # refused before the model is asked
