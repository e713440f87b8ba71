"""A tool's view of its call (:class:`ToolCall`), and running a tool once.

The same tool code serves both eras: in the legacy era asking sends the
client a request (through the server it is given), in the modern era it
reads the call's ``inputResponses`` or stops the run with
:class:`~.shared.NeedInput`. Import the public names from
:mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Protocol, Union

from .shared import ClientRefused, JsonDict, NeedInput, ToolError, ToolResult, text_result

KIND_KEYS = {"elicitation/create": "elicit", "sampling/createMessage": "sample", "roots/list": "roots"}


class Host(Protocol):
    """What the parts of the kit need of the server they serve (the :class:`FakeServer`)."""

    era: str
    version: Optional[str]
    timeout: float
    instructions: Optional[str]
    capabilities: JsonDict
    negotiated: Optional[str]
    client_capabilities: Optional[JsonDict]
    client_info: Optional[JsonDict]
    log_level: Optional[str]

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None: ...

    def _ask(self, method: str, params: Optional[JsonDict], timeout: Optional[float], call: Optional[ToolCall]) -> JsonDict: ...

    def _with_modes(self) -> bool: ...


class ToolCall:
    """What a tool function gets: the call's arguments and ways to ask the client.

    Attributes:
        name: the tool's name.
        arguments: the call's ``arguments`` (``{}`` when absent).
        params: the call's whole params.
        era: ``"legacy"`` or ``"modern"``.
        cancelled: a ``threading.Event`` set when the client cancels the call
            (legacy) or the fake closes.
        responses: modern: the input responses collected so far, by key.
    """

    def __init__(
        self,
        server: Host,
        name: str,
        params: JsonDict,
        *,
        chain: str,
        responses: Optional[JsonDict] = None,
        emitted_before: int = 0,
    ) -> None:
        self._server = server
        self.name = name
        self.params = params
        raw = params.get("arguments")
        self.arguments: JsonDict = raw if isinstance(raw, dict) else {}
        self.era = server.era
        self.cancelled = threading.Event()
        self.responses: JsonDict = dict(responses or {})
        self._chain = chain
        self._asked = 0
        self._emitted = 0
        self._emitted_before = emitted_before
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        self.progress_token: Any = token

    # ------------------------------------------------------------------ asking

    def request(self, method: str, params: Optional[JsonDict] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """Ask the client ``method`` (raw) and return its result.

        Legacy: a JSON-RPC request to the client, waited on for at most
        ``timeout`` real seconds (the fake's ``timeout``); an error answer
        raises :class:`ClientRefused`, silence ``TimeoutError``. Modern: the
        answer from the call's ``inputResponses``; when there is none yet
        the fake answers ``input_required`` with this request and runs the
        tool again once the client retries.
        """
        self._asked += 1
        if self.era == "modern":
            key = f"{KIND_KEYS.get(method, 'input')}-{self._asked}"
            if key in self.responses:
                answer = self.responses[key]
                return answer if isinstance(answer, dict) else {"value": answer}
            request: JsonDict = {"method": method}
            if params is not None:
                request["params"] = params
            raise NeedInput(key, request)
        response = self._server._ask(method, params, timeout, self)
        if "error" in response:
            err = response["error"]
            raise ClientRefused(method, err if isinstance(err, dict) else {"message": repr(err)})
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    def elicit(self, message: str, schema: Optional[JsonDict] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """A form elicitation; returns the ``ElicitResult`` (``{"action": ..., "content": ...}``)."""
        params: JsonDict = {"message": message, "requestedSchema": schema or {"type": "object", "properties": {}}}
        if self._server._with_modes():
            params = {"mode": "form", **params}
        return self.request("elicitation/create", params, timeout=timeout)

    def elicit_url(self, message: str, url: str, elicitation_id: Optional[str] = None, *, timeout: Optional[float] = None) -> JsonDict:
        """A URL elicitation (2025-11-25 and modern); returns the ``ElicitResult``."""
        self_id = elicitation_id or f"{self._chain}-url-{self._asked + 1}"
        params: JsonDict = {"mode": "url", "message": message, "url": url, "elicitationId": self_id}
        return self.request("elicitation/create", params, timeout=timeout)

    def sample(
        self,
        prompt: Union[str, list[JsonDict]],
        *,
        max_tokens: int = 100,
        timeout: Optional[float] = None,
        **extra: Any,
    ) -> JsonDict:
        """``sampling/createMessage`` with a user prompt (or a list of messages); returns the result.

        ``extra`` keys (``systemPrompt``, ``modelPreferences``, ...) are added to the params.
        """
        if isinstance(prompt, str):
            messages: list[JsonDict] = [{"role": "user", "content": {"type": "text", "text": prompt}}]
        else:
            messages = list(prompt)
        params: JsonDict = {"messages": messages, "maxTokens": max_tokens, **extra}
        return self.request("sampling/createMessage", params, timeout=timeout)

    def roots(self, *, timeout: Optional[float] = None) -> list[JsonDict]:
        """``roots/list``; returns the list of roots."""
        result = self.request("roots/list", {} if self.era == "modern" else None, timeout=timeout)
        roots = result.get("roots")
        return list(roots) if isinstance(roots, list) else []

    # ------------------------------------------------------------------ telling

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> None:
        """Send ``notifications/message`` (not sent again when a modern call is replayed)."""
        params: JsonDict = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._emit("notifications/message", params)

    def progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        """Send ``notifications/progress`` for this call, when the client asked for progress."""
        params: JsonDict = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._emit("notifications/progress", params, needs_token=True)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        """Send any notification (not sent again when a modern call is replayed)."""
        self._emit(method, params)

    def _emit(self, method: str, params: Optional[JsonDict], needs_token: bool = False) -> None:
        self._emitted += 1
        if self._emitted <= self._emitted_before:
            return  # sent by an earlier run of this modern call
        if needs_token and self.progress_token is None:
            return
        self._server.notify(method, params)


ToolFunction = Callable[[ToolCall], ToolResult]


def outcome(fn: ToolFunction, call: ToolCall) -> tuple[Optional[JsonDict], Optional[JsonDict]]:
    """Run a tool once: (result, None) or (None, JSON-RPC error). NeedInput and Closed pass."""
    try:
        value = fn(call)
    except ToolError as exc:
        return None, exc.error()
    except ClientRefused as exc:
        return text_result(str(exc), is_error=True), None
    except Exception as exc:  # a tool's bug becomes a tool error, as a real server would do
        return text_result(f"{type(exc).__name__}: {exc}", is_error=True), None
    if isinstance(value, str):
        return text_result(value), None
    if not isinstance(value, dict):
        return text_result(f"the tool returned {type(value).__name__}, not a dict or str", is_error=True), None
    return dict(value), None
