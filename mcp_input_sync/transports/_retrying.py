"""HTTP's retry loop: one POST sent again while the ``retry`` policy allows (docs/http.md#reconnect-and-retry).

Sent again: a POST that made no connection, or that the server answered 429
or 503 (it did not act on it), after the server's ``Retry-After`` (up to
the policy's ``max_delay``; a longer one fails at once) or a back-off; and
one that may have reached the server (its connection broke, a 502 or 504)
when its message may be sent twice (``may_send_again``: every method but a
``tools/call`` whose tool is not known to be idempotent). Never past the
request's deadline, nor once the request was given up, aborted, or the
transport closed. Each retry is logged at INFO with its reason.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Collection, Optional

from .. import _clock
from .._protocol.retry import Retry, may_send_again, retry_after
from .base import UNREACHABLE, HttpStatusError, OnRetry, Outgoing, TransportAuthError, TransportClosed

if TYPE_CHECKING:
    import requests

log = logging.getLogger("mcp_input_sync")


def post_with_retry(
    post: Callable[[], "requests.Response"],
    info: Outgoing,
    handle: Any,
    policy: Retry,
    stopped: threading.Event,
    given_up: Collection[Any],
    shown_url: str,
    on_retry: Optional[OnRetry] = None,
) -> "requests.Response":
    """``post()`` (one attempt, raising ``TransportClosed``), again as the module's docstring says.

    ``handle``: the request's abort handle (its ``deadline`` bounds the
    waits; once ``fired`` nothing is sent again), or None; ``stopped`` is set
    when the transport closes; ``given_up`` holds the ids of requests the
    client gave up on; ``on_retry`` is told of each sending again.
    """
    attempt = 1
    failure: TransportClosed
    while True:
        status, after = 0, None
        try:
            response = post()
        except HttpStatusError as exc:
            if exc.status not in (502, 503, 504):
                raise
            status, after, failure, busy = exc.status, exc.retry_after, exc, exc.status == 503
        except TransportAuthError:
            raise
        except TransportClosed as exc:
            if exc.check not in (UNREACHABLE, None) or (handle is not None and handle.fired):
                raise
            failure, busy = exc, exc.check == UNREACHABLE
        else:
            if response.status_code != 429:
                return response
            status, after = 429, retry_after(response.headers.get("Retry-After"), time.time())
            response.close()
            failure, busy = HttpStatusError(429, shown_url, "(too many requests)"), True
        if attempt >= policy.attempts or not (busy or may_send_again(info.method, info.idempotent)):
            raise failure
        if after is not None and after > policy.max_delay:
            raise HttpStatusError(status, shown_url, f"and asked to be tried again in {after:g} s, more than the retry's max_delay of {policy.max_delay:g} s")
        delay = policy.backoff(attempt) if after is None else after
        deadline: Optional[float] = info.deadline if info.deadline is not None else (handle.deadline if handle is not None else None)
        if deadline is not None and _clock.monotonic() + delay >= deadline:
            raise failure  # the call's own deadline comes first
        if status:
            reason = f"HTTP {status}" + (f" (Retry-After {after:g} s)" if after is not None else "")
        else:
            reason = str(failure)
        log.info(
            "mcp_input_sync: %s to %s failed: %s; sent again in %.3g s (attempt %d of %d)",
            info.method or "a message", shown_url, reason, delay, attempt + 1, policy.attempts,
        )
        if on_retry is not None:
            on_retry(info.request_id, reason, attempt + 1)
        if stopped.wait(delay) or info.request_id in given_up:
            raise failure
        attempt += 1
