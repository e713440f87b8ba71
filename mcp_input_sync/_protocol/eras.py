"""Protocol versions, eras and the legacy lifecycle (initialize)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .jsonrpc import JsonDict

#: The newest handshake-era version; offered by default.
LATEST_LEGACY_VERSION = "2025-11-25"
#: Handshake versions accepted when a server answers with them, newest first.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
#: Versions the ``protocol`` option may force in the legacy era.
FORCEABLE_LEGACY_VERSIONS = ("2025-11-25", "2025-06-18")
#: The first stateless (per-request ``_meta``) version.
FIRST_MODERN_VERSION = "2026-07-28"

LEGACY = "legacy"
MODERN = "modern"


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


#: The server-to-client request kinds, by method.
INPUT_METHODS: Mapping[str, str] = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


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


def elicitation_mode(params: Mapping[str, Any]) -> Any:
    """The elicitation mode asked for (absent means form)."""
    return params.get("mode", "form")
