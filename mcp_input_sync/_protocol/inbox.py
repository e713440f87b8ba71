"""Per-request state of the server's requests, so each id is answered exactly once.

States of one server request id::

    (absent) --admit--> OPEN --settle--> (absent)   one answer written
                        OPEN --cancel--> (absent)   the server cancelled: no answer

A request reusing the id of one still OPEN is a duplicate: the caller logs
and drops it. Only OPEN requests are stored, so memory is bounded by the
requests in flight. Not thread-safe: the client serialises calls.
"""

from __future__ import annotations

from typing import Any, Generic, Hashable, Iterator, Optional, TypeVar

from .jsonrpc import RequestId, id_key

E = TypeVar("E")


class LegacyInbox(Generic[E]):
    """Open server requests by id, each carrying the caller's entry object."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[Hashable, E] = {}

    def admit(self, request_id: RequestId, entry: E) -> bool:
        """Open a request. False when the id is already open (a duplicate to drop)."""
        key = (type(request_id) is str, request_id)  # id_key(), inline: once per request
        if key in self._open:
            return False
        self._open[key] = entry
        return True

    def settle(self, request_id: RequestId, entry: Optional[E] = None) -> Optional[E]:
        """Claim the right to answer. Returns the entry once; None when already answered or cancelled.

        With ``entry``, only that entry is claimed: a late answer to a request
        whose id the server has since used again leaves the new request open.
        """
        key = (type(request_id) is str, request_id)  # id_key(), inline
        if entry is not None and self._open.get(key) is not entry:
            return None
        return self._open.pop(key, None)

    def cancel(self, request_id: Any) -> Optional[E]:
        """The server cancelled the request: close it without an answer. Returns its entry, if open."""
        if type(request_id) is not str and type(request_id) is not int:
            return None
        return self._open.pop(id_key(request_id), None)

    def get(self, request_id: RequestId) -> Optional[E]:
        return self._open.get((type(request_id) is str, request_id))  # id_key(), inline

    def open_ids(self) -> list[RequestId]:
        """Ids of every request still unanswered."""
        return [key[1] for key in self._open]  # type: ignore[index]

    def __len__(self) -> int:
        return len(self._open)

    def __iter__(self) -> Iterator[E]:
        return iter(list(self._open.values()))
