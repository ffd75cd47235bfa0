"""Finished answers whose audit record could not be written, kept for the client's retry.

A request whose work finished but whose audit record failed (a full disk) is answered 503; its
answer and record wait here under (token holder, idempotency key, body hash). The same request
sent again with that ``Idempotency-Key`` gets the kept answer once its record is written,
without redoing the solver work. Bounded: the newest :data:`MAX_KEPT` answers, each for
:data:`KEEP_S` seconds.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["KEEP_S", "MAX_KEPT", "KeptResults"]

MAX_KEPT = 1000
KEEP_S = 3600.0


class KeptResults:
    """A bounded, expiring map from a retry key to what its request finished with."""

    def __init__(self, max_kept: int = MAX_KEPT, keep_s: float = KEEP_S,
                 clock: Callable[[], float] = time.monotonic):
        self.max_kept, self.keep_s, self.clock = max_kept, keep_s, clock
        self._kept: OrderedDict[tuple, tuple[float, Any]] = OrderedDict()

    def keep(self, key: tuple, value: Any) -> None:
        """Keep ``value`` under ``key`` (the oldest entries beyond the bound are dropped)."""
        self._expire()
        self._kept.pop(key, None)
        self._kept[key] = (self.clock() + self.keep_s, value)
        while len(self._kept) > self.max_kept:
            self._kept.popitem(last=False)

    def get(self, key: tuple) -> Any | None:
        """The value kept under ``key``, or None (never kept, expired or dropped)."""
        self._expire()
        entry = self._kept.get(key)
        return None if entry is None else entry[1]

    def discard(self, key: tuple) -> None:
        self._kept.pop(key, None)

    def __len__(self) -> int:
        self._expire()
        return len(self._kept)

    def _expire(self) -> None:
        now = self.clock()
        while self._kept:
            key, (until, _) = next(iter(self._kept.items()))
            if until > now:
                break
            del self._kept[key]
