"""Process probes the benchmark runners share: peak RSS, threads, children, the child subreaper.

Linux only (/proc and prctl); each probe answers 0 or [] where the process is gone.
"""

from __future__ import annotations

import ctypes
import os


def become_subreaper() -> None:
    """Orphaned grandchildren (a server its client left behind) get re-parented to us."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def peak_rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def thread_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def children_of_me() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            if int(stat[stat.rindex(b")") + 2:].split()[1]) == me:
                found.append(int(entry))
        except (OSError, ValueError):
            pass
    return found
