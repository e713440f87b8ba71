"""The fake's message loop: one daemon thread reading what the client sends, and the sending.

The loop records every message, routes answers and requests (an
override first), cancels a call on ``notifications/cancelled``, and runs
each tool call on a thread of its own. Import the public names from
:mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Union

from ..transports.memory import MemoryPeer
from .call import ToolCall
from .recorder import Recorder
from .registry import Registry
from .shared import Closed, JsonDict, ToolError, id_key

#: A tap on the traffic: ``on_message(direction, message)``, direction ``"received"`` or ``"sent"``.
MessageTap = Callable[[str, JsonDict], None]
#: Where the loop sends a request no override answered: ``on_request(request_id, method, params)``.
OnRequest = Callable[[Any, str, JsonDict], None]
#: Where the loop sends a response of the client: ``on_answer(message)``.
OnAnswer = Callable[[JsonDict], None]


class Wire:
    """The loop over the fake's end of the in-memory pair, and the calls it runs."""

    def __init__(
        self,
        name: str,
        peer: MemoryPeer,
        lock: threading.Lock,
        recorder: Recorder,
        registry: Registry,
        on_message: Optional[MessageTap],
    ) -> None:
        self._name = name
        self._peer = peer
        self._lock = lock
        self._recorder = recorder
        self._registry = registry
        self._on_message = on_message
        self._on_request: OnRequest = lambda request_id, method, params: None
        self._on_answer: OnAnswer = lambda message: None
        self._calls: dict[str, ToolCall] = {}
        self._workers = itertools.count(1)
        self._threads: list[threading.Thread] = []
        #: Set once the fake closes: no tool answers after that.
        self.closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self, on_request: OnRequest, on_answer: OnAnswer) -> None:
        """Start the loop, routing requests and answers to these."""
        self._on_request = on_request
        self._on_answer = on_answer
        self._thread.start()

    # ------------------------------------------------------------------ sending

    def send_raw(self, message: Union[JsonDict, str, bytes]) -> None:
        if isinstance(message, dict):
            self._recorder.note_sent(message)
            if self._on_message is not None:
                self._on_message("sent", message)
        self._peer.send(message)

    def notify(self, method: str, params: Optional[JsonDict] = None) -> None:
        message: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send_raw(message)

    def reply(self, request_id: Any, result: Optional[JsonDict] = None, error: Optional[JsonDict] = None) -> None:
        message: JsonDict = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result if result is not None else {}
        self.send_raw(message)

    # ------------------------------------------------------------------ calls

    def spawn(self, target: Callable[..., None], *args: Any) -> None:
        """Run ``target(*args)`` on a tool thread of its own."""
        thread = threading.Thread(target=target, args=args, name=f"{self._name}-tool-{next(self._workers)}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    @contextmanager
    def tracking(self, request_id: Any, call: ToolCall) -> Iterator[None]:
        """While inside, ``notifications/cancelled`` for ``request_id`` (and closing) cancel ``call``."""
        with self._lock:
            self._calls[id_key(request_id)] = call
        try:
            yield
        finally:
            with self._lock:
                self._calls.pop(id_key(request_id), None)

    def _cancel_all(self) -> None:
        with self._lock:
            calls = list(self._calls.values())
        for call in calls:
            call.cancelled.set()

    # ------------------------------------------------------------------ closing

    def shut(self) -> None:
        """No tool answers from now on; every call running is cancelled."""
        with self._lock:
            self.closed = True
        self._cancel_all()

    def hang_up(self, timeout: float) -> None:
        """End the pair (the client sees EOF) and the loop; join the threads (real seconds)."""
        self._peer.close()  # the client sees EOF
        self._peer._inbox.put(None)  # and our own loop ends
        self._thread.join(timeout)
        for thread in list(self._threads):
            thread.join(min(timeout, 1.0))

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        while True:
            try:
                message = self._peer.recv(timeout=0.5)
            except TimeoutError:
                if self.closed:
                    break
                continue
            except ValueError:
                continue  # not JSON: nothing the client would send
            if message is None:
                break
            if self._on_message is not None:
                self._on_message("received", message)
            self._recorder.note_received(message)
            try:
                self._dispatch(message)
            except Closed:
                break
        self._cancel_all()

    def _dispatch(self, message: JsonDict) -> None:
        method = message.get("method")
        if method is None:
            self._on_answer(message)
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/cancelled":
                with self._lock:
                    call = self._calls.get(id_key(params.get("requestId")))
                if call is not None:
                    call.cancelled.set()
            return
        request_id = message["id"]
        answer = self._registry.override_for(str(method))
        if answer is not None:
            try:
                result = answer(params)
            except ToolError as exc:
                self.reply(request_id, error=exc.error())
                return
            except Exception as exc:  # a bug in the override: answered, so the fake keeps serving
                self.reply(request_id, error={"code": -32603, "message": f"{type(exc).__name__}: {exc}"})
                return
            if result is not None:
                self.reply(request_id, result)
            return
        self._on_request(request_id, str(method), params)
