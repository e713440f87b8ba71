"""The demo server's reader: each line from stdin decoded and routed, until EOF.

Requests are answered on the reader thread, except ``tools/call``, which
runs on a thread of its own so the reader keeps reading the answers to the
tool's requests.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, BinaryIO, Final

from ..reflect import LEVELS
from .tools import TOOL_FUNCTIONS, TOOLS, tool_result
from .wire import Abandoned, JSONObject, Session, Signal, ToolCall, id_key, is_request_id

#: Versions echoed by ``initialize``; the first one is answered otherwise.
LEGACY_VERSIONS: Final[tuple[str, ...]] = ("2025-11-25", "2025-06-18", "2025-03-26")

SERVER_INFO: Final[JSONObject] = {"name": "mcp-input-sync-demo", "version": "1"}

INSTRUCTIONS: Final = (
    "Demo server of mcp_input_sync. Call plan_trip to see a log, a roots "
    "request, a form and a sampling request during one tool call; echo returns "
    "its text."
)


def _run_call(call: ToolCall, name: str, arguments: JSONObject) -> None:
    """Thread body of one ``tools/call``: run the tool and answer, unless abandoned.

    Args:
        call: The call.
        name: The tool name.
        arguments: Its arguments.
    """
    session = call.session
    try:
        tool = TOOL_FUNCTIONS.get(name)
        if tool is None:
            result = tool_result(f"Unknown tool: {name}", is_error=True)
        else:
            try:
                result = tool(call, arguments)
            except Abandoned:
                return
            except Exception as exc:  # noqa: BLE001 - report, never crash the server
                session.diag(f"tool {name} failed: {exc!r}")
                result = tool_result(f"{name} failed unexpectedly", is_error=True)
        if not call.cancelled.is_set() and not session.eof:
            session.respond(call.request_id, result)
    finally:
        with session.lock:
            key = id_key(call.request_id)
            if session.calls.get(key) is call:
                del session.calls[key]


def _handle_request(session: Session, message: JSONObject) -> None:
    """Answer a client request (on the reader thread, except tool calls).

    Args:
        session: The connection.
        message: A message with ``method`` and ``id``.
    """
    request_id = message["id"]
    method = message["method"]
    params = message.get("params", {})
    if not isinstance(params, dict):
        session.error(request_id, -32602, "params must be an object")
        return
    if method == "ping":
        session.respond(request_id, {})
        return
    if method == "initialize":
        if session.version is not None:
            session.error(request_id, -32600, "already initialized")
            return
        requested = params.get("protocolVersion")
        session.version = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0]
        capabilities = params.get("capabilities")
        session.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        session.respond(
            request_id,
            {
                "protocolVersion": session.version,
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": dict(SERVER_INFO),
                "instructions": INSTRUCTIONS,
            },
        )
        return
    if method not in ("logging/setLevel", "tools/list", "tools/call"):
        session.error(request_id, -32601, f"method not found: {method}")
        return
    if session.version is None:
        session.error(request_id, -32600, "not initialized")
        return
    if method == "logging/setLevel":
        level = params.get("level")
        if not isinstance(level, str) or level not in LEVELS:
            session.error(request_id, -32602, "unknown logging level")
            return
        session.log_level = level
        session.respond(request_id, {})
    elif method == "tools/list":
        session.respond(request_id, {"tools": json.loads(json.dumps(TOOLS))})
    else:
        _start_call(session, request_id, params)


def _start_call(session: Session, request_id: object, params: JSONObject) -> None:
    """Start a ``tools/call`` on its own thread.

    Args:
        session: The connection.
        request_id: The client's id.
        params: The request params.
    """
    name = params.get("name")
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(name, str) or not isinstance(arguments, dict):
        session.error(request_id, -32602, "tools/call needs a string name and object arguments")
        return
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    call = ToolCall(session, request_id, token if is_request_id(token) else None)
    key = id_key(request_id)
    with session.lock:
        if key in session.calls:
            session.diag(f"dropped tools/call reusing the id of a call in flight: {request_id!r}")
            return
        session.calls[key] = call
    thread = threading.Thread(
        target=_run_call, args=(call, name, arguments), name=f"demo-call-{request_id}", daemon=True
    )
    session.threads = [t for t in session.threads if t.is_alive()]
    session.threads.append(thread)
    thread.start()


def _handle_notification(session: Session, message: JSONObject) -> None:
    """Act on a client notification.

    Args:
        session: The connection.
        message: A message with ``method`` and no ``id``.
    """
    if message["method"] != "notifications/cancelled":
        return  # notifications/initialized and the rest need nothing
    params = message.get("params")
    if not isinstance(params, dict) or not is_request_id(params.get("requestId")):
        return
    with session.lock:
        call = session.calls.get(id_key(params["requestId"]))
    if call is not None:
        call.cancel()


def _handle_response(session: Session, message: JSONObject) -> None:
    """Hand the client's answer to the tool waiting for it.

    Args:
        session: The connection.
        message: A message with ``id`` and ``result`` or ``error``.
    """
    response_id = message.get("id")
    with session.lock:
        answers = session.pending.pop(response_id, None) if isinstance(response_id, str) else None
    if answers is None:
        session.diag(f"dropped a response to an unknown request: {response_id!r}")
        return
    answers.put(message)


def _reject_constant(name: str) -> object:
    """Refuse ``NaN`` and ``Infinity``, which are not JSON.

    Args:
        name: The constant's spelling.

    Raises:
        ValueError: Always.
    """
    raise ValueError(f"not JSON: {name}")


def _dispatch(session: Session, line: bytes) -> None:
    """Decode one line and route it.

    Args:
        session: The connection.
        line: One line from stdin, newline included.
    """
    if not line.strip():
        return
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        session.error(None, -32700, "parse error")
        return
    if not isinstance(message, dict):
        session.error(None, -32600, "a message must be a JSON object")
        return
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            _handle_response(session, message)
        else:
            session.error(None, -32600, "invalid message")
        return
    if not isinstance(method, str):
        session.error(message.get("id") if is_request_id(message.get("id")) else None, -32600, "invalid method")
        return
    if "id" not in message:
        _handle_notification(session, message)
        return
    if not is_request_id(message["id"]):
        session.error(None, -32600, "invalid request id")
        return
    _handle_request(session, message)


def serve(stdin: BinaryIO, stdout: BinaryIO, stderr: Any = None) -> None:
    """Serve one connection until ``stdin`` reaches EOF.

    Args:
        stdin: Binary stream of client messages, one per line.
        stdout: Binary stream for server messages.
        stderr: Text stream for diagnostics (default ``sys.stderr``).
    """
    session = Session(stdout, sys.stderr if stderr is None else stderr)
    try:
        while True:
            line = stdin.readline()
            if not line:
                break
            _dispatch(session, line)
    finally:
        with session.lock:
            session.eof = True
            waiting = list(session.pending.values())
            session.pending.clear()
            threads = list(session.threads)
        for answers in waiting:
            answers.put(Signal.EOF)
        for thread in threads:
            thread.join(timeout=2.0)


def main() -> int:
    """Run the demo server on this process's stdin and stdout.

    ``sys.stdout`` is pointed at stderr first, so that a stray ``print``
    can never corrupt the protocol stream.

    Returns:
        The exit status: 0 after stdin EOF, 130 after Ctrl-C.
    """
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr
    try:
        serve(stdin, stdout)
    except KeyboardInterrupt:
        return 130
    return 0

