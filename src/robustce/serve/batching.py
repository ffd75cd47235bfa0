"""Coalescing of concurrent explain requests into one worker task.

Explainers are batch-first (one KD-tree query, one forward pass for many applicants), so
requests that arrive while the workers are busy and ask the same thing of the same model —
same method, parameters, target class, time limit, seed and certificates — are merged: the
first opens a batch and waits for a worker; the others join it until a worker is free (up to
``max_items`` items); the batch then runs as one task and each request gets its own slice of
the results, in its own order. A request waits no longer than it would alone (there is no
timer: the window is the wait for a worker, and a batch holds at most ``max_items`` records),
and a full queue (429) counts batches, not requests. A fault of the pool (a crashed worker:
503; the time budget: status ``timeout``) reaches every request of the batch; an exception
raised by the task itself is not shared: each request of the batch is then run alone, so
that one request's bad record fails only that request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from robustce.serve.pool import DeadlineExceeded, QueueFull, SolverPool, WorkerCrashed

__all__ = ["Coalescer"]


@dataclass
class _Batch:
    task: dict[str, Any]
    end: float  # loop time by which a worker must be found (the first request's budget)
    deadline: Callable[[int], float]  # seconds of work a task of n records may take
    records: list[dict[str, Any]] = field(default_factory=list)
    runner: asyncio.Task | None = None
    members: int = 0  # requests in the batch


class _TaskFailed(Exception):
    """The merged task raised (not a pool fault): its requests are to run alone."""


class Coalescer:
    """Merge concurrent tasks with equal keys (see the module docstring).

    Parameters
    ----------
    pool : the solver pool.
    fn : the worker function, called with ``{**task, "records": [...]}``.
    max_items : most records in one merged task.
    """

    def __init__(self, pool: SolverPool, fn: Callable[[dict[str, Any]], Any], max_items: int):
        self.pool, self.fn, self.max_items = pool, fn, max_items
        self._open: dict[Hashable, _Batch] = {}
        self.merged = 0  # requests that joined a batch another request opened

    async def run(self, key: Hashable, task: dict[str, Any], records: list[dict[str, Any]],
                  deadline: Callable[[int], float], *, wait: bool = False) -> list[Any]:
        """The results of ``records`` (one per record, in order), computed alone or with
        other requests of the same ``key``; ``deadline(n)``: the seconds a task of n records
        may take once a worker starts it; the wait for a worker is bounded by the opening
        request's ``deadline(len(records))`` and is not taken from the run)."""
        loop = asyncio.get_running_loop()
        batch = self._open.get(key)
        if batch is None or len(batch.records) + len(records) > self.max_items:
            batch = _Batch(task, loop.time() + deadline(len(records)), deadline)
            self._open[key] = batch
            batch.runner = loop.create_task(self._dispatch(key, batch, wait))
        else:
            self.merged += 1
        start = len(batch.records)
        batch.records.extend(records)
        batch.members += 1
        try:
            results = await asyncio.shield(batch.runner)
        except _TaskFailed:  # one request's records may be the cause: each runs alone
            return await self.pool.run(self.fn, {**task, "records": records},
                                       deadline_s=deadline(len(records)), wait=wait)
        return results[start:start + len(records)]

    async def _dispatch(self, key: Hashable, batch: _Batch, wait: bool) -> list[Any]:
        await asyncio.sleep(0)  # let the request that opened the batch add its records
        try:
            slot = await self.pool.acquire(batch.end, wait=wait)
        finally:
            if self._open.get(key) is batch:
                del self._open[key]  # closed: later requests open a new batch
        end = asyncio.get_running_loop().time() + batch.deadline(len(batch.records))
        try:
            return await self.pool.submit(slot, self.fn, {**batch.task, "records": batch.records}, end)
        except (WorkerCrashed, DeadlineExceeded, QueueFull):
            raise  # faults of the pool: every request of the batch shares them
        except Exception as exc:
            if batch.members > 1:
                raise _TaskFailed from exc
            raise
