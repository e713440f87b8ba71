"""What the fake serves: its tools, resources, prompts and overrides, and the lists and reads of them.

The same answers serve both eras (the modern engine adds
``resultType``). Import the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import base64
import threading
from dataclasses import dataclass
from typing import Callable, Optional, Union

from .call import ToolFunction
from .shared import JsonDict

#: What a prompt is made of: a text (one user message) or a list of ``PromptMessage`` dicts.
PromptMessages = Union[str, list[JsonDict]]
#: A prompt's messages, or a function of the ``prompts/get`` arguments returning them.
PromptSource = Union[PromptMessages, Callable[[dict[str, str]], PromptMessages]]
#: An answer of your own to a request: ``answer(params)`` returns the result, or None for silence.
RequestAnswer = Callable[[JsonDict], Optional[JsonDict]]
#: A reply, as (result, None) or (None, JSON-RPC error).
Reply = tuple[Optional[JsonDict], Optional[JsonDict]]
#: Completion values: a list (those starting with what was typed are sent), or
#: ``values(typed, context_arguments)`` returning the list to send.
CompletionSource = Union[list[str], Callable[[str, dict[str, str]], list[str]]]


@dataclass
class Tool:
    name: str
    fn: ToolFunction
    task: bool
    description: Optional[str]
    input_schema: JsonDict
    output_schema: Optional[JsonDict] = None


@dataclass
class Resource:
    entry: JsonDict  # the resources/list entry
    contents: JsonDict  # the one resources/read contents entry


@dataclass
class Prompt:
    entry: JsonDict  # the prompts/list entry
    source: PromptSource


class Registry:
    """The fake's tools, resources, prompts and overrides, guarded by the fake's one lock.

    ``declare``, where a method takes it, is the capabilities dict to add
    the served feature to (None: add it nowhere).
    """

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._prompts: dict[str, Prompt] = {}
        self._overrides: dict[str, RequestAnswer] = {}
        self._completions: dict[tuple[str, str, str], CompletionSource] = {}

    # ------------------------------------------------------------------ registering

    def add_tool(self, tool: Tool) -> None:
        with self._lock:
            self._tools[tool.name] = tool

    def set_override(self, method: str, answer: Optional[RequestAnswer]) -> None:
        with self._lock:
            if answer is None:
                self._overrides.pop(method, None)
            else:
                self._overrides[method] = answer

    def add_resource(
        self,
        uri: str,
        text: Optional[str],
        blob: Optional[bytes],
        name: Optional[str],
        mime_type: Optional[str],
        description: Optional[str],
        declare: Optional[JsonDict],
    ) -> None:
        if (text is None) == (blob is None):
            raise ValueError("give a resource either text or blob")
        entry: JsonDict = {"uri": uri, "name": name or uri.rstrip("/").rsplit("/", 1)[-1] or uri}
        contents: JsonDict = {"uri": uri}
        if mime_type is not None:
            entry["mimeType"] = mime_type
            contents["mimeType"] = mime_type
        if description is not None:
            entry["description"] = description
        if text is not None:
            contents["text"] = text
        else:
            assert blob is not None
            contents["blob"] = base64.b64encode(blob).decode("ascii")
        with self._lock:
            self._resources[uri] = Resource(entry, contents)
            if declare is not None:
                declare.setdefault("resources", {})

    def add_prompt(
        self,
        name: str,
        messages: PromptSource,
        description: Optional[str],
        arguments: Optional[list[JsonDict]],
        declare: Optional[JsonDict],
    ) -> None:
        entry: JsonDict = {"name": name}
        if description is not None:
            entry["description"] = description
        if arguments is not None:
            entry["arguments"] = [dict(a) for a in arguments]
        with self._lock:
            self._prompts[name] = Prompt(entry, messages)
            if declare is not None:
                declare.setdefault("prompts", {})

    def add_completion(self, kind: str, target: str, argument: str, values: CompletionSource, declare: Optional[JsonDict]) -> None:
        with self._lock:
            self._completions[(kind, target, argument)] = values
            if declare is not None:
                declare.setdefault("completions", {})

    # ------------------------------------------------------------------ looking up

    def tool_names(self) -> list[str]:
        return sorted(self._tools)

    def has_task_tools(self) -> bool:
        return any(t.task for t in self._tools.values())

    def override_for(self, method: str) -> Optional[RequestAnswer]:
        with self._lock:
            return self._overrides.get(method)

    def find_tool(self, params: JsonDict) -> tuple[Optional[Tool], JsonDict]:
        """The tool a ``tools/call`` names, or None and the error to answer with."""
        name = params.get("name")
        with self._lock:
            tool = self._tools.get(name) if isinstance(name, str) else None
        return tool, {"code": -32602, "message": f"Unknown tool: {name!r}"}

    # ------------------------------------------------------------------ answering

    def answer(self, method: str, params: JsonDict) -> Optional[Reply]:
        """The reply to a list, a ``resources/read`` or a ``prompts/get`` (None: not one of those)."""
        if method == "tools/list":
            return {"tools": self._tool_list()}, None
        if method == "resources/list":
            with self._lock:
                return {"resources": [dict(r.entry) for r in self._resources.values()]}, None
        if method == "resources/templates/list":
            return {"resourceTemplates": []}, None
        if method == "prompts/list":
            with self._lock:
                return {"prompts": [dict(p.entry) for p in self._prompts.values()]}, None
        if method == "resources/read":
            return self._read_resource(params)
        if method == "prompts/get":
            return self._get_prompt(params)
        if method == "completion/complete":
            return self._complete(params)
        return None

    def _complete(self, params: JsonDict) -> Reply:
        ref = params.get("ref") if isinstance(params.get("ref"), dict) else {}
        argument = params.get("argument") if isinstance(params.get("argument"), dict) else {}
        assert isinstance(ref, dict) and isinstance(argument, dict)
        kind = ref.get("type")
        target = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
        name, typed = argument.get("name"), argument.get("value")
        if not isinstance(target, str) or not isinstance(name, str) or not isinstance(typed, str):
            return None, {"code": -32602, "message": "completion/complete needs a ref and an argument name and value"}
        with self._lock:
            source = self._completions.get((str(kind), target, name))
        if source is None:
            return {"completion": {"values": [], "total": 0, "hasMore": False}}, None
        context = params.get("context")
        raw = context.get("arguments") if isinstance(context, dict) else None
        chosen = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        found = source(typed, chosen) if callable(source) else [v for v in source if v.startswith(typed)]
        return {"completion": {"values": found[:100], "total": len(found), "hasMore": len(found) > 100}}, None

    def _tool_list(self) -> list[JsonDict]:
        with self._lock:
            tools = list(self._tools.values())
        out = []
        for tool in tools:
            entry: JsonDict = {"name": tool.name, "inputSchema": tool.input_schema}
            if tool.description is not None:
                entry["description"] = tool.description
            if tool.output_schema is not None:
                entry["outputSchema"] = tool.output_schema
            out.append(entry)
        return out

    def _read_resource(self, params: JsonDict) -> Reply:
        uri = params.get("uri")
        with self._lock:
            resource = self._resources.get(uri) if isinstance(uri, str) else None
        if resource is None:
            return None, {"code": -32002, "message": "Resource not found", "data": {"uri": uri}}
        return {"contents": [dict(resource.contents)]}, None

    def _get_prompt(self, params: JsonDict) -> Reply:
        name = params.get("name")
        with self._lock:
            prompt = self._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            return None, {"code": -32602, "message": f"Unknown prompt: {name!r}"}
        raw = params.get("arguments")
        arguments = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        for spec in prompt.entry.get("arguments", []):
            if spec.get("required") and spec.get("name") not in arguments:
                return None, {"code": -32602, "message": f"Missing required argument: {spec.get('name')!r}"}
        source = prompt.source
        made = source(arguments) if callable(source) else source
        if isinstance(made, str):
            messages: list[JsonDict] = [{"role": "user", "content": {"type": "text", "text": made}}]
        else:
            messages = [dict(m) for m in made]
        result: JsonDict = {"messages": messages}
        if "description" in prompt.entry:
            result["description"] = prompt.entry["description"]
        return result, None
