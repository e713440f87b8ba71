"""The client entry point the official MCP conformance runner drives.

Usage (the runner appends the server URL)::

    python -m mcp_input_sync.conformance [--verbose] <server-url>

The scenario comes from ``MCP_CONFORMANCE_SCENARIO`` and the lifecycle from
``MCP_CONFORMANCE_PROTOCOL_VERSION`` (absent, 2025-06-18 or 2025-11-25: the
initialize handshake; 2026-07-28: stateless). Exit status 0 means the
scenario's flow finished; an unknown scenario prints the known ones and
exits 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any, Callable, Optional, Sequence

from ._protocol.eras import MODERN_VERSION
from .client import Client, connect_http
from .errors import ClientError
from .handler import InputContext, InputHandler
from ._protocol.oauth import OAuthRefused
from .oauth import ClientCredentials, EnterpriseManaged, Grant, Headless, OAuth, WorkloadIdentity, flow
from .skills import Skills

JsonDict = dict[str, Any]


class ConformanceHandler(InputHandler):
    """Accepts forms with their defaults, consents to URLs, samples a fixed text, lists one root."""

    def __init__(self) -> None:
        self.logs: list[JsonDict] = []

    def elicitation_modes(self) -> Sequence[str]:
        return ("form", "url")

    def handle_elicitation(self, params: JsonDict, ctx: InputContext) -> JsonDict:
        if ctx.mode == "url":
            return {"action": "accept"}  # consent only: the client never opens the URL
        content: JsonDict = {}
        for name, field in (params.get("requestedSchema", {}).get("properties") or {}).items():
            if not isinstance(field, dict):
                continue
            if "default" in field:
                content[name] = field["default"]
            elif field.get("type") == "boolean":
                content[name] = True
        return {"action": "accept", "content": content}

    def handle_sampling(self, params: JsonDict, ctx: InputContext) -> JsonDict:
        return {"role": "assistant", "content": {"type": "text", "text": "conformance"}, "model": "mcp-input-sync-conformance"}

    def list_roots(self, ctx: InputContext) -> JsonDict:
        return {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}

    def handle_log(self, entry: JsonDict, ctx: InputContext) -> None:
        self.logs.append(entry)


def _protocol() -> str:
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    if version == MODERN_VERSION:
        return "modern"
    if version == "2025-06-18":
        return "2025-06-18"
    return "legacy"  # absent (0.1.16) or 2025-11-25: offer 2025-11-25, accept what the server answers


def run_initialize(client: Client) -> None:
    client.list_tools()


def run_tools_call(client: Client) -> None:
    names = [tool.get("name") for tool in client.list_tools()]
    if "add_numbers" in names:
        client.call_tool("add_numbers", {"a": 2, "b": 3})


def run_elicitation_defaults(client: Client) -> None:
    client.list_tools()
    client.call_tool("test_client_elicitation_defaults", {})


def run_sse_retry(client: Client) -> None:
    client.list_tools()
    client.call_tool("test_reconnection", {})


def run_request_metadata(client: Client) -> None:
    client.list_tools()


def run_request_state(client: Client) -> None:
    handler = ConformanceHandler()
    pending = client.call_tool("test_mrtr_echo_state", {}, defer_input=True)
    client.call_tool("test_mrtr_unrelated", {})  # a call between the rounds: nothing may leak into it
    if not isinstance(pending, dict):
        answers = {key: handler.handle_elicitation(request.get("params") or {}, _form_context(client)) for key, request in pending.input_requests.items()}
        client.resume(pending, answers, defer_input=False)
    client.call_tool("test_mrtr_no_state", {})
    client.call_tool("test_mrtr_no_result_type", {})


def _form_context(client: Client) -> InputContext:
    return InputContext(client=client.name, server_id=client.server_id, era=client.era, mode="form")


def run_standard_headers(client: Client) -> None:
    for tool in client.list_tools():
        client.call_tool(tool["name"], {})
    for resource in client.list_resources():
        client.read_resource(resource["uri"])
    for prompt in client.list_prompts():
        client.get_prompt(prompt["name"], {})


def run_custom_headers(client: Client) -> None:
    """The listing teaches the client each tool's x-mcp-header map; the context names the calls to make."""
    client.list_tools()
    for call in _context().get("toolCalls") or []:
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            client.call_tool(call["name"], call.get("arguments") or {})


def run_invalid_tool_headers(client: Client) -> None:
    """Call every tool the listing kept (the library drops those whose x-mcp-header annotations are invalid)."""
    for tool in client.list_tools():
        properties = (tool.get("inputSchema") or {}).get("properties") or {}
        arguments = {name: "us-west1" for name, spec in properties.items() if isinstance(spec, dict) and spec.get("type") == "string"}
        client.call_tool(tool["name"], arguments)


def run_ref_no_deref(client: Client) -> None:
    """List the tools only: a schema's network $ref must not be fetched (the mock serves no tools/call)."""
    client.list_tools()


def run_schema_preservation(client: Client) -> None:
    """Echo a JSON Schema 2020-12 input schema back exactly as the listing gave it."""
    tools = {tool.get("name"): tool for tool in client.list_tools()}
    focal = tools.get("json_schema_2020_12_tool")
    if focal is not None:
        client.call_tool("json_schema_echo", {"schema": focal.get("inputSchema")})


def run_skills_listing(client: Client) -> None:
    """sep-2640-client-no-prefetch: list the server's skills and read none of their files."""
    Skills(client).list()


def run_skills_verified(client: Client) -> None:
    """sep-2640-client-verify-*: load each skill (its SKILL.md, checked), then read its other files, each checked.

    A file that fails its check raises ``SkillRefused``, so nothing after it
    is read (the runner sees that the tampered skill's supporting file never was).
    """
    skills = Skills(client)
    for entry in skills.list():
        loaded = skills.load(entry)
        for listed in entry.files or ():
            if listed.uri != entry.uri:
                loaded.read(listed.uri)


SCENARIOS: dict[str, Callable[[Client], None]] = {
    "sep-2640-client-no-prefetch": run_skills_listing,
    "sep-2640-client-verify-digest": run_skills_verified,
    "sep-2640-client-verify-size": run_skills_verified,
    "sep-2640-client-verify-frontmatter": run_skills_verified,
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
    "request-metadata": run_request_metadata,
    "sep-2322-client-request-state": run_request_state,
    "http-standard-headers": run_standard_headers,
    "http-custom-headers": run_custom_headers,
    "http-invalid-tool-headers": run_invalid_tool_headers,
    "json-schema-ref-no-deref": run_ref_no_deref,
    "json-schema-2020-12-preservation": run_schema_preservation,
}


def run_auth(client: Client) -> None:
    """Every auth/* scenario: the login happened on the way in; list the tools and call the first one."""
    tools = client.list_tools()
    if tools:
        client.call_tool(tools[0]["name"], {})


def _context() -> JsonDict:
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "") or "{}")
    except ValueError:
        return {}
    return context if isinstance(context, dict) else {}


def _issuer_of(url: str) -> Optional[str]:
    """The issuer of ``url``'s authorization server, found as a login finds it (the runner's context does not name it).

    A host names the issuer its credentials belong to; the conformance client stands in for that host, and the
    runner's own authorization server is the one it was given credentials for.
    """
    finder = OAuth(timeout=10.0)  # its fetcher keeps discovery to where a login's may go
    try:
        return flow.discover(finder.fetcher.toward(url), url, None).metadata.issuer
    except OAuthRefused:
        return None
    finally:
        finder.close()


def _grant(scenario: str, url: str, text: Callable[[str], Optional[str]]) -> Optional[Grant]:
    """The machine grant of an extension scenario (docs/oauth.md#machine-identity), or None for a login."""
    client_id = text("client_id") or ""
    if scenario == "auth/client-credentials-basic":
        return ClientCredentials(client_id, secret=text("client_secret"), issuer=_issuer_of(url))
    if scenario == "auth/client-credentials-jwt":
        return ClientCredentials(client_id, private_key=text("private_key_pem"), algorithm=text("signing_algorithm"), issuer=_issuer_of(url))
    if scenario == "auth/wif-jwt-bearer":
        return WorkloadIdentity(text("valid_jwt") or "", issuer=_issuer_of(url))
    if scenario in ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow"):
        return EnterpriseManaged(
            identity_assertion=text("idp_id_token") or "", idp_token_endpoint=text("idp_token_endpoint") or "",
            client_id=client_id, secret=text("client_secret"), issuer=_issuer_of(url), idp_client_id=text("idp_client_id"),
        )
    return None


def _auth(scenario: str, url: str) -> Optional[OAuth]:
    """The OAuth of an auth/* scenario: a machine grant, or headless consent with the context's pre-registered client."""
    if not scenario.startswith("auth/"):
        return None
    context = _context()

    def text(key: str) -> Optional[str]:
        value = context.get(key)
        return value if isinstance(value, str) else None

    grant = _grant(scenario, url, text)
    if grant is not None:
        return OAuth(grant=grant)
    return OAuth(
        consent=Headless(redirect_uri="http://localhost:3000/callback"),
        client_name="mcp-input-sync-conformance",
        client_id=text("client_id"),
        client_secret=text("client_secret"),
        client_issuer=text("issuer"),
        client_metadata_url=text("client_metadata_url") or CLIENT_METADATA_URL,
    )


#: The Client ID Metadata Document URL this client presents where the server supports them.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_input_sync.conformance")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("url")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = run_auth if scenario.startswith("auth/") else SCENARIOS.get(scenario)
    if run is None:
        print(f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}", file=sys.stderr)
        return 2
    try:
        auth = _auth(scenario, args.url)
        with connect_http(args.url, handler=ConformanceHandler(), name="mcp-input-sync-conformance", protocol=_protocol(), timeout=20.0, auth=auth) as client:
            run(client)
    except (ClientError, ValueError) as exc:  # ValueError: a context the grant cannot be made from
        print(f"scenario {scenario} failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
