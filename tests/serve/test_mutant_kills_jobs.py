"""The job runner's resume path without a live server (issue 47's mutants): a job whose owner
died (``kill -9``) is taken over and resumed from its committed items, audited ``resumed``
then ``finished``; a runner that stops (SIGTERM) hands its running job back to the store,
audited ``interrupted``, and the next runner finishes it; a dead owner whose pid now belongs
to another process counts as dead.

A fake service stands in for the pool (each item's result names the item it was computed
for), over a real SQLite store; the live-server version of the same story is
``test_jobs_durable.py``'s ``test_an_interrupted_job_is_resumed_from_its_done_items_after_a_restart``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("sqlalchemy")

#: a hang guard only (the runs take well under a second): no assertion depends on it
HANG_S = 120.0
N_ITEMS, CHUNK = 5, 2


class FakeService:
    """What :class:`~robustce.serve.jobs.JobRunner` asks of the service: its models, the chunk
    size, its ledger (none here), ``explain`` (each result names its item; ``block_after``
    calls, it waits for ever) and ``log`` (the audit records, kept in order)."""

    def __init__(self, block_after: int | None = None):
        self.ledger = None
        self.models = {"loan": SimpleNamespace(id="loan", hash="h1")}
        self.settings = SimpleNamespace(job_chunk=CHUNK, retry_after_s=1)
        self.block_after = block_after
        self.explained: list[list[Any]] = []
        self.records: list[dict[str, Any]] = []

    async def explain(self, model, request, chunk, method, target, wait=True):
        if self.block_after is not None and len(self.explained) >= self.block_after:
            await asyncio.Event().wait()  # a chunk that is still running when the server stops
        self.explained.append([r["x"] for r in chunk])
        return [{"status": "found", "message": f"computed {r['x']}"} for r in chunk]

    def log(self, request_id, endpoint, model, method, params, seed, target, items, **extra):
        self.records.append({"request_id": request_id, "items": items, **extra})


def _ended_owner() -> str:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}:0"


def _create(store, job_id: str, owner: str) -> None:
    items = [{"id": f"i{k}", "features": {"x": k}} for k in range(N_ITEMS)]
    store.create(job_id, model_id="loan", model_hash="h1", method="nearest_neighbour", target=1,
                 request={"items": items, "method": "nearest_neighbour"}, total=N_ITEMS,
                 owner=owner, lease_s=3600)


@pytest.fixture
def store(tmp_path):
    from robustce.serve.store import JobStore, store_url

    s = JobStore(store_url(str(tmp_path / "jobs.sqlite3")))
    yield s
    s.close()


async def _run_until_idle(runner) -> None:
    """Start ``runner`` (it adopts the orphaned jobs) and wait for the jobs it launched."""
    await runner.start()
    tasks = list(runner._tasks.values())
    assert tasks, "the runner took over no job"
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), HANG_S)
    await runner.close()


def test_a_killed_owners_job_is_resumed_from_its_committed_items(store):
    from robustce.serve.jobs import JobRunner

    dead = _ended_owner()
    _create(store, "j1", dead)
    store.start("j1", dead)
    kept = [{"status": "found", "message": "before the kill 0"},
            {"status": "found", "message": "before the kill 1"}]
    assert store.append_results("j1", 0, kept, dead) == 2  # one chunk committed, then kill -9
    svc = FakeService()
    asyncio.run(_run_until_idle(JobRunner(svc, store, max_jobs=4)))

    row = store.get("j1")
    assert (row.status, row.done, row.error) == ("done", N_ITEMS, None)
    assert svc.explained == [[2, 3], [4]]  # only the items not yet done, in chunks
    assert [r["message"] for r in store.results("j1")] == [
        "before the kill 0", "before the kill 1", "computed 2", "computed 3", "computed 4"]
    assert [r.get("event") for r in svc.records] == ["resumed", "finished"]
    assert svc.records[0]["done"] == 2
    assert svc.records[1]["job_status"] == "done"
    assert [it["id"] for it in svc.records[1]["items"]] == [f"i{k}" for k in range(N_ITEMS)]


def test_a_stopped_runner_gives_its_job_back_and_the_next_one_finishes_it(store):
    from robustce.serve.jobs import JobRunner

    _create(store, "j2", _ended_owner())
    stopping = FakeService(block_after=1)  # the second chunk is running at the stop

    async def run_then_stop() -> None:
        runner = JobRunner(stopping, store, max_jobs=4)
        await runner.start()
        assert list(runner._tasks) == ["j2"]
        for _ in range(100_000):  # until the first chunk is committed (a hang guard only)
            if store.get("j2").done == CHUNK:
                break
            await asyncio.sleep(0.01)
        await asyncio.wait_for(runner.close(), HANG_S)  # SIGTERM: the server's lifespan ends

    asyncio.run(run_then_stop())
    row = store.get("j2")
    assert (row.status, row.done, row.owner, row.lease_until) == ("queued", CHUNK, None, 0.0)
    assert [r.get("event") for r in stopping.records] == ["interrupted"]
    assert stopping.records[0]["done"] == CHUNK

    svc = FakeService()
    asyncio.run(_run_until_idle(JobRunner(svc, store, max_jobs=4)))
    assert store.get("j2").status == "done"
    assert svc.explained == [[2, 3], [4]]
    assert [r["message"] for r in store.results("j2")] == [f"computed {k}" for k in range(N_ITEMS)]
    assert [r.get("event") for r in svc.records] == ["resumed", "finished"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads process start times from /proc")
def test_an_owner_whose_pid_now_belongs_to_another_process_is_gone(store):
    """The owner name holds its process's start time: this test process's pid with another
    start time is a process that ended (its pid since reused), and its job is taken at once,
    lease or not."""
    from robustce.serve.store import owner_gone, process_owner

    me = process_owner()
    host, pid, start = me.split(":")
    assert not owner_gone(me)
    reused = f"{host}:{pid}:{int(start) + 1}"
    assert owner_gone(reused)
    _create(store, "j3", reused)  # a lease of an hour, still running
    assert store.claim_orphans("other:1:1", {"loan": "h1"}, 60, limit=10) == ["j3"]
