"""What is safe to send again, and when (docs/http.md#reconnect-and-retry).

Pure: the ``retry`` option's policy, the reading of ``Retry-After`` (RFC 9110
section 10.2.3: a number of seconds or an HTTP date) and the rule that says
which failed request may go out again. The HTTP transport applies them.
"""

from __future__ import annotations

import math
from email.utils import parsedate_to_datetime
from typing import Any, Optional

#: HTTP statuses that say the server did not act on the request and may later: too many requests, unavailable.
BUSY_STATUSES = frozenset({429, 503})
#: The back-off of a retry the server gave no ``Retry-After`` for: 0.5 s, doubling.
FIRST_DELAY = 0.5


class Retry:
    """How a request the server did not act on is sent again (the ``retry`` option).

    ``attempts`` counts every sending of one request, the first included (1
    to 20). A server's ``Retry-After`` is honoured up to ``max_delay``
    seconds: one that asks for longer fails the call at once, saying so;
    without one the delays are 0.5 s, 1 s, 2 s, ... up to ``max_delay``.
    ``retry=True`` is ``Retry()``.

    Raises:
        TypeError, ValueError: a value of the wrong type or out of range.
    """

    __slots__ = ("attempts", "max_delay")

    def __init__(self, attempts: int = 3, max_delay: float = 10.0) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int):
            raise TypeError("Retry attempts must be an int")
        if not 1 <= attempts <= 20:
            raise ValueError("Retry attempts must be between 1 and 20")
        if isinstance(max_delay, bool) or not isinstance(max_delay, (int, float)):
            raise TypeError("Retry max_delay must be a number of seconds")
        if not max_delay >= 0 or math.isinf(max_delay):
            raise ValueError("Retry max_delay must be a finite number of seconds, 0 or more")
        #: Sendings of one request at most, the first included.
        self.attempts = attempts
        #: The longest wait before a retry, in seconds.
        self.max_delay = float(max_delay)

    def backoff(self, attempt: int) -> float:
        """Seconds before sending again after failed attempt number ``attempt`` (1: the first), with no ``Retry-After``."""
        return min(self.max_delay, FIRST_DELAY * 2.0 ** min(max(attempt - 1, 0), 30))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Retry):
            return NotImplemented
        return (self.attempts, self.max_delay) == (other.attempts, other.max_delay)

    def __hash__(self) -> int:
        return hash((self.attempts, self.max_delay))

    def __repr__(self) -> str:
        return f"Retry(attempts={self.attempts}, max_delay={self.max_delay:g})"


def retry_after(value: Optional[str], now: float) -> Optional[float]:
    """Seconds a ``Retry-After`` header asks to wait (0 for a date in the past); None when absent or unreadable.

    ``now`` is the wall clock (``time.time()``) an HTTP date is measured from.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text[:12]))  # a delay of more than 30 000 years reads as what it is: too long
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:  # RFC 9110: an HTTP date is in GMT; a bare one is not one
        return None
    return max(0.0, when.timestamp() - now)


def may_send_again(method: Optional[str], idempotent: bool) -> bool:
    """Whether a request that may have reached the server can be sent again.

    Every method but ``tools/call`` reads, lists or sets what a second
    sending sets again; a tool runs again only when its annotations (as
    last listed) or its caller say running it twice is safe.
    """
    return method != "tools/call" or idempotent


def tool_is_idempotent(tool: Any) -> bool:
    """A listed tool whose annotations say ``readOnlyHint`` or ``idempotentHint`` (true, the JSON way)."""
    annotations = tool.get("annotations") if isinstance(tool, dict) else None
    if not isinstance(annotations, dict):
        return False
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True
