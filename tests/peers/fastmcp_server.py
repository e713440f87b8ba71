"""A FastMCP 4.1.6 server that asks its client for input, in both protocol eras.

Run with the FastMCP venv's Python (peers/setup.sh installs fastmcp, pinned)::

    python fastmcp_server.py                  # stdio
    python fastmcp_server.py --http --port P  # Streamable HTTP, http://127.0.0.1:P/mcp

No banner; logs at warning level and above (a failing tool is still logged
on stderr). FastMCP serves both eras on both transports
through the SDK (mcp 2.3.0): over stdio the client's first request picks the
era for the process (``initialize`` opens 2025-11-25, a request carrying the
2026-07-28 ``_meta`` envelope opens 2026-07-28); over HTTP each request is
routed by its headers.

Tools that ask through the handshake-era back-channel (server-to-client
requests; 2025-11-25 only):

- ``elicit_dataclass``: ``ctx.elicit(..., response_type=Person)`` (a dataclass:
  ``name`` string, ``age`` integer, both required); ``"accepted name=Ada
  age=36"``, ``"declined"`` or ``"cancelled"``.
- ``elicit_pydantic``: the same with a pydantic model (``city`` string
  required, ``nights`` integer, default 2); ``"accepted city=Porto nights=3"``.
- ``elicit_primitive``: ``ctx.elicit(..., response_type=int)``; FastMCP wraps
  a scalar as an object with one required ``value`` property and unwraps the
  answer (``{"value": 7}``); ``"accepted value=7"``.
- ``sample``: ``sampling/createMessage`` with the user message "Say hello"
  (``maxTokens`` 64); ``"sampled: <text>"``.
- ``sample_rich``: the same with a system prompt, the hint ``mini``, an
  ``intelligencePriority`` and a tool ``add`` (``toolChoice`` auto);
  ``"model <model> wants add({...}) (toolUse)"`` or ``"model <model> said: <text> (<stopReason>)"``.
- ``roots``: ``roots/list``; the root URIs, one a line.

FastMCP 4.1.6 has no ``ctx.sample()`` and no ``ctx.list_roots()``: it dropped
server-initiated sampling and roots from its authoring API (SEP-2577, and the
2026-07-28 era has no back-channel). ``sample`` and ``roots`` therefore go
through the SDK session the context holds (``ctx.session.create_message``,
``ctx.session.list_roots``), as FastMCP's own proxy relay does; the SDK's
deprecation warnings for them are silenced here.

On a 2026-07-28 connection none of these become ``input_required``:
``ctx.elicit`` raises a ``ToolError`` before anything is sent ("elicitation
via server-initiated requests is unavailable on 2026-07-28 connections."),
so the call answers ``isError``; ``create_message``/``list_roots`` find no
back-channel, and FastMCP reports the failure as an ``isError`` result too.

Tools that ask the 2026-07-28 way (multi round-trip requests, SEP-2322; the
"guard" pattern of FastMCP 4.1.6): the tool body returns an
``mcp_types.InputRequiredResult`` instead of its answer. FastMCP wraps it in
an ``InputRequiredToolResult``, passes it through the middleware chain as an
ordinary result and puts it on the wire as ``{"resultType": "input_required",
"inputRequests": {KEY: {method, params}}, "requestState": "..."}``; the
SDK's request-state boundary seals ``requestState`` (AES-GCM, per-process key)
on the way out and unseals the client's echo before the tool runs again. The
client retries the same call with ``inputResponses`` (same keys) and the
``requestState``; the tool reads them as ``ctx.input_responses`` (typed
``ElicitResult`` / ``CreateMessageResult`` values) and ``ctx.request_state``
(the plaintext it set). Nothing chooses between the two mechanisms for the
tool: it returns ``InputRequiredResult`` or calls ``ctx.elicit``, and on a
2025-11-25 connection an ``InputRequiredResult`` is refused with JSON-RPC
-32602 ("... only exists at MCP 2026-07-28 ...").

- ``mrtr_form``: key "name", form elicitation (``name`` string required),
  requestState ``"asked:name"``; ``"hello <name>"``, ``"declined"`` or
  ``"cancelled"``.
- ``mrtr_sampling``: key "llm", ``sampling/createMessage`` ("Say hello",
  ``maxTokens`` 64), requestState ``"asked:llm"``; ``"sampled: <text>"``.

And in both eras:

- ``log_and_progress``: three rounds of ``ctx.info("step i/3")`` (logger
  ``fastmcp-peer``; FastMCP sends ``data`` as ``{"msg": "step i/3", "extra":
  null}``) and ``ctx.report_progress(i, 3, "step i/3")``; ``"done"``.
  (Progress needs a ``progressToken``; on 2026-07-28 logs need the request's
  log-level opt-in.)
- ``echo(text)``: ``text``.
- ``lookup(text)``: ``text`` upper-cased; annotated ``readOnlyHint``.
- ``put(text)``: ``text``; annotated ``idempotentHint`` (not read-only).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel
from peer_cli import serve_fastmcp  # tests/peers: the script's own folder

# Sampling, roots and logging are deprecated in the SDK; the peer still uses them on purpose.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

PROMPT = "Say hello"


@dataclass
class Person:
    """A person: name and age."""

    name: str
    age: int


class Stay(BaseModel):
    """A stay: a city, and the number of nights (2 unless given)."""

    city: str
    nights: int = 2


def _outcome(result: AcceptedElicitation[Any] | DeclinedElicitation | CancelledElicitation, fields: list[str]) -> str:
    """``accepted k=v ...`` for an accepted elicitation (``value=v`` for a scalar), else the action's past tense."""
    if isinstance(result, DeclinedElicitation):
        return "declined"
    if isinstance(result, CancelledElicitation):
        return "cancelled"
    if not fields:
        return f"accepted value={result.data}"
    return "accepted " + " ".join(f"{name}={getattr(result.data, name)}" for name in fields)


def _sampled_text(result: mcp_types.CreateMessageResult | mcp_types.CreateMessageResultWithTools) -> str:
    """The text of a sampling result (the first text block)."""
    blocks = result.content if isinstance(result.content, list) else [result.content]
    return next((block.text for block in blocks if isinstance(block, mcp_types.TextContent)), "")


def _hello() -> mcp_types.CreateMessageRequestParams:
    """The sampling request both sampling tools make: one user message, 64 tokens at most."""
    message = mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text=PROMPT))
    return mcp_types.CreateMessageRequestParams(messages=[message], max_tokens=64)


def build() -> FastMCP:
    """The server and its tools."""
    mcp = FastMCP("fastmcp-input-peer")

    @mcp.tool
    async def elicit_dataclass(ctx: Context) -> str:
        """Ask for a person (dataclass: name, age)."""
        result = await ctx.elicit("Who are you?", response_type=Person)
        return _outcome(result, ["name", "age"])

    @mcp.tool
    async def elicit_pydantic(ctx: Context) -> str:
        """Ask for a stay (pydantic model: city, nights=2)."""
        result = await ctx.elicit("Where to?", response_type=Stay)
        return _outcome(result, ["city", "nights"])

    @mcp.tool
    async def elicit_primitive(ctx: Context) -> str:
        """Ask for one integer (FastMCP wraps it as {"value": ...})."""
        result = await ctx.elicit("Pick a number", response_type=int)
        return _outcome(result, [])

    @mcp.tool
    async def sample(ctx: Context) -> str:
        """Ask the client's LLM to say hello (handshake era only)."""
        params = _hello()
        result = await ctx.session.create_message(
            params.messages, max_tokens=params.max_tokens, related_request_id=ctx.request_id
        )
        return f"sampled: {_sampled_text(result)}"

    @mcp.tool
    async def sample_rich(ctx: Context) -> str:
        """Ask the client's LLM with a system prompt, model hints and a tool it may call (handshake era only)."""
        message = mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text="What is 2 + 3?"))
        tool = mcp_types.Tool(name="add", description="Adds two numbers", inputSchema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})
        preferences = mcp_types.ModelPreferences(hints=[mcp_types.ModelHint(name="mini")], intelligencePriority=0.2)
        result = await ctx.session.create_message(
            [message], max_tokens=200, system_prompt="You are a calculator.", model_preferences=preferences,
            tools=[tool], tool_choice=mcp_types.ToolChoice(mode="auto"), related_request_id=ctx.request_id,
        )
        blocks = result.content if isinstance(result.content, list) else [result.content]
        uses = [block for block in blocks if getattr(block, "type", None) == "tool_use"]
        if uses:
            return f"model {result.model} wants {uses[0].name}({uses[0].input}) ({result.stop_reason})"
        return f"model {result.model} said: {_sampled_text(result)} ({result.stop_reason})"

    @mcp.tool
    async def roots(ctx: Context) -> str:
        """The client's root URIs, one a line (handshake era only)."""
        result = await ctx.session.list_roots()
        return "\n".join(str(root.uri) for root in result.roots)

    @mcp.tool
    async def log_and_progress(ctx: Context) -> str:
        """Three info logs and three progress notifications."""
        for step in range(1, 4):
            await ctx.info(f"step {step}/3", logger_name="fastmcp-peer")
            await ctx.report_progress(step, 3, f"step {step}/3")
        return "done"

    @mcp.tool
    def echo(text: str) -> str:
        """Return ``text``."""
        return text

    @mcp.tool(annotations={"readOnlyHint": True})
    def lookup(text: str) -> str:
        """Return ``text``, upper-cased; annotated read-only (safe to send twice)."""
        return text.upper()

    @mcp.tool(annotations={"idempotentHint": True, "readOnlyHint": False})
    def put(text: str) -> str:
        """Return ``text``; annotated idempotent (safe to send twice)."""
        return text

    @mcp.tool
    async def mrtr_form(ctx: Context) -> str | mcp_types.InputRequiredResult:
        """Ask for a name through input_required (2026-07-28 only)."""
        answer = (ctx.input_responses or {}).get("name")
        if isinstance(answer, mcp_types.ElicitResult) and ctx.request_state == "asked:name":
            if answer.action != "accept":
                return "declined" if answer.action == "decline" else "cancelled"
            return f"hello {(answer.content or {}).get('name')}"
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        form = mcp_types.ElicitRequestFormParams(message="What is your name?", requested_schema=schema)
        return mcp_types.InputRequiredResult(
            input_requests={"name": mcp_types.ElicitRequest(params=form)}, request_state="asked:name"
        )

    @mcp.tool
    async def mrtr_sampling(ctx: Context) -> str | mcp_types.InputRequiredResult:
        """Ask the client's LLM to say hello through input_required (2026-07-28 only)."""
        answer = (ctx.input_responses or {}).get("llm")
        if ctx.request_state == "asked:llm" and isinstance(
            answer, mcp_types.CreateMessageResult | mcp_types.CreateMessageResultWithTools
        ):
            return f"sampled: {_sampled_text(answer)}"
        request = mcp_types.CreateMessageRequest(params=_hello())
        return mcp_types.InputRequiredResult(input_requests={"llm": request}, request_state="asked:llm")

    return mcp


def main() -> None:
    serve_fastmcp(build, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
