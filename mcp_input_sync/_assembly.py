"""One client's parts, built in dependency order (docs/architecture.md#the-client).

Each step builds only from what the steps before it returned, and every part
gets what it needs when it is built; no part sets another's fields.

1. :func:`build_core` (``Client.__init__``, starts nothing): the stats, the
   era, the call table, the notification pump and router, the session.
2. :func:`start_runtime` (``open``): the watchdog, the handler pool and the
   pump's thread, the input desk, and the legacy engine, which hears the
   server until the handshake decides; last, the transport is configured
   (its ``Setup``, with the runtime's deadline sweep), before it starts.
3. :func:`connect` (``open``, the transport running): the handshake returns
   what it negotiated before anything more is sent; then the engine of that
   era is built (or, legacy, started) and hears the server; over HTTP, when
   eras may mix per tool, the client gets an era router above the legacy
   engine and a 2026-07-28 engine beside it.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Optional

from ._calls import CallTable
from ._engines.base import EraEngine
from ._engines.legacy import LegacyEngine
from ._engines.modern import ModernEngine
from ._engines.router import EraRouter
from ._era import ClientEra, EraCache
from ._handshake import Handshake, Negotiated
from ._input import InputDesk
from ._notifications import NotificationRouter
from ._port import Port
from ._protocol import eras
from ._protocol.record import Record
from ._runtime import RealBudget
from ._runtime.deadlines import DeadlineSweep
from ._runtime.notify import NotificationPump
from ._runtime.watchdog import Watchdog
from ._runtime.relay import Relay
from ._runtime.workers import HandlerPool
from ._session import Session
from ._stats import Stats
from ._telemetry import Tracing
from .errors import ClientError
from .options import Options


class Core(Record):
    """The parts a client has from its construction on (no thread runs yet)."""

    __slots__ = ("stats", "era", "pump", "router", "session")

    def __init__(self, stats: Stats, era: ClientEra, pump: NotificationPump, router: NotificationRouter, session: Session) -> None:
        self.stats = stats
        self.era = era
        self.pump = pump
        self.router = router
        self.session = session


class Runtime(Record):
    """The parts an opening client adds: threads, the deadline sweep, the input desk and the legacy engine."""

    __slots__ = ("watchdog", "pool", "sweep", "desk", "legacy")

    def __init__(self, watchdog: Watchdog, pool: HandlerPool, sweep: DeadlineSweep, desk: InputDesk, legacy: LegacyEngine) -> None:
        self.watchdog = watchdog
        self.pool = pool
        #: The one deadline sweep: callbacks on callers' threads (desk), handler_timeout (legacy), HTTP aborts.
        self.sweep = sweep
        self.desk = desk
        self.legacy = legacy


def build_core(
    port: Port,
    opts: Options,
    name: str,
    server_id: str,
    is_live: Callable[[], bool],
    on_broken: Callable[[], Any],
    on_unreachable: Optional[Callable[[], Any]] = None,
    carried: Optional[Core] = None,
    tracing: Optional[Tracing] = None,
) -> Core:
    """Step 1: the router before the session, which hands it every notification.

    A reconnect passes the broken connection's core as ``carried``: the
    stats, the era, the notification thread and the router (its handler
    hooks, subscribers and log level) go on; the call table and the
    session are new, and the router follows the new table.
    """
    calls = CallTable(ties_alone=not port.ties_by_stream)
    if carried is None:
        stats, era, pump = Stats(), ClientEra(), NotificationPump()
        router = NotificationRouter(
            handler=opts.handler, calls=calls, stats=stats, client_name=name, server_id=server_id,
            era=era, pump=pump, log_rate_limit=opts.log_rate_limit, log_level=opts.log_level,
        )
    else:
        stats, era, pump, router = carried.stats, carried.era, carried.pump, carried.router
        router.follow(calls)
    session = Session(
        port, stats=stats, server_id=server_id, default_assigns=opts.assigns, depth_limit=opts.limits["json_depth"],
        route=router.route, is_live=is_live, on_broken=on_broken, calls=calls, drain=pump.drain, on_unreachable=on_unreachable,
    )
    session.tracing = tracing
    return Core(stats, era, pump, router, session)


def start_runtime(core: Core, port: Port, opts: Options, name: str, server_id: str) -> Runtime:
    """Step 2: the threads, the desk, and the legacy engine hearing the server."""
    watchdog = Watchdog()
    watchdog.start()
    try:
        # answers that cost a round trip each (HTTP POSTs) are better written by many workers at once;
        # otherwise every queued job is an open request, so the deadline sweep wakes the watchdog
        # within 0.1 s to look at the nudge: no wake-up per burst (each would be a thread switch)
        nudge = None if port.slow_answers else partial(watchdog.watch_fast, wake=False)
        # a transport that can hand its reading on (stdio) runs quick callbacks on its reader
        relay = None if port.relief is None else Relay(port.relief.relieve, partial(watchdog.watch_fast, wake=False))
        pool = HandlerPool(opts.max_server_requests, nudge=nudge, relay=relay)
        core.pump.start()  # a reconnect's carried pump is running already: a no-op
        # the runtime's, not a part's: the desk, the legacy engine and the transport's aborts share one check
        sweep = DeadlineSweep(watchdog.watch)
        desk = InputDesk(
            handler=opts.handler, options=opts, stats=core.stats, client_name=name, server_id=server_id,
            watchdog=watchdog, sweep=sweep, era=core.era, tracing=core.session.tracing,
        )
        legacy = LegacyEngine(
            session=core.session, desk=desk, port=port, options=opts, router=core.router, pool=pool, watchdog=watchdog,
            sweep=sweep,
        )
        # told before start: HTTP aborts a request it posts on the caller's thread through the sweep
        port.configure(server_id, opts.limits, core.session.on_lost, sweep.track, opts.retry, core.session.on_retry)
    except BaseException:
        watchdog.stop(RealBudget(1.0))
        raise
    core.session.serve(legacy, relay)
    return Runtime(watchdog, pool, sweep, desk, legacy)


def connect(
    core: Core, runtime: Runtime, port: Port, opts: Options, name: str, server_id: str, era_cache: EraCache
) -> tuple[EraEngine, Negotiated]:
    """Step 3: negotiate (docs/reference.md#era-detection), then start the era's engine.

    Returns the engine and what was negotiated, with the server's facts.
    A remembered era whose engine fails to start is forgotten and probed afresh.
    """
    handshake = Handshake(
        session=core.session, port=port, configure=runtime.desk.configure, options=opts, handler=opts.handler,
        client_name=name, server_id=server_id, log_level=core.router.log_level, era_cache=era_cache,
    )
    negotiated = handshake.negotiate()
    try:
        engine, negotiated = _start_engine(negotiated, handshake, core, runtime, port, opts, era_cache)
    except ClientError as exc:
        if not handshake.from_cache or exc.kind in ("transport", "auth", "closed"):
            raise
        engine, negotiated = _start_engine(handshake.reprobe(), handshake, core, runtime, port, opts, era_cache)
    handshake.remember(negotiated.era, engine.version or negotiated.version)
    return engine, negotiated


def _start_engine(
    negotiated: Negotiated, handshake: Handshake, core: Core, runtime: Runtime, port: Port, opts: Options, era_cache: EraCache
) -> tuple[EraEngine, Negotiated]:
    """The engine of the negotiated era hears the server, then starts; returns it and the server's facts."""
    session, desk, router = core.session, runtime.desk, core.router
    if negotiated.era == eras.MODERN:
        stamp = handshake.stamp.at_version(negotiated.version)
        modern = ModernEngine(session=session, desk=desk, port=port, options=opts, router=router, stamp=stamp)
        session.serve(modern)  # first: from here on no server request is answered
        session.calls.ties_alone = False  # and none is tied: a call that ended leaves nothing to tell apart
        core.era.decide(eras.MODERN)
        discover = negotiated.discover
        if discover is not None:
            negotiated = negotiated.with_discover(discover)
        asked = modern.started(negotiated.version, negotiated.server_capabilities if discover is not None else None)
        return modern, negotiated if asked is None else negotiated.with_discover(asked)
    legacy = runtime.legacy
    core.era.decide(eras.LEGACY)
    session.serve(legacy, runtime.pool.relay)  # as before the decision (a re-probe may follow a modern guess)
    engine: EraEngine = legacy  # one era: the client holds the engine itself, and a call passes through nothing more
    if handshake.mixes_eras:  # HTTP: 2026-07-28 calls beside the session, picked by tool (docs/modern.md#which-era)
        modern = ModernEngine(session=session, desk=desk, port=port, options=opts, router=router, stamp=handshake.stamp)
        engine = EraRouter(legacy, modern, port.era_key() or "", era_cache)
    engine.started(negotiated.version, negotiated.server_capabilities)
    return engine, negotiated
