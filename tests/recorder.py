"""Records both directions of a connection and validates what the client sends.

Every message the client writes is checked against the official JSON schema
of the negotiated version (tests/schemas); failures are collected in
``schema_errors`` and fail the test at teardown.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Optional

from . import wire_schema

JsonDict = dict[str, Any]


def _key(request_id: Any) -> Any:
    """A hashable key for any id a peer may send (1 and "1" stay apart)."""
    return (type(request_id).__name__, json.dumps(request_id, sort_keys=True, default=repr))


def _known(version: str) -> bool:
    try:
        wire_schema.canonical_version(version)
    except ValueError:
        return False
    return True


class Recorder:
    """Records both directions and validates what the client sends."""

    def __init__(self) -> None:
        self.sent: list[JsonDict] = []
        self.inbound: list[JsonDict] = []
        self.schema_errors: list[str] = []
        self.version: Optional[str] = None
        self._asked: dict[Any, str] = {}
        self._cond = threading.Condition()

    def on_inbound(self, data: bytes) -> None:
        """A raw line the server sent to the client."""
        try:
            msg = json.loads(data)
        except ValueError:
            return
        if isinstance(msg, dict):
            self.note_inbound(msg)

    def tap(self, direction: str, msg: JsonDict) -> None:
        """The ``on_message`` tap of ``mcp_input_sync.testing.FakeServer``.

        ``"received"``: the fake received it, so the client sent it;
        ``"sent"``: the fake sends it to the client.
        """
        if direction == "received":
            self.note_sent(msg)
        else:
            self.note_inbound(msg)

    def note_inbound(self, msg: JsonDict) -> None:
        """A message the server sent to the client (an InitializeResult sets the version)."""
        result = msg.get("result")
        if "method" not in msg and isinstance(result, dict) and "serverInfo" in result:
            version = result.get("protocolVersion")
            if isinstance(version, str) and _known(version):
                self.version = version
        with self._cond:
            if "method" in msg and "id" in msg:
                self._asked[_key(msg["id"])] = msg["method"]
            self.inbound.append(msg)
            self._cond.notify_all()

    def on_sent(self, data: bytes) -> None:
        """A raw line the client wrote."""
        self.note_sent(json.loads(data))

    def note_sent(self, msg: JsonDict) -> None:
        """A message the client sent: validated, then recorded."""
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        version = meta.get("io.modelcontextprotocol/protocolVersion") or (
            params.get("protocolVersion") if msg.get("method") == "initialize" else None
        ) or self.version or "2025-11-25"
        with self._cond:
            answering = None if "method" in msg else self._asked.get(_key(msg.get("id")))
        # The tasks extension (io.modelcontextprotocol/tasks) has no schema in tests/schemas.
        extension = version == "2026-07-28" and str(msg.get("method", "")).startswith("tasks/")
        if not extension:
            try:
                wire_schema.validate_client_message(msg, version, answering=answering)
            except AssertionError as exc:
                self.schema_errors.append(f"{msg}: {exc}")
        with self._cond:
            self.sent.append(msg)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[JsonDict], bool], *, sent: bool = True, timeout: float = 10.0, count: int = 1) -> list[JsonDict]:
        with self._cond:
            box = self.sent if sent else self.inbound
            ok = self._cond.wait_for(lambda: sum(1 for m in box if predicate(m)) >= count, timeout)
            found = [m for m in box if predicate(m)]
        if not ok:
            raise TimeoutError(f"{len(found)} of {count} expected messages within {timeout} s")
        return found
