"""Production behaviour on the ``faults`` server (1 worker, a queue of 1, a 3 s request
budget): a timeout is a status, a full queue is 429, a killed worker is 503 for its request
only, and SIGTERM lets in-flight requests finish."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from tests.serve.conftest import launch, wait_ready

#: APΔS with α = 1 − 1e-6, R = 1 − 5e-6: ~2.8 M sampled networks per tested δ — 8.5 s of CPU
#: on the demo model (measured in one process, explainer build included), far past the faults
#: server's 3 s budget, which since issue 46 is the worker's CPU time (R = 1 − 1e-5 took 3.6 s:
#: on a quiet host it sometimes finished within the budget)
SLOW_CERTIFY = {"apas": {"alpha": 0.999999, "R": 0.999995}}
#: applicants per slow request: its certificates' cost depends on the CEs (one CE of one demo
#: model may be cheap); ten of them are far past the 3 s budget on any of them
SLOW_ITEMS = 10


@pytest.fixture(scope="module")
def faults(servers):
    return servers["faults"]


def wait_idle(server, timeout: float = 90.0) -> dict:
    """Wait until the pool has its worker back and idle."""
    end = time.monotonic() + timeout
    with server.client() as c:
        while time.monotonic() < end:
            st = c.get("/v1/status").json()
            if len(st["workers"]) == 1 and not st["workers"][0]["busy"] and st["waiting"] == 0:
                return st
            time.sleep(0.2)
    raise AssertionError(f"pool not idle after {timeout} s")


def post_in_thread(server, path: str, body: dict, out: list) -> threading.Thread:
    def run() -> None:
        with server.client() as c:
            out.append(c.post(path, json=body))

    t = threading.Thread(target=run)
    t.start()
    return t


def wait_busy(server, waiting: int = 0, timeout: float = 20.0) -> dict:
    end = time.monotonic() + timeout
    with server.client() as c:
        while time.monotonic() < end:
            st = c.get("/v1/status").json()
            if st["workers"] and st["workers"][0]["busy"] and st["waiting"] >= waiting:
                return st
            time.sleep(0.05)
    raise AssertionError("the worker never became busy")


def test_timeout_is_a_status_a_full_queue_is_429_and_certify_past_budget_504(faults, applicants):
    wait_idle(faults)
    slow = {"items": applicants[:SLOW_ITEMS], "method": "nearest_neighbour", "certify": SLOW_CERTIFY}
    first: list = []
    second: list = []
    t1 = post_in_thread(faults, "/v1/models/loan/explain", slow, first)
    wait_busy(faults)
    t2 = post_in_thread(faults, "/v1/models/loan/certify",
                        {"counterfactuals": applicants[:SLOW_ITEMS], "target_class": 0,
                         **SLOW_CERTIFY}, second)
    wait_busy(faults, waiting=1)
    with faults.client() as c:  # the worker is busy and the queue (1) is full
        r = c.post("/v1/models/loan/explain", json={"items": applicants[:1], "method": "nearest_neighbour"})
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert "queue" in r.json()["detail"]
    t1.join(60)
    t2.join(60)
    assert first[0].status_code == 200, first[0].text
    items = first[0].json()["items"]
    assert [it["status"] for it in items] == ["timeout"] * SLOW_ITEMS
    assert all(it["counterfactuals"] == [] for it in items)  # never a fallback answer
    assert "time budget" in items[0]["message"]
    assert second[0].status_code == 504 and "did not finish" in second[0].json()["detail"]


def test_killed_worker_gives_503_and_the_service_goes_on(faults, applicants):
    pid = wait_idle(faults)["workers"][0]["pid"]
    out: list = []
    t = post_in_thread(faults, "/v1/models/loan/explain",
                       {"items": applicants[:SLOW_ITEMS], "method": "nearest_neighbour",
                        "certify": SLOW_CERTIFY}, out)
    wait_busy(faults)
    os.kill(pid, signal.SIGKILL)
    t.join(30)
    assert out[0].status_code == 503 and "stopped unexpectedly" in out[0].json()["detail"]
    st = wait_idle(faults)
    assert st["workers"][0]["pid"] != pid and st["crashes"] >= 1
    with faults.client() as c:
        r = c.post("/v1/models/loan/explain", json={"items": applicants[:2], "method": "nearest_neighbour"})
    assert r.status_code == 200 and [it["status"] for it in r.json()["items"]] == ["found", "found"]
    assert faults.proc.poll() is None


@pytest.fixture
def doomed(tmp_path, model_dir):
    """A server of the ``faults`` kind of its own, for a test that stops it (the session's
    ``faults`` server stays up for the tests after this module)."""
    server = launch(tmp_path, model_dir, "doomed", "--workers", "1", "--max-queue", "1",
                    "--max-request-s", "3")
    try:
        wait_ready(server)
        yield server
    finally:
        server.stop()


def test_sigterm_answers_the_request_in_flight_then_exits(doomed, applicants):
    faults = doomed
    wait_idle(faults)
    out: list = []
    # the slow certificate keeps the worker busy up to the 3 s budget: the signal surely
    # arrives while the request is in flight (a fast request may finish between two polls)
    t = post_in_thread(faults, "/v1/models/loan/explain",
                       {"items": applicants[:1], "method": "milp_robust", "params": {"shift": 0.03},
                        "certify": SLOW_CERTIFY}, out)
    wait_busy(faults)
    faults.proc.send_signal(signal.SIGTERM)
    t.join(60)
    assert out and out[0].status_code == 200, out
    assert out[0].json()["items"][0]["status"] in ("found", "timeout")
    # uvicorn re-raises the signal once shut down, so the exit status reports SIGTERM
    assert faults.proc.wait(timeout=30) in (0, -signal.SIGTERM)
    assert "Traceback" not in faults.log.read_text()
