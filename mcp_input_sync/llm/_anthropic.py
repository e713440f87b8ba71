"""Sampling through Anthropic's messages API (the ``anthropic`` package, the ``anthropic`` extra)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Optional

from ._common import JsonDict, Sampler, knobs, log, refuse

__all__ = ["AnthropicSampler", "anthropic_request", "anthropic_result"]

EXTRA = "pip install 'mcp_input_sync[anthropic]'"

#: Anthropic's ``stop_reason`` -> MCP's ``stopReason`` (``refusal`` is a refusal, not a stop).
STOP_REASONS = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence", "tool_use": "toolUse", "pause_turn": "endTurn"}
#: The image types the messages API takes.
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


@functools.lru_cache(maxsize=4)
def _create_fields(module: Any) -> Optional[frozenset[str]]:
    """The keyword arguments of the SDK's ``Messages.create`` (None when they cannot be read)."""
    try:
        import inspect

        return frozenset(inspect.signature(module.resources.messages.Messages.create).parameters)
    except (AttributeError, TypeError, ValueError):
        return None


def require_anthropic() -> Any:
    try:
        import anthropic
    except ImportError:
        raise ImportError(f"AnthropicSampler needs the anthropic package: {EXTRA}") from None
    return anthropic


def _part(block: Mapping[str, Any], where: str) -> JsonDict:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "image":
        if block.get("mimeType") not in IMAGE_TYPES:
            raise refuse("the host's model takes images only as JPEG, PNG, GIF or WebP")
        return {"type": "image", "source": {"type": "base64", "media_type": block["mimeType"], "data": block.get("data")}}
    if kind == "tool_use" and where == "assistant":
        return {"type": "tool_use", "id": str(block.get("id")), "name": str(block.get("name")), "input": block.get("input") or {}}
    if kind == "tool_result" and where == "user":
        inner = block.get("content") or []
        parts = [_part(b, "tool") for b in (inner if isinstance(inner, list) else [inner]) if isinstance(b, Mapping)]
        result: JsonDict = {"type": "tool_result", "tool_use_id": str(block.get("toolUseId", "")), "content": parts}
        if block.get("isError") is True:
            result["is_error"] = True
        return result
    raise refuse(f"the host's model cannot take {kind!r} content here")


def anthropic_request(model: str, params: Mapping[str, Any]) -> JsonDict:
    """The messages API request for a ``CreateMessageRequest``'s params (checked and clamped by the library)."""
    messages: list[JsonDict] = []
    for message in params.get("messages") or []:
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in ("user", "assistant"):
            raise refuse("a sampling message has no user or assistant role")
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        if not all(isinstance(b, Mapping) for b in blocks):
            raise refuse("a sampling message holds content that is not a content block")
        messages.append({"role": role, "content": [_part(b, role) for b in blocks]})
    request: JsonDict = {"model": model, "max_tokens": params.get("maxTokens"), "messages": messages}
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        request["system"] = system
    asked = knobs(params)
    if asked.temperature is not None:
        request["temperature"] = asked.temperature
    if asked.stops is not None:
        request["stop_sequences"] = asked.stops
    if asked.tools is not None:
        request["tools"] = [{"name": name, "description": text, "input_schema": schema} for name, text, schema in asked.tools]
    if asked.tool_choice is not None:
        request["tool_choice"] = {"type": {"auto": "auto", "required": "any", "none": "none"}[asked.tool_choice]}
    return request


def anthropic_result(answer: Mapping[str, Any], model: str) -> JsonDict:
    """A ``CreateMessageResult`` from a message (as a dict): text and tool_use blocks, the model it reports, ``stopReason``."""
    reason = answer.get("stop_reason")
    if reason == "refusal":
        raise refuse("the host's model refused to answer")
    blocks: list[JsonDict] = []
    for block in answer.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "tool_use":
            blocks.append({"type": "tool_use", "id": str(block.get("id")), "name": str(block.get("name")), "input": block.get("input") or {}})
        # thinking and other blocks are the model's own working: not part of the answer
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    uses = any(b["type"] == "tool_use" for b in blocks)
    reported = answer.get("model")
    return {
        "role": "assistant",
        "content": blocks if uses or len(blocks) > 1 else blocks[0],
        "model": reported if isinstance(reported, str) and reported else model,
        "stopReason": "toolUse" if uses else STOP_REASONS.get(str(reason), "endTurn"),
    }


class AnthropicSampler(Sampler):
    """Answers ``sampling/createMessage`` with an ``anthropic.Anthropic`` client's messages API.

    Use it as a handler's method::

        class Handler(mis.InputHandler):
            handle_sampling = AnthropicSampler(Anthropic(), "claude-sonnet-4-5", models=["claude-opus-4-1"])
            sampling_tools = True

    Args: as :class:`~mcp_input_sync.llm.OpenAISampler` (without ``max_tokens_field``);
    in ``extra``, ``temperature`` and ``stop_sequences`` win over the server's.

    Raises:
        ImportError: the ``anthropic`` package is missing (the message names the extra).
    """

    provider = "anthropic"
    require = staticmethod(require_anthropic)
    host_fields = ("temperature", "stop_sequences")

    def create(self, model: str, params: JsonDict) -> JsonDict:
        request = self.with_extra(anthropic_request(model, params))
        fields = _create_fields(self.sdk)  # what this SDK's messages.create takes (later SDKs dropped temperature)
        if fields is not None:
            for name in [name for name in request if name not in fields]:
                # a sampling hint the SDK no longer takes (temperature): the model's own default then
                log.debug("mcp_input_sync: the anthropic SDK takes no %s; left out", name)
                del request[name]
        return anthropic_result(self.ask(self.client.messages.create, request, self.sdk.AnthropicError), model)
