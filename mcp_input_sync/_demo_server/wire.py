"""The demo server's connection: the wire, its server requests and one tool call in flight.

:class:`Session` writes each message as one flushed JSON line and keeps the
state of the connection; :class:`ToolCall` is one ``tools/call`` running on
its own thread, sending requests to the client and waiting (bounded by
:data:`REQUEST_TIMEOUT`) for their answers.
"""

from __future__ import annotations

import enum
import itertools
import json
import queue
import threading
from typing import Any, BinaryIO, Final

from ..reflect import LEVELS

JSONObject = dict[str, Any]

#: Seconds a tool waits for the client's answer to one of its requests.
REQUEST_TIMEOUT: Final = 900.0


class Signal(enum.Enum):
    """What wakes a tool waiting for an answer, besides the answer itself."""

    CANCELLED = "cancelled"
    EOF = "eof"


class Abandoned(Exception):
    """The tool call was cancelled by the client or stdin reached EOF."""


class RequestFailed(Exception):
    """A server request got no usable answer.

    Args:
        text: The sentence the tool result reports.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def is_request_id(value: object) -> bool:
    """Tell whether ``value`` is a valid JSON-RPC request id (str or int, not bool).

    Args:
        value: The candidate.

    Returns:
        True for a string or a non-bool int.
    """
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def id_key(value: object) -> tuple[str, object]:
    """Key a request id so that ``1``, ``"1"`` and ``True`` never collide.

    Args:
        value: A request id.

    Returns:
        A hashable key distinguishing ids by JSON type.
    """
    return (type(value).__name__, value)


class Session:
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
        self.pending: dict[str, queue.Queue[JSONObject | Signal]] = {}
        self.calls: dict[tuple[str, object], ToolCall] = {}
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
        return LEVELS.index(level) >= LEVELS.index(self.log_level)


class ToolCall:
    """One ``tools/call`` in flight, run on its own thread.

    Args:
        session: The connection.
        request_id: The client's id for the call.
        progress_token: The call's ``_meta.progressToken``, if any.
    """

    def __init__(self, session: Session, request_id: object, progress_token: object) -> None:
        self.session = session
        self.request_id = request_id
        self.progress_token = progress_token
        self.cancelled = threading.Event()
        self._waiting: queue.Queue[JSONObject | Signal] | None = None

    def cancel(self) -> None:
        """Abandon the call: wake it if it waits for an answer (holds no lock)."""
        with self.session.lock:
            self.cancelled.set()
            if self._waiting is not None:
                self._waiting.put(Signal.CANCELLED)

    def check(self) -> None:
        """Raise when the call has been abandoned.

        Raises:
            Abandoned: The client cancelled the call or stdin reached EOF.
        """
        if self.cancelled.is_set() or self.session.eof:
            raise Abandoned()

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
            Abandoned: The call was cancelled or stdin reached EOF while
                waiting (the request is then cancelled towards the client,
                unless stdin is closed).
            RequestFailed: The client answered with an error or a malformed
                response, or did not answer within :data:`REQUEST_TIMEOUT`.
        """
        session = self.session
        request_id = session.new_id()
        answers: queue.Queue[JSONObject | Signal] = queue.Queue()
        with session.lock:
            if self.cancelled.is_set() or session.eof:
                raise Abandoned()
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
            raise RequestFailed(f"{method}: the client did not answer in time") from None
        finally:
            with session.lock:
                session.pending.pop(request_id, None)
                self._waiting = None
        if answer is Signal.EOF:
            raise Abandoned()
        if answer is Signal.CANCELLED:
            self._cancel_request(request_id, "the tool call was cancelled")
            raise Abandoned()
        error = answer.get("error")
        if "error" in answer:
            text = "malformed error"
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            raise RequestFailed(f"{method} failed: {text}")
        result = answer.get("result")
        if not isinstance(result, dict):
            raise RequestFailed(f"{method} failed: the answer has no result object")
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
