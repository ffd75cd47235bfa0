"""A bounded pool of solver processes for the service's event loop.

Each slot is a one-process :class:`concurrent.futures.ProcessPoolExecutor` (forked from a
forkserver that imported the library once; models loaded by
:func:`~robustce.serve.worker.init_worker`), so a crash breaks only that slot: the
request it ran gets :class:`WorkerCrashed` (HTTP 503) and the slot is replaced while the
others go on. Requests wait for a free slot in a queue of bounded length; beyond it
:meth:`SolverPool.run` raises :class:`QueueFull` at once (HTTP 429 with ``Retry-After``). A task
that outlives its deadline has its process killed and replaced, and raises
:class:`DeadlineExceeded` (each item then gets status ``timeout``).

Deadlines are the task's own time, not its wait: a request's budget bounds its wait in the
queue (past it the request is answered :class:`DeadlineExceeded` without taking a worker,
counted in ``queue_timeouts``) and, separately, its run on a worker, counted from the moment
the worker starts it (a kill there is counted in ``deadlines``). The wait is wall-clock time
(the event loop's monotonic clock); the run is the worker's CPU time, with a wall-clock cap of
:data:`WALL_FACTOR` times the budget (see :meth:`SolverPool._within_budget`).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from robustce.serve.lifeline import mark_server
from robustce.serve.worker import init_worker, worker_pid

__all__ = ["WALL_FACTOR", "DeadlineExceeded", "InProcessLane", "QueueFull", "SolverPool", "WorkerCrashed",
           "cpu_seconds"]


class QueueFull(Exception):
    """Every worker is busy and the waiting queue is full."""


class WorkerCrashed(Exception):
    """The worker process running the task died."""


class DeadlineExceeded(Exception):
    """The task did not finish within its deadline: ``queued`` when its budget ran out while it
    waited for a worker (it never ran), else its worker was killed and replaced."""

    def __init__(self, queued: bool = False):
        super().__init__("queued past the deadline" if queued else "ran past the deadline")
        self.queued = queued


#: a task's run may last this many times its budget in wall time while its worker has used
#: less CPU time than the budget (a loaded host); past it the worker is killed regardless
WALL_FACTOR = 3.0

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (its threads included), from
    ``/proc/PID/stat``; None where that cannot be read (not Linux, process gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class _Slot:
    executor: Executor
    pid: int
    busy: bool = False


class SolverPool:
    """``n_workers`` solver processes and a waiting queue of at most ``max_queue`` requests.

    Parameters
    ----------
    specs : the :class:`~robustce.serve.registry.ModelSpec` of every served model.
    n_workers : worker processes (≥ 1).
    max_queue : requests that may wait for a worker; one more gets :class:`QueueFull`.
    """

    def __init__(self, specs: list[Any], n_workers: int, max_queue: int):
        self.specs = list(specs)
        self.n_workers = int(n_workers)
        self.max_queue = int(max_queue)
        self._slots: list[_Slot] = []
        self._idle: asyncio.Queue[_Slot] = asyncio.Queue()
        self._waiting = 0
        self.crashes = 0
        self.deadlines = 0  # tasks killed (their worker replaced) past their deadline
        self.queue_timeouts = 0  # requests whose budget ran out while they waited for a worker
        self._closed = False
        self._tasks: set[asyncio.Task] = set()

    # --- lifecycle ---------------------------------------------------------------------
    def _new_executor(self) -> ProcessPoolExecutor:
        # forkserver: a clean server process imports torch and robustce once; each worker (and
        # each replacement of a crashed one) is forked from it and only loads the models
        # (its first preload arms its parent-death signal: it and the workers end with the
        # server, kill -9 included; see robustce.serve.lifeline)
        ctx = multiprocessing.get_context("forkserver")
        mark_server()
        ctx.set_forkserver_preload(["robustce.serve.forkserver_init", "robustce.serve.worker",
                                    "robustce.models", "robustce.methods"])
        return ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=init_worker,
                                   initargs=(self.specs,))

    async def _start_slot(self) -> _Slot:
        executor = self._new_executor()
        pid = await asyncio.wrap_future(executor.submit(worker_pid))
        slot = _Slot(executor, pid)
        if self._closed:  # closed while this worker started (a replacement): stop it too
            self._stop(slot)
            raise RuntimeError("the solver pool was closed while a worker started")
        self._slots.append(slot)
        return slot

    @staticmethod
    def _stop(slot: _Slot) -> None:
        """End ``slot``'s executor and its process (SIGTERM)."""
        slot.executor.shutdown(wait=False, cancel_futures=True)
        try:
            os.kill(slot.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    async def start(self) -> None:
        """Start the workers (each loads the models) and wait until all are ready."""
        slots = await asyncio.gather(*(self._start_slot() for _ in range(self.n_workers)))
        for slot in slots:
            self._idle.put_nowait(slot)

    def _replace(self, slot: _Slot) -> None:
        """Kill ``slot``'s process (if alive), shut its executor and start a fresh slot in the
        background (the caller answers its request at once)."""
        self._slots.remove(slot)
        try:
            os.kill(slot.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        slot.executor.shutdown(wait=False, cancel_futures=True)
        if not self._closed:
            task = asyncio.get_running_loop().create_task(self._start_replacement())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _start_replacement(self) -> None:
        try:
            fresh = await self._start_slot()
        except Exception:  # noqa: BLE001 - the pool goes on with one worker fewer
            return
        self._idle.put_nowait(fresh)

    def close(self) -> None:
        """Stop every worker (after the server has finished its requests)."""
        self._closed = True
        for slot in self._slots:
            self._stop(slot)
        for slot in self._slots:  # the workers are gone: joining releases the executors' locks
            slot.executor.shutdown(wait=True)

    # --- state -------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return bool(self._slots) and not self._closed

    def status(self) -> dict[str, Any]:
        return {"workers": [{"pid": s.pid, "busy": s.busy} for s in self._slots],
                "waiting": self._waiting, "max_queue": self.max_queue, "crashes": self.crashes,
                "deadlines": self.deadlines, "queue_timeouts": self.queue_timeouts}

    # --- work --------------------------------------------------------------------------
    async def acquire(self, end: float, *, wait: bool = False) -> _Slot:
        """A free worker, waiting in the queue until the loop time ``end``. Raises
        :class:`QueueFull` at once when the queue is full (unless ``wait``) and
        :class:`DeadlineExceeded` when ``end`` passes first (no worker taken or killed)."""
        loop = asyncio.get_running_loop()
        if self._idle.empty() and self._waiting >= self.max_queue and not wait:
            raise QueueFull
        self._waiting += 1
        try:
            slot = await asyncio.wait_for(self._idle.get(), timeout=max(end - loop.time(), 0.001))
        except TimeoutError:
            self.queue_timeouts += 1
            raise DeadlineExceeded(queued=True) from None
        finally:
            self._waiting -= 1
        slot.busy = True
        return slot

    async def submit(self, slot: _Slot, fn: Callable[[dict[str, Any]], Any], task: dict[str, Any],
                     end: float) -> Any:
        """Run ``fn(task)`` on an acquired ``slot`` (given back afterwards) within the budget
        ``end`` − now (see :meth:`_within_budget`). Raises :class:`WorkerCrashed` or
        :class:`DeadlineExceeded` (the worker is then replaced)."""
        try:
            future = asyncio.wrap_future(slot.executor.submit(fn, task))
            result = await self._within_budget(slot, future, end)
        except BrokenProcessPool:
            self.crashes += 1
            self._replace(slot)
            raise WorkerCrashed from None
        except TimeoutError:
            self.deadlines += 1
            self._replace(slot)
            raise DeadlineExceeded from None
        except BaseException:
            slot.busy = False
            self._idle.put_nowait(slot)
            raise
        slot.busy = False
        self._idle.put_nowait(slot)
        return result

    @staticmethod
    async def _within_budget(slot: _Slot, future: asyncio.Future, end: float) -> Any:
        """``future``'s result, or :class:`TimeoutError` once the worker has spent the budget
        ``end`` − now in CPU time (its process's user + system time), or has run
        :data:`WALL_FACTOR` times the budget in wall time whatever its CPU time (a task that
        waits rather than computes). On a host where the worker gets a core to itself the two
        clocks agree; on a loaded host the task still gets its budget of computation, so its
        status does not depend on the load. Where the CPU time cannot be read, wall time."""
        loop = asyncio.get_running_loop()
        budget = max(end - loop.time(), 0.001)
        cpu_start = cpu_seconds(slot.pid)
        hard_end = loop.time() + budget * WALL_FACTOR
        wake = loop.time() + budget
        while True:
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout=max(wake - loop.time(), 0.001))
            except TimeoutError:
                now, cpu = loop.time(), cpu_seconds(slot.pid)
                if cpu_start is None or cpu is None or cpu - cpu_start >= budget or now >= hard_end:
                    raise
                wake = min(now + max(budget - (cpu - cpu_start), 0.05), hard_end)

    async def run(self, fn: Callable[[dict[str, Any]], Any], task: dict[str, Any], *,
                  deadline_s: float, wait: bool = False) -> Any:
        """Run ``fn(task)`` in a worker: :meth:`acquire` then :meth:`submit`. ``deadline_s``
        bounds the wait for a worker (from the call) and, afresh, the run (from the moment the
        worker takes the task): time spent queued behind other requests is never taken from
        the task's own run."""
        loop = asyncio.get_running_loop()
        slot = await self.acquire(loop.time() + deadline_s, wait=wait)
        return await self.submit(slot, fn, task, loop.time() + deadline_s)


class InProcessLane(SolverPool):
    """One thread of the server process itself that runs cheap tasks, behind a bounded queue.

    For methods whose work is one vectorised index query (nearest neighbour), the process
    round trip (pickling, pipes, two more processes to schedule) costs more than the work. The
    lane keeps the pool's contract — one task at a time, a queue of ``max_queue``
    (:class:`QueueFull` beyond), a deadline per task (:class:`DeadlineExceeded`) — but a thread
    cannot be killed: a task past its deadline is answered ``timeout`` at once and its slot
    comes back only when the thread finishes. The task runs on the server's own models
    (:func:`~robustce.serve.worker.register_models`), and it holds the GIL for a few
    milliseconds at a time at most (the interpreter's switch interval lets the event loop in).

    One thread, because the tasks share the process's explainer cache and hold the GIL for
    most of their time: a second thread would only queue behind the first.

    Parameters
    ----------
    max_queue : tasks that may wait for the thread; one more gets :class:`QueueFull`.
    """

    def __init__(self, max_queue: int):
        super().__init__([], 1, max_queue)

    async def _start_slot(self) -> _Slot:
        slot = _Slot(ThreadPoolExecutor(max_workers=1, thread_name_prefix="robustce-lane"), os.getpid())
        self._slots.append(slot)
        return slot

    def _release_when_done(self, slot: _Slot, future: Any) -> None:
        def done(_: Any) -> None:
            slot.busy = False
            if not self._closed:
                self._idle.put_nowait(slot)

        loop = asyncio.get_running_loop()
        future.add_done_callback(lambda f: loop.call_soon_threadsafe(done, f))

    async def submit(self, slot: _Slot, fn: Callable[[dict[str, Any]], Any], task: dict[str, Any],
                     end: float) -> Any:
        """Run ``fn(task)`` on ``slot``'s thread until the loop time ``end``
        (:class:`DeadlineExceeded` then; the slot is given back when the thread finishes)."""
        loop = asyncio.get_running_loop()
        cf = slot.executor.submit(fn, task)
        self._release_when_done(slot, cf)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(cf), timeout=max(end - loop.time(), 0.001))
        except TimeoutError:
            self.deadlines += 1
            raise DeadlineExceeded from None

    def close(self) -> None:
        """Stop taking tasks; threads still running finish on their own."""
        self._closed = True
        for slot in self._slots:
            slot.executor.shutdown(wait=False, cancel_futures=True)
