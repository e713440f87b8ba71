"""HTTP requests that another thread can abort, even before the response's headers arrive.

``requests`` offers no way to stop a request blocked in a socket read: the
timeout it takes applies to each read, so a server that sends its status
line one byte a second holds a thread for as long as it likes. Here each
connection a request uses is registered with that request's
:class:`Abort`; :meth:`Abort.fire` shuts the socket down, which wakes the
blocked read with an error. A connection made after ``fire`` is shut at once.
A connection given back to its pool is taken off its request's handles
first, so a late ``fire`` (a deadline that passed as the answer came) never
shuts a connection another request has taken meanwhile; :meth:`Abort.release`
ends a handle's reach once its request is over.

Imported only by the HTTP transport (it imports ``requests`` and ``urllib3``).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from typing import Any, Iterator, Optional

import requests.adapters
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .. import _clock

_local = threading.local()


class Abort:
    """The abort handle of one request (or a few, made one after another on one thread).

    ``deadline``: the library-clock time at which the request is cut (None:
    only when the transport closes).
    """

    def __init__(self, deadline: Optional[float] = None) -> None:
        self.deadline = deadline
        self.fired = False
        self._released = False
        self._connections: list[Any] = []
        self._lock = threading.Lock()

    def add(self, connection: Any) -> None:
        with self._lock:
            if self._released:
                return
            self._connections.append(connection)
            fired = self.fired
        if fired:
            _shut(connection)

    def discard(self, connection: Any) -> None:
        """``connection`` went back to its pool: another request may take it, so it is no longer shut here."""
        with self._lock:
            try:
                self._connections.remove(connection)
            except ValueError:
                pass

    def fire(self) -> None:
        """Shut every connection of the request; later ones are shut as they connect.

        Shut under the lock :meth:`discard` takes, so a connection given back
        to its pool (and perhaps taken by another request) is never shut.
        """
        with self._lock:
            if self._released:
                return
            self.fired = True
            for connection in self._connections:
                _shut(connection)

    def release(self) -> bool:
        """The request is over, or its response went to a stream of its own: :meth:`fire` does nothing from now on.

        Returns False when it had fired already (its connections are shut).
        """
        with self._lock:
            self._released = True
            self._connections = []
            return not self.fired

    def bound(self, timeouts: tuple[float, float]) -> tuple[float, float]:
        """``(connect, read)`` timeouts whose connect ends at the deadline: a connection
        being made has no socket yet for :meth:`fire` to shut."""
        if self.deadline is None:
            return timeouts
        left = self.deadline - _clock.monotonic()
        return (max(0.05, min(timeouts[0], left)), timeouts[1])


def _shut(connection: Any) -> None:
    # http.client lets go of the socket of a response that ends the connection (Connection:
    # close): that response still reads from the one the request was sent on
    _shut_socket(getattr(connection, "sock", None) or getattr(connection, "_mis_sock", None))


def shut_response(response: "requests.Response") -> None:
    """Shut the socket a response is read from, waking a reader blocked on it."""
    raw = getattr(response, "raw", None)
    connection = getattr(raw, "_connection", None) or getattr(raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:
        fp = getattr(raw, "_fp", None)
        sock = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
    _shut_socket(sock)


def _shut_socket(sock: Optional[socket.socket]) -> None:
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


@contextlib.contextmanager
def abortable(handle: Optional[Abort]) -> Iterator[None]:
    """Register the connections of the requests made in this block (on this thread) with ``handle``.

    Blocks nest: a request made in an inner block registers with every
    handle in force (an OAuth exchange made while the transport posts a
    request is aborted by either), and leaving a block restores the outer
    ones. With None the block adds no handle.
    """
    if handle is None:
        yield
        return
    outer: tuple[Abort, ...] = getattr(_local, "handles", ())
    _local.handles = (*outer, handle)
    try:
        yield
    finally:
        _local.handles = outer


class _Tracked:
    _mis_abort: tuple[Abort, ...] = ()
    _mis_sock: Optional[socket.socket] = None

    def request(self, *args: Any, **kwargs: Any) -> Any:
        handles: tuple[Abort, ...] = getattr(_local, "handles", ())
        self._mis_abort = handles
        for handle in handles:
            handle.add(self)
        try:
            return super().request(*args, **kwargs)  # type: ignore[misc]
        finally:
            self._mis_sock = self.sock  # type: ignore[attr-defined]

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        if any(handle.fired for handle in self._mis_abort):
            _shut(self)


class _HTTPConnection(_Tracked, HTTPConnection):
    pass


class _HTTPSConnection(_Tracked, HTTPSConnection):
    pass


class _Returning:
    def _put_conn(self, conn: Any) -> None:
        # back in the pool, the connection is no longer this request's to abort
        if conn is not None:
            for handle in getattr(conn, "_mis_abort", ()):
                handle.discard(conn)
            conn._mis_abort = ()
        super()._put_conn(conn)  # type: ignore[misc]


class _HTTPPool(_Returning, HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(_Returning, HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class AbortableAdapter(requests.adapters.HTTPAdapter):
    """An adapter whose direct connections register with the :func:`abortable` block in force."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


def abortable_session() -> requests.Session:
    """A new session whose requests can be aborted (see the module docstring)."""
    session = requests.Session()
    session.mount("http://", AbortableAdapter())
    session.mount("https://", AbortableAdapter())
    return session


#: An internal class of ``urllib3`` or ours named in a ``requests`` error, with its host and port.
_POOL_NAME = re.compile(r"<[^<>]*object at 0x[0-9a-f]+>: |\b_?\w*(?:Pool|Connection)\(host=[^()]*\)(?:: )?")


def never_connected(exc: BaseException) -> bool:
    """True when a ``requests`` error says no connection was made (refused, no route, a name not
    resolved, a connect timeout): the request never reached the server."""
    from urllib3.exceptions import ConnectTimeoutError  # NewConnectionError and NameResolutionError too

    seen: set[int] = set()
    inner: Optional[BaseException] = exc
    while inner is not None and id(inner) not in seen:
        if isinstance(inner, (ConnectTimeoutError, requests.exceptions.ConnectTimeout)):
            return True
        seen.add(id(inner))
        reason = getattr(inner, "reason", None)
        inner = reason if isinstance(reason, BaseException) else next((a for a in inner.args if isinstance(a, BaseException)), None)
    return False


def why_unreachable(exc: BaseException) -> str:
    """The innermost cause of a ``requests`` error, without the names of internal classes."""
    seen: set[int] = set()
    inner: BaseException = exc
    while id(inner) not in seen:
        seen.add(id(inner))
        reason = getattr(inner, "reason", None)
        nested = reason if isinstance(reason, BaseException) else next((a for a in inner.args if isinstance(a, BaseException)), None)
        if nested is None:
            break
        inner = nested
    text = _POOL_NAME.sub("", str(inner)).strip() or type(inner).__name__
    return text[:300]


class Stream:
    """One open response the HTTP transport reads (a POST's answer, an event stream, the GET stream)."""

    __slots__ = ("response", "request_id", "closed")

    def __init__(self, response: "requests.Response", request_id: Any) -> None:
        self.response = response
        self.request_id = request_id
        self.closed = False

    def abort(self) -> None:
        """Close the stream now, waking a reader blocked in a read."""
        self.closed = True
        shut_response(self.response)
        try:
            self.response.close()
        except Exception:  # noqa: BLE001 - closing a broken response may raise anything
            pass
