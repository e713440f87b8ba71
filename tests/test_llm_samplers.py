"""The samplers of ``mcp_input_sync.llm`` with the real ``openai`` and ``anthropic`` packages (docs/llm.md).

The providers are stand-ins on 127.0.0.1 (tests/llm_peers.py): scripted
replies, every request kept and checked against the provider's request
shape. The MCP side is the kit's FakeServer asking for a sample, and
FastMCP's ``sample`` tool over stdio.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Iterator

import pytest

import mcp_input_sync as mis
from mcp_input_sync.llm import AnthropicSampler, ModelInfo, OpenAISampler, choose_model
from mcp_input_sync.testing import FakeServer

from .llm_peers import ProviderStandIn, check_anthropic, check_openai, completion, message

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
IMAGE = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}


@pytest.fixture
def provider() -> Iterator[ProviderStandIn]:
    stand_in = ProviderStandIn()
    yield stand_in
    stand_in.close()


def sample(handler: mis.InputHandler, params: dict[str, Any]) -> dict[str, Any]:
    """One sampling/createMessage from a fake server, answered by ``handler``; the answer (or error) as sent."""
    with FakeServer() as fake, fake.client(handler, sampling={"allow_idle": True}) as client:
        del client
        answer = fake.request("sampling/createMessage", params)
    return answer["result"] if "result" in answer else answer


def handler_with(sampler: Any) -> mis.InputHandler:
    class Handler(mis.InputHandler):
        handle_sampling = sampler
        sampling_tools = True

    return Handler()


PARAMS = {
    "systemPrompt": "You are terse.",
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Describe this"}, IMAGE]}],
    "maxTokens": 50,
    "temperature": 0.2,
    "stopSequences": ["END"],
    "modelPreferences": {"hints": [{"name": "MINI"}]},
}

# ---------------------------------------------------------------------------- choosing the model


def test_hints_are_substrings_in_order_and_priorities_choose_among_described_models() -> None:
    allowed = {"gpt-4.1": None, "gpt-4.1-mini": ModelInfo(cost=0.1, speed=0.9, intelligence=0.4), "o3": ModelInfo(cost=0.9, speed=0.2, intelligence=1.0)}

    def prefs(**p: Any) -> dict[str, Any]:
        return {"modelPreferences": p}

    assert choose_model(prefs(hints=[{"name": "claude"}, {"name": "MINI"}]), "gpt-4.1", allowed) == "gpt-4.1-mini"
    assert choose_model(prefs(hints=[{"name": "4.1"}]), "gpt-4.1", allowed) == "gpt-4.1"  # the host's order decides a tie
    assert choose_model(prefs(hints=[{"name": "sonnet"}], intelligencePriority=1.0), "gpt-4.1", allowed) == "o3"
    assert choose_model(prefs(costPriority=1.0, speedPriority=0.5), "gpt-4.1", allowed) == "gpt-4.1-mini"
    assert choose_model(prefs(hints=[{"name": "gpt-5-secret"}]), "gpt-4.1", allowed) == "gpt-4.1"  # never outside the list
    assert choose_model({}, "gpt-4.1", allowed) == "gpt-4.1"


# ---------------------------------------------------------------------------- OpenAI


def test_the_openai_request_carries_every_field_and_the_result_the_providers_model(provider: ProviderStandIn) -> None:
    provider.script(completion("A cat.", model="gpt-4.1-mini-2026-04-01"))
    sampler = OpenAISampler(provider.openai(), "gpt-4.1", models=["gpt-4.1-mini"])
    answer = sample(handler_with(sampler), PARAMS)
    assert answer == {"role": "assistant", "content": {"type": "text", "text": "A cat."}, "model": "gpt-4.1-mini-2026-04-01", "stopReason": "endTurn"}
    (body,) = provider.bodies(CHAT)
    check_openai(body)
    assert body["model"] == "gpt-4.1-mini" and body["max_completion_tokens"] == 50 and body["temperature"] == 0.2 and body["stop"] == ["END"]
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["messages"][1]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}


def test_the_hosts_temperature_and_stop_sequences_win_over_the_servers(provider: ProviderStandIn) -> None:
    provider.script(completion("A cat."), completion("A cat."), message({"type": "text", "text": "A cat."}))
    chosen = OpenAISampler(provider.openai(), "gpt-4.1", extra={"temperature": 0.9, "stop": ["###"], "top_p": 0.5, "max_completion_tokens": 4000})
    none_at_all = OpenAISampler(provider.openai(), "gpt-4.1", extra={"temperature": None})
    stops = AnthropicSampler(provider.anthropic(), "claude-sonnet", extra={"stop_sequences": ["###"]})
    for sampler in (chosen, none_at_all, stops):
        assert sample(handler_with(sampler), PARAMS)["content"] == {"type": "text", "text": "A cat."}  # the server asked for 0.2 and END
    first, second = provider.bodies(CHAT)
    assert first["temperature"] == 0.9 and first["stop"] == ["###"] and first["top_p"] == 0.5
    assert first["max_completion_tokens"] == 50  # the token limit stays the clamped one
    assert "temperature" not in second and second["stop"] == ["END"]  # None: never sent; the server's stops where the host set none
    (third,) = provider.bodies(MESSAGES)
    check_anthropic(third)
    assert third["stop_sequences"] == ["###"]


@pytest.mark.parametrize("finish, stop", [("stop", "endTurn"), ("length", "maxTokens"), ("tool_calls", "toolUse")])
def test_every_finish_reason_becomes_a_stop_reason(provider: ProviderStandIn, finish: str, stop: str) -> None:
    calls = [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}] if finish == "tool_calls" else None
    provider.script(completion("x", finish=finish, tool_calls=calls))
    answer = sample(handler_with(OpenAISampler(provider.openai(), "gpt-4.1")), {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5})
    assert answer["stopReason"] == stop
    if calls:
        assert answer["content"][-1] == {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 1}}


def test_tools_and_tool_blocks_go_both_ways(provider: ProviderStandIn) -> None:
    provider.script(completion("The sum is 3."))
    params = {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "1+2?"}},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t1", "content": [{"type": "text", "text": "3"}]}]},
        ],
        "maxTokens": 20,
        "tools": [{"name": "add", "description": "Adds", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}}],
        "toolChoice": {"mode": "auto"},
    }
    assert sample(handler_with(OpenAISampler(provider.openai(), "gpt-4.1")), params)["content"]["text"] == "The sum is 3."
    (body,) = provider.bodies(CHAT)
    check_openai(body)
    assert body["tools"][0]["function"]["name"] == "add" and body["tool_choice"] == "auto"
    assert body["messages"][1]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1, "b": 2}'}
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "t1", "content": "3"}


def test_content_the_provider_cannot_take_is_refused_not_dropped(provider: ProviderStandIn) -> None:
    params = {"messages": [{"role": "user", "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/ogg"}}], "maxTokens": 5}
    answer = sample(handler_with(OpenAISampler(provider.openai(), "gpt-4.1")), params)
    assert "WAV or MP3" in answer["error"]["message"] and provider.requests == []


def test_a_provider_error_is_a_refusal_the_server_reads_without_the_providers_words(provider: ProviderStandIn, caplog: pytest.LogCaptureFixture) -> None:
    provider.script((401, {"error": {"message": "Incorrect API key provided: sk-test-***key. req_abc123", "type": "invalid_request_error"}}))
    provider.script((429, {"error": {"message": "Rate limit reached for org-secret", "type": "rate_limit"}}))
    sampler = OpenAISampler(provider.openai(), "gpt-4.1")
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
    with caplog.at_level(logging.WARNING):
        first, second = sample(handler_with(sampler), params), sample(handler_with(sampler), params)
    assert first["error"]["message"] == "the host's model provider refused the host's credentials"
    assert second["error"]["message"] == "the host's model is rate limited; try again later"
    for text in (str(first), str(second), caplog.text):
        assert "sk-test" not in text and "req_abc123" not in text and "org-secret" not in text
    assert "AuthenticationError (HTTP 401)" in caplog.text


def test_approve_and_review_are_the_approval_points(provider: ProviderStandIn) -> None:
    seen: list[str] = []

    def approve(params: dict[str, Any], ctx: mis.InputContext) -> bool:
        seen.append("approve")
        return params["messages"][0]["content"]["text"] != "forbidden"

    def review(result: dict[str, Any], ctx: mis.InputContext) -> Any:
        seen.append("review")
        return {**result, "content": {"type": "text", "text": result["content"]["text"] + " (checked)"}}

    provider.script(completion("ok"))
    sampler = OpenAISampler(provider.openai(), "gpt-4.1", approve=approve, review=review)
    said = sample(handler_with(sampler), {"messages": [{"role": "user", "content": {"type": "text", "text": "fine"}}], "maxTokens": 5})
    refused = sample(handler_with(sampler), {"messages": [{"role": "user", "content": {"type": "text", "text": "forbidden"}}], "maxTokens": 5})
    assert said["content"]["text"] == "ok (checked)" and refused["error"]["code"] == -1
    assert seen == ["approve", "review", "approve"] and len(provider.requests) == 1


# ---------------------------------------------------------------------------- Anthropic


def test_the_anthropic_request_carries_every_field_and_stop_reasons_map(provider: ProviderStandIn) -> None:
    provider.script(message({"type": "text", "text": "A cat."}, stop="stop_sequence", model="claude-sonnet-test"))
    sampler = AnthropicSampler(provider.anthropic(), "claude-sonnet", models=["claude-haiku-mini"])
    answer = sample(handler_with(sampler), PARAMS)
    assert answer == {"role": "assistant", "content": {"type": "text", "text": "A cat."}, "model": "claude-sonnet-test", "stopReason": "stopSequence"}
    (body,) = provider.bodies(MESSAGES)
    check_anthropic(body)
    assert body["model"] == "claude-haiku-mini" and body["system"] == "You are terse." and body["stop_sequences"] == ["END"]
    assert body["messages"][0]["content"][1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}}


def test_anthropic_tool_use_comes_back_as_tool_use_blocks_and_a_refusal_is_refused(provider: ProviderStandIn) -> None:
    provider.script(message({"type": "text", "text": "Let me add."}, {"type": "tool_use", "id": "tu1", "name": "add", "input": {"a": 1}}, stop="tool_use"))
    provider.script(message({"type": "text", "text": ""}, stop="refusal"))
    sampler = AnthropicSampler(provider.anthropic(), "claude-sonnet")
    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "1+2?"}}], "maxTokens": 20,
              "tools": [{"name": "add", "inputSchema": {"type": "object"}}], "toolChoice": {"mode": "required"}}
    answer = sample(handler_with(sampler), params)
    assert answer["stopReason"] == "toolUse" and answer["content"][1] == {"type": "tool_use", "id": "tu1", "name": "add", "input": {"a": 1}}
    assert provider.bodies(MESSAGES)[0]["tool_choice"] == {"type": "any"}
    assert sample(handler_with(sampler), params)["error"]["message"] == "the host's model refused to answer"


def test_a_sampler_without_its_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ImportError, match=r"mcp_input_sync\[openai\]"):
        OpenAISampler(object(), "gpt-4.1")
    with pytest.raises(ImportError, match=r"mcp_input_sync\[anthropic\]"):
        AnthropicSampler(object(), "claude")


def test_a_handler_with_a_sampler_advertises_sampling_and_its_tools() -> None:
    with FakeServer() as fake, fake.client(handler_with(OpenAISampler(object(), "gpt-4.1"))):
        (init,) = fake.requests_seen("initialize")
    assert init["capabilities"]["sampling"] == {"tools": {}}


# ---------------------------------------------------------------------------- a real server asks


@pytest.mark.skipif(not __import__("tests.test_oauth_fastmcp", fromlist=["FASTMCP_PYTHON"]).FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_fastmcps_sample_tool_is_answered_by_the_hosts_model(provider: ProviderStandIn, kind: str) -> None:
    from .harness import PEERS_DIR
    from .test_oauth_fastmcp import FASTMCP_PYTHON

    if kind == "openai":
        provider.script(completion("Hello from the host's model."))
        sampler: Any = OpenAISampler(provider.openai(), "gpt-4.1")
    else:
        provider.script(message({"type": "text", "text": "Hello from the host's model."}))
        sampler = AnthropicSampler(provider.anthropic(), "claude-sonnet")
    server = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
    with mis.connect_stdio(server, handler=handler_with(sampler), protocol="legacy", timeout=30) as client:
        result = client.call_tool("sample")
    assert result["content"][0]["text"] == "sampled: Hello from the host's model."
    ((path, _, body),) = provider.requests
    (check_openai if kind == "openai" else check_anthropic)(body)
    assert "Say hello" in str(body["messages"]) and 64 in (body.get("max_completion_tokens"), body.get("max_tokens"))


@pytest.mark.skipif(not __import__("tests.test_oauth_fastmcp", fromlist=["FASTMCP_PYTHON"]).FASTMCP_PYTHON.exists(), reason="run peers/setup.sh to install FastMCP")
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_fastmcps_rich_sample_gets_the_hinted_model_the_system_prompt_and_a_tool_call_back(provider: ProviderStandIn, kind: str) -> None:
    from .harness import PEERS_DIR
    from .test_oauth_fastmcp import FASTMCP_PYTHON

    if kind == "openai":
        provider.script(completion(None, finish="tool_calls", model="gpt-4.1-mini-2026", tool_calls=[  # type: ignore[arg-type]
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]))
        sampler: Any = OpenAISampler(provider.openai(), "gpt-4.1", models=["gpt-4.1-mini"])
    else:
        provider.script(message({"type": "tool_use", "id": "tu1", "name": "add", "input": {"a": 2, "b": 3}}, stop="tool_use", model="claude-mini-2026"))
        sampler = AnthropicSampler(provider.anthropic(), "claude-sonnet", models=["claude-mini"])
    server = [str(FASTMCP_PYTHON), str(PEERS_DIR / "fastmcp_server.py")]
    with mis.connect_stdio(server, handler=handler_with(sampler), protocol="legacy", timeout=30) as client:
        text = client.call_tool("sample_rich")["content"][0]["text"]
    assert text.startswith("model ") and "wants add({'a': 2, 'b': 3}) (toolUse)" in text
    ((_, _, body),) = provider.requests
    if kind == "openai":
        check_openai(body)
        assert body["model"] == "gpt-4.1-mini" and body["messages"][0] == {"role": "system", "content": "You are a calculator."}
        assert body["tools"][0]["function"]["name"] == "add" and body["tool_choice"] == "auto"
    else:
        check_anthropic(body)
        assert body["model"] == "claude-mini" and body["system"] == "You are a calculator." and body["tools"][0]["name"] == "add"


def test_server_everythings_sampling_tool_is_answered_by_the_hosts_model(provider: ProviderStandIn) -> None:
    from .test_everything import EVERYTHING, NODE22

    if not (NODE22.exists() and EVERYTHING.exists()):
        pytest.skip("run peers/setup.sh to install server-everything")
    provider.script(completion("A reply from the host's model."))
    sampler = OpenAISampler(provider.openai(), "gpt-4.1")
    with mis.connect_stdio([str(NODE22), str(EVERYTHING), "stdio"], handler=handler_with(sampler), discover_timeout=2) as client:
        out = "".join(block.get("text", "") for block in client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 20})["content"])
    assert "A reply from the host's model." in out
    ((_, _, body),) = provider.requests
    check_openai(body)
    assert body["max_completion_tokens"] == 20 and "hello" in str(body["messages"])


def test_a_sampler_set_on_the_handler_in_init_counts_as_overriding_handle_sampling(provider: ProviderStandIn) -> None:
    class Configured(mis.InputHandler):
        sampling_tools = True

        def __init__(self, sampler: Any) -> None:
            self.handle_sampling = sampler  # type: ignore[method-assign]

    provider.script(completion("set in init"))
    handler = Configured(OpenAISampler(provider.openai(), "gpt-4.1"))
    assert sample(handler, {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5})["content"]["text"] == "set in init"
