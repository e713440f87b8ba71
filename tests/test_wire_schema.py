"""Tests for tests/wire_schema.py, the validator of client messages against the MCP schemas."""

from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:  # pytest's default import mode already adds it
    sys.path.insert(0, _TESTS_DIR)

import wire_schema  # noqa: E402
from wire_schema import definition_for, validate_client_message  # noqa: E402

LEGACY = ("2025-06-18", "2025-11-25")
ALL_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
CLIENT_INFO = {"name": "mcp-input-sync-tests", "version": "0.0.1"}

LEGACY_CAPABILITIES: dict[str, dict[str, Any]] = {
    "2025-03-26": {"sampling": {}, "roots": {"listChanged": True}},
    "2025-06-18": {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}},
    "2025-11-25": {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}},
}


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        **extra,
    }


def initialize(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": LEGACY_CAPABILITIES[version], "clientInfo": CLIENT_INFO},
    }


def tools_call(version: str, request_id: int | str = 1) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hi"}}
    if version == "2026-07-28":
        params["_meta"] = modern_meta(progressToken="p1")
    else:
        params["_meta"] = {"progressToken": "p1"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def answer(result: dict[str, Any], request_id: int | str = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


SAMPLING_RESULT: dict[str, Any] = {
    "role": "assistant",
    "model": "fake-model",
    "stopReason": "endTurn",
    "content": {"type": "text", "text": "hello"},
}
ELICIT_RESULT: dict[str, Any] = {"action": "accept", "content": {"name": "Ann", "age": 30, "subscribe": True}}
ROOTS_RESULT: dict[str, Any] = {"roots": [{"uri": "file:///tmp/project", "name": "project"}]}


# --------------------------------------------------------------------------- valid traffic


@pytest.mark.parametrize("version", ["2025-03-26", *LEGACY])
def test_legacy_handshake_and_call_pass(version: str) -> None:
    validate_client_message(initialize(version), version)
    validate_client_message({"jsonrpc": "2.0", "method": "notifications/initialized"}, version)
    validate_client_message(tools_call(version), version)
    validate_client_message({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, version)
    validate_client_message({"jsonrpc": "2.0", "id": "p", "method": "ping"}, version)
    validate_client_message(
        {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "warning"}}, version
    )
    validate_client_message(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "timeout"}},
        version,
    )
    validate_client_message({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, version)


def test_initialize_is_checked_against_the_version_it_offers() -> None:
    # Offering 2025-11-25 (elicitation.form) is valid even when the session ends up at 2025-06-18.
    validate_client_message(initialize("2025-11-25"), "2025-06-18")


def test_modern_requests_pass() -> None:
    version = "2026-07-28"
    validate_client_message(
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}, version
    )
    validate_client_message(tools_call(version), version)
    retry = tools_call(version, 2)
    retry["params"]["inputResponses"] = {"ask": {"action": "accept", "content": {"score": 95.5}}}
    retry["params"]["requestState"] = "opaque"
    validate_client_message(retry, version)
    validate_client_message(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}, version
    )


@pytest.mark.parametrize("version", ["2025-03-26", *LEGACY])
@pytest.mark.parametrize(
    ("answering", "result"),
    [
        ("sampling/createMessage", SAMPLING_RESULT),
        ("elicitation/create", ELICIT_RESULT),
        ("elicitation/create", {"action": "decline"}),
        ("roots/list", ROOTS_RESULT),
        ("ping", {}),
    ],
)
def test_legacy_answers_pass(version: str, answering: str, result: dict[str, Any]) -> None:
    validate_client_message(answer(result), version, answering=answering)


@pytest.mark.parametrize(
    ("answering", "result"),
    [
        ("sampling/createMessage", SAMPLING_RESULT),
        ("elicitation/create", ELICIT_RESULT),
        ("roots/list", ROOTS_RESULT),
    ],
)
def test_modern_answers_pass(answering: str, result: dict[str, Any]) -> None:
    # 2026-07-28's JSON-RPC result envelope requires resultType on every result.
    validate_client_message(answer({**result, "resultType": "complete"}), "2026-07-28", answering=answering)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_error_response_passes(version: str) -> None:
    error = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}}
    validate_client_message(error, version)
    validate_client_message(error, version, answering="elicitation/create")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_elicitation_answer_with_fraction_passes(version: str) -> None:
    """Erratum: ElicitResult.content scalars are numbers, not integers."""
    result = {"action": "accept", "content": {"score": 95.5}}
    if version == "2026-07-28":
        result["resultType"] = "complete"
    validate_client_message(answer(result), version, answering="elicitation/create")


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_number_schema_erratum_applied(version: str) -> None:
    properties = wire_schema._definitions(version)["NumberSchema"]["properties"]
    for name in ("minimum", "maximum", "default"):
        if name in properties:
            assert properties[name]["type"] == "number"


def test_schema_files_are_not_modified() -> None:
    raw = wire_schema.schema_path("2025-11-25").read_text(encoding="utf-8")
    wire_schema._document("2025-11-25")
    assert wire_schema.schema_path("2025-11-25").read_text(encoding="utf-8") == raw
    assert '"integer"' in raw


#: The git blob ids of the published files (tests/schemas/README.md).
PUBLISHED_BLOBS = {
    "2025-06-18": "15c5d5127a247189918a7d4da6c3dec929b75130",
    "2025-11-25": "c722dd45ba83610bec2b3f576a7658d5d6dc1553",
    "2026-07-28": "213c58f6d9a1c2ce6ad055afe90bbdb095a29ee8",
}


@pytest.mark.parametrize("version", sorted(PUBLISHED_BLOBS))
def test_the_schema_files_are_the_published_ones_byte_for_byte(version: str) -> None:
    data = wire_schema.schema_path(version).read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert blob == PUBLISHED_BLOBS[version]
    assert PUBLISHED_BLOBS[version] in (wire_schema.SCHEMA_DIR / "README.md").read_text(encoding="utf-8")


def test_the_schemas_are_read_from_the_repository() -> None:
    assert wire_schema.SCHEMA_DIR == Path(__file__).resolve().parent / "schemas"
    assert set(wire_schema.SCHEMA_VERSIONS) == set(PUBLISHED_BLOBS)
    assert (wire_schema.SCHEMA_DIR / "LICENSE").is_file()


def test_a_missing_schema_file_fails_the_import(tmp_path: Path) -> None:
    """No skip: without its schemas the helper (and so every test using it) cannot load."""
    (tmp_path / "wire_schema.py").write_bytes(Path(wire_schema.__file__).read_bytes())
    (tmp_path / "schemas").mkdir()
    for version in ("2025-06-18", "2026-07-28"):  # 2025-11-25 left out
        (tmp_path / "schemas" / f"schema-{version}.json").write_bytes(wire_schema.schema_path(version).read_bytes())
    done = subprocess.run(
        [sys.executable, "-c", "import wire_schema"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "FileNotFoundError" in done.stderr and "schema-2025-11-25.json" in done.stderr, done.stderr


# --------------------------------------------------------------------------- invalid traffic


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_bad_elicit_action_fails(version: str) -> None:
    result: dict[str, Any] = {"action": "maybe"}
    if version == "2026-07-28":
        result["resultType"] = "complete"
    with pytest.raises(AssertionError, match="ElicitResult"):
        validate_client_message(answer(result), version, answering="elicitation/create")


@pytest.mark.parametrize("version", LEGACY)
def test_bad_sampling_answer_fails(version: str) -> None:
    bad = copy.deepcopy(SAMPLING_RESULT)
    del bad["model"]
    with pytest.raises(AssertionError, match="model"):
        validate_client_message(answer(bad), version, answering="sampling/createMessage")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_unknown_method_fails(version: str) -> None:
    with pytest.raises(AssertionError, match="not a client request method"):
        validate_client_message({"jsonrpc": "2.0", "id": 1, "method": "tools/frobnicate", "params": {}}, version)
    with pytest.raises(AssertionError, match="not a client notification method"):
        validate_client_message({"jsonrpc": "2.0", "method": "notifications/frobnicated"}, version)


def test_server_only_method_from_client_fails() -> None:
    with pytest.raises(AssertionError, match="not a client request method"):
        validate_client_message(
            {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {}}, "2025-11-25"
        )


def test_methods_removed_in_2026_fail() -> None:
    for method in ("initialize", "ping", "logging/setLevel"):
        with pytest.raises(AssertionError, match="not a client request method"):
            validate_client_message({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}, "2026-07-28")
    with pytest.raises(AssertionError, match="not a client answer method"):
        validate_client_message(answer({"resultType": "complete"}), "2026-07-28", answering="ping")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_missing_jsonrpc_fails(version: str) -> None:
    message = tools_call(version)
    del message["jsonrpc"]
    with pytest.raises(AssertionError, match="jsonrpc"):
        validate_client_message(message, version)
    message["jsonrpc"] = "1.0"
    with pytest.raises(AssertionError, match="jsonrpc"):
        validate_client_message(message, version)


def test_envelope_problems_fail() -> None:
    version = "2025-11-25"
    with pytest.raises(AssertionError, match="unexpected top-level"):
        validate_client_message({**tools_call(version), "extra": 1}, version)
    with pytest.raises(AssertionError, match="both result and error"):
        validate_client_message(
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}, version
        )
    with pytest.raises(AssertionError, match="not a JSON-RPC"):
        validate_client_message({"jsonrpc": "2.0", "id": 1}, version)
    with pytest.raises(AssertionError, match="RequestId|valid"):
        validate_client_message({**tools_call(version), "id": None}, version)
    with pytest.raises(AssertionError):
        validate_client_message(answer({}, request_id=1.5), version)  # type: ignore[arg-type]


def test_bad_request_params_fail() -> None:
    with pytest.raises(AssertionError, match="CallToolRequest"):
        validate_client_message({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}, "2025-11-25")
    no_meta = tools_call("2026-07-28")
    del no_meta["params"]["_meta"]
    with pytest.raises(AssertionError, match="_meta"):
        validate_client_message(no_meta, "2026-07-28")
    bad_init = initialize("2025-11-25")
    del bad_init["params"]["clientInfo"]
    with pytest.raises(AssertionError, match="clientInfo"):
        validate_client_message(bad_init, "2025-11-25")


def test_unknown_version_is_a_usage_error() -> None:
    with pytest.raises(ValueError):
        validate_client_message(tools_call("2025-11-25"), "2024-01-01")


def test_definition_names() -> None:
    assert definition_for("request", "logging/setLevel", "2025-06-18") == "SetLevelRequest"
    assert definition_for("request", "tasks/result", "2025-11-25") == "GetTaskPayloadRequest"
    assert definition_for("request", "server/discover", "2026-07-28") == "DiscoverRequest"
    assert definition_for("notification", "notifications/cancelled", "2026-07-28") == "CancelledNotification"
    assert definition_for("answer", "ping", "2025-03-26") == "EmptyResult"
    assert definition_for("answer", "tasks/get", "2025-11-25") == "GetTaskResult"


# --------------------------------------------------------------------------- speed


def test_fast_enough_for_every_message() -> None:
    messages: list[tuple[dict[str, Any], str, str | None]] = []
    for version in ("2025-06-18", "2025-11-25"):
        messages += [
            (initialize(version), version, None),
            (tools_call(version), version, None),
            (answer(ELICIT_RESULT), version, "elicitation/create"),
            (answer(SAMPLING_RESULT), version, "sampling/createMessage"),
        ]
    messages.append((tools_call("2026-07-28"), "2026-07-28", None))
    for message, version, answering in messages:  # warm the caches
        validate_client_message(message, version, answering)
    for _ in range(3):  # the cached validators give the same verdicts again
        for message, version, answering in messages:
            validate_client_message(message, version, answering)
