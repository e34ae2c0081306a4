"""The clock the kernel stamps ctimes from, for "unchanged since" checks that must not be racy.

A file's (or a folder's) ctime is set by the kernel on every change and cannot be set back, so
a recorded ctime that is still there means no change since, but only if no change can land in
the same clock tick as the one recorded (git's "racy" index entries): the kernel stamps from a
coarse clock (a few ms per tick), so a change right after the record could keep its ctime.
:func:`kernel_clock_ns` read *before* the ``stat`` gives the rule: a ctime older than it is
safe to remember (any later change is stamped at or after it); one not older is looked at
again next time.
"""

from __future__ import annotations

import time

CLOCK_REALTIME_COARSE = 5  # Linux's clock id (Python names only the fine clocks)


def kernel_clock_ns() -> int:
    """Now, by the clock ctimes are stamped from: never after a ctime the kernel stamps
    later (with no coarse clock here, a second earlier than the fine one)."""
    try:
        return time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
    except OSError:
        return time.time_ns() - 1_000_000_000


def settled(ctime_ns: int, since_ns: int) -> bool:
    """Whether a ctime read after ``since_ns`` (:func:`kernel_clock_ns`) can be remembered:
    a later change cannot be stamped with it."""
    return ctime_ns < since_ns
