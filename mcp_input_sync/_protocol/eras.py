"""Protocol versions, eras and the legacy lifecycle (initialize)."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from .advice import say
from .jsonrpc import JsonDict
from .record import Record

#: The newest handshake-era version; offered by default.
LATEST_LEGACY_VERSION = "2025-11-25"
#: Handshake versions accepted when a server answers with them, newest first.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
#: Versions the ``protocol`` option may force in the legacy era.
FORCEABLE_LEGACY_VERSIONS = ("2025-11-25", "2025-06-18")
#: The version of the stateless era (per-request ``_meta``, ``input_required`` rounds): the one constant of it.
MODERN_VERSION = "2026-07-28"

LEGACY = "legacy"
MODERN = "modern"

#: The ``protocol`` values that prefer an era but take the other one when the server offers only that one.
#: ``auto`` prefers the handshake era (docs/modern.md#which-era).
PREFERENCES = {"auto": LEGACY, "prefer-legacy": LEGACY, "prefer-modern": MODERN}


class ProtocolViolation(Exception):
    """The server broke the protocol; the client turns this into ClientError(kind="protocol")."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


def initialize_params(version: str, capabilities: JsonDict, client_info: JsonDict) -> JsonDict:
    """The params of the ``initialize`` request."""
    return {"protocolVersion": version, "capabilities": capabilities, "clientInfo": client_info}


def accept_initialize_result(result: Any, forced: Optional[str]) -> tuple[str, JsonDict]:
    """Check an ``initialize`` result and return (negotiated version, server capabilities).

    Args:
        result: the JSON-RPC ``result`` of ``initialize``.
        forced: the version the ``protocol`` option forces, or None.

    Raises:
        ProtocolViolation: the result is malformed or names a version we do not speak.
    """
    if type(result) is not dict:
        raise ProtocolViolation("initialize result is not an object")
    version = result.get("protocolVersion")
    if type(version) is not str:
        raise ProtocolViolation("initialize result has no protocolVersion")
    if forced is not None and version != forced:
        raise ProtocolViolation(
            f"server answered protocol version {version!r}; {forced!r} was forced",
            {"supported": [forced], "answered": version},
        )
    if version not in LEGACY_VERSIONS:
        raise ProtocolViolation(
            f"server answered unsupported protocol version {version!r}",
            {"supported": list(LEGACY_VERSIONS), "answered": version},
        )
    caps = result.get("capabilities")
    return version, caps if type(caps) is dict else {}


def client_capabilities(
    *,
    version: str,
    sampling: bool,
    elicitation_modes: Optional[tuple[str, ...]],
    roots: bool,
    sampling_tools: bool = False,
    sampling_context: bool = False,
) -> JsonDict:
    """The legacy ``ClientCapabilities`` object for what the handler overrides.

    ``elicitation_modes`` is None when the handler does not elicit.
    """
    caps: JsonDict = {}
    if sampling:
        s: JsonDict = {}
        if version != "2025-06-18":
            if sampling_context:
                s["context"] = {}
            if sampling_tools:
                s["tools"] = {}
        caps["sampling"] = s
    if elicitation_modes is not None:
        if version == "2025-06-18":
            caps["elicitation"] = {}
        else:
            caps["elicitation"] = {mode: {} for mode in elicitation_modes}
    if roots:
        caps["roots"] = {"listChanged": True}
    return caps


#: The kind of each server-to-client input request, by method (what a callback answers).
INPUT_REQUEST_KINDS: Mapping[str, str] = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}

#: The method of each kind of input request.
KIND_METHODS = {"elicitation": "elicitation/create", "sampling": "sampling/createMessage", "roots": "roots/list"}


def outcome_of(answer: Any) -> str:
    """How a server request was answered (a span's outcome): an elicitation's ``action``, else ``accept``."""
    action = answer.get("action") if isinstance(answer, dict) else None
    return action if action in ("accept", "decline", "cancel") else "accept"


def declared_kinds(capabilities: Mapping[str, Any], negotiated: str) -> frozenset[str]:
    """The input kinds the server may ask for in a session at ``negotiated``.

    2025-03-26 has no elicitation, whatever was offered.
    """
    kinds = {k for k in ("sampling", "elicitation", "roots") if k in capabilities}
    if negotiated == "2025-03-26":
        kinds.discard("elicitation")
    return frozenset(kinds)


def missing_param(method: str, params: Any, version: str = LATEST_LEGACY_VERSION) -> Optional[str]:
    """Step 3 of docs/reference.md#order-of-checks: why ``params`` is malformed, or None.

    ``roots/list`` may omit params; the others need an object with their
    required members (a URL elicitation's ``elicitationId`` exists only in
    the legacy era).
    """
    if params is None:
        return None if method == "roots/list" else "params missing"
    if type(params) is not dict:
        return "params is not an object"
    if method == "sampling/createMessage":
        if "messages" not in params:
            return "messages missing"
        if type(params["messages"]) is not list:
            return "messages is not a list"
        if "maxTokens" not in params:
            return "maxTokens missing"
    elif method == "elicitation/create":
        if "message" not in params:
            return "message missing"
        mode = params.get("mode", "form")
        if mode == "url":
            for member in ("url", "elicitationId") if version < "2026" else ("url",):
                if member not in params:
                    return f"{member} missing"
        elif "requestedSchema" not in params:
            return "requestedSchema missing"
        elif type(params["requestedSchema"]) is not dict:
            return "requestedSchema is not an object"
    return None


# ---------------------------------------------------------------------------- a tool that needs the other era

#: How the ``protocol`` option names each era for a user (the option's value, the command line's flag).
ERA_SETTING = {LEGACY: ("legacy", "2025-11-25"), MODERN: (MODERN_VERSION, MODERN_VERSION)}

#: The SDK's (mcp 2.3.0) and FastMCP's (4.1.6) text when a tool asks through a back-channel the request lacks.
_NO_BACK_CHANNEL = re.compile(
    r"Cannot send '(elicitation/create|sampling/createMessage|roots/list)': "
    r"this transport context has no back-channel for server-initiated requests\."
)
#: FastMCP's ``ctx.elicit`` on a 2026-07-28 request.
_FASTMCP_ELICIT = "elicitation via server-initiated requests is unavailable on 2026-07-28 connections."
#: FastMCP's refusal of an ``InputRequiredResult`` in the handshake era (a part of the -32602 message).
_FASTMCP_MRTR = "only exists at MCP 2026-07-28"
#: The SDK's answer to any invalid tool result, an ``InputRequiredResult`` in the handshake era among them.
_SDK_INVALID = "Handler returned an invalid result"


class EraNeed(Record):
    """A tool call failed the way a tool fails in the wrong era: ``needs`` is the era it wants.

    ``certain`` is False when the server's text has other causes too (the
    SDK's "Handler returned an invalid result"): then it is only a hint.
    """

    __slots__ = ("needs", "certain")

    def __init__(self, needs: str, certain: bool = True) -> None:
        self.needs = needs
        self.certain = certain


def era_needed_by_error(era: str, code: Any, message: Any) -> Optional[EraNeed]:
    """The era a ``tools/call`` answered with this JSON-RPC error in ``era`` wants, or None.

    Only the exact texts of the frameworks that serve both eras (FastMCP
    4.1.6, the official SDK 2.3.0) are read (docs/modern.md#which-era).
    """
    if not isinstance(message, str):
        return None
    if era == MODERN and code == -32600 and _NO_BACK_CHANNEL.fullmatch(message.strip()):
        return EraNeed(LEGACY)
    if era == LEGACY and code == -32602 and _FASTMCP_MRTR in message:
        return EraNeed(MODERN)
    if era == LEGACY and code == -32603 and message.strip() == _SDK_INVALID:
        return EraNeed(MODERN, certain=False)
    return None


def era_needed_by_result(era: str, result: Mapping[str, Any]) -> Optional[EraNeed]:
    """The era a ``tools/call`` that answered this ``isError`` result in ``era`` wants, or None.

    Only a result of one text block holding exactly FastMCP's own text counts.
    """
    if era != MODERN or result.get("isError") is not True:
        return None
    content = result.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    text = content[0].get("text")
    if content[0].get("type") != "text" or not isinstance(text, str):
        return None
    text = text.strip()
    if text == _FASTMCP_ELICIT:
        return EraNeed(LEGACY)
    if text.startswith("Error calling tool '"):
        _, _, rest = text.partition("': ")
        if _NO_BACK_CHANNEL.fullmatch(rest):
            return EraNeed(LEGACY)
    return None


def era_advice(tool: str, version: str, need: EraNeed, learnt: bool = False) -> str:
    """What a user is told when ``tool`` failed at ``version`` because it wants ``need.needs``."""
    value, shown = ERA_SETTING[need.needs]
    how = say("protocol", value=value)  # the host's words: a command line names its flag
    if not need.certain:
        return (
            f"if tool {tool!r} returns an input_required result (InputRequiredResult), it needs the "
            f"{shown} era and this connection uses {version}: {how}"
        )
    if need.needs == LEGACY:
        why = "asks for input with a server-to-client request (such as ctx.elicit), which only the handshake era carries"
    else:
        why = "asks for input with an input_required result (InputRequiredResult), which only the 2026-07-28 era carries"
    told = f"tool {tool!r} needs the {shown} era: it {why}, and this connection uses {version}. "
    told += "The call was not sent again: the tool may already have done part of its work. "
    if learnt:
        return told + say("era_learnt", tool=tool, era=shown, how=how, How=how[0].upper() + how[1:])
    return told + how[0].upper() + how[1:]


# ---------------------------------------------------------------------------- a server with no back-channel at all


def back_channel_missing(era: str, tool: str, code: Any = None, message: Any = None, result: Any = None) -> Optional[str]:
    """The server-to-client method a ``tools/call`` of ``tool`` could not send in the handshake era, or None.

    In the handshake era a stateful server streaming its answers (SSE)
    always has a back-channel, so the frameworks' "no back-channel" text
    there means the server runs stateless or answers JSON only
    (docs/modern.md#servers-with-no-back-channel). Read: the SDK's -32600
    error holding exactly that text, or FastMCP's ``isError`` result of one
    text block holding exactly ``Error calling tool '<tool>': `` and that
    text, for this very tool (a tool echoing the text elsewhere is not read).
    """
    if era != LEGACY:
        return None
    if result is None:
        said = message.strip() if code == -32600 and isinstance(message, str) else ""
    else:
        content = result.get("content") if isinstance(result, Mapping) and result.get("isError") is True else None
        block = content[0] if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) else {}
        text = block.get("text") if block.get("type") == "text" else None
        prefix = f"Error calling tool '{tool}': "
        said = text.strip()[len(prefix):] if isinstance(text, str) and text.strip().startswith(prefix) else ""
    match = _NO_BACK_CHANNEL.fullmatch(said)
    return match.group(1) if match else None


def back_channel_advice(tool: str, method: str, version: str) -> str:
    """What a user is told when ``tool`` failed at ``version`` because the server cannot send ``method``."""
    return (
        f"tool {tool!r} asks for input with a server-to-client request ({method}), and this server cannot send "
        f"one: over HTTP it runs stateless (stateless_http=True) or answers JSON only (json_response=True), so "
        f"its requests have no back-channel in either era, and this connection uses {version}. The call was not "
        "sent again: the tool may already have done part of its work. Change the server: run it stateful with "
        "streamed (SSE) answers, the default of FastMCP and of the official SDK, or have the tool return an "
        "InputRequiredResult, which the 2026-07-28 era carries in the answer, and "
        + say("protocol", value=MODERN_VERSION)  # the host's words: a command line names its flag
        + "; see docs/modern.md#servers-with-no-back-channel"
    )
