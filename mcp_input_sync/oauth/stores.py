"""Token stores: where an :class:`~mcp_input_sync.oauth.OAuth` keeps what a login earned.

A store keeps one JSON-ready record per key. The flow writes one record per
server and account (``key`` is built by :func:`record_key`): the tokens with
their absolute expiry, the authorization server's metadata, the client's
registration at that server and the scopes granted, so that a process that
starts again refreshes the tokens instead of asking the user to log in. It
also keeps one record per authorization server (:func:`issuer_key`): its
metadata and the app's dynamic registrations there, so that every account
and server of one app uses one registration per authorization server
instead of registering for each user.

Keys of different kinds never meet, whatever an account id holds (a web
app's user may choose theirs):

* a server's record for the process's own account (``account=""``) is the
  server's URL itself, as every version kept it, when that URL holds no
  line break and does not start with ``[`` (a URL that does is kept as a
  typed key, below);
* every other record's key is a JSON array whose first item names its kind
  (:func:`store_key`): ``["record", account, url]``, and
  ``["pending-login", user, server name]`` for a web app's login in
  progress. It starts with ``[`` and holds no line break (JSON escapes it);
* an authorization server's record is ``issuer\n<issuer>``: it has a line
  break and starts with ``i``.

Versions before this one kept an account's record under
``<account>\n<url>``, where an account named ``issuer`` owned the key of
an authorization server's record. Such a record is still read
(:func:`legacy_record_key`, only where that old key cannot be a record of
another kind) and moved to its new key on its next save.

The interface (:class:`TokenStore`) has four methods; a host can implement it
on anything that keeps a dict per key (a Django model, a cache, a vault):

* ``load(key)`` returns the record or None;
* ``save(key, record)`` replaces it (atomically: a reader sees the old or
  the new record, never a mix);
* ``delete(key)`` forgets it;
* ``lock(key, timeout)`` is a context manager held while a refresh or a
  login for that key runs, so that one refresh serves every thread (and,
  for stores shared between processes, every process) that needs it at
  the same moment: refresh tokens may rotate, and a second refresh with a
  spent one fails. It raises :class:`TimeoutError` when the lock is not
  had within ``timeout`` seconds. The flow never holds it while an MCP
  request or stream is open.

Records hold secrets. The stores here never log them and their reprs name
no record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator, Optional, Protocol, Union

__all__ = ["FileStore", "MemoryStore", "TokenStore", "issuer_key", "record_key", "store_key"]

#: Pause between two tries of a file lock held by another process (real seconds).
_LOCK_POLL = 0.05

#: The first word of an authorization server's key (kept as it was: the records there outlive a login).
_ISSUER = "issuer"


def store_key(kind: str, *parts: str) -> str:
    """A typed key: ``[kind, *parts]`` as JSON, so no two kinds, and no two lists of parts, spell the same key."""
    return json.dumps([kind, *parts])


def record_key(server_url: str, account: str = "") -> str:
    """The store key of one server's record for one account (``""``: the process's own; see the module docstring)."""
    if not account and "\n" not in server_url and not server_url.startswith("["):
        return server_url  # where every version kept the process's own record: a CLI's logins survive upgrades
    return store_key("record", account, server_url)


def issuer_key(issuer: str) -> str:
    """The store key of what an app keeps per authorization server: its metadata and the app's registrations there."""
    return f"{_ISSUER}\n{issuer}"


def legacy_record_key(server_url: str, account: str) -> Optional[str]:
    """The key an earlier version kept ``account``'s record of ``server_url`` under, or None when it is not read.

    That key was ``<account>\n<url>``. It is read only when it has exactly
    one line break and the account is not ``issuer``: then it is no
    authorization server's key (``issuer\n...``), no earlier login in
    progress (``pending-login\n<user>\n<name>``, two line breaks), no other
    account's or server's record, and no key of this version (a bare URL has
    no line break, a typed key none either). An account named ``issuer``
    logs in once more.
    """
    if not account or account == _ISSUER or "\n" in account or "\n" in server_url:
        return None
    return f"{account}\n{server_url}"


class TokenStore(Protocol):
    """What :class:`~mcp_input_sync.oauth.OAuth` needs of a store (see the module docstring)."""

    def load(self, key: str) -> Optional[dict[str, Any]]: ...

    def save(self, key: str, record: dict[str, Any]) -> None: ...

    def delete(self, key: str) -> None: ...

    def lock(self, key: str, timeout: float) -> contextlib.AbstractContextManager[None]: ...


class _KeyLocks:
    """One re-entrant lock per key, made on first use (a bounded wait to take it)."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def hold(self, key: str, timeout: float) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.RLock())
        if not lock.acquire(timeout=max(0.0, timeout)):
            raise TimeoutError("a login or refresh for this server is still running")
        try:
            yield
        finally:
            lock.release()


class MemoryStore:
    """Records in this process's memory (the default): a restart forgets every login."""

    def __init__(self) -> None:
        self._records: dict[str, str] = {}
        self._guard = threading.Lock()
        self._locks = _KeyLocks()

    def __repr__(self) -> str:
        return f"MemoryStore(<{len(self._records)} records>)"

    def load(self, key: str) -> Optional[dict[str, Any]]:
        with self._guard:
            text = self._records.get(key)
        return None if text is None else json.loads(text)

    def save(self, key: str, record: dict[str, Any]) -> None:
        text = json.dumps(record)  # a copy: the caller's dict may change afterwards
        with self._guard:
            self._records[key] = text

    def delete(self, key: str) -> None:
        with self._guard:
            self._records.pop(key, None)

    def lock(self, key: str, timeout: float) -> contextlib.AbstractContextManager[None]:
        return self._locks.hold(key, timeout)


def default_folder() -> Path:
    """The user's folder for the command line's logins: ``$XDG_CONFIG_HOME/mcp-input-sync/tokens``.

    ``XDG_CONFIG_HOME`` defaults to ``~/.config`` (on every system, so one
    rule to document).
    """
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "mcp-input-sync" / "tokens"


class FileStore:
    """One JSON file per key (a server and account, or an issuer's registration) in ``folder``, readable by the user alone.

    The folder is made with mode 0700 (a folder that is already there is
    set to 0700 before the first write) and each file is written with mode
    0600 through a temporary file renamed over the old one, so a reader
    never sees half a record. File names are a hash of the key (a server's
    URL does not appear in the folder's listing). The lock is an advisory
    ``flock`` on a ``.lock`` file beside the record, so processes that share
    the folder (several workers of one app, a CLI run beside a script)
    refresh one at a time; on a system without ``fcntl`` it locks between
    threads only.
    """

    def __init__(self, folder: Union[str, "os.PathLike[str]", None] = None) -> None:
        self.folder = Path(folder) if folder is not None else default_folder()
        self._locks = _KeyLocks()
        self._held = threading.local()

    def __repr__(self) -> str:
        return f"FileStore({str(self.folder)!r})"

    def path(self, key: str) -> Path:
        """The file of ``key``'s record."""
        return self.folder / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:40] + ".json")

    def _ensure_folder(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name == "posix" and self.folder.stat().st_mode & 0o077:
            os.chmod(self.folder, 0o700)  # a folder that was there already, open to others: closed before a record goes in

    def load(self, key: str) -> Optional[dict[str, Any]]:
        try:
            record = json.loads(self.path(key).read_bytes().decode("utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError):  # bad UTF-8 or JSON: a damaged file reads as no login
            return None
        return record if isinstance(record, dict) else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        self._ensure_folder()
        target = self.path(key)
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.folder)
        try:
            os.fchmod(handle, 0o600)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(record, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(key).unlink()

    @contextlib.contextmanager
    def _file_lock(self, key: str, timeout: float) -> Iterator[None]:
        try:
            import fcntl
        except ImportError:  # not a POSIX system: the thread lock alone
            yield
            return
        self._ensure_folder()
        path = self.path(key).with_suffix(".lock")
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            # tries counted in real pauses, not read from a clock (a frozen clock cannot stall it)
            pause = threading.Event()
            for _ in range(max(1, int(timeout / _LOCK_POLL))):
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pause.wait(_LOCK_POLL)
            else:
                raise TimeoutError("another process is still logging in to or refreshing this server")
            try:
                yield
            finally:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
        finally:
            os.close(descriptor)

    @contextlib.contextmanager
    def lock(self, key: str, timeout: float) -> Iterator[None]:
        with self._locks.hold(key, timeout):  # threads of this process queue here first
            depth: dict[str, int] = self._held.__dict__.setdefault("depth", {})
            if depth.get(key):  # re-entered by the thread that holds the file lock
                depth[key] += 1
                try:
                    yield
                finally:
                    depth[key] -= 1
                return
            with self._file_lock(key, timeout):
                depth[key] = 1
                try:
                    yield
                finally:
                    depth[key] = 0
