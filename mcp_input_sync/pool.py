"""A pool of clients of one server, each leased for a whole call (docs/web.md#many-users-on-one-stdio-server).

::

    import mcp_input_sync as mis

    pool = mis.ClientPool(lambda: mis.connect_stdio(["python", "server.py"], handler=handler), max_size=8)
    result = pool.call_tool("book_trip", {"city": "Porto"}, assigns={"user": user_id})
    with pool.lease() as client:                 # several calls in a row on one client
        client.call_tool("pack_bags", {"items": 2}, assigns={"user": user_id})
    pool.close()

Over stdio a server request names no call, so the client ties it to a call
only while that call is the client's only one in flight
(docs/reference.md#tying-server-requests-to-calls). A leased client runs one
caller's calls at a time: every server request during a call is tied to it
and its callbacks see that call's ``assigns``. A call that ended without its
result (timeout, ``cancel``, Ctrl-C) may still be at work on the server and
ask for input later, when its client serves someone else: the pool retires
such a client instead of leasing it again. Clients open lazily, up to
``max_size``; each is a connection of its own (over stdio, a server process
of its own).
"""

from __future__ import annotations

import contextlib
import threading
from functools import partial
from typing import Any, Callable, Iterator, Mapping, Optional

from . import _clock
from ._runtime import RealBudget, start_thread
from .client import Client, ClientState
from .errors import ClientError

__all__ = ["ClientPool"]


class ClientPool:
    """Clients of one server, opened lazily by ``factory`` up to ``max_size``, each leased for a whole call.

    Args:
        factory: opens one client, e.g. ``lambda: mis.connect_stdio(argv, handler=h)``;
            a client it returns unopened is opened by the pool.
        max_size: the most clients open at once (default 4).
        timeout: how many seconds a lease waits for a free client (default 30)
            before it raises ``ClientError(kind="timeout", check="pool")``.

    Thread-safe. A client whose connection broke (it closed itself, or a
    call on it raised ``ClientError(kind="transport")``) is closed and
    replaced by a fresh one when next needed; so is a client that holds an
    abandoned call (:attr:`Client.abandoned_calls`: one that timed out, was
    cancelled or interrupted, and whose late answer has not come), because
    the server may still ask for input on its behalf, and over stdio that
    request would reach the next user's call. :meth:`close`
    closes every client, leased or not. The pool starts no thread of its
    own except, in :meth:`close`, one per client to close them together.
    """

    def __init__(self, factory: Callable[[], Client], max_size: int = 4, *, timeout: float = 30.0) -> None:
        if not callable(factory):
            raise TypeError("factory must be a callable that opens one client")
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
            raise ValueError("max_size must be an int of at least 1")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise ValueError("timeout must be a number of seconds, 0 or more")
        self.factory = factory
        self.max_size = max_size
        self.timeout = float(timeout)
        self._cond = threading.Condition()
        self._idle: list[Client] = []
        self._all: list[Client] = []
        self._opening = 0
        self._closed = False

    def __repr__(self) -> str:
        return f"<ClientPool max_size={self.max_size} open={self.size} leased={self.leased} closed={self._closed}>"

    def __enter__(self) -> "ClientPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def size(self) -> int:
        """How many clients are open (leased or idle)."""
        with self._cond:
            return len(self._all)

    @property
    def leased(self) -> int:
        """How many clients are leased now."""
        with self._cond:
            return len(self._all) - len(self._idle)

    # ------------------------------------------------------------------ leases

    @contextlib.contextmanager
    def lease(self, *, timeout: Optional[float] = None) -> Iterator[Client]:
        """Lease one client for the ``with`` block; nobody else's calls run on it meanwhile.

        Waits at most ``timeout`` seconds (default: the pool's) for a free
        client, opening a new one while fewer than ``max_size`` are open.

        Raises:
            ClientError: ``timeout`` (check ``pool``) when no client frees up in
                time; ``closed`` once the pool is closed; what ``factory``
                raises when a new client cannot be opened.
        """
        client = self._acquire(self.timeout if timeout is None else timeout)
        broken = False
        try:
            yield client
        except ClientError as exc:
            broken = exc.kind == "transport"  # the connection may be gone even before the client noticed
            raise
        finally:
            self._release(client, broken)

    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
        """:meth:`Client.call_tool` on a leased client (the options are its own: ``assigns``, ``timeout``...)."""
        with self.lease() as client:
            return client.call_tool(name, arguments, **options)

    def read_resource(self, uri: str, **options: Any) -> Any:
        """:meth:`Client.read_resource` on a leased client."""
        with self.lease() as client:
            return client.read_resource(uri, **options)

    def get_prompt(self, name: str, arguments: Optional[Mapping[str, str]] = None, **options: Any) -> Any:
        """:meth:`Client.get_prompt` on a leased client."""
        with self.lease() as client:
            return client.get_prompt(name, arguments, **options)

    def _acquire(self, timeout: float) -> Client:
        deadline = _clock.monotonic() + max(0.0, timeout)
        broken: list[Client] = []
        try:
            with self._cond:
                while True:
                    if self._closed:
                        raise ClientError("closed", "the client pool is closed")
                    while self._idle:
                        client = self._idle.pop()  # the most recently used: its connection is warm
                        if client.state is ClientState.OPEN:
                            return client
                        self._all.remove(client)  # its connection broke while it was idle
                        broken.append(client)
                    if len(self._all) + self._opening < self.max_size:
                        self._opening += 1
                        break
                    left = deadline - _clock.monotonic()
                    if left <= 0:
                        raise ClientError(
                            "timeout",
                            f"no client of the pool was free within {timeout:g} s: all {self.max_size} are leased "
                            "(raise ClientPool's max_size or timeout)",
                            check="pool",
                        )
                    self._cond.wait(min(left, _clock.MAX_WAIT))
        finally:
            for client in broken:
                client.close()
        return self._open()

    def _open(self) -> Client:
        """Open one client for a lease (the slot was reserved in ``_opening``)."""
        try:
            client = self.factory()
            if not isinstance(client, Client):
                raise TypeError(f"the pool's factory returned {type(client).__name__}, not a Client")
            if client.state is ClientState.UNOPENED:
                client.open()
        except BaseException:
            with self._cond:
                self._opening -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._opening -= 1
            if not self._closed:
                self._all.append(client)
                return client
        client.close()
        raise ClientError("closed", "the client pool is closed")

    def _release(self, client: Client, broken: bool) -> None:
        # An abandoned call is retired with its client, not waited out: a server that honours the cancel never
        # answers it, so "until its late answer" may be never, and a client kept out would hold a slot for good.
        broken = broken or client.abandoned_calls != 0
        with self._cond:
            keep = not broken and not self._closed and client.state is ClientState.OPEN and client in self._all
            if keep:
                self._idle.append(client)
            elif client in self._all:
                self._all.remove(client)
            self._cond.notify()
        if not keep:
            client.close()  # broken (it closed itself: this returns at once) or the pool closed

    # ------------------------------------------------------------------ closing

    def close(self, timeout: float = 5.0) -> None:
        """Close every client, leased or idle, together, within about ``timeout`` real seconds (idempotent).

        Calls in flight on leased clients raise ``ClientError(kind="closed")``;
        leases asked for afterwards raise it too.
        """
        with self._cond:
            self._closed = True
            clients, self._all, self._idle = self._all, [], []
            self._cond.notify_all()
        if not clients:
            return
        threads = [start_thread("pool-close", partial(client.close, timeout)) for client in clients]
        RealBudget(timeout + 1.0).wait_until(lambda: not any(thread.is_alive() for thread in threads), timeout + 1.0)
