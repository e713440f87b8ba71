"""Sampling through an OpenAI-compatible chat completions endpoint (the ``openai`` package, the ``openai`` extra)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from ._common import Approve, JsonDict, ModelInfo, Review, Sampler, knobs, refuse

__all__ = ["OpenAISampler", "openai_request", "openai_result"]

EXTRA = "pip install 'mcp_input_sync[openai]'"

#: OpenAI's ``finish_reason`` -> MCP's ``stopReason`` (``content_filter`` is a refusal, not a stop).
FINISH_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse", "function_call": "toolUse"}
#: The audio formats chat completions take (``input_audio.format``), by MIME type.
AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def require_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise ImportError(f"OpenAISampler needs the openai package: {EXTRA}") from None
    return openai


def _blocks(content: Any) -> list[JsonDict]:
    blocks = content if isinstance(content, list) else [content]
    if not all(isinstance(block, Mapping) for block in blocks):
        raise refuse("a sampling message holds content that is not a content block")
    return [dict(block) for block in blocks]


def _text_of(blocks: Sequence[Mapping[str, Any]], where: str) -> str:
    parts = []
    for block in blocks:
        if block.get("type") != "text":
            raise refuse(f"the host's model takes only text in {where}, not {block.get('type')!r}")
        parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def _user_part(block: Mapping[str, Any]) -> JsonDict:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": f"data:{block.get('mimeType')};base64,{block.get('data')}"}}
    if kind == "audio":
        audio_format = AUDIO_FORMATS.get(str(block.get("mimeType", "")).lower())
        if audio_format is None:
            raise refuse("the host's model takes audio only as WAV or MP3")
        return {"type": "input_audio", "input_audio": {"data": block.get("data"), "format": audio_format}}
    raise refuse(f"the host's model cannot take {kind!r} content")


def _messages(params: Mapping[str, Any]) -> list[JsonDict]:
    out: list[JsonDict] = []
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        out.append({"role": "system", "content": system})
    for message in params.get("messages") or []:
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            raise refuse("a sampling message has no user or assistant role")
        blocks = _blocks(message.get("content"))
        results = [b for b in blocks if b.get("type") == "tool_result"]
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        rest = [b for b in blocks if b.get("type") not in ("tool_result", "tool_use")]
        for result in results:  # each tool's answer is a message of its own
            text = _text_of(_blocks(result.get("content") or []), "a tool result")
            if result.get("isError") is True:
                text = f"Error: {text}"
            out.append({"role": "tool", "tool_call_id": str(result.get("toolUseId", "")), "content": text})
        if role == "assistant":
            entry: JsonDict = {"role": "assistant", "content": _text_of(rest, "the model's own turns") if rest else None}
            if uses:
                entry["tool_calls"] = [
                    {"id": str(u.get("id")), "type": "function", "function": {"name": str(u.get("name")), "arguments": json.dumps(u.get("input") or {})}}
                    for u in uses
                ]
            out.append(entry)
        elif rest:
            if uses:
                raise refuse("a user message cannot hold a tool_use block")
            out.append({"role": "user", "content": [_user_part(b) for b in rest]})
    return out


def openai_request(model: str, params: Mapping[str, Any], max_tokens_field: str = "max_completion_tokens") -> JsonDict:
    """The chat completions request for a ``CreateMessageRequest``'s params (checked and clamped by the library)."""
    request: JsonDict = {"model": model, "messages": _messages(params), max_tokens_field: params.get("maxTokens")}
    asked = knobs(params)
    if asked.temperature is not None:
        request["temperature"] = asked.temperature
    if asked.stops is not None:
        request["stop"] = asked.stops
    if asked.tools is not None:
        request["tools"] = [
            {"type": "function", "function": {"name": name, "description": text, "parameters": schema}} for name, text, schema in asked.tools
        ]
    if asked.tool_choice is not None:
        request["tool_choice"] = asked.tool_choice
    return request


def openai_result(answer: Mapping[str, Any], model: str) -> JsonDict:
    """A ``CreateMessageResult`` from a chat completion (as a dict): text and tool calls, the model it reports, ``stopReason``."""
    choices = answer.get("choices") or []
    if not choices:
        raise refuse("the host's model gave no answer")
    choice = choices[0]
    reason = choice.get("finish_reason")
    if reason == "content_filter":
        raise refuse("the host's model refused to answer")
    message = choice.get("message") or {}
    text = message.get("content")
    calls = message.get("tool_calls") or []
    blocks: list[JsonDict] = []
    if isinstance(text, str) and (text or not calls):
        blocks.append({"type": "text", "text": text})
    for call in calls:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            raise refuse("the host's model asked for a tool with arguments that are not JSON") from None
        blocks.append({"type": "tool_use", "id": str(call.get("id")), "name": str(function.get("name")), "input": arguments if isinstance(arguments, dict) else {}})
    stop = "toolUse" if calls else FINISH_REASONS.get(str(reason), "endTurn")
    reported = answer.get("model")
    return {
        "role": "assistant",
        "content": blocks if calls else blocks[0],
        "model": reported if isinstance(reported, str) and reported else model,
        "stopReason": stop,
    }


class OpenAISampler(Sampler):
    """Answers ``sampling/createMessage`` with an ``openai.OpenAI`` client's chat completions.

    Any OpenAI-compatible endpoint works through the client's ``base_url``
    (vLLM, Ollama, LM Studio, a gateway). Use it as a handler's method::

        class Handler(mis.InputHandler):
            handle_sampling = OpenAISampler(OpenAI(), "gpt-4.1-mini", models=["gpt-4.1"])
            sampling_tools = True

    Args:
        client: an ``openai.OpenAI`` client.
        model: the model used when no hint names another (always allowed).
        models: the other models a server may pick by its hints, or a dict
            of them to :class:`ModelInfo`, for its priorities to choose by.
        approve, review: hooks before the provider is called and after it
            answered (docs/llm.md#approving).
        max_tokens_field: ``"max_completion_tokens"`` (OpenAI's current
            name) or ``"max_tokens"`` (older compatible servers).
        extra: more fields for every request (``{"top_p": 0.9}``); its
            ``temperature`` and ``stop`` win over the server's (None: never sent).

    Raises:
        ImportError: the ``openai`` package is missing (the message names the extra).
    """

    provider = "openai"
    require = staticmethod(require_openai)
    host_fields = ("temperature", "stop")

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        models: Union[Sequence[str], Mapping[str, ModelInfo]] = (),
        approve: Optional[Approve] = None,
        review: Optional[Review] = None,
        max_tokens_field: str = "max_completion_tokens",
        extra: Optional[Mapping[str, Any]] = None,
    ) -> None:
        super().__init__(client, model, models=models, approve=approve, review=review, extra=extra)
        if max_tokens_field not in ("max_completion_tokens", "max_tokens"):
            raise ValueError("max_tokens_field is 'max_completion_tokens' or 'max_tokens'")
        self.max_tokens_field = max_tokens_field

    def create(self, model: str, params: JsonDict) -> JsonDict:
        request = self.with_extra(openai_request(model, params, self.max_tokens_field))
        return openai_result(self.ask(self.client.chat.completions.create, request, self.sdk.OpenAIError), model)
