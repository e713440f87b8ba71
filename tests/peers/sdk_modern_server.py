#!/usr/bin/env python3
"""2026-07-28 (stateless, MRTR) MCP test peer on the official SDK, stdio only.

Run with an interpreter that has ``mcp==2.3.0`` installed::

    python tests/peers/sdk_modern_server.py

The SDK's dual-era stdio loop is used: the client's first request decides the
era for the whole process.  A first request carrying the 2026-07-28 ``_meta``
envelope (``server/discover`` or any other method) opens the modern era; an
``initialize`` opens the handshake era, where only ``echo``,
``log_and_progress`` and ``slow`` work (every other tool answers ``isError``).

Modern era: a tool that needs input does not send a server->client request;
it answers ``tools/call`` with
``{"resultType": "input_required", "inputRequests": {KEY: {method, params}},
"requestState"?: "..."}`` and the client retries the same call (new id, same
name and arguments) with ``inputResponses`` (same keys) and the
``requestState`` echoed byte for byte.  The SDK seals every ``requestState``
(AES-256-GCM under a per-process key, bound to the tool name and a digest of
the arguments); an edited, foreign or mismatched one is refused with JSON-RPC
-32602 ``"Invalid or expired requestState"``, ``data`` ``{"reason":
"invalid_request_state"}``.

A tool that would ask for a kind of input the request did not declare in its
clientCapabilities answers JSON-RPC -32021 with ``data`` ``{"requiredCapabilities":
{...}}`` (e.g. ``{"elicitation": {"form": {}}}``), as the SDK's own resolvers do.

Tools (text results, JSON where noted; keys in quotes are inputRequests keys):

- ``echo(text)``: returns ``text``; no input.
- ``ask_form()``: "profile", form elicitation (``name`` string required,
  ``age`` integer default 30); JSON ``{"action","content"?}`` of the answer.
- ``ask_url(url="https://example.invalid/login")``: "login", URL elicitation
  (``mode`` "url", ``message``, ``url``; no ``elicitationId``); JSON
  ``{"action"}``.
- ``ask_sampling(prompt="ping")``: "llm", ``sampling/createMessage``
  (``maxTokens`` 40); JSON ``{"text","model"}``.
- ``ask_roots()``: "roots", ``roots/list``; JSON list of root URIs.
- ``ask_multi()``: one round with "form" (``colour`` string required),
  "llm" and "roots"; asks all three again until all three answers arrive;
  JSON ``{"form": {"action","content"?}, "llm": text, "roots": [uri, ...]}``.
- ``ask_rounds(n=3)``: ``n`` rounds, key "q<i>" (form ``answer`` string
  required); requestState carries the answers so far; JSON list of answers.
- ``ask_no_state()``: "confirm" (form ``ok`` boolean required) with no
  requestState; the retry must carry ``inputResponses`` and no requestState:
  ``"no-state-ok"``.  (A requestState the client invents never reaches the
  tool: the SDK refuses it with -32602 first.)
- ``state_only(k=2)``: ``k`` results carrying only a requestState (no
  inputRequests), then ``"state-only-ok after k polls"``.
- ``sealed()``: "ok" (form ``ok`` boolean required), sealed requestState;
  ``"sealed-ok"``; a tampered requestState gets -32602 (see above).
- ``log_and_progress(steps=3)``: per step one ``notifications/message``
  (level info, logger ``sdk-modern``, data ``"step i/N"``) when the request's
  ``_meta["io.modelcontextprotocol/logLevel"]`` admits info, and one
  ``notifications/progress`` (progress i, total N, message ``"step i/N"``)
  when it carried a ``progressToken``; returns ``"done N steps"``.
- ``slow(seconds=30)``: sleeps, returns ``"slept"``; ``notifications/cancelled``
  stops it and no response is sent.
- ``notify_changes(uri="file:///watched.txt")``: publishes tools, prompts and
  resources list-changed events plus a resource-updated event for ``uri`` to
  open ``subscriptions/listen`` streams; returns ``"published"``.
- ``task_input(work_ms=100)``: served only as a task of the
  ``io.modelcontextprotocol/tasks`` extension (hand-rolled here on the SDK's
  extension API; mcp 2.3.0 has no tasks support of its own).  Without the
  extension in the request's clientCapabilities: -32021 with
  ``requiredCapabilities.extensions``.  With it: ``{"resultType": "task",
  "taskId", "status": "working", "createdAt", "lastUpdatedAt", "ttlMs",
  "pollIntervalMs"}``; then ``tasks/get {taskId}`` reports ``working`` for
  ``work_ms``, then ``input_required`` with ``inputRequests`` {"first": form
  ``answer``}; ``tasks/update {taskId, inputResponses}`` (ack ``{}``) moves it
  on to ``working``, ``input_required`` {"second": ...}, and finally
  ``completed`` with ``result`` = a tool result whose text is the JSON list
  of the two answers (the action name for decline/cancel).
  ``tasks/cancel {taskId}`` (ack ``{}``) makes a live task ``cancelled``.
  Unknown taskId: -32602.
"""

from __future__ import annotations

import json
import time
import uuid
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NoReturn

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.server import require_client_extension
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field
from peer_cli import serve_sdk  # tests/peers: the script's own folder

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

LOGGER_NAME = "sdk-modern"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

PROFILE_PROPS: dict[str, Any] = {
    "name": {"type": "string", "title": "Name"},
    "age": {"type": "integer", "title": "Age", "default": 30},
}


def _as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _plain(value: Any) -> dict[str, Any]:
    """An input response as its wire dict (the SDK hands them over as models)."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dict(value) if isinstance(value, dict) else {}


def _require_modern(ctx: Context[Any, Any]) -> None:
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        _refuse(f"this tool needs the 2026-07-28 era; the connection is {ctx.protocol_version}")


def _refuse(message: str) -> NoReturn:
    raise ToolError(message)


def _require_capabilities(ctx: Context[Any, Any] | ServerRequestContext[Any, Any], *kinds: str) -> None:
    """Refuse with -32021 (as the SDK's own resolvers do) unless this request declared every kind asked for.

    kinds: "form", "url", "sampling", "roots".  A bare ``elicitation: {}`` counts as form support.
    """
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    missing: dict[str, Any] = {}
    for kind in kinds:
        if kind == "form" and (elicitation is None or (elicitation.form is None and elicitation.url is not None)):
            missing.setdefault("elicitation", {})["form"] = {}
        elif kind == "url" and (elicitation is None or elicitation.url is None):
            missing.setdefault("elicitation", {})["url"] = {}
        elif kind == "sampling" and (caps is None or caps.sampling is None):
            missing["sampling"] = {}
        elif kind == "roots" and (caps is None or caps.roots is None):
            missing["roots"] = {}
    if missing:
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"Client did not declare the capabilities this tool needs: {sorted(missing)}",
            data={"requiredCapabilities": missing},
        )


def _responses(ctx: Context[Any, Any]) -> dict[str, Any]:
    return dict(ctx.input_responses or {})


def _form(message: str, props: dict[str, Any], required: list[str]) -> types.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def _sampling(prompt: str) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=40))


def _input_required(requests: dict[str, Any] | None, state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=requests or None, request_state=state)


def _elicit_answer(value: Any) -> dict[str, Any]:
    plain = _plain(value)
    answer: dict[str, Any] = {"action": plain.get("action")}
    if plain.get("content") is not None:
        answer["content"] = plain["content"]
    return answer


def _sampled_text(value: Any) -> str | None:
    """The text of a sampling answer (its first text block when content is a list)."""
    content = _plain(value).get("content")
    blocks = content if isinstance(content, list) else [content]
    return next((b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"), None)


def _root_uris(value: Any) -> list[str]:
    return [str(root.get("uri")) for root in _plain(value).get("roots", [])]


# ---------------------------------------------------------------- tasks extension (hand-rolled)
# mcp 2.3.0 ships no tasks extension; it only provides the plumbing used here
# (Extension/MethodBinding, capability advertisement in server/discover, and
# pass-through of a non-core resultType such as "task").  The task is a lazy
# state machine advanced by the clock on each tasks/get, so no background work
# outlives a request.

TASK_TTL_MS = 600_000
TASK_POLL_MS = 50
TASK_QUESTIONS = ("first", "second")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Task:
    task_id: str
    work_seconds: float
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    phase_started: float = 0.0
    answers: dict[str, Any] = field(default_factory=dict)
    cancelled: bool = False

    def __post_init__(self) -> None:
        self.updated = self.phase_started = self.created

    def pending_key(self) -> str | None:
        return next((key for key in TASK_QUESTIONS if key not in self.answers), None)

    def status(self) -> str:
        if self.cancelled:
            return "cancelled"
        if time.time() - self.phase_started < self.work_seconds:
            return "working"
        return "input_required" if self.pending_key() is not None else "completed"

    def last_change(self) -> float:
        if self.cancelled:
            return self.updated
        work_done = self.phase_started + self.work_seconds
        return work_done if time.time() >= work_done else self.phase_started

    def wire(self, *, detailed: bool) -> dict[str, Any]:
        # A new task is always reported "working" (its first status); tasks/get then reports the live one.
        status = self.status() if detailed else "working"
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": status,
            "createdAt": _iso(self.created),
            "lastUpdatedAt": _iso(self.last_change() if detailed else self.created),
            "ttlMs": TASK_TTL_MS,
            "pollIntervalMs": TASK_POLL_MS,
        }
        if not detailed:
            return task
        key = self.pending_key()
        if status == "input_required" and key is not None:
            question = _form(
                f"Task question {key}", {"answer": {"type": "string", "title": "Answer"}}, ["answer"]
            ).model_dump(by_alias=True, exclude_none=True, mode="json")
            task["inputRequests"] = {key: question}
        elif status == "completed":
            text = _as_json([self.answers[key] for key in TASK_QUESTIONS])
            task["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
        return task


_TASKS: dict[str, _Task] = {}


class _TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class _TaskUpdateParams(_TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


def _find_task(ctx: ServerRequestContext[Any, Any], task_id: str) -> _Task:
    require_client_extension(ctx, TASKS_EXTENSION)
    task = _TASKS.get(task_id)
    if task is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown taskId: {task_id}")
    return task


async def _tasks_get(ctx: ServerRequestContext[Any, Any], params: _TaskIdParams) -> HandlerResult:
    return _find_task(ctx, params.task_id).wire(detailed=True)


async def _tasks_update(ctx: ServerRequestContext[Any, Any], params: _TaskUpdateParams) -> HandlerResult:
    task = _find_task(ctx, params.task_id)
    if task.status() == "input_required":
        key = task.pending_key()
        # Unknown and already-answered keys are ignored; a malformed answer for the asked key too.
        answer = params.input_responses.get(key) if key is not None else None
        if key is not None and isinstance(answer, dict) and isinstance(answer.get("action"), str):
            content = answer.get("content")
            content = content if isinstance(content, dict) else {}
            task.answers[key] = content.get("answer") if answer["action"] == "accept" else answer["action"]
            task.phase_started = task.updated = time.time()
    return {}


async def _tasks_cancel(ctx: ServerRequestContext[Any, Any], params: _TaskIdParams) -> HandlerResult:
    task = _find_task(ctx, params.task_id)
    if task.status() not in ("completed", "cancelled"):
        task.cancelled = True
        task.updated = time.time()
    return {}


class _TasksExtension(Extension):
    identifier = TASKS_EXTENSION

    def methods(self) -> list[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", _TaskIdParams, _tasks_get, protocol_versions=modern),
            MethodBinding("tasks/update", _TaskUpdateParams, _tasks_update, protocol_versions=modern),
            MethodBinding("tasks/cancel", _TaskIdParams, _tasks_cancel, protocol_versions=modern),
        ]

    async def intercept_tool_call(
        self, params: types.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if params.name != "task_input" or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        # This tool can only be served as a task: -32021 unless the request declared the extension.
        require_client_extension(ctx, TASKS_EXTENSION)
        _require_capabilities(ctx, "form")
        work_ms = (params.arguments or {}).get("work_ms", 100)
        work_seconds = max(0.0, float(work_ms)) / 1000 if isinstance(work_ms, int | float) else 0.1
        task = _Task(task_id=f"task-{uuid.uuid4().hex[:12]}", work_seconds=work_seconds)
        _TASKS[task.task_id] = task
        return {"resultType": "task", **task.wire(detailed=False)}


server: MCPServer[Any] = MCPServer(
    name="sdk-modern-peer", version="1.0.0", log_level="WARNING", extensions=[_TasksExtension()]
)


@server.tool()
async def echo(text: str) -> str:
    """Return text unchanged (no input needed)."""
    return text


@server.tool()
async def ask_form(ctx: Context[Any, Any]) -> str | types.InputRequiredResult:
    """One round, key "profile": form elicitation {name, age}."""
    _require_modern(ctx)
    got = _responses(ctx).get("profile")
    if got is None:
        _require_capabilities(ctx, "form")
        return _input_required({"profile": _form("Please fill in your profile", PROFILE_PROPS, ["name"])}, "profile")
    return _as_json(_elicit_answer(got))


@server.tool()
async def ask_url(ctx: Context[Any, Any], url: str = "https://example.invalid/login") -> str | types.InputRequiredResult:
    """One round, key "login": URL-mode elicitation (no elicitationId in 2026-07-28)."""
    _require_modern(ctx)
    got = _responses(ctx).get("login")
    if got is None:
        _require_capabilities(ctx, "url")
        request = types.ElicitRequest(params=types.ElicitRequestURLParams(message="Sign in to the test peer", url=url))
        return _input_required({"login": request}, "login")
    return _as_json({"action": _plain(got).get("action")})


@server.tool()
async def ask_sampling(ctx: Context[Any, Any], prompt: str = "ping") -> str | types.InputRequiredResult:
    """One round, key "llm": sampling/createMessage."""
    _require_modern(ctx)
    got = _responses(ctx).get("llm")
    if got is None:
        _require_capabilities(ctx, "sampling")
        return _input_required({"llm": _sampling(prompt)}, "llm")
    return _as_json({"text": _sampled_text(got), "model": _plain(got).get("model")})


@server.tool()
async def ask_roots(ctx: Context[Any, Any]) -> str | types.InputRequiredResult:
    """One round, key "roots": roots/list."""
    _require_modern(ctx)
    got = _responses(ctx).get("roots")
    if got is None:
        _require_capabilities(ctx, "roots")
        return _input_required({"roots": types.ListRootsRequest()}, "roots")
    return _as_json(_root_uris(got))


@server.tool()
async def ask_multi(ctx: Context[Any, Any]) -> str | types.InputRequiredResult:
    """One round with three keys: "form", "llm", "roots"."""
    _require_modern(ctx)
    got = _responses(ctx)
    if not all(key in got for key in ("form", "llm", "roots")):
        _require_capabilities(ctx, "form", "sampling", "roots")
        return _input_required(
            {
                "form": _form("Pick a colour", {"colour": {"type": "string", "title": "Colour"}}, ["colour"]),
                "llm": _sampling("Name a colour"),
                "roots": types.ListRootsRequest(),
            },
            "multi",
        )
    return _as_json(
        {"form": _elicit_answer(got["form"]), "llm": _sampled_text(got["llm"]), "roots": _root_uris(got["roots"])}
    )


@server.tool()
async def ask_rounds(ctx: Context[Any, Any], n: int = 3) -> str | types.InputRequiredResult:
    """n rounds, key "q<i>"; the (sealed) requestState carries the answers so far."""
    _require_modern(ctx)
    answers: list[Any] = json.loads(ctx.request_state) if ctx.request_state else []
    got = _responses(ctx).get(f"q{len(answers) + 1}")
    if got is not None and len(answers) < n:
        answers.append((_plain(got).get("content") or {}).get("answer"))
    if len(answers) >= n:
        return _as_json(answers)
    _require_capabilities(ctx, "form")
    index = len(answers) + 1
    question = _form(f"Question {index} of {n}", {"answer": {"type": "string", "title": "Answer"}}, ["answer"])
    return _input_required({f"q{index}": question}, json.dumps(answers))


@server.tool()
async def ask_no_state(ctx: Context[Any, Any]) -> str | types.InputRequiredResult:
    """Key "confirm" with no requestState; the retry must not carry one."""
    _require_modern(ctx)
    got = _responses(ctx).get("confirm")
    if got is None:
        _require_capabilities(ctx, "form")
        return _input_required({"confirm": _form("Confirm?", {"ok": {"type": "boolean", "title": "OK"}}, ["ok"])})
    if ctx.request_state is not None:
        _refuse("the retry carried a requestState this server never issued")
    return "no-state-ok"


@server.tool()
async def state_only(ctx: Context[Any, Any], k: int = 2) -> str | types.InputRequiredResult:
    """k results carrying only a requestState (poll again), then complete."""
    _require_modern(ctx)
    polls = int(ctx.request_state) if ctx.request_state else 0
    if polls < k:
        return _input_required(None, str(polls + 1))
    return f"state-only-ok after {polls} polls"


@server.tool()
async def sealed(ctx: Context[Any, Any]) -> str | types.InputRequiredResult:
    """Key "ok"; the requestState is sealed by the SDK, so an edited one is refused (-32602)."""
    _require_modern(ctx)
    got = _responses(ctx).get("ok")
    if got is None or ctx.request_state != "sealed-round-1":
        _require_capabilities(ctx, "form")
        return _input_required({"ok": _form("OK?", {"ok": {"type": "boolean", "title": "OK"}}, ["ok"])}, "sealed-round-1")
    return "sealed-ok"


@server.tool()
async def log_and_progress(ctx: Context[Any, Any], steps: int = 3) -> str:
    """Per step: a log notification (if the request opted in) and a progress one (if it sent a token)."""
    for step in range(1, steps + 1):
        # The SDK drops this unless the request's _meta logLevel admits "info" (2026-07-28).
        await ctx.log("info", f"step {step}/{steps}", logger_name=LOGGER_NAME)
        # A no-op unless the request carried params._meta.progressToken.
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
        await anyio.sleep(0.02)
    return f"done {steps} steps"


@server.tool()
async def slow(seconds: float = 30) -> str:
    """Sleep, then answer; notifications/cancelled stops it."""
    await anyio.sleep(seconds)
    return "slept"


@server.tool()
async def notify_changes(ctx: Context[Any, Any], uri: str = "file:///watched.txt") -> str:
    """Publish list-changed and resource-updated events to open subscriptions/listen streams."""
    await ctx.notify_tools_changed()
    await ctx.notify_prompts_changed()
    await ctx.notify_resources_changed()
    await ctx.notify_resource_updated(uri)
    return "published"


@server.tool()
async def task_input(work_ms: int = 100) -> str:
    """Runs as a task (tasks extension) that needs input twice; only reached when not served as a task."""
    _refuse(f"task_input runs only as a task: declare the {TASKS_EXTENSION} extension on a 2026-07-28 request")


def main() -> None:
    serve_sdk(server, "2026-07-28 MCP test peer on the official SDK (stdio, or HTTP).")


if __name__ == "__main__":
    main()
