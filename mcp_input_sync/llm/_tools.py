"""A server's tools for the host's model: names both providers take, definitions, calls, results."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Iterable, Optional

from ..errors import ClientError

__all__ = ["Tools", "provider_name"]

JsonDict = dict[str, Any]

#: What both providers take as a tool's name: a letter, then letters, digits, ``_`` and ``-``; 64 at most.
_FIT = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_UNFIT = re.compile(r"[^A-Za-z0-9_-]+")


def provider_name(name: str) -> str:
    """A tool name both providers take: runs of other characters (``/``, ``.``, spaces) become ``_``; a letter first; 64 at most."""
    if _FIT.fullmatch(name):
        return name
    fitted = _UNFIT.sub("_", name).strip("_") or "tool"
    if not fitted[0].isalpha():
        fitted = "t_" + fitted
    return fitted[:64]


def _unique(wanted: str, taken: set[str]) -> str:
    if wanted not in taken:
        return wanted
    for n in range(2, 10_000):
        suffix = f"_{n}"
        candidate = wanted[: 64 - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError("too many tools share a name")


class Tools:
    """The tools of a ``Client``, a ``ServerGroup`` or a ``ClientPool``, for a model to call.

    Each tool gets a name both providers take, unique among them and mapped
    back to the MCP name (:attr:`names`, provider name to MCP name).

    Args:
        source: a ``Client``, a ``ServerGroup`` (its tools are ``server/tool``)
            or a ``ClientPool`` (listed once on a leased client).
        names: only these MCP tool names (default: every tool listed).
    """

    def __init__(self, source: Any, *, names: Optional[Iterable[str]] = None) -> None:
        self.source = source
        if callable(getattr(source, "list_tools", None)):
            listed = source.list_tools()
        elif callable(getattr(source, "lease", None)):
            with source.lease() as client:
                listed = client.list_tools()
        else:
            raise TypeError("Tools takes a Client, a ServerGroup or a ClientPool")
        wanted = None if names is None else set(names)
        self.tools: dict[str, JsonDict] = {}
        #: Provider name -> MCP name.
        self.names: dict[str, str] = {}
        for tool in listed:
            name = tool.get("name") if isinstance(tool, Mapping) else None
            if not isinstance(name, str) or (wanted is not None and name not in wanted):
                continue
            fitted = _unique(provider_name(name), set(self.names))
            self.names[fitted] = name
            self.tools[fitted] = dict(tool)
        if wanted is not None and wanted - set(self.names.values()):
            raise ValueError(f"no such tools: {', '.join(sorted(wanted - set(self.names.values())))}")

    def __repr__(self) -> str:
        return f"Tools({sorted(self.names.values())!r})"

    def __len__(self) -> int:
        return len(self.tools)

    def for_openai(self) -> list[JsonDict]:
        """The tools as chat completions function tools."""
        return [
            {"type": "function", "function": {"name": name, "description": tool.get("description") or "", "parameters": tool.get("inputSchema") or {"type": "object"}}}
            for name, tool in self.tools.items()
        ]

    def for_anthropic(self) -> list[JsonDict]:
        """The tools as the messages API's tools."""
        return [
            {"name": name, "description": tool.get("description") or "", "input_schema": tool.get("inputSchema") or {"type": "object"}}
            for name, tool in self.tools.items()
        ]

    def call(self, name: str, arguments: Optional[Mapping[str, Any]] = None, **call_options: Any) -> JsonDict:
        """Call the tool the model named ``name`` (its provider name) with ``arguments``; the MCP result.

        Raises:
            KeyError: no tool has that name (a name the model made up).
            ClientError: as ``call_tool``.
        """
        mcp = self.names[name]
        result: JsonDict = self.source.call_tool(mcp, dict(arguments or {}), **call_options)
        return result

    def run(self, name: str, arguments: Any, **call_options: Any) -> JsonDict:
        """:meth:`call` for a model: an unknown name, arguments that are not an object, or a failure become an error result."""
        if name not in self.names:
            return error_result(f"unknown tool {name!r}: it was not called")
        if not isinstance(arguments, Mapping):
            return error_result("the tool's arguments must be a JSON object")
        try:
            return self.call(name, arguments, **call_options)
        except ClientError as exc:
            return error_result(f"the tool failed: {exc.message}")


def error_result(text: str) -> JsonDict:
    """An MCP tool result that reports an error to the model."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _texts(result: Mapping[str, Any]) -> tuple[list[str], list[JsonDict]]:
    """A tool result's text (resources and ``structuredContent`` as text too) and its images."""
    texts: list[str] = []
    images: list[JsonDict] = []
    for block in result.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "image":
            images.append(dict(block))
        elif kind == "resource" and isinstance(block.get("resource"), Mapping):
            resource = block["resource"]
            texts.append(str(resource.get("text", f"[resource {resource.get('uri')}]")))
        elif kind == "resource_link":
            texts.append(f"[resource {block.get('uri')}]")
        else:
            texts.append(f"[{kind} content]")
    structured = result.get("structuredContent")
    if structured is not None and not texts:
        texts.append(json.dumps(structured))
    return texts, images


def openai_tool_message(call_id: str, result: Mapping[str, Any]) -> tuple[JsonDict, list[JsonDict]]:
    """The ``tool`` message for one result, and the image parts chat completions only take in a user message."""
    texts, images = _texts(result)
    text = "\n".join(texts)
    if result.get("isError") is True:
        text = f"Error: {text}"
    parts = [{"type": "image_url", "image_url": {"url": f"data:{i.get('mimeType')};base64,{i.get('data')}"}} for i in images]
    return {"role": "tool", "tool_call_id": call_id, "content": text}, parts


def anthropic_tool_result(use_id: str, result: Mapping[str, Any]) -> JsonDict:
    """The ``tool_result`` block for one result: text and images, ``is_error`` for an error."""
    texts, images = _texts(result)
    content: list[JsonDict] = [{"type": "text", "text": text} for text in texts]
    content += [{"type": "image", "source": {"type": "base64", "media_type": i.get("mimeType"), "data": i.get("data")}} for i in images]
    block: JsonDict = {"type": "tool_result", "tool_use_id": use_id, "content": content}
    if result.get("isError") is True:
        block["is_error"] = True
    return block
