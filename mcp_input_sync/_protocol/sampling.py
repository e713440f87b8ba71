"""Sampling guards (docs/safety.md#sampling): what a ``sampling/createMessage`` may ask, and what the answer must hold."""

from __future__ import annotations

from typing import Any, Mapping, Optional

#: Content block types a sampling answer may hold, with their required string members.
BLOCK_FIELDS: Mapping[str, tuple[str, ...]] = {
    "text": ("text",),
    "image": ("data", "mimeType"),
    "audio": ("data", "mimeType"),
    "tool_use": ("id", "name"),
    "tool_result": ("toolUseId",),
}
#: The block types of 2025-06-18, which also allows no list of blocks.
SINGLE_BLOCK_TYPES = frozenset({"text", "image", "audio"})


def bad_max_tokens(params: Mapping[str, Any]) -> bool:
    """True unless ``maxTokens`` is an int (not a bool) of at least 1."""
    value = params.get("maxTokens")
    return type(value) is not int or value < 1


def tool_turns(messages: Any) -> int:
    """Assistant messages whose content holds at least one ``tool_use`` block."""
    turns = 0
    if not isinstance(messages, list):
        return 0
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        if any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks):
            turns += 1
    return turns


def rewrite(params: Mapping[str, Any], *, max_tokens: int, context: bool) -> dict[str, Any]:
    """The params the handler sees: ``maxTokens`` clamped, ``includeContext`` narrowed."""
    out = dict(params)
    if out["maxTokens"] > max_tokens:
        out["maxTokens"] = max_tokens
    if "includeContext" in out and out["includeContext"] != "none" and not context:
        out["includeContext"] = "none"
    return out


def _block_problem(block: Any, version: str) -> Optional[str]:
    if not isinstance(block, dict):
        return "a content block is not an object"
    kind = block.get("type")
    fields = BLOCK_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None or (version == "2025-06-18" and kind not in SINGLE_BLOCK_TYPES):
        return f"content block type {kind!r} is not allowed"
    for member in fields:
        if type(block.get(member)) is not str:
            return f"{kind} block needs a string {member!r}"
    if kind == "tool_use" and not isinstance(block.get("input"), dict):
        return "tool_use block needs an input object"
    if kind == "tool_result" and not isinstance(block.get("content"), list):
        return "tool_result block needs a content list"
    return None


def result_problem(value: Mapping[str, Any], version: str) -> Optional[str]:
    """Why a handler's ``CreateMessageResult`` is invalid, or None."""
    if value.get("role") not in ("assistant", "user"):
        return "role must be 'assistant' or 'user'"
    if type(value.get("model")) is not str:
        return "model must be a string"
    stop = value.get("stopReason")
    if stop is not None and type(stop) is not str:
        return "stopReason must be a string"
    content = value.get("content")
    if isinstance(content, list):
        if version == "2025-06-18":
            return "2025-06-18 allows one content block, not a list"
        if not content:
            return "content is an empty list"
        for block in content:
            problem = _block_problem(block, version)
            if problem is not None:
                return problem
        return None
    return _block_problem(content, version)
