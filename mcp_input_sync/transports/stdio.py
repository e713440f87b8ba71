"""stdio transport: the server is a child process speaking newline-delimited JSON.

One reader thread reads the server's stdout line by line; a second drains its
stderr into Python logging (sanitised), so a chatty server never blocks on a
full pipe. Both read a bounded amount at a time, so a line over its limit is
read and dropped, never held whole: on stdout ``limits["message_bytes"]``;
on stderr the first :data:`STDERR_LINE_BYTES` are logged and kept in a short
tail (:attr:`StdioTransport.stderr_tail`), which the client quotes, with the
server's exit status (:attr:`StdioTransport.exit_status`), when the server
ends the connection. The server's environment is an allow-list of this
process's variables (:data:`DEFAULT_ENV_VARS`) plus ``env``, unless
``inherit_env`` hands it all of them. ``close`` closes the server's
stdin, waits, then escalates to SIGTERM and SIGKILL, all within its
``timeout`` of real time (counted waits, never ``Popen.wait(timeout=...)``,
which a frozen clock would stall).
"""

from __future__ import annotations

import io
import json
import logging
import os
import select
import subprocess
import threading
import time
from collections import deque
from functools import partial
from typing import IO, Any, Callable, Mapping, Optional, Sequence, cast

from .. import reflect
from .._protocol.limits import DEFAULT_LIMITS
from .._runtime import RealBudget, start_thread
from ._command import DEFAULT_ENV_VARS as DEFAULT_ENV_VARS  # re-exported: the documented names
from ._command import server_environment as server_environment
from ._command import server_name as server_name
from ._lines import Lines, cut_lines
from ._seat import READER, ReadingSeat
from .base import ANSWER, OnClose, OnMessage, Outgoing, Setup, Transport, TransportClosed

log = logging.getLogger("mcp_input_sync")

#: Bytes of one stderr line read, logged and kept; the rest of a longer line is read and dropped.
STDERR_LINE_BYTES = 4096
#: The most one read of the server's stderr asks for (a pipe's capacity on Linux): all a read holds.
STDERR_READ_BYTES = 65536
#: The kept tail of the server's stderr (:attr:`StdioTransport.stderr_tail`): at most this many lines...
STDERR_TAIL_LINES = 20
#: ...and this many characters...
STDERR_TAIL_CHARS = 4096
#: ...each line cut to this many characters, so one long line cannot push out all the others.
STDERR_TAIL_LINE_CHARS = 1024
_CUT = " [cut]"
#: Real seconds the reader waits, once the server's stdout ends, for it to exit and its stderr to end.
SETTLE_SECONDS = 1.0
#: Reading handed to a caller (:meth:`StdioTransport.read_here`): the longest wait of the caller in one poll.
POLL_SLICE = 0.05

class StdioTransport(Transport):
    """Runs ``command`` (an argv list) and talks to it over its stdin and stdout.

    The server's environment is :func:`server_environment` of ``env`` and
    ``inherit_env``; ``cwd`` is its working folder (default: this process's).
    One reader thread delivers every message, in order; ``info`` is not
    needed. Answers can be held back (:meth:`send_later`) and the server
    restarted (:meth:`restart`). Who reads the server's stdout now (the
    reader thread, or a caller reading its own rounds) is :attr:`seat`.
    It offers every capability of the contract itself: ``holding``,
    ``relief``, ``hand_off`` and ``restarter`` are this transport.
    """

    @property
    def holding(self) -> "StdioTransport":
        """Answers held back and written together: :meth:`send_later`, :meth:`flush`."""
        return self

    @property
    def relief(self) -> "StdioTransport":
        """A new reader for a busy one: :meth:`relieve`."""
        return self

    @property
    def hand_off(self) -> "StdioTransport":
        """The reading handed to a caller: :meth:`offer_reading`, :meth:`read_here`, :meth:`release_reading`."""
        return self

    @property
    def restarter(self) -> "StdioTransport":
        """The server started afresh: :meth:`restart`."""
        return self

    def fresh(self) -> "StdioTransport":
        """The same command, environment, folder and write timeout, not started (the ``reconnect`` option)."""
        again = StdioTransport(self.command, env=self.env, cwd=self.cwd, inherit_env=self.inherit_env)
        again.write_timeout = self.write_timeout
        return again

    def trace_attributes(self) -> dict[str, Any]:
        """A pipe: ``network.transport`` ``pipe``."""
        return {"network.transport": "pipe"}

    def cache_identity(self) -> tuple[str, str]:
        """The command and folder, and the environment (what authorizes a stdio server), for a shared cache."""
        env = server_environment(self.env, inherit_env=self.inherit_env)
        return json.dumps([self.command, self.cwd]), json.dumps(sorted(env.items()))

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        inherit_env: bool = False,
    ) -> None:
        if isinstance(command, (str, bytes)) or not command:
            raise TypeError("command must be a non-empty argv list, e.g. ['python', 'server.py']")
        self.command = [str(part) for part in command]
        self.env = dict(env) if env is not None else None
        self.inherit_env = bool(inherit_env)
        self.cwd = cwd
        self.default_server_id = reflect.text(server_name(self.command), 100) or "server"
        self._era_key: Optional[str] = None
        self.process: Optional["subprocess.Popen[bytes]"] = None
        self._stdin: Optional[IO[bytes]] = None
        self._write_lock = threading.Lock()
        self._closing = False
        self._threads: list[threading.Thread] = []
        self._callbacks: Optional[tuple[OnMessage, OnClose]] = None
        self._generation = 0
        self._read: Optional[Callable[[int], None]] = None
        #: The server's stdout cut into lines (None before the start).
        self._lines: Optional[Lines] = None
        self._stdin_fd: Optional[int] = None
        #: Real seconds one message may take to write before the server is given up on.
        self.write_timeout = 10.0
        #: Answers held back by :meth:`send_later`, written with the next write.
        self._pending: list[bytes] = []
        self._pending_size = 0
        #: Longest line (newline excluded) read from the server; longer ones are dropped.
        self.max_message = DEFAULT_LIMITS["message_bytes"]
        self._stderr_log = logging.getLogger(f"mcp_input_sync.server.{self.default_server_id}")
        self._tail: deque[str] = deque()
        self._tail_chars = 0
        self._tail_lock = threading.Lock()
        #: Who reads the server's stdout now (:class:`~mcp_input_sync.transports._seat.ReadingSeat`):
        #: read-only; a fresh seat per start of the server, and one that holds nothing before.
        self.seat = ReadingSeat()
        #: Why the connection was ended from a caller's thread (a Ctrl-C cut a message), or None.
        self._cut_why: Optional[str] = None
        self._on_message: Optional[OnMessage] = None

    @property
    def era_key(self) -> Optional[str]:
        """What the era learnt is remembered by: the argv, cwd and env, hashed (docs/reference.md#era-detection).

        Hashed when first read (only a ``protocol`` preference reads it), unless set.
        The key lives only in this process's memory (an ``EraCache``), so
        Python's own ``hash``, keyed at random per process, keeps the env's
        values out of it as well as SHA-256 would, without loading OpenSSL's
        libcrypto: 3.7 MB of RSS, a fifth of an idle client's
        (docs/performance.md).
        """
        if self._era_key is None:
            blob = repr((self.command, self.cwd, sorted((self.env or {}).items())))
            self._era_key = f"stdio:{hash(blob) & 0xFFFF_FFFF_FFFF_FFFF:016x}"
        return self._era_key

    @era_key.setter
    def era_key(self, key: Optional[str]) -> None:
        self._era_key = key

    @property
    def stderr_tail(self) -> str:
        """The server's last lines of stderr, oldest first, one a line ("" before any).

        Each line is cleaned with :func:`mcp_input_sync.reflect.text`; a line
        longer than :data:`STDERR_TAIL_LINE_CHARS` keeps its start and ends
        with ``[cut]``. At most :data:`STDERR_TAIL_LINES` lines and
        :data:`STDERR_TAIL_CHARS` characters are kept (the oldest go first);
        the tail outlives a restart of the server.
        """
        with self._tail_lock:
            return "\n".join(self._tail)

    @property
    def exit_status(self) -> Optional[int]:
        """The server's exit status once it has ended (negative: killed by that signal), else None."""
        proc = self.process
        return None if proc is None else proc.poll()

    @property
    def stderr_logger(self) -> str:
        """The name of the logger that receives the server's stderr, line by line, at INFO."""
        return self._stderr_log.name

    def _settle(self, proc: "subprocess.Popen[bytes]", stderr_reader: threading.Thread, generation: int) -> None:
        """The server's stdout ended: wait (bounded) for it to exit and for its last stderr lines."""
        budget = RealBudget(SETTLE_SECONDS)

        def moved_on() -> bool:
            return self._closing or generation != self._generation

        budget.wait_until(lambda: moved_on() or proc.poll() is not None, budget.left * 0.5)
        budget.wait_until(lambda: moved_on() or not stderr_reader.is_alive(), budget.left)

    def _keep_stderr(self, line: str) -> None:
        if len(line) > STDERR_TAIL_LINE_CHARS:
            line = line[: STDERR_TAIL_LINE_CHARS - len(_CUT)] + _CUT
        with self._tail_lock:
            tail = self._tail
            tail.append(line)
            self._tail_chars += len(line) + 1  # with its newline: the joined tail is one shorter
            while len(tail) > STDERR_TAIL_LINES or self._tail_chars - 1 > STDERR_TAIL_CHARS:
                self._tail_chars -= len(tail.popleft()) + 1

    def configure(self, setup: Setup) -> None:
        """Name the logger of the server's stderr after ``server_id``; ``limits["message_bytes"]`` bounds one line."""
        self._stderr_log = logging.getLogger(f"mcp_input_sync.server.{setup.server_id}")
        self.max_message = setup.limits["message_bytes"]

    def last_words(self) -> tuple[Optional[int], str]:
        """:attr:`exit_status` and :attr:`stderr_tail`."""
        return self.exit_status, self.stderr_tail

    def restart(self, timeout: float) -> None:
        """Stop the server process (bounded by ``timeout``) and start a fresh one.

        The era probe uses this once for an old server whose reader died on
        the unknown ``server/discover``; the callbacks stay the same.
        """
        callbacks = self._callbacks
        if callbacks is None:
            raise TransportClosed("stdio transport was never started")
        self._generation += 1
        self._stop(RealBudget(min(timeout, 5.0)))
        self._closing = False
        self.start(*callbacks)

    def start(self, on_message: OnMessage, on_close: OnClose) -> None:
        self._callbacks = (on_message, on_close)
        generation = self._generation
        env = None if self.inherit_env and self.env is None else server_environment(self.env, inherit_env=self.inherit_env)
        try:
            proc = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self.cwd,
                start_new_session=True,  # Ctrl-C in the host does not kill the server first
            )
        except OSError as exc:
            raise TransportClosed(f"cannot start {self.command[0]!r}: {exc}") from exc
        self.process = proc
        self._stdin = proc.stdin
        assert proc.stdin is not None
        self._stdin_fd = proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        stdout = proc.stdout
        stderr = proc.stderr
        assert stdout is not None and stderr is not None

        lines = self._lines = Lines(cast(io.BufferedReader, stdout).raw.read, self.max_message, self._write_held)
        seat = self.seat = ReadingSeat(lines, stdout.fileno())
        self._cut_why = None
        self._on_message = on_message

        def read_stdout(ticket: int) -> None:
            error: Optional[BaseException] = None
            seat.reader_begins(ticket)
            try:
                take = lines.take
                while True:
                    line = take()
                    if line is None:
                        break
                    on_message(line)
                    if seat.ticket != ticket:  # relieved while in on_message: a new reader reads on
                        return
                    if seat.state is not READER:  # offered to a caller (offer_reading): wait until it is back
                        if not seat.park(ticket):
                            break
                        if seat.ticket != ticket:  # relieved while the reading came back
                            return
            except (OSError, ValueError) as exc:  # ValueError: read on a closed file
                error = exc
            if self._cut_why is not None and error is None:
                error = TransportClosed(self._cut_why)
            if seat.ticket != ticket:
                return
            if not self._closing and generation == self._generation:
                self._settle(proc, stderr_reader, generation)  # so the client can quote the server's last words
            if not self._closing and generation == self._generation:
                on_close(error)

        def read_stderr() -> None:
            log = self._stderr_log
            try:
                # straight off the pipe, a pipe's worth at a time: one system call (and one
                # turn of the GIL) per 64 KiB of a flood, not per 8 KiB through a BufferedReader
                lines = cut_lines(partial(os.read, stderr.fileno(), STDERR_READ_BYTES), STDERR_LINE_BYTES)
                for raw, cut in lines:
                    text = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if cut:
                        text = reflect.text(text, STDERR_LINE_BYTES - len(_CUT)) + _CUT
                    else:
                        text = reflect.text(text, STDERR_LINE_BYTES)
                    if text:
                        self._keep_stderr(text)
                        log.info("%s", text)
            except (OSError, ValueError):
                pass

        stderr_reader = start_thread("stderr", read_stderr)
        self._read = read_stdout
        self._threads = [start_thread("reader", partial(read_stdout, seat.ticket)), stderr_reader]

    def relieve(self) -> None:
        """A new reader thread reads on; the busy one stops once its ``on_message`` returns.

        When a caller holds the reading (:meth:`read_here`), it goes back to the
        parked reader thread instead, and the caller stops reading
        (:meth:`ReadingSeat.take_back`).
        """
        read = self._read
        if read is None or self._closing or len(self._threads) != 2:
            return
        ticket = self.seat.take_back()
        if ticket:
            self._threads[0] = start_thread("reader", partial(read, ticket))
            self._write_held()  # what the busy reader held back must not wait for it

    # ------------------------------------------------------------------ reading on the caller's thread

    def offer_reading(self, ident: int) -> None:
        """Reader thread, inside ``on_message``: the caller ``ident`` takes the reading over.

        The client calls this as it wakes a caller that will most likely send
        again and wait at once (a 2026-07-28 ``input_required`` round): that
        caller then reads its next response itself (:meth:`read_here`)
        instead of being woken for it by this thread, one thread switch less
        a round. This thread waits (:meth:`ReadingSeat.park`) once
        ``on_message`` returns, and reads on when the reading is given back,
        or as soon as the server writes while the caller is not reading (it
        runs a callback, or its call ended).
        """
        self.seat.offer(ident)

    def read_here(self, done: Callable[[], bool], seconds: float, cancel: Optional[threading.Event] = None) -> bool:
        """Caller thread: read and handle the server's messages here until ``done()``.

        Only for the thread the reading was offered to (:meth:`offer_reading`);
        any other returns False at once. Returns True once ``done()``, keeping
        the reading for the caller's next request (:meth:`release_reading`
        gives it back); False when ``seconds`` (real) pass, ``cancel`` is set,
        the stream ends or fails, the transport closes, or the reading was
        taken back (:meth:`relieve`): the reading is then with the reader
        thread, and the caller waits as any other.

        A ``KeyboardInterrupt`` (Ctrl-C on the main thread) while a message is
        being read or handled here may have cut it in two: the connection is
        then ended (the server is stopped, and every call fails), never left
        to read on from the middle of a message. One during the wait for the
        server is harmless and only passes through.
        """
        seat = self.seat
        me = seat.begin_reading()
        if not me:
            return False
        lines, on_message, poll = self._lines, self._on_message, seat.caller_poll
        assert lines is not None and on_message is not None and poll is not None
        kept = False
        cutting = False  # True while a message is read or handled: a Ctrl-C then may cut it
        try:
            # bounded twice: by the clock (a flood of other messages), and by the real
            # seconds granted to the waits (a frozen clock in tests)
            deadline = time.monotonic() + seconds
            budget = RealBudget(seconds)
            while not done():
                if seat.holder != me:  # taken back (relieve), given back (a callback's own request), closed
                    return False
                cutting = True
                line = lines.in_hand()
                if line is None:
                    cutting = False
                    if self._pending:  # tested here: no call a round when nothing was held back
                        self._write_held()
                    wait = budget.take(POLL_SLICE)
                    if wait <= 0 or time.monotonic() >= deadline or self._closing or (cancel is not None and cancel.is_set()):
                        return False
                    if not poll(wait * 1000.0):
                        continue
                    cutting = True
                    if not lines.fill():  # the end: the reader thread reads it again and ends the connection
                        return False
                    cutting = False
                    continue
                on_message(line)
                cutting = False
            kept = True
            return True
        except (OSError, ValueError):  # the stream failed or was closed: the reader thread sees it too
            return False
        except KeyboardInterrupt:
            if cutting:
                self._cut("interrupted (Ctrl-C) while a message of the server was read")
            raise
        finally:
            seat.end_reading(kept)

    def _cut(self, why: str) -> None:
        """A message may have been cut in two: end the connection; the reader tells the client ``why``."""
        self._cut_why = why
        self._kill()

    def release_reading(self) -> None:
        """Caller thread: its call has ended; the reading, if it holds it, goes back to the reader thread."""
        self.seat.give_back()

    def send_later(self, data: bytes) -> bool:
        """Hold ``data`` back to be written with the next write (or :meth:`flush`).

        The client holds back an answer while more answers are about to
        follow, so a burst of answers reaches the server in one write and
        wakes it once. Whoever holds data back must see that it is flushed
        soon. Returns True when the buffer was empty before (the caller then
        arranges that flush); past 64 KB the buffer is written at once.
        """
        if self._stdin_fd is None or self._closing:
            raise TransportClosed("stdio transport is closed")
        lock = self._write_lock
        if not lock.acquire(False) and not lock.acquire(True, self.write_timeout):  # cheap when free
            raise TransportClosed("the server has not read its stdin for too long")
        try:
            first = not self._pending
            self._pending.append(data)
            self._pending_size += len(data)
            if self._pending_size < 65536:
                return first
        finally:
            self._write_lock.release()
        self.flush()
        return False

    def _write_pending(self, budget: RealBudget) -> None:
        """Closing (write lock held): answers held back still reach a server that reads, within the budget."""
        fd = self._stdin_fd
        if not self._pending or fd is None:
            return
        view = memoryview(b"".join(self._pending))
        self._pending = []
        self._pending_size = 0
        pause = threading.Event()
        for _ in range(20):  # at most 20 short waits of the budget
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                pass
            except (OSError, ValueError):
                return
            if not view or pause.wait(budget.take(0.01)) or budget.left <= 0:
                return

    def flush(self) -> None:
        """Write what :meth:`send_later` held back, if anything."""
        if self._pending:
            self._write(b"")

    def _write_held(self) -> None:
        """Write what was held back (the reader, before it waits for the server; a relief); never raises."""
        if self._pending:
            try:
                self._write(b"")
            except TransportClosed:
                pass

    def send(self, data: bytes, info: Outgoing = ANSWER) -> None:
        """Write one line to the server's stdin (see :meth:`_write`).

        An answer written by the reader thread while it has more of the
        server's bytes in hand is held back and written with the next write,
        at the latest before the reader waits for the server again: a burst
        of requests is answered in one write, as the raw client's would be
        if it read them all before answering.

        A request written by the thread that holds the reading
        (:meth:`offer_reading`) marks it as about to read its answer, before
        the server can have answered: the parked reader leaves that answer to it.
        Any other request that thread writes (a callback calling the client,
        a task's ``tasks/get``: ``info.reads_answer`` False) gives the reading
        back first, since nobody would read that request's answer.
        """
        seat = self.seat
        if seat.holder and info.request_id is not None:
            if info.reads_answer:
                seat.about_to_read()
            else:
                seat.give_back()
        lines = self._lines
        if info is ANSWER and lines is not None and lines.pos < lines.end and seat.reader == threading.get_ident():
            if self._stdin_fd is None or self._closing:
                raise TransportClosed("stdio transport is closed")
            with self._write_lock:
                self._pending.append(data)
                self._pending_size += len(data)
                if self._pending_size < 65536:
                    return
            data = b""
        self._write(data)

    def _write(self, data: bytes) -> None:
        """Write one line to the server's stdin, within ``write_timeout`` real seconds.

        Anything held back by :meth:`send_later` goes first, in the same
        write. The pipe is non-blocking: a server that stops reading its
        stdin cannot hang a caller, the watchdog or ``close()``. A write that
        cannot finish in time leaves half a line in the pipe, so the server
        is killed and the connection ends (calls in flight raise
        ``ClientError(kind="transport")``).
        """
        fd = self._stdin_fd
        if fd is None or self._closing or self._cut_why is not None:
            raise TransportClosed(self._cut_why or "stdio transport is closed")
        lock = self._write_lock
        if not lock.acquire(False) and not lock.acquire(True, self.write_timeout):  # cheap when free
            raise TransportClosed("the server has not read its stdin for too long")
        try:
            if self._pending:
                self._pending.append(data)
                data = b"".join(self._pending)
                self._pending = []
                self._pending_size = 0
            view = memoryview(data)
            stalled = 0.0  # real seconds without progress; a server that reads resets it
            while view:
                try:
                    written = os.write(fd, view)
                except BlockingIOError:
                    written = 0
                except (OSError, ValueError) as exc:
                    self._gone()
                    raise TransportClosed(f"cannot write to the server: {exc}") from exc
                view = view[written:]
                if written:
                    stalled = 0.0
                if view:
                    if stalled >= self.write_timeout:
                        self._give_up("the server stopped reading its stdin")
                    ready = select.select([], [fd], [], 0.25)[1]
                    if not ready:
                        stalled += 0.25
        finally:
            self._write_lock.release()

    def _gone(self) -> None:
        """A write failed (the server went away): wait (bounded) for its exit and last stderr lines."""
        proc = self.process
        if proc is not None and len(self._threads) == 2 and not self._closing:
            self._settle(proc, self._threads[1], self._generation)

    def _give_up(self, why: str) -> None:
        log.warning("mcp_input_sync: %s; killing %s", why, self.command[0])
        self._kill()
        raise TransportClosed(why)

    def _kill(self) -> None:
        """SIGKILL the server (its stdout then ends, and the reader ends the connection)."""
        proc = self.process
        if proc is not None:
            try:
                proc.kill()
            except OSError:
                pass

    def close(self, timeout: float) -> None:
        """Close stdin, wait, terminate, wait, kill: bounded by ``timeout`` real seconds."""
        if self._closing:
            return
        self._stop(RealBudget(timeout))

    def _stop(self, budget: RealBudget) -> None:
        self._closing = True
        self.seat.close()  # a reader parked for a caller ends, a reading caller stops
        proc = self.process
        if proc is not None:
            # a writer stuck on a full pipe holds the lock: then skip to terminate and kill
            if self._write_lock.acquire(timeout=min(0.2, budget.left)):
                try:
                    self._write_pending(budget)
                    if self._stdin is not None:
                        self._stdin.close()
                except OSError:
                    pass
                finally:
                    self._stdin_fd = None
                    self._write_lock.release()

            def exited() -> bool:
                return proc.poll() is not None

            if not budget.wait_until(exited, budget.left * 0.5):
                try:
                    proc.terminate()
                except OSError:
                    pass
                if not budget.wait_until(exited, budget.left * 0.5):
                    try:
                        proc.kill()
                    except OSError:
                        pass
                    budget.wait_until(exited, budget.left * 0.5)
        if proc is None:
            return
        # Close only the streams whose reader has ended (a grandchild may hold the pipe
        # open): a descriptor closed under a blocked read could be handed to another file.
        for thread, stream in zip(self._threads, (proc.stdout, proc.stderr)):
            if budget.join(thread, share=0.5) and stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
