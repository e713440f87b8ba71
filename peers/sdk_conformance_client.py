#!/usr/bin/env python3
"""Reference conformance client built on the official MCP Python SDK (mcp==2.3.0).

    peers/conformance.sh /path/to/venv-with-mcp-2.3.0/bin/python peers/sdk_conformance_client.py

Not part of the library: it gives peers/conformance.sh a baseline to compare
mcp_input_sync's own conformance client with.  The runner calls it as
``... <server-url>`` with MCP_CONFORMANCE_SCENARIO (and, from 0.2.0-alpha,
MCP_CONFORMANCE_PROTOCOL_VERSION) in the environment.  Exit 0 when the
scenario's flow completed, 1 on any error, 2 for an unknown scenario.

Expected baseline: 13 of the 14 rows pass.  sep-2322-client-request-state
fails: every check passes, but mcp 2.3.0 raises on the last result, which has
no resultType, so the client exits 1.
"""
from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import Any, Awaitable, Callable

import anyio
import mcp_types as types
from mcp import Client

try:  # quiet the SDK's deprecation warnings (roots/logging at 2026-07-28)
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # pragma: no cover
    pass

MODERN = "2026-07-28"


def log(*a: Any) -> None:
    print(*a, file=sys.stderr, flush=True)


def defaults_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Accept a form elicitation: schema defaults, else a fixed value per type."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("type") == "boolean":
            out[name] = True
        elif prop.get("type") == "integer":
            out[name] = 1
        elif prop.get("type") == "number":
            out[name] = 1.5
        elif "enum" in prop:
            out[name] = prop["enum"][0]
        elif prop.get("type") == "string":
            out[name] = "sdk-" + name
    return out


class Reference:
    def __init__(self, url: str, scenario: str, version: str | None) -> None:
        self.url, self.scenario, self.version = url, scenario, version
        self.client: Client | None = None
        self.between_rounds: Callable[[], Awaitable[None]] | None = None

    async def on_elicit(self, ctx: Any, params: Any) -> types.ElicitResult:
        d = params.model_dump(by_alias=True, exclude_none=True)
        log("elicitation:", d)
        if self.between_rounds is not None:
            hook, self.between_rounds = self.between_rounds, None
            await hook()
        if d.get("mode") == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=defaults_for(d.get("requestedSchema") or {}))

    async def on_sample(self, ctx: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sdk-sampled"),
            model="sdk-reference",
            stop_reason="endTurn",
        )

    async def on_roots(self, ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/sdk-root", name="sdk-root")])

    async def run(self) -> int:
        flows: dict[str, Callable[[Client], Awaitable[None]]] = {
            "initialize": self.initialize,
            "tools_call": self.tools_call,
            "elicitation-sep1034-client-defaults": self.elicitation_defaults,
            "sse-retry": self.sse_retry,
            "request-metadata": self.request_metadata,
            "sep-2322-client-request-state": self.request_state,
            "http-standard-headers": self.standard_headers,
        }
        if self.scenario not in flows:
            log(f"unknown scenario {self.scenario!r}; supported: {', '.join(flows)}")
            return 2
        # 2026-07-28: "auto" probes server/discover and renegotiates on -32022
        # (request-metadata needs that); otherwise the initialize handshake.
        mode = "auto" if self.version == MODERN else "legacy"
        log(f"scenario={self.scenario} version={self.version} mode={mode} url={self.url}")
        async with Client(
            self.url,
            mode=mode,
            read_timeout_seconds=20,
            elicitation_callback=self.on_elicit,
            sampling_callback=self.on_sample,
            list_roots_callback=self.on_roots,
            client_info=types.Implementation(name="mis-sdk-reference", version="2.3.0"),
            cache=None,
        ) as client:
            self.client = client
            log("negotiated", client.protocol_version)
            with anyio.fail_after(25):
                await flows[self.scenario](client)
        return 0

    async def initialize(self, c: Client) -> None:
        await c.list_tools()

    async def tools_call(self, c: Client) -> None:
        await c.list_tools()
        r = await c.call_tool("add_numbers", {"a": 2, "b": 3})
        log("add_numbers ->", r.model_dump(by_alias=True, exclude_none=True))

    async def elicitation_defaults(self, c: Client) -> None:
        await c.list_tools()
        r = await c.call_tool("test_client_elicitation_defaults", {})
        log("result ->", r.model_dump(by_alias=True, exclude_none=True))

    async def sse_retry(self, c: Client) -> None:
        await c.list_tools()
        r = await c.call_tool("test_reconnection", {})
        log("result ->", r.model_dump(by_alias=True, exclude_none=True))

    async def request_metadata(self, c: Client) -> None:
        await c.list_tools()

    async def request_state(self, c: Client) -> None:
        async def unrelated() -> None:
            r = await c.call_tool("test_mrtr_unrelated", {})
            log("test_mrtr_unrelated ->", r.model_dump(by_alias=True, exclude_none=True))

        self.between_rounds = unrelated
        for tool in ("test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_no_result_type"):
            r = await c.call_tool(tool, {})
            log(tool, "->", r.model_dump(by_alias=True, exclude_none=True))

    async def standard_headers(self, c: Client) -> None:
        for t in (await c.list_tools()).tools:
            await c.call_tool(t.name, {})
        for res in (await c.list_resources()).resources:
            await c.read_resource(res.uri)
        for p in (await c.list_prompts()).prompts:
            await c.get_prompt(p.name, {})


def main() -> int:
    if len(sys.argv) < 2:
        log(__doc__)
        return 2
    ref = Reference(
        sys.argv[-1],
        os.environ.get("MCP_CONFORMANCE_SCENARIO", ""),
        os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION"),
    )
    try:
        return anyio.run(ref.run)
    except BaseException:  # noqa: BLE001 - report anything, exit 1
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
