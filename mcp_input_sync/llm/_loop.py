"""The blocking tool loop: the host's model, a server's tools, until the model answers or the steps run out."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from ._common import log
from ._tools import JsonDict, Tools, anthropic_tool_result, error_result, openai_tool_message

__all__ = ["ChatResult", "Step", "ToolCall", "chat_anthropic", "chat_openai"]

#: Default ``max_tool_calls``: the tool calls one step runs; the model's others go back to it refused, never to a server.
MAX_TOOL_CALLS = 16
#: The most threads one step's tool calls share.
TOOL_THREADS = 4
#: Default ``step_timeout``: real seconds one step's tool calls may take together (the client's default ``max_total_timeout``).
STEP_TIMEOUT = 600.0
#: Real seconds the calls get to end once cancelled (they notice within 50 ms) before the loop goes on without them.
_GRACE = 5.0

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


def _checked(max_tool_calls: int, step_timeout: float) -> None:
    if isinstance(max_tool_calls, bool) or not isinstance(max_tool_calls, int) or max_tool_calls < 1:
        raise ValueError("max_tool_calls must be a positive int")
    if isinstance(step_timeout, bool) or not isinstance(step_timeout, (int, float)) or not 0 < step_timeout < float("inf"):
        raise ValueError("step_timeout must be a positive number of seconds")


def _run_all(tools: Tools, calls: list[ToolCall], call_options: Mapping[str, Any], max_calls: int, step_timeout: float) -> None:
    """Run a step's tool calls: the first ``max_calls`` on at most :data:`TOOL_THREADS` threads, the others refused.

    A model's answer may ask for any number of calls, and each is a request
    to the user's server: the ones over the cap get an error result and are
    never sent. Each call is bounded by its own timeouts (``call_options``)
    and the step by ``step_timeout``: then the running calls are cancelled
    (through the ``cancel`` event every call gets, which also follows the
    caller's own ``cancel``) and the ones not started are not sent. Every
    thread is joined, within a bound, before this returns (or raises, on Ctrl-C).
    """
    for call in calls[max_calls:]:
        call.result = error_result(f"not called: the model asked for {len(calls)} tool calls in one step, and the host runs at most {max_calls}")
    if len(calls) > max_calls:
        log.warning("mcp_input_sync: the model asked for %d tool calls in one step; %d refused (max_tool_calls=%d)", len(calls), len(calls) - max_calls, max_calls)
    todo = calls[:max_calls]
    caller_cancel = call_options.get("cancel")
    stop = threading.Event()  # set: nothing more starts, and the running calls are cancelled
    options = {**call_options, "cancel": stop}
    lock = threading.Lock()
    waiting = list(reversed(range(len(todo))))  # popped from the end: in the model's order
    results: dict[int, JsonDict] = {}  # by position in todo
    finished = threading.Event()

    def work() -> None:
        while True:
            with lock:
                if not waiting:
                    return
                index = waiting.pop()
            call = todo[index]
            if stop.is_set() or (caller_cancel is not None and caller_cancel.is_set()):
                result = error_result("not called: the step's tool calls were cancelled or ran out of time")
            else:
                try:
                    result = tools.run(call.name, call.arguments, **options)
                except Exception as exc:  # noqa: BLE001 - a tool's failure goes back to the model, not up the loop
                    result = error_result(f"the tool failed ({type(exc).__name__})")
            with lock:
                results[index] = result
                if len(results) == len(todo):
                    finished.set()

    threads = [threading.Thread(target=work, name=f"mcp-input-sync-llm-tool-{next(_threads)}", daemon=True) for _ in range(min(len(todo), TOOL_THREADS))]
    try:
        for thread in threads:
            thread.start()
        # in slices, as the client waits for a call: Ctrl-C (which does not wake a wait) and the
        # caller's cancel (not ours to set, so watched every 50 ms) are seen between them
        deadline = time.monotonic() + step_timeout
        piece = 0.5 if caller_cancel is None else 0.05
        while not finished.wait(min(piece, max(0.0, deadline - time.monotonic()))):
            if (caller_cancel is not None and caller_cancel.is_set()) or time.monotonic() >= deadline:
                break
    finally:
        stop.set()
        end = time.monotonic() + _GRACE
        for thread in threads:
            if thread.ident is not None:
                thread.join(max(0.0, end - time.monotonic()))
        if any(thread.is_alive() for thread in threads):
            log.warning("mcp_input_sync: a tool call did not end within %g s of its cancellation; the loop goes on without it", _GRACE)
    with lock:
        for index, call in enumerate(todo):  # a call still running past the grace: its late result is not read
            call.result = results[index] if index in results else error_result("the tool did not finish within the step's time (step_timeout)")


def _dump(value: Any) -> Any:
    return value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value


def chat_openai(
    client: Any,
    model: str,
    messages: Sequence[JsonDict],
    tools: Tools,
    *,
    max_steps: int = 8,
    max_tool_calls: int = MAX_TOOL_CALLS,
    step_timeout: float = STEP_TIMEOUT,
    call_options: Optional[Mapping[str, Any]] = None,
    **kwargs: Any,
) -> ChatResult:
    """Chat completions with a server's tools until the model answers without calling one, or ``max_steps``.

    The tools a step asks for run at once, on at most :data:`TOOL_THREADS`
    threads, each through the MCP client with ``call_options`` (``assigns``,
    ``timeout``, ``cancel``...), so a server's questions during a call reach
    your ``InputHandler``. At most ``max_tool_calls`` (default 16) run per
    step: the model's others go back to it as errors, never to the server.
    A step's calls together get ``step_timeout`` real seconds (default 600):
    then the running ones are cancelled, and the others not sent. A failing
    tool goes back to the model as an error; a tool it made up is answered
    as unknown and never called. ``kwargs`` go to every request.

    Raises:
        ValueError: ``max_tool_calls`` or ``step_timeout`` is not positive.
    """
    _checked(max_tool_calls, step_timeout)
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
        _run_all(tools, calls, call_options or {}, max_tool_calls, step_timeout)
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
    max_tool_calls: int = MAX_TOOL_CALLS,
    step_timeout: float = STEP_TIMEOUT,
    call_options: Optional[Mapping[str, Any]] = None,
    **kwargs: Any,
) -> ChatResult:
    """The messages API with a server's tools until the model answers without calling one, or ``max_steps``.

    As :func:`chat_openai`; ``max_tokens`` is the API's own required bound per request.
    """
    _checked(max_tool_calls, step_timeout)
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
        _run_all(tools, calls, call_options or {}, max_tool_calls, step_timeout)
        transcript.append({"role": "user", "content": [anthropic_tool_result(call.id, call.result) for call in calls]})
    return ChatResult("", transcript, steps, False)


Chat = Callable[..., ChatResult]
