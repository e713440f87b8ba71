"""Routing server notifications, logs and progress (docs/index.md#notifications-and-logs).

The reader thread calls :meth:`NotificationRouter.route`; the handler's hooks,
the subscribers and the progress callbacks then run on the notification
thread, one at a time, in arrival order. At most ``capacity`` jobs wait; the
rest are dropped and counted.
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Callable, Optional

from . import _clock, reflect
from ._calls import CallTable
from ._era import ClientEra
from ._protocol.budget import TokenBucket
from ._protocol.caching import STALE_NOTICES
from ._protocol.jsonrpc import JsonDict
from ._runtime.notify import NotificationPump
from ._stats import Stats
from .handler import InputContext, InputHandler, overrides

log = logging.getLogger("mcp_input_sync")

Subscriber = Callable[[str, JsonDict], None]

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class Subscription:
    """A registered notification subscriber; call it, use ``with`` or ``unsubscribe()`` to remove it."""

    def __init__(self, router: "NotificationRouter", callback: Subscriber) -> None:
        self._router: Optional[NotificationRouter] = router
        #: The subscribed function.
        self.callback = callback

    def unsubscribe(self) -> None:
        """Stop receiving notifications (idempotent)."""
        router, self._router = self._router, None
        if router is not None:
            router.remove(self)

    def __call__(self) -> None:
        self.unsubscribe()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unsubscribe()


class NotificationRouter:
    """Sends each server notification where docs/index.md#notifications-and-logs says."""

    def __init__(
        self,
        *,
        handler: Optional[InputHandler],
        calls: CallTable,
        stats: Stats,
        client_name: str,
        server_id: str,
        era: ClientEra,
        pump: NotificationPump,
        log_rate_limit: tuple[float, int],
        log_level: str,
    ) -> None:
        self.handler = handler
        self.calls = calls
        self.stats = stats
        self.client_name = client_name
        self.server_id = server_id
        #: The client's era (``ctx.era``): read here, decided elsewhere.
        self.era = era
        #: Runs the handler's hooks, the subscribers and progress callbacks (started when the client opens).
        self.pump = pump
        self.server_log = logging.getLogger(f"mcp_input_sync.server.{server_id}")
        self.has_log_hook = overrides(handler, "handle_log")
        self.has_notification_hook = overrides(handler, "handle_notification")
        self._subscribers: tuple[Subscription, ...] = ()
        self._lock = threading.Lock()
        #: The log rate limit; guarded by ``_lock``.
        self.log_budget = TokenBucket(*log_rate_limit, _clock.monotonic())
        self._log_level = log_level
        #: The level chosen by ``client.set_log_level`` (None: ``log_level``, when logs are wanted).
        self._chosen_level: Optional[str] = None
        #: ``stale(method, params)``: the response cache drops what a list_changed or
        #: resources/updated notification makes stale, before anyone hears of it (None: no cache).
        self.stale: Optional[Callable[[str, JsonDict], None]] = None
        #: Moves whenever :meth:`log_level` may answer otherwise (a level chosen, a subscriber
        #: added or removed): a 2026-07-28 call asks for the level again only then. Under ``_lock``.
        self.level_version = 0

    def follow(self, calls: CallTable) -> None:
        """A reconnect: progress is matched against the new connection's calls from now on."""
        self.calls = calls

    # ------------------------------------------------------------------ subscribers

    def add(self, callback: Subscriber) -> Subscription:
        sub = Subscription(self, callback)
        with self._lock:
            self._subscribers = self._subscribers + (sub,)
            self.level_version += 1
        return sub

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            self._subscribers = tuple(s for s in self._subscribers if s is not sub)
            self.level_version += 1

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    @property
    def wants_logs(self) -> bool:
        """True when someone reads log entries: a handle_log hook or a subscriber."""
        return self.has_log_hook or bool(self._subscribers)

    def choose_level(self, level: str) -> None:
        """``client.set_log_level``: the level asked for from now on, whoever reads the entries."""
        with self._lock:
            self._chosen_level = level
            self.level_version += 1

    def log_level(self) -> Optional[str]:
        """The log level a 2026-07-28 request asks for in its ``_meta`` (None: nobody reads logs)."""
        chosen = self._chosen_level
        if chosen is not None:
            return chosen
        return self._log_level if self.has_log_hook or self._subscribers else None

    # ------------------------------------------------------------------ reader thread

    def route(self, method: str, params: Any) -> None:
        """Reader thread: queue one notification (not notifications/cancelled)."""
        if type(params) is not dict:
            params = {} if params is None else {"value": params}
        if method == "notifications/progress":
            self._progress(params)
            return
        if method == "notifications/message":
            now = _clock.monotonic()
            with self._lock:
                allowed = self.log_budget.take(1, now)
            if not allowed:
                self.stats.add("logs_dropped")
                return
            self._post(self._deliver_log, params)
        else:
            stale = self.stale
            if stale is not None and method in STALE_NOTICES:
                stale(method, params)
            self._post(self._deliver, method, params)

    def _post(self, job: Callable[..., None], *args: Any) -> None:
        if not self.pump.post(job, *args):
            self.stats.add("notifications_dropped")

    def _progress(self, params: JsonDict) -> None:
        call = self.calls.by_progress(params.get("progressToken"))
        if call is None:
            return  # unknown or finished token
        progress = params.get("progress")
        if isinstance(progress, bool) or not isinstance(progress, (int, float)):
            return
        total = params.get("total")
        has_total = isinstance(total, (int, float)) and not isinstance(total, bool)
        if not _finite(progress) or (has_total and not _finite(total)):
            # an infinity (a number too large for a float) is no progress: refused and counted
            self.stats.add("malformed")
            log.debug("mcp_input_sync: server %s sent a progress notification with a number that is not finite; dropped", self.server_id)
            return
        if call.clock.resets:  # reset_timeout_on_progress: real progress restarts the call's timeout
            self.calls.progressed(call, float(progress), _clock.monotonic())
        if call.progress is None:
            return  # progress asked for only to keep the call alive
        update: JsonDict = {"progress": progress}
        if has_total:
            update["total"] = total
        message = params.get("message")
        if isinstance(message, str):
            update["message"] = reflect.text(message, 4096)
        self._post(call.progress, update)

    # ------------------------------------------------------------------ notification thread

    def _context(self) -> InputContext:
        return InputContext(client=self.client_name, server_id=self.server_id, era=self.era.name)

    def _deliver(self, method: str, params: JsonDict) -> None:
        if self.has_notification_hook:
            assert self.handler is not None
            try:
                self.handler.handle_notification(method, params, self._context())
            except BaseException:
                log.exception("mcp_input_sync: handle_notification(%r) raised; skipped", method)
        self._publish(method, params)

    def _deliver_log(self, params: JsonDict) -> None:
        entry = reflect.log_entry(params)
        if entry is None:
            return
        if self.has_log_hook:
            assert self.handler is not None
            try:
                self.handler.handle_log(entry, self._context())
            except BaseException:
                log.exception("mcp_input_sync: handle_log raised; skipped")
        else:
            level = _LOG_LEVELS.get(str(entry["level"]), logging.INFO)
            # sanitised already; lone surrogates are escaped so no log handler fails on them
            data = _escaped(str(entry.get("data")))
            logger = entry.get("logger")
            if logger is not None:
                self.server_log.log(level, "[%s] %s", _escaped(str(logger)), data)
            else:
                self.server_log.log(level, "%s", data)
        self.stats.add("logs_delivered")
        self._publish("notifications/message", entry)

    def _publish(self, method: str, params: JsonDict) -> None:
        for sub in self._subscribers:
            try:
                sub.callback(method, params)
            except BaseException:
                log.exception("mcp_input_sync: subscriber %r raised; skipped", sub.callback)


def _finite(number: Any) -> bool:
    """True for an int (of any size) or a finite float."""
    return isinstance(number, int) or math.isfinite(number)


def _escaped(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udxxx``: any log handler can write it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
