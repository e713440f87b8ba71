"""The 2026-07-28 era: the input_required retry loop, resumable calls, tasks, the listen.

A call may be answered ``input_required``. The loop here has the desk check
every input request of the round (docs/reference.md#modern-input-rounds), runs the
handler for each on the calling thread (or on up to ``input_parallelism``
worker threads), and retries with a new JSON-RPC id, the original params,
``inputResponses`` and the echoed ``requestState``. Every request carries a
fresh ``_meta`` (the stamp); a -32022 answer switches the version once.
Nothing here is shared between concurrent calls: each call's state lives in
its own frames. The engine takes the session and the desk, never the client.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Mapping, Optional, Union

from .. import _clock
from .._calls import Call, CallSpec, ProgressCallback
from .._input import InputDesk
from .._notifications import NotificationRouter
from .._port import Port
from .._protocol import jsonrpc, modern
from .._protocol.deadlines import CallClock
from .._protocol.checks import Refusal
from .._protocol.headers import HeaderArgs, Path, header_arguments, routed_name, tool_header_map
from .._protocol.jsonrpc import JsonDict, RequestId
from .._protocol.modern import MetaStamp, PendingCall, RetryStamp
from .._protocol.rounds import DEFER, DONE, FOLLOW, WAIT, RoundDriver, RoundRefused
from .._protocol.eras import INPUT_REQUEST_KINDS, MODERN, ProtocolViolation
from .._protocol.forms import quoted
from .._session import Session, collect_pages, remote_error
from ..errors import ClientError
from ..handler import overrides
from ..options import Options
from .base import AGAIN, AGAIN_NOW, poll_task, wrong_era

log = logging.getLogger("mcp_input_sync")

#: How a server request in the 2026-07-28 era is counted and logged (it is never answered).
MODERN_REQUEST = Refusal("era", 0, "a server request in the 2026-07-28 era was ignored")


class ModernEngine:
    """The modern side of one client: MRTR rounds, resumable calls, tasks and the listen."""

    era = MODERN

    def __init__(
        self,
        *,
        session: Session,
        desk: InputDesk,
        port: Port,
        options: Options,
        router: NotificationRouter,
        stamp: MetaStamp,
    ) -> None:
        """``stamp`` carries the negotiated version; the engine owns it (-32022 replaces it)."""
        self.session = session
        self.desk = desk
        self.port = port
        self.options = options
        self.router = router
        self.stamp = stamp
        self.server_capabilities: Optional[JsonDict] = None
        self._lock = threading.Lock()
        #: The open subscriptions/listen request, if any.
        self._listen: Optional[Call] = None
        self._resource_subscriptions: list[str] = []
        #: HTTP: each tool's argument path -> ``x-mcp-header`` name, from the latest listing (see note_tools).
        self._tool_headers: dict[str, dict[Path, str]] = {}

    @property
    def version(self) -> Optional[str]:
        return self.stamp.version

    def _clock(self, timeout: Optional[float] = None) -> CallClock:
        return self.options.clock(timeout)

    # ------------------------------------------------------------------ reader thread

    def on_request(self, request_id: Any, method: str, params: Any, stream: Any = None) -> None:
        """The 2026-07-28 era has no server-to-client requests: never answered, counted and logged."""
        self.desk.note_refusal(INPUT_REQUEST_KINDS.get(method, "other"), MODERN_REQUEST)

    def on_cancelled(self, request_id: Any) -> None:
        """The server ended our subscriptions/listen."""
        listen = self._listen
        if listen is not None and request_id == listen.id and type(request_id) is int:
            self.session.calls.forget(listen)

    def invalid(self, message: JsonDict) -> None:
        log.warning("mcp_input_sync: server %s sent an invalid JSON-RPC message; ignored", self.desk.server_id)
        self.desk.stats.add("malformed")

    def reject_unreadable(self, request_id: RequestId, code: int, message: str) -> None:
        """The 2026-07-28 era answers no server request, not even an unreadable one."""

    def answer_failed(self, request_id: RequestId) -> None:
        """Nothing to answer in the 2026-07-28 era."""

    # ------------------------------------------------------------------ start

    def started(self, version: str, server_capabilities: Optional[JsonDict]) -> Optional[JsonDict]:
        """Ask for the DiscoverResult when the handshake did not bring it, then open the listen."""
        discover: Optional[JsonDict] = None
        if server_capabilities is None:
            try:
                discover = self.request("server/discover", None, is_call=False, clock=self._clock(self.options.discover_timeout))
            except ClientError as exc:
                if exc.kind not in ("remote", "timeout"):
                    raise
                discover = {}
            caps = discover.get("capabilities")
            server_capabilities = caps if type(caps) is dict else {}
        self.server_capabilities = server_capabilities
        self._listen_if_wanted()
        return discover

    # ------------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        params: Optional[JsonDict],
        *,
        is_call: bool,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]] = None,
        progress: Optional[ProgressCallback] = None,
        cancel: Optional[threading.Event] = None,
        idempotent: bool = False,
    ) -> JsonDict:
        """One request; a -32022 answer that lists a version we speak switches to it, once."""
        try:
            return self._send(method, params, is_call, clock, assigns, progress, cancel, idempotent)
        except ClientError as exc:
            self._switch_version(exc)
            return self._send(method, params, is_call, clock, assigns, progress, cancel, idempotent)

    def _switch_version(self, exc: ClientError) -> None:
        """A -32022 answer that lists a version we speak (not the one sent): the stamp switches to it; else ``exc`` is raised."""
        if exc.kind != "remote" or exc.code != jsonrpc.UNSUPPORTED_VERSION:
            raise exc
        try:
            decision = modern.decide_from_supported(modern.supported_versions(exc.data))
        except ProtocolViolation:
            raise exc from None
        if decision.era != MODERN or decision.version == self.stamp.version:
            raise exc
        self.stamp = self.stamp.at_version(decision.version)

    def _send(
        self,
        method: str,
        params: Optional[JsonDict],
        is_call: bool,
        clock: CallClock,
        assigns: Optional[Mapping[str, Any]],
        progress: Optional[ProgressCallback],
        cancel: Optional[threading.Event],
        idempotent: bool = False,
    ) -> JsonDict:
        """One request, stamped, with its ``x-mcp-header`` arguments (the transport sends them as headers)."""
        call = self.session.start(
            method, params, is_call=is_call, clock=clock, assigns=assigns, progress=progress, stamp=self.stamp,
            header_args=self._header_args(method, params), waits=cancel is None, idempotent=idempotent,
        )
        return self.session.result(call, cancel)

    def _header_args(self, method: str, params: Optional[JsonDict]) -> HeaderArgs:
        """A ``tools/call``'s mirrored arguments, by the tool's map from the latest listing; () for anything else."""
        if method != "tools/call" or not self._tool_headers or params is None:
            return ()
        name = params.get("name")
        found = self._tool_headers.get(name) if isinstance(name, str) else None
        return header_arguments(found, params.get("arguments")) if found else ()

    # ------------------------------------------------------------------ the loop

    def call(
        self,
        method: str,
        params: JsonDict,
        spec: CallSpec,
        pending: Optional[PendingCall] = None,
        responses: Optional[JsonDict] = None,
    ) -> Union[JsonDict, PendingCall]:
        """Run a modern call to its end (or to its first round, with ``defer_input``).

        A tool that fails because it asks through a server-to-client request
        (docs/modern.md#which-era) raises ``ClientError(kind="protocol",
        check="era")``, its ``isError`` result in ``data["result"]``.
        """
        try:
            result = self._run(method, params, spec, pending, responses)
        except ClientError as exc:
            wrong = wrong_era(self.era, self.version, method, params, exc=exc)
            if wrong is None:
                raise
            raise wrong from exc
        if isinstance(result, dict):
            wrong = wrong_era(self.era, self.version, method, params, result=result)
            if wrong is not None:
                raise wrong
        return result

    def _run(
        self,
        method: str,
        params: JsonDict,
        spec: CallSpec,
        pending: Optional[PendingCall],
        responses: Optional[JsonDict],
    ) -> Union[JsonDict, PendingCall]:
        desk = self.desk
        clock, assigns, progress, cancel = spec.clock, spec.assigns, spec.progress, spec.cancel
        opts = self.options
        parts: Optional[RetryStamp] = None  # the retries' fixed parts, made at the first retry
        if pending is None:
            driver = RoundDriver(method, params, tasks=opts.tasks, max_rounds=opts.max_rounds, defer=spec.defer_input, wait=spec.wait)
            result = self._first(method, params, spec)
        else:
            spec.direct = False  # a resumed call
            driver = RoundDriver(
                method, params, tasks=opts.tasks, max_rounds=opts.max_rounds, defer=spec.defer_input, wait=spec.wait,
                rounds=pending.rounds, declined=frozenset(pending.declined),
            )
            retry = _retry(params, responses, pending.request_state)
            result = self.request(method, retry, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel)
        # the one call that drives the stdio reading seat: this thread may read its rounds' answers itself
        with self.session.reading_rounds():
            while True:
                try:
                    step = driver.next(result)
                except RoundRefused as refused:
                    raise ClientError(refused.kind, refused.message, data=refused.data, check=refused.check) from None
                if step is DONE:
                    return result
                spec.direct = False  # a round, a wait or a task: not one answer to keep (docs/caching.md)
                if step is FOLLOW:
                    assert driver.task_id is not None
                    return self.await_task(driver.task_id, spec)
                answers: Optional[JsonDict] = None
                if step is WAIT:
                    self._back_off(driver.delay, clock, cancel)
                else:
                    prepared = desk.check_round(driver.requests)
                    if step is DEFER:
                        return driver.pending()
                    answers = desk.answer_round(prepared, clock, assigns, cancel)  # the call's timeout paused meanwhile
                    driver.answered(answers)
                if parts is None or parts.stamp is not self.stamp:  # first retry, or the version switched (-32022)
                    parts = RetryStamp(self.stamp, params, routed_name(method, params), self.router)
                result = self._again(method, params, parts, answers, driver.state, spec)

    def _again(
        self, method: str, params: JsonDict, parts: RetryStamp, answers: Optional[JsonDict], state: Optional[str], spec: CallSpec
    ) -> JsonDict:
        """A round's retry: :meth:`request` with the call's fixed parts computed once (``parts``).

        The ``x-mcp-header`` arguments are found again only when the tool's
        map changed (a new listing); a -32022 answer is handled as
        :meth:`request` does, the retry then sent the long way.
        """
        name = parts.name
        found = self._tool_headers.get(name) if method == "tools/call" and name is not None else None
        if found is not parts.found:
            parts.found = found
            parts.header_args = header_arguments(found, params.get("arguments")) if found else ()
        cancel = spec.cancel
        try:
            call = self.session.start(
                method, parts.params(answers, state), is_call=True, clock=spec.clock, assigns=spec.assigns, progress=spec.progress,
                stamped=parts, header_args=parts.header_args, waits=cancel is None, idempotent=spec.idempotent,
            )
            return self.session.result(call, cancel)
        except ClientError as exc:
            self._switch_version(exc)  # the retry goes again the old way, at the new version
        return self._send(method, _retry(params, answers, state), True, spec.clock, spec.assigns, spec.progress, cancel, spec.idempotent)

    def _first(self, method: str, params: JsonDict, spec: CallSpec) -> JsonDict:
        """The call's first request; over HTTP a ``tools/call`` refused -32020 (HeaderMismatch) is sent once more.

        *MCP 2026-07-28, basic/transports/streamable-http*: the client SHOULD
        list the tools again (the tool's ``x-mcp-header`` map was unknown or
        stale) and retry. The server refused the request before running it,
        so it had no effect. When the listing fails, the -32020 is raised.
        """
        clock, assigns, progress, cancel = spec.clock, spec.assigns, spec.progress, spec.cancel
        try:
            return self.request(method, params, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel, idempotent=spec.idempotent)
        except ClientError as exc:
            if method != "tools/call" or exc.kind != "remote" or exc.code != jsonrpc.HEADER_MISMATCH or not self.port.mirrors_tool_headers:
                raise
            mismatch = exc

        def fetch(page_method: str, page_params: Optional[JsonDict]) -> JsonDict:
            return self.request(page_method, page_params, is_call=False, clock=clock.child(_clock.monotonic()), cancel=cancel)

        log.info("mcp_input_sync: server %s answered -32020 to tools/call %s; listing the tools and sending it once more",
                 self.desk.server_id, quoted(params.get("name")))
        try:
            self.note_tools(collect_pages(fetch, "tools/list", "tools", self.options.limits["listing_bytes"]))
        except ClientError as exc:
            if exc.kind in ("closed", "cancelled"):
                raise
            raise mismatch from exc
        return self.request(method, params, is_call=True, clock=clock, assigns=assigns, progress=progress, cancel=cancel, idempotent=spec.idempotent)

    def _back_off(self, delay: float, clock: CallClock, cancel: Optional[threading.Event]) -> None:
        """Wait ``delay`` seconds before retrying a state-only round (cancel-aware, bounded by max_total_timeout)."""
        pause = min(delay, max(0.0, clock.remaining(_clock.monotonic())))
        if cancel is not None:
            if cancel.wait(pause):
                raise ClientError("cancelled", "the call was cancelled")
        else:
            threading.Event().wait(pause)

    def resume(self, pending: PendingCall, responses: Mapping[str, Any], spec: CallSpec) -> Union[JsonDict, PendingCall]:
        """Validate the answers to a pending round and continue the call."""
        answers, declined = self.desk.check_answers(pending, responses)
        carried = PendingCall(pending.method, pending.params, pending.input_requests, pending.request_state, pending.rounds, declined)
        return self.call(pending.method, pending.params, spec, pending=carried, responses=answers)

    # ------------------------------------------------------------------ tasks (extension)

    def await_task(self, task_id: str, spec: CallSpec) -> JsonDict:
        """Poll ``tasks/get`` until the task ends; answer its input requests with ``tasks/update``."""
        clock, assigns, cancel = spec.clock, spec.assigns, spec.cancel
        answered: set[str] = set()
        desk = self.desk

        def fetch(poll_clock: CallClock) -> JsonDict:
            return self.request("tasks/get", {"taskId": task_id}, is_call=True, clock=poll_clock, assigns=assigns, cancel=cancel)

        def settle(task: JsonDict) -> Any:
            status = task.get("status")
            if status == "completed":
                result = task.get("result")
                if not isinstance(result, dict):
                    raise ClientError("protocol", "a completed task without a result", data=task, check="result")
                return result
            if status == "failed":
                raw = task.get("error")
                error: JsonDict = raw if isinstance(raw, dict) else {}
                if not isinstance(error.get("message"), str):
                    error = dict(error, message="the task failed")
                raise remote_error(error, "tasks/get")
            if status == "input_required":
                requests = task.get("inputRequests")
                if not isinstance(requests, dict):
                    raise ClientError("protocol", "an input_required task without inputRequests", data=task, check="result")
                fresh = {key: requests[key] for key in sorted(requests) if key not in answered}
                if not fresh:
                    return AGAIN
                prepared = desk.check_round(fresh)
                answers = desk.answer_round(prepared, clock, assigns, cancel)
                answered.update(answers)
                update = {"taskId": task_id, "inputResponses": answers}
                self.request("tasks/update", update, is_call=False, clock=clock.child(_clock.monotonic()), cancel=cancel)
                return AGAIN_NOW
            if status != "working":
                raise ClientError("protocol", f"task status {quoted(status)} is not known", data=task, check="result")
            return AGAIN

        result: JsonDict = poll_task(task_id, fetch, settle, clock, cancel, "pollIntervalMs")
        return result

    # ------------------------------------------------------------------ notifications and subscriptions

    def hear(self) -> None:
        self._listen_if_wanted()

    def subscribe_resource(self, uri: str, subscribe: bool) -> None:
        """The URI joins (or leaves) the listen's filter; the listen is reopened with it."""
        if subscribe and uri not in self._resource_subscriptions:
            self._resource_subscriptions.append(uri)
        elif not subscribe and uri in self._resource_subscriptions:
            self._resource_subscriptions.remove(uri)
        self._listen_if_wanted(force=True)

    def set_log_level(self, level: str, clock: CallClock) -> None:
        """2026-07-28 has no ``logging/setLevel``: the stamp carries the client's level in every later request."""

    def roots_changed(self) -> None:
        """Modern servers ask for roots in each round: nothing to tell them."""

    def _listen_filter(self) -> JsonDict:
        caps = self.server_capabilities or {}
        wanted: JsonDict = {}
        for capability, key in (("tools", "toolsListChanged"), ("prompts", "promptsListChanged"), ("resources", "resourcesListChanged")):
            section = caps.get(capability)
            if isinstance(section, dict) and section.get("listChanged"):
                wanted[key] = True
        resources = caps.get("resources")
        if self._resource_subscriptions and isinstance(resources, dict) and resources.get("subscribe"):
            wanted["resourceSubscriptions"] = list(self._resource_subscriptions)
        return wanted

    def _listen_if_wanted(self, force: bool = False) -> None:
        """Keep one ``subscriptions/listen`` open while someone hears notifications."""
        hearing = overrides(self.desk.handler, "handle_notification") or self.router.has_subscribers
        wanted = self._listen_filter() if hearing else {}
        calls = self.session.calls
        with self._lock:
            current = self._listen
            if current is not None and not force and calls.is_pending(current):
                return
            self._listen = None
        if current is not None and calls.forget(current) is not None:
            self.session.notify_quietly("notifications/cancelled", {"requestId": current.id, "reason": "resubscribing"})
        if not wanted:
            return
        # A long-lived request nobody waits on: its notifications reach the router.
        clock = CallClock(_clock.monotonic(), float("inf"), float("inf"))
        listen = self.session.start("subscriptions/listen", {"notifications": wanted}, is_call=False, clock=clock, stamp=self.stamp)
        with self._lock:
            self._listen = listen

    def note_tools(self, tools: list[JsonDict]) -> list[JsonDict]:
        """2026-07-28 HTTP: mirror ``x-mcp-header`` arguments; drop tools whose annotations are invalid."""
        if not self.port.mirrors_tool_headers:
            return tools
        kept = []
        for tool in tools:
            found = tool_header_map(tool)
            name = tool.get("name") if isinstance(tool, dict) else None
            if found is None:
                log.warning("mcp_input_sync: tool %r of server %s has invalid x-mcp-header annotations; dropped", name, self.desk.server_id)
                continue
            if isinstance(name, str):
                self._tool_headers[name] = found
            kept.append(tool)
        return kept

    def close(self, answer: bool) -> None:
        """Nothing is answered in this era; the desk sets the callbacks' tokens."""


def _retry(params: JsonDict, responses: Optional[Mapping[str, Any]], state: Optional[str]) -> JsonDict:
    """A round's retry params; the caller's own ``_meta`` keys (``meta=``) go with every round."""
    retry = modern.retry_params(params, responses, state)
    if "_meta" in params:
        retry["_meta"] = params["_meta"]
    return retry
