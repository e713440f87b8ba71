"""What the fake saw and did: every message both ways, every request for input and its answer.

The waits here are bounded and in real time (freezegun does not stall
them). Import the public names from :mod:`mcp_input_sync.testing`.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from .shared import STEP, Exchange, JsonDict, id_key


class Recorder:
    """The fake's records, guarded by the fake's one lock (a condition on it wakes the waits)."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._changed = threading.Condition(lock)
        self._received: list[JsonDict] = []
        self._sent: list[JsonDict] = []
        self._exchanges: list[Exchange] = []
        self._input_responses: list[JsonDict] = []

    # ------------------------------------------------------------------ noting

    def note_received(self, message: JsonDict) -> None:
        with self._changed:
            self._received.append(message)
            self._changed.notify_all()

    def note_sent(self, message: JsonDict) -> None:
        with self._lock:
            self._sent.append(message)

    def add_exchange(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def add_exchange_once(self, exchange: Exchange) -> None:
        """Add a modern exchange unless its chain already has one with its key."""
        with self._lock:
            if not any(e.chain == exchange.chain and e.key == exchange.key for e in self._exchanges):
                self._exchanges.append(exchange)

    def note_answer(self, message: JsonDict) -> None:
        """A response from the client: the answer of the fake's request with its id, if one waits."""
        key = id_key(message.get("id"))
        with self._lock:
            for exchange in self._exchanges:
                if not exchange.chain and id_key(exchange.key) == key and not exchange.answered:
                    if "error" in message:
                        err = message["error"]
                        exchange.error = err if isinstance(err, dict) else {"message": repr(err)}
                    else:
                        res = message.get("result")
                        exchange.result = res if isinstance(res, dict) else {}
                    break

    def note_responses(self, chain: str, responses: JsonDict) -> None:
        """Modern: an ``inputResponses`` object the client sent for ``chain`` (a call or a task)."""
        with self._lock:
            self._input_responses.append(dict(responses))
            for exchange in self._exchanges:
                if exchange.chain == chain and exchange.key in responses and not exchange.answered:
                    value = responses[exchange.key]
                    exchange.result = value if isinstance(value, dict) else {"value": value}

    # ------------------------------------------------------------------ reading

    def received(self) -> list[JsonDict]:
        with self._lock:
            return list(self._received)

    def sent(self) -> list[JsonDict]:
        with self._lock:
            return list(self._sent)

    def answers(self) -> list[JsonDict]:
        with self._lock:
            return [m for m in self._received if "method" not in m and "id" in m]

    def input_responses(self) -> list[JsonDict]:
        with self._lock:
            return [dict(r) for r in self._input_responses]

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def requests_seen(self, method: str) -> list[JsonDict]:
        with self._lock:
            return [m.get("params") or {} for m in self._received if m.get("method") == method]

    # ------------------------------------------------------------------ waiting

    def wait_for(self, method: str, count: int, bound: float) -> list[JsonDict]:
        with self._changed:
            for _ in range(max(1, int(bound / STEP))):
                found = [m for m in self._received if m.get("method") == method]
                if len(found) >= count:
                    return found
                self._changed.wait(STEP)
            found = [m for m in self._received if m.get("method") == method]
        if len(found) >= count:
            return found
        raise TimeoutError(f"the client sent {len(found)} {method} within {bound:g} s, not {count}")

    def wait_for_answer(self, request_id: Any, bound: float) -> JsonDict:
        key = id_key(request_id)

        def find() -> Optional[JsonDict]:
            for m in self._received:
                if "method" not in m and "id" in m and id_key(m["id"]) == key:
                    return m
            return None

        with self._changed:
            for _ in range(max(1, int(bound / STEP))):
                found = find()
                if found is not None:
                    return found
                self._changed.wait(STEP)
            found = find()
        if found is not None:
            return found
        raise TimeoutError(f"the client did not answer request {request_id!r} within {bound:g} s")

    # ------------------------------------------------------------------ asserting

    def assert_answered(self, method: str, count: Optional[int]) -> list[JsonDict]:
        results = [e.result for e in self.exchanges() if e.method == method and e.result is not None]
        if count is None and not results:
            raise AssertionError(f"the client answered no {method} request; exchanges: {self.summary()}")
        if count is not None and len(results) != count:
            raise AssertionError(f"the client answered {len(results)} {method} request(s), not {count}; exchanges: {self.summary()}")
        return results

    def assert_refused(self, code: int, method: Optional[str], message: Optional[str]) -> list[JsonDict]:
        errors = [
            e.error
            for e in self.exchanges()
            if e.error is not None
            and e.error.get("code") == code
            and (method is None or e.method == method)
            and (message is None or message in str(e.error.get("message", "")))
        ]
        if not errors:
            raise AssertionError(f"no answer with error {code} (method {method}); exchanges: {self.summary()}")
        return errors

    def summary(self) -> str:
        return repr([(e.method, e.result if e.result is not None else e.error) for e in self.exchanges()])
