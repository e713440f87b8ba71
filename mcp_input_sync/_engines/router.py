"""Per-tool eras over HTTP: a router above a legacy engine and a 2026-07-28 engine (docs/modern.md#which-era).

A server may offer both eras on one endpoint and refuse a tool in the era of
the handshake (its own error says which era the tool needs). The client then
keeps its handshake session and calls that tool in 2026-07-28 beside it, as
requests' ``Session.get_adapter`` picks an adapter by URL: :class:`EraRouter`
picks the engine by tool, from what the :class:`~mcp_input_sync._era.EraCache`
learnt, and learns from each era refusal. It is built only when a session may
mix eras (HTTP, preferring the handshake era: ``Handshake.mixes_eras``);
otherwise the client holds its one engine and a call passes through nothing
more. The router takes both engines ready-made, so it imports neither.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping, Optional, Union

from .._calls import CallSpec, ProgressCallback
from .._era import EraCache
from .._protocol import eras
from .._protocol.deadlines import CallClock
from .._protocol.jsonrpc import JsonDict
from .._protocol.modern import PendingCall
from ..errors import ClientError
from .base import EraEngine, wrong_era


class EraRouter:
    """The client's engine when eras mix: the session's (legacy) engine for all but the tools learnt
    to need 2026-07-28, whose calls and resumes go to the engine beside it.

    Everything but a tool call is the session's: requests, tasks, logs,
    subscriptions and roots go to the legacy engine, which also hears the
    server (the session's receiver is that engine, never the router).
    """

    era = eras.LEGACY

    def __init__(self, legacy: EraEngine, modern: EraEngine, endpoint: str, cache: EraCache) -> None:
        """``endpoint`` keys what ``cache`` learns (the transport's ``era_key``), so other clients of it know."""
        self.legacy = legacy
        self.modern = modern
        self.endpoint = endpoint
        self.cache = cache

    @property
    def version(self) -> Optional[str]:
        return self.legacy.version

    def engine_for(self, method: str, params: JsonDict) -> EraEngine:
        """The engine of a call's era: 2026-07-28 for a tool learnt to need it, else the session's."""
        if method == "tools/call" and self.cache.tool_era(self.endpoint, str(params.get("name"))) == eras.MODERN:
            return self.modern
        return self.legacy

    def call(self, method: str, params: JsonDict, spec: CallSpec) -> Union[JsonDict, PendingCall]:
        engine = self.engine_for(method, params)
        try:
            return engine.call(method, params, spec)
        except ClientError as exc:
            data = exc.data
            if engine is self.modern or exc.check != "era" or not isinstance(data, dict) or data.get("needs") != eras.MODERN_VERSION:
                raise
            # learnt from the server's own refusal; never sent again (the tool may have had effects)
            self.cache.learn_tool(self.endpoint, str(params.get("name")), eras.MODERN)
            cause = exc.__cause__ if isinstance(exc.__cause__, ClientError) else exc
            raise (wrong_era(engine.era, engine.version, method, params, exc=cause, learnt=True) or exc) from cause

    def resume(self, pending: PendingCall, responses: Mapping[str, Any], spec: CallSpec) -> Union[JsonDict, PendingCall]:
        """Only a 2026-07-28 call defers its input, so a pending call is the engine beside's."""
        return self.modern.resume(pending, responses, spec)

    # ------------------------------------------------------------------ the session's own

    def started(self, version: str, server_capabilities: Optional[JsonDict]) -> Optional[JsonDict]:
        """The handshake chose the legacy era: that engine starts; the one beside needs no start (no listen)."""
        return self.legacy.started(version, server_capabilities)

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
        return self.legacy.request(
            method, params, is_call=is_call, clock=clock, assigns=assigns, progress=progress, cancel=cancel, idempotent=idempotent
        )

    def await_task(self, task_id: str, spec: CallSpec) -> JsonDict:
        return self.legacy.await_task(task_id, spec)

    def hear(self) -> None:
        self.legacy.hear()

    def subscribe_resource(self, uri: str, subscribe: bool) -> None:
        self.legacy.subscribe_resource(uri, subscribe)

    def set_log_level(self, level: str, clock: CallClock) -> None:
        self.legacy.set_log_level(level, clock)

    def roots_changed(self) -> None:
        self.legacy.roots_changed()

    def note_tools(self, tools: list[JsonDict]) -> list[JsonDict]:
        return self.legacy.note_tools(tools)

    def close(self, answer: bool) -> None:
        """Close the engine beside; the legacy engine is the runtime's (it heard the server from the
        client's opening on), and the client closes it whatever the era, once."""
        self.modern.close(answer)
