"""The blocking tool loop: the host's model, a server's tools, until the model answers or the steps run out."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from ._tools import JsonDict, Tools, anthropic_tool_result, error_result, openai_tool_message

__all__ = ["ChatResult", "Step", "ToolCall", "chat_anthropic", "chat_openai"]

_threads = itertools.count(1)


class ToolCall:
    """One tool the model asked for in a step: its provider ``name``, the MCP ``tool``, ``arguments`` and ``result``."""

    __slots__ = ("id", "name", "tool", "arguments", "result")

    def __init__(self, call_id: str, name: str, tool: Optional[str], arguments: Any) -> None:
        self.id = call_id
        self.name = name
        #: The MCP tool's name; None for a name the model made up (not called).
        self.tool = tool
        self.arguments = arguments
        self.result: JsonDict = {}

    def __repr__(self) -> str:
        return f"ToolCall(name={self.name!r}, tool={self.tool!r}, error={self.result.get('isError') is True})"


class Step:
    """One request to the model: the ``tool_calls`` it asked for and the ``usage`` the provider reported."""

    __slots__ = ("tool_calls", "usage")

    def __init__(self, tool_calls: list[ToolCall], usage: JsonDict) -> None:
        self.tool_calls = tool_calls
        self.usage = usage

    def __repr__(self) -> str:
        return f"Step(tool_calls={self.tool_calls!r}, usage={self.usage!r})"


class ChatResult:
    """What a tool loop ended with.

    ``text`` is the model's final answer ("" when the steps ran out);
    ``transcript`` the whole conversation in the provider's own message
    shape (pass it back with the next user message to go on); ``steps``
    each request's tool calls and usage; ``finished`` False when
    ``max_steps`` ran out before a final answer.
    """

    __slots__ = ("text", "transcript", "steps", "finished")

    def __init__(self, text: str, transcript: list[JsonDict], steps: list[Step], finished: bool) -> None:
        self.text = text
        self.transcript = transcript
        self.steps = steps
        self.finished = finished

    def __repr__(self) -> str:
        return f"ChatResult(text={self.text[:60]!r}, steps={len(self.steps)}, finished={self.finished})"


def _run_all(tools: Tools, calls: list[ToolCall], call_options: Mapping[str, Any]) -> None:
    """Run a step's tool calls, each on a thread of its own when there are several (each bounded by its own timeout)."""

    def run(call: ToolCall) -> None:
        try:
            call.result = tools.run(call.name, call.arguments, **call_options)
        except Exception as exc:  # noqa: BLE001 - a tool's failure goes back to the model, not up the loop
            call.result = error_result(f"the tool failed ({type(exc).__name__})")

    if len(calls) == 1:
        run(calls[0])
        return
    threads = [threading.Thread(target=run, args=(call,), name=f"mcp-input-sync-llm-tool-{next(_threads)}", daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _dump(value: Any) -> Any:
    return value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value


def chat_openai(
    client: Any,
    model: str,
    messages: Sequence[JsonDict],
    tools: Tools,
    *,
    max_steps: int = 8,
    call_options: Optional[Mapping[str, Any]] = None,
    **kwargs: Any,
) -> ChatResult:
    """Chat completions with a server's tools until the model answers without calling one, or ``max_steps``.

    The tools a step asks for run at once (on threads when several), each
    through the MCP client with ``call_options`` (``assigns``, ``timeout``...),
    so a server's questions during a call reach your ``InputHandler``. A
    failing tool goes back to the model as an error; a tool it made up is
    answered as unknown and never called. ``kwargs`` go to every request.
    """
    transcript = [dict(m) for m in messages]
    steps: list[Step] = []
    definitions = tools.for_openai()
    for _ in range(max(1, max_steps)):
        answer = _dump(client.chat.completions.create(model=model, messages=transcript, tools=definitions, **kwargs))
        message = answer["choices"][0]["message"]
        assistant: JsonDict = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        transcript.append(assistant)
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments: Any = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = None
            name = str(function.get("name"))
            calls.append(ToolCall(str(call.get("id")), name, tools.names.get(name), arguments))
        steps.append(Step(calls, dict(answer.get("usage") or {})))
        if not calls:
            return ChatResult(str(message.get("content") or ""), transcript, steps, True)
        _run_all(tools, calls, call_options or {})
        images: list[JsonDict] = []
        for call in calls:
            tool_message, parts = openai_tool_message(call.id, call.result)
            transcript.append(tool_message)
            images += parts
        if images:  # chat completions take images in a user message only
            transcript.append({"role": "user", "content": [{"type": "text", "text": "Images the tools returned:"}, *images]})
    return ChatResult("", transcript, steps, False)


def chat_anthropic(
    client: Any,
    model: str,
    messages: Sequence[JsonDict],
    tools: Tools,
    *,
    max_tokens: int,
    max_steps: int = 8,
    call_options: Optional[Mapping[str, Any]] = None,
    **kwargs: Any,
) -> ChatResult:
    """The messages API with a server's tools until the model answers without calling one, or ``max_steps``.

    As :func:`chat_openai`; ``max_tokens`` is the API's own required bound per request.
    """
    transcript = [dict(m) for m in messages]
    steps: list[Step] = []
    definitions = tools.for_anthropic()
    for _ in range(max(1, max_steps)):
        answer = _dump(client.messages.create(model=model, max_tokens=max_tokens, messages=transcript, tools=definitions, **kwargs))
        blocks = [b for b in answer.get("content") or [] if isinstance(b, dict)]
        transcript.append({"role": "assistant", "content": blocks})
        calls = [ToolCall(str(b.get("id")), str(b.get("name")), tools.names.get(str(b.get("name"))), b.get("input")) for b in blocks if b.get("type") == "tool_use"]
        steps.append(Step(calls, dict(answer.get("usage") or {})))
        if not calls:
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            return ChatResult(text, transcript, steps, True)
        _run_all(tools, calls, call_options or {})
        transcript.append({"role": "user", "content": [anthropic_tool_result(call.id, call.result) for call in calls]})
    return ChatResult("", transcript, steps, False)


Chat = Callable[..., ChatResult]
