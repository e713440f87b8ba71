"""Hypothesis budgets of the fuzz suites (tests/test_fuzz_*.py).

Two profiles, chosen by the ``MIS_FUZZ`` environment variable:

* ``ci`` (default): bounded, so the three fuzz files take well under 30 s on
  two xdist workers::

      python -m pytest -n 2 tests/test_fuzz_*.py -q

* ``long``: many more examples and longer state-machine runs, for a soak
  before a release or after touching the protocol core (about 15 to 20
  minutes on two cores)::

      MIS_FUZZ=long python -m pytest -n auto tests/test_fuzz_*.py -q

  ``MIS_FUZZ_EXAMPLES=N`` overrides the number of examples of either profile.

The profiles are used as explicit ``@settings`` objects (never loaded
globally with ``settings.load_profile``), so they do not change the budget of
the other hypothesis tests of the suite. No deadline: the client-level
machines wait (bounded) on real threads, and timing noise must not fail them.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("MIS_FUZZ", "ci").strip().lower() or "ci"
if PROFILE not in ("ci", "long"):
    raise RuntimeError(f"MIS_FUZZ must be 'ci' or 'long', not {PROFILE!r}")
LONG = PROFILE == "long"

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def _examples(ci: int, long: int) -> int:
    override = os.environ.get("MIS_FUZZ_EXAMPLES")
    if override:
        return max(1, int(override))
    return long if LONG else ci


#: Pure properties (decoders, encoders): cheap examples.
PURE = settings(
    max_examples=_examples(200, 5_000),
    deadline=None,
    suppress_health_check=_SUPPRESS,
    print_blob=True,
)

#: State machines of the pure core.
MACHINE = settings(
    max_examples=_examples(50, 1_000),
    stateful_step_count=25 if not LONG else 100,
    deadline=None,
    suppress_health_check=_SUPPRESS,
    print_blob=True,
)

#: State machines driving a real client over the in-memory transport (threads, bounded waits).
CLIENT = settings(
    max_examples=_examples(40, 300),
    stateful_step_count=20 if not LONG else 60,
    deadline=None,
    suppress_health_check=_SUPPRESS,
    print_blob=True,
)
