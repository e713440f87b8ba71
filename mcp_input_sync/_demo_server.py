"""A small legacy-era MCP server over stdio: the embedded server of the demo.

Run as ``python -m mcp_input_sync._demo_server``.  It exists so that
``python -m mcp_input_sync demo`` (and the library's own tests) can show every
kind of server request without installing anything: it is written with the
standard library only.

Contract:

* **Framing.** Newline-delimited JSON-RPC 2.0 on stdin/stdout, UTF-8.  Every
  line written to stdout is one complete JSON object, flushed at once;
  nothing else is ever written there (diagnostics go to stderr).  Batches,
  undecodable lines and non-object messages are answered with a JSON-RPC
  error whose ``id`` is ``null``.  The process exits with status 0 on stdin
  EOF; tool calls still waiting for the client are abandoned.
* **Lifecycle.** ``initialize`` echoes the client's ``protocolVersion`` when
  it is 2025-11-25, 2025-06-18 or 2025-03-26 and otherwise answers
  2025-11-25; capabilities are ``{"tools": {}, "logging": {}}``.  Requests
  other than ``initialize`` and ``ping`` before it, and a second
  ``initialize``, get -32600.  ``notifications/initialized`` is ignored.
* **Methods.** ``ping`` and ``logging/setLevel`` answer ``{}`` (the level is
  kept: only logs at or above it are sent; before any ``setLevel`` the
  threshold is ``info``; an unknown level is -32602).  ``tools/list`` lists
  ``plan_trip``, ``book_hotel``, ``pack_bags`` and ``echo`` (:data:`TOOLS`).  ``tools/call`` runs the tool
  on a thread of its own while the reader keeps reading, so the tool can
  wait for the client's answers to its requests.  Any other method: -32601
  (so the library's ``server/discover`` probe reads this server as legacy).
* **plan_trip(city="Lisbon")** sends, one after the other and waiting for
  each answer: a ``notifications/message`` (info, logger ``demo``), a
  ``roots/list`` request, an ``elicitation/create`` form and a
  ``sampling/createMessage`` request, and a ``notifications/progress`` after
  each of these four steps when the call carried ``_meta.progressToken``.
  A request whose capability the client did not declare in ``initialize``
  is not sent (the step is reported as skipped); 2025-03-26 has no
  elicitation, so the form is skipped there.  The result is a
  ``CallToolResult`` whose text names the roots, the form answer and the
  sampled text.  A declined or cancelled form, or an error answer to any of
  its requests, ends the tool with ``isError: true`` (an error's message is
  quoted in the text).
* **book_hotel(city="Lisbon")** (2025-11-25, clients declaring
  ``elicitation.url``) sends a URL-mode ``elicitation/create`` for a
  booking page on ``https://checkout.example.com``; on accept it sends
  ``notifications/elicitation/complete`` and succeeds, on decline or cancel
  it ends with ``isError: true``.  Without URL mode it is an
  ``isError: true`` result.
* **pack_bags(items=5, delay=0.2)** is a long call: it packs ``items``
  things (1 to 20), waiting ``delay`` seconds (0 to 5) before each and
  sending ``notifications/progress`` after each when the call carried a
  progress token, then logs at info and returns.
* **echo(text)** returns ``text``.  An unknown tool or bad arguments give an
  ``isError: true`` result, not a JSON-RPC error.
* **Server requests** carry string ids ``"demo-<n>"``, unique for the life
  of the process, and params shaped as the negotiated version's schema
  wants (``mode: "form"`` only in 2025-11-25; in 2025-06-18 the form has no
  ``mode`` and no ``default`` on string, number or enum fields, which that
  version does not define).  A request not answered within
  :data:`REQUEST_TIMEOUT` seconds is cancelled with ``notifications/cancelled``.
* **Cancellation.** ``notifications/cancelled`` naming a ``tools/call`` in
  flight abandons it: no response is sent, and the server request it was
  waiting for is cancelled with ``notifications/cancelled``.
"""

from __future__ import annotations

import enum
import itertools
import json
import queue
import sys
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, BinaryIO, Final

from .reflect import LEVELS

__all__ = ["LEGACY_VERSIONS", "REQUEST_TIMEOUT", "SERVER_INFO", "TOOLS", "main", "serve"]

JSONObject = dict[str, Any]

#: Versions echoed by ``initialize``; the first one is answered otherwise.
LEGACY_VERSIONS: Final[tuple[str, ...]] = ("2025-11-25", "2025-06-18", "2025-03-26")

SERVER_INFO: Final[JSONObject] = {"name": "mcp-input-sync-demo", "version": "1"}

INSTRUCTIONS: Final = (
    "Demo server of mcp_input_sync. Call plan_trip to see a log, a roots "
    "request, a form and a sampling request during one tool call; echo returns "
    "its text."
)

#: Seconds a tool waits for the client's answer to one of its requests.
REQUEST_TIMEOUT: Final = 900.0

_LEVELS: Final[tuple[str, ...]] = LEVELS

#: The tools as ``tools/list`` returns them.
TOOLS: Final[list[JSONObject]] = [
    {
        "name": "plan_trip",
        "title": "Plan a trip",
        "description": (
            "Plans a trip: logs, asks for the client's roots, asks the user for "
            "trip details with a form, and asks the client's LLM for a sight."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string",
                    "description": "The city to visit.",
                    "default": "Lisbon",
                }
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "book_hotel",
        "title": "Book a hotel",
        "description": "Asks the user to visit a booking page (URL elicitation); the client never opens it.",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city.", "default": "Lisbon"}},
            "additionalProperties": False,
        },
    },
    {
        "name": "pack_bags",
        "title": "Pack the bags",
        "description": "A long call that reports progress after each item it packs.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "items": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                "delay": {"type": "number", "minimum": 0, "maximum": 5, "default": 0.2},
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "echo",
        "title": "Echo",
        "description": "Returns its text unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to return."}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
]

_PLAN_STEPS: Final = 4


class _Signal(enum.Enum):
    """What wakes a tool waiting for an answer, besides the answer itself."""

    CANCELLED = "cancelled"
    EOF = "eof"


class _Abandoned(Exception):
    """The tool call was cancelled by the client or stdin reached EOF."""


class _RequestFailed(Exception):
    """A server request got no usable answer.

    Args:
        text: The sentence the tool result reports.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _tool_result(text: str, *, is_error: bool = False) -> JSONObject:
    """Build a ``CallToolResult`` with one text block.

    Args:
        text: The text of the block.
        is_error: The ``isError`` flag.

    Returns:
        The result object.
    """
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _is_request_id(value: object) -> bool:
    """Tell whether ``value`` is a valid JSON-RPC request id (str or int, not bool).

    Args:
        value: The candidate.

    Returns:
        True for a string or a non-bool int.
    """
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _id_key(value: object) -> tuple[str, object]:
    """Key a request id so that ``1``, ``"1"`` and ``True`` never collide.

    Args:
        value: A request id.

    Returns:
        A hashable key distinguishing ids by JSON type.
    """
    return (type(value).__name__, value)


class _Session:
    """State of one stdio connection: writer, pending requests, tool calls.

    Args:
        stdout: Binary stream the messages are written to.
        stderr: Text stream for diagnostics.
    """

    def __init__(self, stdout: BinaryIO, stderr: Any) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._write_lock = threading.Lock()
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self.pending: dict[str, queue.Queue[JSONObject | _Signal]] = {}
        self.calls: dict[tuple[str, object], _ToolCall] = {}
        self.threads: list[threading.Thread] = []
        self.eof = False
        self.version: str | None = None
        self.client_capabilities: JSONObject = {}
        self.log_level = "info"
        self._broken = False

    # -- output -----------------------------------------------------------

    def send(self, message: JSONObject) -> None:
        """Write one message as one flushed line; a closed stdout is ignored.

        Args:
            message: The JSON-RPC message.
        """
        line = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        with self._write_lock:
            if self._broken:
                return
            try:
                self._stdout.write(line + b"\n")
                self._stdout.flush()
            except (OSError, ValueError):
                self._broken = True

    def respond(self, request_id: object, result: JSONObject) -> None:
        """Send a successful response.

        Args:
            request_id: The request's id.
            result: The result object.
        """
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: object, code: int, message: str) -> None:
        """Send an error response.

        Args:
            request_id: The request's id (``None`` when it could not be read).
            code: JSON-RPC error code.
            message: Short description.
        """
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def diag(self, text: str) -> None:
        """Write a diagnostic line to stderr (never stdout).

        Args:
            text: The line.
        """
        try:
            print(f"mcp-input-sync-demo: {text}", file=self._stderr, flush=True)
        except (OSError, ValueError):
            pass

    def new_id(self) -> str:
        """Return a server request id never used before in this process.

        Returns:
            ``"demo-<n>"``.
        """
        with self.lock:
            return f"demo-{next(self._ids)}"

    # -- capabilities -----------------------------------------------------

    def client_has(self, capability: str) -> bool:
        """Tell whether the client declared a capability in ``initialize``.

        Args:
            capability: ``"roots"``, ``"sampling"`` or ``"elicitation"``.

        Returns:
            True when the capability is declared (for elicitation: form mode
            in a version that has elicitation).
        """
        value = self.client_capabilities.get(capability)
        if not isinstance(value, dict):
            return False
        if capability != "elicitation":
            return True
        if self.version == "2025-03-26":
            return False
        if self.version == "2025-11-25" and value and "form" not in value:
            return False
        return True

    def client_has_url_elicitation(self) -> bool:
        """Tell whether the client declared URL-mode elicitation (2025-11-25 only).

        Returns:
            True when ``elicitation.url`` was declared in 2025-11-25.
        """
        value = self.client_capabilities.get("elicitation")
        return self.version == "2025-11-25" and isinstance(value, dict) and isinstance(value.get("url"), dict)

    def log_enabled(self, level: str) -> bool:
        """Tell whether a log at ``level`` passes the client's threshold.

        Args:
            level: An RFC 5424 level name.

        Returns:
            True when it is at or above the level set by ``logging/setLevel``.
        """
        return _LEVELS.index(level) >= _LEVELS.index(self.log_level)


class _ToolCall:
    """One ``tools/call`` in flight, run on its own thread.

    Args:
        session: The connection.
        request_id: The client's id for the call.
        progress_token: The call's ``_meta.progressToken``, if any.
    """

    def __init__(self, session: _Session, request_id: object, progress_token: object) -> None:
        self.session = session
        self.request_id = request_id
        self.progress_token = progress_token
        self.cancelled = threading.Event()
        self._waiting: queue.Queue[JSONObject | _Signal] | None = None

    def cancel(self) -> None:
        """Abandon the call: wake it if it waits for an answer (holds no lock)."""
        with self.session.lock:
            self.cancelled.set()
            if self._waiting is not None:
                self._waiting.put(_Signal.CANCELLED)

    def check(self) -> None:
        """Raise when the call has been abandoned.

        Raises:
            _Abandoned: The client cancelled the call or stdin reached EOF.
        """
        if self.cancelled.is_set() or self.session.eof:
            raise _Abandoned()

    def log(self, level: str, logger: str, data: object) -> None:
        """Send a ``notifications/message`` when the level passes the threshold.

        Args:
            level: RFC 5424 level.
            logger: Logger name.
            data: Any JSON value.
        """
        if self.session.log_enabled(level):
            self.session.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": level, "logger": logger, "data": data},
                }
            )

    def progress(self, progress: int, total: int, message: str) -> None:
        """Send ``notifications/progress`` when the call asked for progress.

        Args:
            progress: Steps done.
            total: Steps in all.
            message: What was just done.
        """
        if self.progress_token is None:
            return
        self.session.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {
                    "progressToken": self.progress_token,
                    "progress": progress,
                    "total": total,
                    "message": message,
                },
            }
        )

    def request(self, method: str, params: JSONObject | None) -> JSONObject:
        """Send a request to the client and wait for its answer.

        Args:
            method: The request's method.
            params: Its params, or ``None`` to send none.

        Returns:
            The ``result`` object of the answer.

        Raises:
            _Abandoned: The call was cancelled or stdin reached EOF while
                waiting (the request is then cancelled towards the client,
                unless stdin is closed).
            _RequestFailed: The client answered with an error or a malformed
                response, or did not answer within :data:`REQUEST_TIMEOUT`.
        """
        session = self.session
        request_id = session.new_id()
        answers: queue.Queue[JSONObject | _Signal] = queue.Queue()
        with session.lock:
            if self.cancelled.is_set() or session.eof:
                raise _Abandoned()
            session.pending[request_id] = answers
            self._waiting = answers
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        session.send(message)
        try:
            answer = answers.get(timeout=REQUEST_TIMEOUT)
        except queue.Empty:
            self._cancel_request(request_id, "no answer in time")
            raise _RequestFailed(f"{method}: the client did not answer in time") from None
        finally:
            with session.lock:
                session.pending.pop(request_id, None)
                self._waiting = None
        if answer is _Signal.EOF:
            raise _Abandoned()
        if answer is _Signal.CANCELLED:
            self._cancel_request(request_id, "the tool call was cancelled")
            raise _Abandoned()
        error = answer.get("error")
        if "error" in answer:
            text = "malformed error"
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            raise _RequestFailed(f"{method} failed: {text}")
        result = answer.get("result")
        if not isinstance(result, dict):
            raise _RequestFailed(f"{method} failed: the answer has no result object")
        return result

    def _cancel_request(self, request_id: str, reason: str) -> None:
        """Tell the client to stop working on one of our requests.

        Args:
            request_id: The server request's id.
            reason: Why.
        """
        if not self.session.eof:
            self.session.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id, "reason": reason},
                }
            )


# -- tools ------------------------------------------------------------------


def _trip_form(version: str | None) -> JSONObject:
    """Build the ``elicitation/create`` params of plan_trip for a version.

    Args:
        version: The negotiated protocol version.

    Returns:
        Form-mode params; ``mode`` only in 2025-11-25, no ``default`` on
        string, number and enum fields in 2025-06-18.
    """
    with_defaults = version != "2025-06-18"
    travellers: JSONObject = {"type": "integer", "title": "Travellers", "minimum": 1}
    budget: JSONObject = {"type": "number", "title": "Budget"}
    pace: JSONObject = {"type": "string", "title": "Pace", "enum": ["relaxed", "normal", "packed"]}
    if with_defaults:
        travellers["default"] = 2
        budget["default"] = 1500
        pace["default"] = "normal"
    params: JSONObject = {
        "message": "Trip details",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "travellers": travellers,
                "budget": budget,
                "start": {"type": "string", "title": "Start date", "format": "date"},
                "pace": pace,
            },
            "required": ["budget"],
        },
    }
    if version == "2025-11-25":
        params = {"mode": "form", **params}
    return params


def _describe_roots(result: JSONObject) -> str:
    """Summarise a ``ListRootsResult``.

    Args:
        result: The client's answer.

    Returns:
        A comma-separated list of root URIs, or ``"none"``.
    """
    roots = result.get("roots")
    uris = []
    if isinstance(roots, list):
        for root in roots:
            if isinstance(root, dict) and isinstance(root.get("uri"), str):
                uris.append(root["uri"])
    return ", ".join(uris) if uris else "none"


def _sampled_text(result: JSONObject) -> str:
    """Extract the text of a ``CreateMessageResult``.

    Args:
        result: The client's answer.

    Returns:
        The text blocks joined by spaces, or ``"(no text)"``.
    """
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    texts = [
        block["text"]
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    return " ".join(texts) if texts else "(no text)"


def _plan_trip(call: _ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``plan_trip`` tool: every kind of server request in one call.

    Args:
        call: The call in flight.
        arguments: The tool arguments.

    Returns:
        The ``CallToolResult``.

    Raises:
        _Abandoned: The call was cancelled or stdin closed.
    """
    city = arguments.get("city", "Lisbon")
    if not isinstance(city, str):
        return _tool_result("plan_trip: 'city' must be a string", is_error=True)
    session = call.session
    try:
        call.check()
        call.log("info", "demo", f"planning a trip to {city}")
        call.progress(1, _PLAN_STEPS, "logged the plan")

        call.check()
        if session.client_has("roots"):
            roots = _describe_roots(call.request("roots/list", None))
            call.progress(2, _PLAN_STEPS, "got the roots")
        else:
            roots = "not offered by the client"
            call.progress(2, _PLAN_STEPS, "skipped the roots")

        call.check()
        travellers: object = 2
        budget: object = "not given"
        start: object = "any day"
        pace: object = "normal"
        if session.client_has("elicitation"):
            answer = call.request("elicitation/create", _trip_form(session.version))
            action = answer.get("action")
            if action in ("decline", "cancel"):
                verb = "declined" if action == "decline" else "cancelled"
                return _tool_result(f"The trip form was {verb}: no trip planned.", is_error=True)
            if action != "accept":
                return _tool_result("elicitation/create failed: unknown action", is_error=True)
            content = answer.get("content")
            if isinstance(content, dict):
                travellers = content.get("travellers", travellers)
                budget = content.get("budget", budget)
                start = content.get("start", start)
                pace = content.get("pace", pace)
            form = f"{travellers} traveller(s), budget {budget}, starting {start}, {pace} pace"
            call.progress(3, _PLAN_STEPS, "got the trip details")
        else:
            form = "not offered by the client (defaults used)"
            call.progress(3, _PLAN_STEPS, "skipped the form")

        call.check()
        if session.client_has("sampling"):
            sampled = call.request(
                "sampling/createMessage",
                {
                    "messages": [
                        {
                            "role": "user",
                            "content": {
                                "type": "text",
                                "text": f"Suggest one sight in {city} for {pace} travellers",
                            },
                        }
                    ],
                    "maxTokens": 100,
                    "systemPrompt": "You are a travel guide.",
                },
            )
            sight = _sampled_text(sampled)
            call.progress(4, _PLAN_STEPS, "got a suggestion")
        else:
            sight = "sampling not offered by the client"
            call.progress(4, _PLAN_STEPS, "skipped sampling")
    except _RequestFailed as failure:
        return _tool_result(failure.text, is_error=True)
    return _tool_result(f"Trip to {city}. Roots: {roots}. Form: {form}. Suggested sight: {sight}")


def _book_hotel(call: _ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``book_hotel`` tool: one URL elicitation, then its completion notice.

    Args:
        call: The call in flight.
        arguments: The tool arguments.

    Returns:
        The ``CallToolResult``.

    Raises:
        _Abandoned: The call was cancelled or stdin closed.
    """
    city = arguments.get("city", "Lisbon")
    if not isinstance(city, str):
        return _tool_result("book_hotel: 'city' must be a string", is_error=True)
    session = call.session
    if not session.client_has_url_elicitation():
        return _tool_result("book_hotel needs a client that offers URL elicitation", is_error=True)
    call.check()
    elicitation_id = f"hotel-{session.new_id()}"
    url = "https://checkout.example.com/hotel?city=" + urllib.parse.quote(city, safe="")
    try:
        answer = call.request(
            "elicitation/create",
            {
                "mode": "url",
                "message": f"Pay the deposit for a hotel in {city} on the booking site.",
                "url": url,
                "elicitationId": elicitation_id,
            },
        )
    except _RequestFailed as failure:
        return _tool_result(failure.text, is_error=True)
    action = answer.get("action")
    if action != "accept":
        return _tool_result("The booking page was not accepted: no hotel booked.", is_error=True)
    session.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": elicitation_id},
        }
    )
    return _tool_result(f"Hotel in {city} held; the booking site confirms the deposit.")


_BAG_ITEMS: Final[tuple[str, ...]] = (
    "passport", "tickets", "charger", "sunscreen", "walking shoes", "umbrella", "guidebook",
    "adapter", "sunglasses", "jacket", "swimsuit", "camera", "snacks", "water bottle",
    "notebook", "pen", "headphones", "scarf", "hat", "map",
)


def _pack_bags(call: _ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``pack_bags`` tool: a long call reporting progress.

    Args:
        call: The call in flight.
        arguments: ``items`` (1 to 20) and ``delay`` (0 to 5 seconds).

    Returns:
        The ``CallToolResult``.

    Raises:
        _Abandoned: The call was cancelled or stdin closed.
    """
    items = arguments.get("items", 5)
    delay = arguments.get("delay", 0.2)
    if type(items) is not int or not 1 <= items <= len(_BAG_ITEMS):
        return _tool_result("pack_bags: 'items' must be an integer from 1 to 20", is_error=True)
    if type(delay) not in (int, float) or not 0 <= delay <= 5:
        return _tool_result("pack_bags: 'delay' must be a number from 0 to 5", is_error=True)
    for done, item in enumerate(_BAG_ITEMS[:items], start=1):
        if call.cancelled.wait(float(delay)):
            raise _Abandoned()
        call.check()
        call.progress(done, items, f"packed the {item}")
    call.log("info", "demo", f"packed {items} items")
    return _tool_result(f"Packed {items} items: {', '.join(_BAG_ITEMS[:items])}.")


def _echo(call: _ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``echo`` tool.

    Args:
        call: The call in flight (unused).
        arguments: The tool arguments; ``text`` must be a string.

    Returns:
        The ``CallToolResult`` holding ``text``.
    """
    text = arguments.get("text")
    if not isinstance(text, str):
        return _tool_result("echo: 'text' must be a string", is_error=True)
    return _tool_result(text)


_TOOL_FUNCTIONS: Final[dict[str, Callable[[_ToolCall, JSONObject], JSONObject]]] = {
    "plan_trip": _plan_trip,
    "book_hotel": _book_hotel,
    "pack_bags": _pack_bags,
    "echo": _echo,
}


# -- dispatch ---------------------------------------------------------------


def _run_call(call: _ToolCall, name: str, arguments: JSONObject) -> None:
    """Thread body of one ``tools/call``: run the tool and answer, unless abandoned.

    Args:
        call: The call.
        name: The tool name.
        arguments: Its arguments.
    """
    session = call.session
    try:
        tool = _TOOL_FUNCTIONS.get(name)
        if tool is None:
            result = _tool_result(f"Unknown tool: {name}", is_error=True)
        else:
            try:
                result = tool(call, arguments)
            except _Abandoned:
                return
            except Exception as exc:  # noqa: BLE001 - report, never crash the server
                session.diag(f"tool {name} failed: {exc!r}")
                result = _tool_result(f"{name} failed unexpectedly", is_error=True)
        if not call.cancelled.is_set() and not session.eof:
            session.respond(call.request_id, result)
    finally:
        with session.lock:
            key = _id_key(call.request_id)
            if session.calls.get(key) is call:
                del session.calls[key]


def _handle_request(session: _Session, message: JSONObject) -> None:
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
        if not isinstance(level, str) or level not in _LEVELS:
            session.error(request_id, -32602, "unknown logging level")
            return
        session.log_level = level
        session.respond(request_id, {})
    elif method == "tools/list":
        session.respond(request_id, {"tools": json.loads(json.dumps(TOOLS))})
    else:
        _start_call(session, request_id, params)


def _start_call(session: _Session, request_id: object, params: JSONObject) -> None:
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
    call = _ToolCall(session, request_id, token if _is_request_id(token) else None)
    key = _id_key(request_id)
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


def _handle_notification(session: _Session, message: JSONObject) -> None:
    """Act on a client notification.

    Args:
        session: The connection.
        message: A message with ``method`` and no ``id``.
    """
    if message["method"] != "notifications/cancelled":
        return  # notifications/initialized and the rest need nothing
    params = message.get("params")
    if not isinstance(params, dict) or not _is_request_id(params.get("requestId")):
        return
    with session.lock:
        call = session.calls.get(_id_key(params["requestId"]))
    if call is not None:
        call.cancel()


def _handle_response(session: _Session, message: JSONObject) -> None:
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


def _dispatch(session: _Session, line: bytes) -> None:
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
        session.error(message.get("id") if _is_request_id(message.get("id")) else None, -32600, "invalid method")
        return
    if "id" not in message:
        _handle_notification(session, message)
        return
    if not _is_request_id(message["id"]):
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
    session = _Session(stdout, sys.stderr if stderr is None else stderr)
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
            answers.put(_Signal.EOF)
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


if __name__ == "__main__":
    sys.exit(main())
