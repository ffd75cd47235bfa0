"""The clock solver budgets are measured on: every ``time_limit`` in robustce is **CPU seconds of
the solving thread** (``time.thread_time()``; the process's CPU time, ``time.process_time()``,
where one solve runs several solver threads), so that the same query gets the same status on an
idle and on a loaded host. The wall clock stays only as a safety net: ``WALL_SLACK ×
time_limit`` seconds (a solve stuck where no CPU is counted, or a host loaded beyond it).

A :class:`Budget` is read in the thread that made it. Time *reports* (``time`` fields, fit
times) stay wall-clock; only budgets use this clock.
"""

from __future__ import annotations

import time

__all__ = ["STOP_TEXT", "WALL_SLACK", "Budget", "cpu_clock", "wall_clock"]

#: the wall-clock safety net: a budget of ``t`` CPU seconds also ends after ``WALL_SLACK × t``
#: wall-clock seconds (also MACE's SMT backend's net over its z3 work budget)
WALL_SLACK = 10.0

#: how a message names the limit that stopped a solve or a loop
STOP_TEXT = {"cpu": "CPU time limit", "wall": "wall-clock safety net"}


def cpu_clock(threads: int = 1) -> float:
    """The budget clock: CPU seconds of the calling thread (``threads <= 1``) or of the process
    (a solve running ``threads > 1`` solver threads)."""
    return time.thread_time() if threads <= 1 else time.process_time()


def wall_clock() -> float:
    """The safety net's clock (``time.perf_counter()``)."""
    return time.perf_counter()


class Budget:
    """``limit`` CPU seconds from now (:func:`cpu_clock`), with the wall-clock safety net of
    ``WALL_SLACK × limit``.

    :meth:`remaining` is what a nested solve may be given: the CPU seconds left, capped at
    ``1 / WALL_SLACK`` of the wall seconds left, so a nested budget's own net ends no later
    than this one's.

    Examples
    --------
    >>> b = Budget(5.0)
    >>> 0 < b.remaining() <= 5.0, b.expired(), b.stopped_by()
    (True, False, 'cpu')
    """

    __slots__ = ("_cpu0", "_wall0", "limit", "threads")

    def __init__(self, limit: float, threads: int = 1):
        self.limit, self.threads = float(limit), int(threads)
        self._cpu0, self._wall0 = cpu_clock(self.threads), wall_clock()

    def cpu(self) -> float:
        """CPU seconds spent since the start."""
        return cpu_clock(self.threads) - self._cpu0

    def wall(self) -> float:
        """Wall-clock seconds since the start."""
        return wall_clock() - self._wall0

    def wall_left(self) -> float:
        """Wall-clock seconds left before the safety net (``WALL_SLACK × limit``)."""
        return WALL_SLACK * self.limit - self.wall()

    def _left(self) -> tuple[float, float]:
        return self.limit - self.cpu(), (WALL_SLACK * self.limit - self.wall()) / WALL_SLACK

    def remaining(self) -> float:
        """Seconds left (≤ 0 once expired): ``min(limit − cpu, (WALL_SLACK·limit − wall) /
        WALL_SLACK)``."""
        return min(self._left())

    def expired(self, tol: float = 0.0) -> bool:
        """Whether :meth:`remaining` is at most ``tol``."""
        return self.remaining() <= tol

    def stopped_by(self) -> str:
        """"cpu" or "wall": which limit binds now (the one that ended an expired budget)."""
        cpu_left, wall_left = self._left()
        return "wall" if wall_left < cpu_left else "cpu"

    def stop_text(self) -> str:
        """:data:`STOP_TEXT` of :meth:`stopped_by`, e.g. "CPU time limit (5 s)"."""
        by = self.stopped_by()
        limit = self.limit if by == "cpu" else WALL_SLACK * self.limit
        return f"{STOP_TEXT[by]} ({limit:.3g} s)"
