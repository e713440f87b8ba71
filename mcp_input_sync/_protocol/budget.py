"""Token buckets: the input budget and the log rate limit (pure: the caller passes ``now``)."""

from __future__ import annotations

import math


def over_budget(rate: float, burst: int) -> str:
    """Why an input request was refused for want of tokens, naming the option that sizes the budget."""
    return (
        f"the client's input_rate_limit=({rate:g}, {burst}) allows {rate:g} input requests a second and bursts of "
        f"{burst}; every call on this client shares it: raise it (docs/web.md#sizing-input_rate_limit)"
    )


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved; ``rate=inf`` never refuses."""

    __slots__ = ("rate", "burst", "tokens", "stamp", "_endless", "_full")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.stamp = now
        # worked out once: take() runs for every log line of a flood
        self._endless = math.isinf(rate)
        self._full = float(burst)

    def take(self, n: int, now: float) -> bool:
        """Take ``n`` tokens, all or none. True when there were enough."""
        if self._endless:
            return True
        elapsed = now - self.stamp
        if elapsed > 0:
            self.tokens = min(self._full, self.tokens + elapsed * self.rate)
            self.stamp = now
        elif elapsed < 0:  # the clock went backwards (a test left a freeze): start afresh
            self.stamp = now
        if self.tokens >= n:
            self.tokens -= n
            return True
        return False
