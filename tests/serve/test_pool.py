"""The solver pool on real worker processes (no models): answers, exceptions re-raised for
the request, a dead worker reported and replaced, the queue bound."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from robustce.serve.pool import QueueFull, SolverPool, WorkerCrashed


def test_pool_answers_reraises_and_replaces_a_dead_worker():
    async def main():
        pool = SolverPool([], n_workers=1, max_queue=0)
        await pool.start()
        first_pid = pool.status()["workers"][0]["pid"]
        answers = [await pool.run(len, {"a": 1, "b": 2}, deadline_s=60)]
        with pytest.raises(TypeError):  # raised in the worker, re-raised here
            await pool.run(int, {"a": 1}, deadline_s=60)
        answers.append(await pool.run(len, {"c": 3}, deadline_s=60))  # the same worker goes on
        same_pid = pool.status()["workers"][0]["pid"]
        busy = asyncio.create_task(pool.run(time.sleep, 1.0, deadline_s=60))  # answers None
        for _ in range(5000):
            if pool.status()["workers"][0]["busy"]:
                break
            await asyncio.sleep(0.001)
        with pytest.raises(QueueFull):  # the worker is taken and no request may wait
            await pool.run(len, {"e": 5}, deadline_s=60)
        answers.append(await busy)
        with pytest.raises(WorkerCrashed):  # the worker process ends mid-task
            await pool.run(os._exit, 3, deadline_s=60)
        for _ in range(600):
            if pool.status()["workers"] and pool._idle.qsize():
                break
            await asyncio.sleep(0.1)
        answers.append(await pool.run(len, {"g": 7, "h": 8, "i": 9}, deadline_s=60))
        status = pool.status()
        pool.close()
        return first_pid, same_pid, answers, status

    first_pid, same_pid, answers, status = asyncio.run(main())
    assert answers == [2, 1, None, 3]
    assert same_pid == first_pid
    assert status["crashes"] == 1 and status["workers"][0]["pid"] != first_pid


def _live_children(pid: int) -> list[int]:
    """Live (not zombie) child processes of ``pid``, from /proc."""
    out = []
    for stat in os.listdir("/proc"):
        if not stat.isdigit():
            continue
        try:
            fields = open(f"/proc/{stat}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat))
    return out


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads child processes from /proc")
def test_a_worker_that_starts_after_close_is_stopped_too():
    """A replacement worker still starting when the pool closes (a crash just before shutdown)
    is stopped once it is up, not left running as an orphan: after close, the forkserver has
    no live workers."""
    import multiprocessing.forkserver as forkserver

    async def main():
        pool = SolverPool([], n_workers=1, max_queue=0)
        await pool.start()
        replacement = asyncio.create_task(pool._start_replacement())
        await asyncio.sleep(0)  # its worker is on its way
        pool.close()
        await replacement
        return pool

    pool = asyncio.run(main())
    assert len(pool.status()["workers"]) == 1  # the replacement never joined the pool
    server = forkserver._forkserver._forkserver_pid
    for _ in range(100):
        if not _live_children(server):
            break
        time.sleep(0.1)
    assert _live_children(server) == []
