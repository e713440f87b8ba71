#!/usr/bin/env python3
"""Handshake-era MCP test peer (2025-11-25 / 2025-06-18) on the official SDK, stdio only.

Run with an interpreter that has ``mcp==2.3.0`` installed::

    python tests/peers/sdk_legacy_server.py                  # refuses 2026-07-28 envelopes
    python tests/peers/sdk_legacy_server.py --allow-modern   # SDK's own dual-era stdio loop

By default the SDK's handshake-only stdio loop is used, so a client must open
with ``initialize``; a request carrying the 2026-07-28 ``_meta`` envelope is
answered with JSON-RPC -32600.

Every server->client request below is sent in the middle of a ``tools/call``
and tied to it with ``related_request_id``.  Tools (text results, JSON where
noted):

- ``echo(text)``: returns ``text``.
- ``sample(prompt="hello", max_tokens=50)``: one ``sampling/createMessage``;
  JSON ``{"role","model","stopReason","text"}`` of the answer.
- ``elicit_form(message=...)``: one form ``elicitation/create`` (schema
  ``name`` string required, ``age`` integer default 30, ``subscribe`` boolean
  default true, ``color`` enum red/green/blue default green); JSON
  ``{"action","content"?}``.
- ``roots()``: one ``roots/list``; JSON list of ``{"uri","name"}``.
- ``chain(prompt="summarise")``: sampling, form elicitation ``{confirm}``,
  roots/list, in sequence; JSON
  ``{"sample_text","elicit_action","elicit_content","roots"}``.
- ``parallel_elicit(n=2)``: ``n`` concurrent form elicitations; JSON list of
  answers in request order.
- ``log_and_progress(steps=3)``: per step one ``notifications/message``
  (info, logger ``sdk-peer``, data ``"step i/N"``) and, when the call carried
  a progressToken, one ``notifications/progress``; returns ``"done N steps"``.
- ``slow(seconds=30)``: sleeps, returns ``"slept"``; cancellable with
  ``notifications/cancelled``.
- ``die()``: the process exits with status 3 mid-call, never answering.
- ``elicit_then_die()``: sends one form elicitation, exits with status 3 as
  soon as that request has been flushed to stdout.
- ``url_required(url=...)``: JSON-RPC error -32042 whose
  ``data.elicitations`` holds one URL elicitation, ``elicitationId`` "req-1".
- ``ask_server_ping()``: sends ``ping`` to the client, returns ``"pong"``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, UrlElicitationRequiredError
from mcp.shared.message import ServerMessageMetadata

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

EXIT_STATUS = 3
LOGGER_NAME = "sdk-peer"

server: MCPServer[Any] = MCPServer(name="sdk-legacy-peer", version="1.0.0", log_level="WARNING")

PROFILE_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "title": "Age", "default": 30},
        "subscribe": {"type": "boolean", "title": "Subscribe", "default": True},
        "color": {"type": "string", "title": "Color", "enum": ["red", "green", "blue"], "default": "green"},
    },
    "required": ["name"],
}
CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Confirm"}},
    "required": ["confirm"],
}
ANSWER_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "title": "Answer"}},
    "required": ["answer"],
}

# Set by elicit_then_die(): the stdout writer exits the process right after it
# has flushed the next elicitation/create request.
_exit_after_elicitation_flushed = False


def _as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _call_id(ctx: Context[Any, Any]) -> types.RequestId:
    """The JSON-RPC id of the tools/call being served (kept with its wire type)."""
    request_id = ctx.request_context.request_id
    assert request_id is not None
    return request_id


def _session(ctx: Context[Any, Any]) -> ServerSession:
    session: ServerSession = ctx.session
    return session


def _answer(result: types.ElicitResult) -> dict[str, Any]:
    answer: dict[str, Any] = {"action": result.action}
    if result.content is not None:
        answer["content"] = result.content
    return answer


async def _ask_form(ctx: Context[Any, Any], message: str, schema: dict[str, Any]) -> types.ElicitResult:
    return await _session(ctx).elicit_form(message, schema, related_request_id=_call_id(ctx))


async def _ask_sampling(ctx: Context[Any, Any], prompt: str, max_tokens: int) -> types.CreateMessageResult:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return await _session(ctx).create_message(
        [message],
        max_tokens=max_tokens,
        system_prompt="You are the sdk-legacy-peer test server.",
        related_request_id=_call_id(ctx),
    )


def _sampled_text(result: types.CreateMessageResult) -> str | None:
    return result.content.text if isinstance(result.content, types.TextContent) else None


async def _ask_roots(ctx: Context[Any, Any]) -> list[dict[str, Any]]:
    result = await _session(ctx).send_request(
        types.ListRootsRequest(),
        types.ListRootsResult,
        metadata=ServerMessageMetadata(related_request_id=_call_id(ctx)),
    )
    return [{"uri": str(root.uri), "name": root.name} for root in result.roots]


@server.tool()
async def echo(text: str) -> str:
    """Return text unchanged."""
    return text


@server.tool()
async def sample(ctx: Context[Any, Any], prompt: str = "hello", max_tokens: int = 50) -> str:
    """Ask the client for one sampling/createMessage and report its answer."""
    result = await _ask_sampling(ctx, prompt, max_tokens)
    return _as_json(
        {"role": result.role, "model": result.model, "stopReason": result.stop_reason, "text": _sampled_text(result)}
    )


@server.tool()
async def elicit_form(ctx: Context[Any, Any], message: str = "Please fill in your profile") -> str:
    """Ask the client for one form elicitation and report its answer."""
    return _as_json(_answer(await _ask_form(ctx, message, PROFILE_FORM)))


@server.tool()
async def roots(ctx: Context[Any, Any]) -> str:
    """Ask the client for roots/list and report the roots."""
    return _as_json(await _ask_roots(ctx))


@server.tool()
async def chain(ctx: Context[Any, Any], prompt: str = "summarise") -> str:
    """Sampling, then a confirm form, then roots/list, one after the other."""
    sampled = await _ask_sampling(ctx, prompt, 30)
    confirmed = await _ask_form(ctx, "Confirm the sampled text?", CONFIRM_FORM)
    listed = await _ask_roots(ctx)
    return _as_json(
        {
            "sample_text": _sampled_text(sampled),
            "elicit_action": confirmed.action,
            "elicit_content": confirmed.content,
            "roots": listed,
        }
    )


@server.tool()
async def parallel_elicit(ctx: Context[Any, Any], n: int = 2) -> str:
    """Send n form elicitations at once; report the answers (or error codes) in request order.

    An error answer to one question is recorded, not raised, so the other
    questions are still asked (a task group would cancel them).
    """
    answers: list[dict[str, Any] | None] = [None] * n

    async def ask(index: int) -> None:
        try:
            answers[index] = _answer(await _ask_form(ctx, f"Question {index + 1} of {n}", ANSWER_FORM))
        except MCPError as exc:
            answers[index] = {"error": exc.error.code}

    async with anyio.create_task_group() as group:
        for index in range(n):
            group.start_soon(ask, index)
    return _as_json(answers)


@server.tool()
async def log_and_progress(ctx: Context[Any, Any], steps: int = 3) -> str:
    """Per step: one log notification, and one progress notification if a token was sent."""
    for step in range(1, steps + 1):
        await _session(ctx).send_log_message(
            level="info", data=f"step {step}/{steps}", logger=LOGGER_NAME, related_request_id=_call_id(ctx)
        )
        # A no-op unless the tools/call carried params._meta.progressToken.
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
        await anyio.sleep(0.02)
    return f"done {steps} steps"


@server.tool()
async def slow(seconds: float = 30) -> str:
    """Sleep, then answer; the SDK cancels this on notifications/cancelled."""
    await anyio.sleep(seconds)
    return "slept"


@server.tool()
async def die() -> str:
    """Exit the server process at once, without answering."""
    os._exit(EXIT_STATUS)


@server.tool()
async def elicit_then_die(ctx: Context[Any, Any]) -> str:
    """Send one form elicitation, then exit once it is on the wire (no answer awaited)."""
    global _exit_after_elicitation_flushed
    _exit_after_elicitation_flushed = True
    await _ask_form(ctx, "This server exits before reading your answer", PROFILE_FORM)
    os._exit(EXIT_STATUS)  # not reached: the writer exits first


@server.tool()
async def url_required(url: str = "https://example.invalid/connect") -> str:
    """Fail with -32042 carrying one URL elicitation (elicitationId "req-1")."""
    elicitation = types.ElicitRequestURLParams(
        message="Open the link to authorise the test peer, then retry.", url=url, elicitation_id="req-1"
    )
    raise UrlElicitationRequiredError([elicitation])


@server.tool()
async def ask_server_ping(ctx: Context[Any, Any]) -> str:
    """Send ping to the client; answer "pong" once the client has answered it."""
    await _session(ctx).send_request(
        types.PingRequest(),
        types.EmptyResult,
        metadata=ServerMessageMetadata(related_request_id=_call_id(ctx)),
    )
    return "pong"


class _WatchedStdout:
    """Async text sink for stdio_server(): writes to the wire and, after each flush,
    ends the process if elicit_then_die() asked for it and an elicitation was written."""

    def __init__(self, wire: TextIOWrapper) -> None:
        self._file = anyio.wrap_file(wire)
        self._pending = ""

    async def write(self, data: str) -> int:
        self._pending += data
        return await self._file.write(data)

    async def flush(self) -> None:
        await self._file.flush()
        written, self._pending = self._pending, ""
        if _exit_after_elicitation_flushed and '"elicitation/create"' in written:
            os._exit(EXIT_STATUS)


def _claim_stdout() -> TextIOWrapper:
    """Keep the wire on a private duplicate of fd 1 and point fd 1 at stderr,
    so stray prints cannot corrupt the JSON-RPC stream."""
    sys.stdout.flush()
    wire_fd = os.dup(1)
    os.dup2(2, 1)
    return TextIOWrapper(os.fdopen(wire_fd, "wb"), encoding="utf-8", newline="\n")


async def _serve_handshake_only() -> None:
    """Serve stdio with the SDK's handshake-era loop (no switch to the 2026-07-28 era)."""
    from mcp.server.runner import _serve_legacy_stream  # private API of mcp 2.3.0
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    stdout: Any = _WatchedStdout(_claim_stdout())
    async with stdio_server(stdout=stdout) as (read_stream, write_stream):
        async with lowlevel.lifespan(lowlevel) as lifespan_state:
            try:
                await _serve_legacy_stream(
                    lowlevel,
                    read_stream,
                    write_stream,
                    lifespan_state=lifespan_state,
                    session_id=None,
                    init_options=lowlevel.create_initialization_options(),
                    raise_exceptions=False,
                )
            finally:
                await write_stream.aclose()


async def _refuse_modern(ctx: Any, call_next: Any) -> Any:
    """HTTP: answer every 2026-07-28 request with -32022 naming the handshake versions only."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS and ctx.request_id is not None:
        raise MCPError(-32022, "this peer speaks only the initialize handshake", {"supported": ["2025-11-25", "2025-06-18"], "requested": ctx.protocol_version})
    return await call_next(ctx)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Handshake-era MCP test peer on the official SDK (stdio, or HTTP).")
    parser.add_argument(
        "--allow-modern",
        action="store_true",
        help="use the SDK's dual-era stdio loop (server-to-client requests then fail on 2026-07-28)",
    )
    parser.add_argument("--http", action="store_true", help="Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.http:
        server._lowlevel_server.middleware.insert(0, _refuse_modern)
        server.run("streamable-http", host="127.0.0.1", port=args.port, streamable_http_path="/mcp")
    elif args.allow_modern:
        server.run("stdio")
    else:
        anyio.run(_serve_handshake_only)


if __name__ == "__main__":
    main()
