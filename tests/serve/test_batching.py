"""The coalescing of concurrent explain requests (:class:`Coalescer`) and the in-process lane
(:class:`InProcessLane`), on the real asyncio machinery with a recording task function: no
server, no model."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from robustce.serve.batching import Coalescer
from robustce.serve.pool import DeadlineExceeded, InProcessLane, QueueFull


class Recorder:
    """A task function that records the record batches it is given and answers each record
    with ``{"echo": record}``; a record ``{"bad": True}`` makes the whole call raise, and
    ``gate`` (when set) holds every call until it is opened."""

    def __init__(self, sleep_s: float = 0.0):
        self.calls: list[list[dict]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.sleep_s = sleep_s

    def __call__(self, task: dict) -> list[dict]:
        self.gate.wait(10)
        time.sleep(self.sleep_s)
        self.calls.append(list(task["records"]))
        if any(r.get("bad") for r in task["records"]):
            raise ValueError("a bad record")
        return [{"echo": r} for r in task["records"]]


def _deadline(n: int) -> float:
    return 5.0


async def _busy_lane(fn: Recorder, max_queue: int = 8) -> tuple[InProcessLane, asyncio.Task]:
    """A started lane whose one thread is held by a task under another key (``fn.gate``
    closed), so that the requests that follow wait for it and merge."""
    lane = InProcessLane(max_queue)
    await lane.start()
    fn.gate.clear()
    blocker = asyncio.create_task(lane.run(fn, {"records": [{"blocker": 0}]}, deadline_s=5))
    for _ in range(5000):
        if lane.status()["workers"][0]["busy"]:
            break
        await asyncio.sleep(0.001)
    return lane, blocker


async def _release(fn: Recorder, lane: InProcessLane, blocker: asyncio.Task, runs: list,
                   **gather: bool) -> list:
    """Let the requests ``runs`` queue up behind ``blocker``, open the gate, collect their
    results and close the lane."""
    await asyncio.sleep(0.05)
    fn.gate.set()
    results = await asyncio.gather(*runs, **gather)
    await blocker
    lane.close()
    return results


def test_concurrent_requests_form_one_batch_and_each_gets_its_own_items_in_order():
    async def main():
        fn = Recorder()
        lane, blocker = await _busy_lane(fn)
        co = Coalescer(lane, fn, max_items=100)
        requests = [[{"req": k, "item": j} for j in range(1 + k % 3)] for k in range(6)]
        runs = [asyncio.create_task(co.run("key", {}, recs, _deadline)) for recs in requests]
        results = await _release(fn, lane, blocker, runs)
        return fn, co, requests, results

    fn, co, requests, results = asyncio.run(main())
    assert len(fn.calls) == 2  # the blocker, then ONE call for the six requests
    assert fn.calls[1] == [r for recs in requests for r in recs]
    assert co.merged == 5
    for recs, res in zip(requests, results, strict=True):
        assert [r["echo"] for r in res] == recs  # its own items, in its order


def test_different_keys_are_not_merged():
    async def main():
        fn = Recorder()
        lane, blocker = await _busy_lane(fn)
        co = Coalescer(lane, fn, max_items=100)
        runs = [asyncio.create_task(co.run(key, {}, [{"key": key}], _deadline)) for key in "abab"]
        results = await _release(fn, lane, blocker, runs)
        return fn, results

    fn, results = asyncio.run(main())
    assert sorted(len(c) for c in fn.calls[1:]) == [2, 2]
    assert all({r["key"] for r in call} in ({"a"}, {"b"}) for call in fn.calls[1:])
    assert [res[0]["echo"]["key"] for res in results] == list("abab")


def test_a_batch_holds_at_most_max_items_records():
    async def main():
        fn = Recorder()
        lane, blocker = await _busy_lane(fn)
        co = Coalescer(lane, fn, max_items=4)
        requests = [[{"req": k, "item": j} for j in range(2)] for k in range(3)]
        runs = [asyncio.create_task(co.run("key", {}, recs, _deadline)) for recs in requests]
        results = await _release(fn, lane, blocker, runs)
        return fn, requests, results

    fn, requests, results = asyncio.run(main())
    assert [len(c) for c in fn.calls[1:]] == [4, 2]
    for recs, res in zip(requests, results, strict=True):
        assert [r["echo"] for r in res] == recs


def test_an_idle_worker_takes_a_request_at_once():
    """No timer: a request that finds a worker free is not held back to wait for others.
    Every timer the loop is asked for is recorded: the only ones allowed are the request's
    own deadline (``_deadline`` seconds ahead), never a shorter window to collect others;
    no wall clock is read, so a loaded host cannot fail it."""
    async def main():
        loop = asyncio.get_running_loop()
        delays: list[float] = []
        call_at = loop.call_at

        def spy(when, callback, *args, **kwargs):
            delays.append(when - loop.time())
            return call_at(when, callback, *args, **kwargs)

        loop.call_at = spy  # call_later and wait_for's timeouts go through it
        fn = Recorder()
        lane = InProcessLane(4)
        await lane.start()
        co = Coalescer(lane, fn, max_items=100)
        res = await co.run("key", {}, [{"x": 1}], _deadline)
        lane.close()
        return fn, res, delays

    fn, res, delays = asyncio.run(main())
    assert fn.calls == [[{"x": 1}]] and res == [{"echo": {"x": 1}}]
    assert all(d > _deadline(1) - 1.0 for d in delays), delays


def test_an_error_raised_by_one_request_fails_only_that_request():
    async def main():
        fn = Recorder()
        lane, blocker = await _busy_lane(fn)
        co = Coalescer(lane, fn, max_items=100)
        requests = [[{"req": 0}], [{"req": 1, "bad": True}], [{"req": 2}, {"req": 3}]]
        runs = [asyncio.create_task(co.run("key", {}, recs, _deadline)) for recs in requests]
        results = await _release(fn, lane, blocker, runs, return_exceptions=True)
        return fn, requests, results

    fn, requests, results = asyncio.run(main())
    assert fn.calls[1] == [r for recs in requests for r in recs]  # the merged call raised
    assert sorted(map(len, fn.calls[2:])) == [1, 1, 2]  # then each request ran alone
    assert [r["echo"] for r in results[0]] == requests[0]
    assert isinstance(results[1], ValueError)
    assert [r["echo"] for r in results[2]] == requests[2]


def test_a_deadline_reaches_every_request_of_the_batch():
    async def main():
        fn = Recorder(sleep_s=0.5)
        lane = InProcessLane(4)
        await lane.start()
        co = Coalescer(lane, fn, max_items=100)
        runs = [asyncio.create_task(co.run("key", {}, [{"k": k}], lambda n: 0.1)) for k in range(3)]
        results = await asyncio.gather(*runs, return_exceptions=True)
        await asyncio.sleep(0.6)  # the thread finishes; the lane takes work again
        after = await lane.run(Recorder(), {"records": [{"k": 9}]}, deadline_s=5)
        lane.close()
        return results, after, lane.status()

    results, after, status = asyncio.run(main())
    assert all(isinstance(r, DeadlineExceeded) for r in results)
    assert after == [{"echo": {"k": 9}}] and status["deadlines"] >= 1


def test_in_process_lane_queue_is_bounded_and_a_slot_returns_only_when_its_thread_ends():
    async def deadline_case():
        fn = Recorder()
        lane = InProcessLane(2)
        await lane.start()
        fn.gate.clear()
        with pytest.raises(DeadlineExceeded):
            await lane.run(fn, {"records": [{"d": 1}]}, deadline_s=0.05)
        busy_after_deadline = lane.status()["workers"][0]["busy"]
        fn.gate.set()
        for _ in range(200):
            if not lane.status()["workers"][0]["busy"]:
                break
            await asyncio.sleep(0.01)
        busy_after_thread = lane.status()["workers"][0]["busy"]
        lane.close()
        return busy_after_deadline, busy_after_thread

    async def queue_case():
        fn = Recorder()
        lane, blocker = await _busy_lane(fn, max_queue=1)
        waiting = asyncio.create_task(lane.run(fn, {"records": [{"w": 1}]}, deadline_s=5))
        await asyncio.sleep(0.02)
        try:
            await lane.run(fn, {"records": [{"w": 2}]}, deadline_s=5)
            full = False
        except QueueFull:
            full = True
        fn.gate.set()
        done = await waiting
        await blocker
        lane.close()
        return full, done

    full, done = asyncio.run(queue_case())
    assert full and done == [{"echo": {"w": 1}}]
    busy_after_deadline, busy_after_thread = asyncio.run(deadline_case())
    assert busy_after_deadline and not busy_after_thread
