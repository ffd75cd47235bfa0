"""The queue wait is not taken from a task's run: with one worker, A holds it 2 s (asleep);
B, queued behind A with a 3 s budget, needs 1.5 s of *CPU* — counted from B's arrival only
about 1 s of budget would be left when it starts and its worker would be killed; counted from
its start it finishes (mutant ``pool_queue_wait_taken_from_the_run``; the older test's B
sleeps, and a sleeper is not killed by the CPU-time budget)."""

from __future__ import annotations

import asyncio
import time

from robustce.serve.pool import SolverPool


def spin_cpu(seconds: float) -> float:
    """Compute until this process has used ``seconds`` more CPU time; returns the CPU used."""
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        sum(range(10_000))
    return time.process_time() - t0


def test_a_queued_task_that_computes_gets_its_whole_budget():
    async def main():
        pool = SolverPool([], n_workers=1, max_queue=4)
        await pool.start()
        try:
            a = asyncio.create_task(pool.run(time.sleep, 2.0, deadline_s=3.0))
            while not pool.status()["workers"][0]["busy"]:
                await asyncio.sleep(0.01)
            b = await pool.run(spin_cpu, 1.5, deadline_s=3.0)
            await a
            return b, pool.status()
        finally:
            pool.close()

    b, status = asyncio.run(main())
    assert b >= 1.5  # B computed to its end
    assert status["deadlines"] == 0 and status["queue_timeouts"] == 0
