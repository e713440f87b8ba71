"""Validate JSON-RPC messages sent by the client against the official MCP JSON schemas.

The schemas are in the repository, ``tests/schemas/schema-<version>.json``
(see ``SCHEMA_DIR`` and its README for where they come from). They are
required: importing this module fails if one is missing, so no test can
quietly skip validation.

Usage::

    validate_client_message(message, "2025-11-25")                         # request / notification
    validate_client_message(answer, "2025-11-25", answering="elicitation/create")

``validate_client_message`` raises ``AssertionError`` describing the first
problem found. The schema files are loaded once, corrected in memory with the
errata listed in ``schemas/README.md`` (the files are never modified), and one
compiled validator per (version, definition) is cached.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

__all__ = [
    "SCHEMA_DIR",
    "SCHEMA_VERSIONS",
    "canonical_version",
    "definition_for",
    "schema_path",
    "validate_client_message",
    "validator_for",
]

SCHEMA_DIR: Path = Path(__file__).resolve().parent / "schemas"
"""Folder holding ``schema-<version>.json`` (``tests/schemas`` of the repository)."""

SCHEMA_VERSIONS: tuple[str, ...] = ("2025-06-18", "2025-11-25", "2026-07-28")
"""Versions with a schema file."""

_VERSION_ALIASES: dict[str, str] = {"2025-03-26": "2025-06-18"}
"""Versions without a file, validated with another version's definitions (schemas/README.md)."""

# Server->client request method -> (its request definition, the definition of the
# client's result). An entry applies to a version whose schema defines the request
# (2026-07-28 has no ping). 2025-11-25 also lets the server send tasks/* requests;
# those are derived from the schema's ServerRequest union.
_ANSWER_DEFINITIONS: dict[str, tuple[str, str]] = {
    "sampling/createMessage": ("CreateMessageRequest", "CreateMessageResult"),
    "elicitation/create": ("ElicitRequest", "ElicitResult"),
    "roots/list": ("ListRootsRequest", "ListRootsResult"),
    "ping": ("PingRequest", "EmptyResult"),
}

_REQUEST_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_MEMBERS = frozenset({"jsonrpc", "method", "params"})
_RESULT_MEMBERS = frozenset({"jsonrpc", "id", "result"})
_ERROR_MEMBERS = frozenset({"jsonrpc", "id", "error"})


def schema_path(version: str) -> Path:
    """The file of a schema version (one of ``SCHEMA_VERSIONS``)."""
    return SCHEMA_DIR / f"schema-{version}.json"


def _require_schemas() -> None:
    missing = [str(schema_path(version)) for version in SCHEMA_VERSIONS if not schema_path(version).is_file()]
    if missing:
        raise FileNotFoundError(
            f"MCP schema files missing from the repository: {', '.join(missing)} (see tests/schemas/README.md)"
        )


_require_schemas()


def canonical_version(version: str) -> str:
    """The schema version whose definitions apply to ``version``.

    Raises:
        ValueError: no schema applies to ``version``.
    """
    resolved = _VERSION_ALIASES.get(version, version)
    if resolved not in SCHEMA_VERSIONS:
        known = ", ".join((*SCHEMA_VERSIONS, *_VERSION_ALIASES))
        raise ValueError(f"no MCP schema for protocol version {version!r} (known: {known})")
    return resolved


# --------------------------------------------------------------------------- loading


def _definitions_key(document: Mapping[str, Any]) -> str:
    return "$defs" if "$defs" in document else "definitions"


def _widen_integer_to_number(node: Any) -> None:
    """In a schema fragment, retype every ``integer`` as ``number`` (recursively)."""
    if isinstance(node, dict):
        kind = node.get("type")
        if kind == "integer":
            node["type"] = "number"
        elif isinstance(kind, list):
            node["type"] = ["number" if item == "integer" else item for item in kind]
        for child in node.values():
            _widen_integer_to_number(child)
    elif isinstance(node, list):
        for child in node:
            _widen_integer_to_number(child)


def _apply_errata(version: str, definitions: dict[str, Any]) -> None:
    """Correct the generator errors listed in schemas/README.md, in memory."""
    # ElicitResult.content scalars are `string | number | boolean` in the TypeScript source.
    content = definitions["ElicitResult"]["properties"]["content"]
    _widen_integer_to_number(content["additionalProperties"])
    # NumberSchema minimum/maximum/default are numbers (2025-06-18 and 2025-11-25).
    if version in ("2025-06-18", "2025-11-25"):
        properties = definitions["NumberSchema"]["properties"]
        for name in ("minimum", "maximum", "default"):
            if name in properties and properties[name].get("type") == "integer":
                properties[name]["type"] = "number"


@lru_cache(maxsize=None)
def _document(version: str) -> dict[str, Any]:
    """The corrected schema document of a schema version (loaded once)."""
    path = schema_path(version)
    try:
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"MCP schema file missing: {path}") from None
    _apply_errata(version, document[_definitions_key(document)])
    return document


def _definitions(version: str) -> dict[str, Any]:
    document = _document(version)
    definitions: dict[str, Any] = document[_definitions_key(document)]
    return definitions


@lru_cache(maxsize=None)
def _validator(version: str, name: str) -> Validator:
    """A compiled validator for one named definition, resolved against the whole document."""
    document = _document(version)
    key = _definitions_key(document)
    if name not in document[key]:
        raise AssertionError(f"the {version} schema has no definition {name!r}")
    # The document root carries no validation keywords, so adding a root "$ref" makes the
    # document validate exactly that definition while every internal "#/..." ref resolves.
    schema = {**document, "$ref": f"#/{key}/{name}"}
    cls: type[Validator] = Draft7Validator if key == "definitions" else Draft202012Validator
    return cls(schema)


def validator_for(version: str, definition: str) -> Validator:
    """A validator (cached) for one definition of a schema version, errata applied.

    Raises:
        AssertionError: the schema of ``version`` has no such definition.
        ValueError: no schema applies to ``version``.
    """
    return _validator(canonical_version(version), definition)


# --------------------------------------------------------------------------- method tables


def _method_of(definition: Mapping[str, Any]) -> str | None:
    method = definition.get("properties", {}).get("method", {})
    const = method.get("const") if isinstance(method, Mapping) else None
    return const if isinstance(const, str) else None


def _union_members(version: str, union: str) -> list[str]:
    """Names of the definitions a union (ClientRequest, ...) is made of."""
    definitions = _definitions(version)
    if union not in definitions:
        return []
    body = definitions[union]
    refs = body.get("anyOf")
    if refs is None:
        # A one-member union inlined by the generator (2026-07-28's ClientNotification):
        # name it by the standalone definition with the same method.
        method = _method_of(body)
        for name, other in definitions.items():
            if name != union and isinstance(other, Mapping) and _method_of(other) == method:
                return [name]
        return [union]
    return [str(ref["$ref"]).rsplit("/", 1)[-1] for ref in refs]


@lru_cache(maxsize=None)
def _method_table(version: str, union: str) -> dict[str, str]:
    """Method name -> definition name for the members of ``union``."""
    definitions = _definitions(version)
    table: dict[str, str] = {}
    for name in _union_members(version, union):
        method = _method_of(definitions[name])
        if method is not None:
            table[method] = name
    return table


@lru_cache(maxsize=None)
def _answer_table(version: str) -> dict[str, str]:
    """Server->client request method -> definition of the client's result."""
    definitions = _definitions(version)
    table = {
        method: result
        for method, (request, result) in _ANSWER_DEFINITIONS.items()
        if request in definitions and result in definitions
    }
    for method, request in _method_table(version, "ServerRequest").items():
        result = request.removesuffix("Request") + "Result"
        table.setdefault(method, result if result in definitions else "EmptyResult")
    return table


def definition_for(message_kind: str, method: str, version: str) -> str:
    """The schema definition name used for a client ``request``, ``notification`` or
    ``answer`` (a result answering the server request ``method``).

    Raises:
        AssertionError: the method is not one the client may send (or answer) in ``version``.
        ValueError: unknown ``message_kind`` or ``version``.
    """
    schema_version = canonical_version(version)
    if message_kind == "request":
        table = _method_table(schema_version, "ClientRequest")
    elif message_kind == "notification":
        table = _method_table(schema_version, "ClientNotification")
    elif message_kind == "answer":
        table = _answer_table(schema_version)
    else:
        raise ValueError(f"unknown message kind {message_kind!r}")
    if method not in table:
        known = ", ".join(sorted(table)) or "none"
        raise AssertionError(
            f"{method!r} is not a client {message_kind} method in MCP {version} "
            f"(schema {schema_version}; known: {known})"
        )
    return table[method]


# --------------------------------------------------------------------------- validation


def _describe(error: ValidationError) -> str:
    where = "".join(f"[{part!r}]" for part in error.absolute_path) or "<message>"
    return f"{error.message} (at {where}, schema path {'/'.join(map(str, error.absolute_schema_path))})"


def _check(instance: Any, version: str, name: str, what: str) -> None:
    validator = _validator(version, name)
    error = best_match(validator.iter_errors(instance))
    if error is not None:
        raise AssertionError(f"{what} is not a valid {name} (schema {version}): {_describe(error)}")


def _check_members(message: Mapping[str, Any], allowed: frozenset[str], kind: str) -> None:
    extra = sorted(set(message) - allowed)
    if extra:
        raise AssertionError(f"JSON-RPC {kind} has unexpected top-level members {extra}: {message!r}")


def _initialize_version(message: Mapping[str, Any], version: str) -> str:
    """``initialize`` is validated against the version it offers, when a schema covers it."""
    params = message.get("params")
    offered = params.get("protocolVersion") if isinstance(params, Mapping) else None
    if isinstance(offered, str):
        try:
            schema_version = canonical_version(offered)
        except ValueError:
            return canonical_version(version)
        if "InitializeRequest" in _definitions(schema_version):
            return schema_version
    return canonical_version(version)


def validate_client_message(message: dict[str, Any], version: str, answering: str | None = None) -> None:
    """Check one message the client sent against the MCP schema of ``version``.

    ``version`` is 2025-06-18, 2025-11-25 or 2026-07-28 (2025-03-26 uses 2025-06-18).
    Requests and notifications are checked against the definition of their method
    (only methods the client may send in that version are known); responses against
    the JSON-RPC result/error envelope and, when ``answering`` names the server request
    method they answer, the result against that method's result definition.

    Raises:
        AssertionError: the message is invalid (the text says why), its method is
            unknown, or ``answering`` is not a server request of ``version``.
        ValueError: unknown ``version``.
    """
    schema_version = canonical_version(version)
    if not isinstance(message, Mapping):
        raise AssertionError(f"a JSON-RPC message must be an object, got {type(message).__name__}: {message!r}")
    if message.get("jsonrpc") != "2.0":
        raise AssertionError(f'JSON-RPC message lacks "jsonrpc": "2.0": {message!r}')

    if "method" in message:
        method = message["method"]
        if not isinstance(method, str):
            raise AssertionError(f"JSON-RPC method must be a string: {message!r}")
        if "result" in message or "error" in message:
            raise AssertionError(f"a message cannot carry both a method and a result/error: {message!r}")
        if "id" in message:
            _check_members(message, _REQUEST_MEMBERS, "request")
            if method == "initialize":
                schema_version = _initialize_version(message, version)
            name = definition_for("request", method, schema_version)
            _check(message, schema_version, name, f"request {method!r}")
        else:
            _check_members(message, _NOTIFICATION_MEMBERS, "notification")
            name = definition_for("notification", method, schema_version)
            _check(message, schema_version, name, f"notification {method!r}")
        return

    has_result, has_error = "result" in message, "error" in message
    if has_result and has_error:
        raise AssertionError(f"a JSON-RPC response cannot carry both result and error: {message!r}")
    if not (has_result or has_error):
        raise AssertionError(f"not a JSON-RPC request, notification or response: {message!r}")

    definitions = _definitions(schema_version)
    if has_result:
        _check_members(message, _RESULT_MEMBERS, "response")
        envelope = "JSONRPCResultResponse" if "JSONRPCResultResponse" in definitions else "JSONRPCResponse"
    else:
        _check_members(message, _ERROR_MEMBERS, "error response")
        envelope = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in definitions else "JSONRPCError"
    if "id" not in message:
        raise AssertionError(f"a response from the client must carry the id it answers: {message!r}")
    _check(message, schema_version, envelope, "response")

    if answering is not None and has_result:
        name = definition_for("answer", answering, schema_version)
        _check(message["result"], schema_version, name, f"result answering {answering!r}")
