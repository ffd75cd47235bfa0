"""Durable jobs: a job outlives the process that accepted it.

Real servers on loopback (restarted on the same audit log, so the same SQLite store beside it)
and a real PostgreSQL server started here (Debian's ``postgresql``; the PostgreSQL tests skip,
saying why, where it is absent): finished jobs survive a restart; a job interrupted by SIGTERM
or ``kill -9`` is resumed from its committed chunks by the next server and audited at accept,
interruption/resumption and finish; the store's ownership rules hold on SQLite and PostgreSQL;
two servers sharing one PostgreSQL store see each other's jobs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.serve.conftest import free_port, launch, wait_ready

pytest.importorskip("sqlalchemy")


def _job_body(applicants: list[dict], n: int) -> dict:
    """A ``milp_robust`` job of ``n`` items (the applicants over again, ids ``j0``…)."""
    items = [{"id": f"j{k}", "features": applicants[k % len(applicants)]["features"]} for k in range(n)]
    return {"items": items, "method": "milp_robust", "params": {"shift": 0.03}}


def _wait_job(server, job_id: str, until, timeout: float = 300.0) -> dict:
    end = time.monotonic() + timeout
    with server.client() as c:
        while time.monotonic() < end:
            r = c.get(f"/v1/jobs/{job_id}")
            assert r.status_code == 200, r.text
            view = r.json()
            if until(view):
                return view
            time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not reach the state in {timeout} s: {view}")


def _finished(view: dict) -> bool:
    return view["status"] in ("done", "failed")


def _audit(server, job_id: str) -> list[dict]:
    lines = server.audit_log.read_text().splitlines() if server.audit_log.exists() else []
    return [r for r in map(json.loads, lines) if r.get("request_id") == job_id]


def _start(tmp: Path, model_dir: Path, name: str, *extra: str):
    server = launch(tmp, model_dir, name, "--workers", "1", "--job-chunk", "2", *extra)
    wait_ready(server)
    return server


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_a_finished_job_survives_a_restart(tmp_path, model_dir, applicants):
    server = _start(tmp_path, model_dir, "restart")
    try:
        with server.client() as c:
            r = c.post("/v1/models/loan/jobs", json={"items": applicants[:3], "method": "nearest_neighbour"})
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        before = _wait_job(server, job_id, _finished)
        assert before["status"] == "done"
    finally:
        server.stop()
    server = _start(tmp_path, model_dir, "restart")  # same audit log: the same store
    try:
        with server.client() as c:
            after = c.get(f"/v1/jobs/{job_id}")
        assert after.status_code == 200, after.text
        assert after.json() == before
        events = [r.get("event") for r in _audit(server, job_id)]
        assert events == ["accepted", "finished"]
    finally:
        server.stop()


@pytest.mark.parametrize("how", [pytest.param("SIGTERM", marks=pytest.mark.slow), "SIGKILL"])
def test_an_interrupted_job_is_resumed_from_its_done_items_after_a_restart(tmp_path, model_dir,
                                                                           applicants, how):
    # 160 items (~8 s of work on a quiet host, after the 2 done): the signal lands mid-job,
    # never after its end (20 items were done before a SIGTERM took effect on a quiet host)
    n = 160
    body = _job_body(applicants, n)
    ids = [it["id"] for it in body["items"]]
    server = _start(tmp_path, model_dir, "interrupted")
    try:
        with server.client() as c:
            r = c.post("/v1/models/loan/jobs", json=body)
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        midway = _wait_job(server, job_id, lambda v: v["progress"]["done"] >= 2 or _finished(v))
        assert midway["status"] == "running" and midway["progress"]["done"] < n, midway
        server.proc.send_signal(getattr(signal, how))
        server.proc.wait(timeout=60)
    finally:
        server.stop()
    events = [r.get("event") for r in _audit(server, job_id)]
    assert events == (["accepted", "interrupted"] if how == "SIGTERM" else ["accepted"])

    server = _start(tmp_path, model_dir, "interrupted")
    try:
        with server.client() as c:
            r = c.get(f"/v1/jobs/{job_id}")
        assert r.status_code == 200, r.text
        assert r.json()["progress"]["done"] >= midway["progress"]["done"]
        view = _wait_job(server, job_id, _finished)
        assert view["status"] == "done", view
        items = view["result"]["items"]
        assert [it["id"] for it in items] == ids
        assert {it["status"] for it in items} <= {"found", "infeasible", "no_robust_point"}
        records = _audit(server, job_id)
        resumed = [r for r in records if r.get("event") == "resumed"]
        assert len(resumed) == 1 and resumed[0]["done"] >= midway["progress"]["done"], records
        finished = [r for r in records if r.get("event") == "finished"]
        assert len(finished) == 1 and finished[0]["job_status"] == "done"
        assert [it["id"] for it in finished[0]["items"]] == ids
    finally:
        server.stop()


# --- the store on SQLite and PostgreSQL ----------------------------------------------------
@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    from robustce.serve.store import JobStore, store_url

    url = (store_url(str(tmp_path / "jobs.sqlite3")) if request.param == "sqlite"
           else store_url(request.getfixturevalue("postgres_url")))
    s = JobStore(url)
    yield s
    if request.param == "postgresql":  # one database for the module: start each test empty
        with s.engine.begin() as conn:
            conn.execute(s.chunks.delete())
            conn.execute(s.jobs.delete())
    s.close()


def _ended_process_owner() -> str:
    """The owner name of a process of this host that has ended."""
    import socket

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{socket.gethostname()}:{child.pid}:0"


def _create(store, job_id: str, owner: str, total: int = 4, model_hash: str = "h1") -> None:
    store.create(job_id, model_id="loan", model_hash=model_hash, method="nearest_neighbour", target=1,
                 request={"items": [{"id": i, "features": {"x": i}} for i in range(total)]},
                 total=total, owner=owner, lease_s=60)


def test_the_store_keeps_chunks_in_order_and_one_owner_per_job(store):
    from robustce.serve.store import LeaseLost, process_owner

    me, other = process_owner(), "elsewhere:1:1"
    _create(store, "j1", me)
    store.start("j1", me)
    assert store.append_results("j1", 0, [{"status": "found"}, {"status": "found"}], me) == 2
    with pytest.raises(LeaseLost):  # not the owner
        store.append_results("j1", 2, [{"status": "x"}], other)
    with pytest.raises(LeaseLost):  # a chunk at the wrong place (stored twice or skipped)
        store.append_results("j1", 0, [{"status": "x"}], me)
    assert store.append_results("j1", 2, [{"status": "infeasible"}, {"status": "found"}], me) == 4
    row = store.get("j1")
    assert (row.status, row.done, row.total, row.owner) == ("running", 4, 4, me)
    assert row.request["items"][3] == {"id": 3, "features": {"x": 3}}
    assert [r["status"] for r in store.results("j1")] == ["found", "found", "infeasible", "found"]
    # a live owner's job under its lease is not taken; a released one is, once
    assert store.claim_orphans(other, {"loan": "h1"}, 60, limit=10) == []
    assert store.release("j1", me)
    assert store.claim_orphans(other, {"loan": "h1"}, 60, limit=10) == ["j1"]
    assert store.claim_orphans("third:1:1", {"loan": "h1"}, 60, limit=10) == []
    store.finish("j1", other, "done")
    assert store.get("j1").status == "done" and store.get("j1").owner is None
    assert store.claim_orphans(me, {"loan": "h1"}, 60, limit=10) == []
    assert store.counts() == {"done": 1}
    assert store.get("nope") is None
    _create(store, "j9", me)  # clean-up takes finished jobs only, with their chunks
    assert store.forget_finished(older_than_s=3600) == 0
    assert store.forget_finished(older_than_s=-1) == 1
    assert store.get("j1") is None and store.results("j1") == [] and store.get("j9") is not None


def test_a_dead_owners_job_is_taken_over_only_for_the_same_model(store):
    from robustce.serve.store import process_owner

    gone = _ended_process_owner()
    _create(store, "j2", gone, model_hash="h1")
    _create(store, "j3", gone, model_hash="h-other")
    me = process_owner()
    assert store.claim_orphans(me, {"loan": "h2"}, 60, limit=10) == []  # another model version
    assert store.claim_orphans(me, {"loan": "h1"}, 60, limit=10) == ["j2"]
    assert store.get("j2").owner == me and store.get("j3").owner == gone


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_two_servers_share_one_postgresql_store(tmp_path, model_dir, applicants, postgres_url):
    first = launch(tmp_path, model_dir, "pg-a", "--workers", "1", "--store", postgres_url)
    second = launch(tmp_path, model_dir, "pg-b", "--workers", "1", "--store", postgres_url)
    try:
        wait_ready(first)
        wait_ready(second)
        with first.client() as c:
            r = c.post("/v1/models/loan/jobs", json={"items": applicants[:3], "method": "nearest_neighbour"})
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        with second.client() as c:
            seen = c.get(f"/v1/jobs/{job_id}")
        assert seen.status_code == 200 and seen.json()["job_id"] == job_id
        done = _wait_job(second, job_id, _finished)
        assert done["status"] == "done"
        assert [it["id"] for it in done["result"]["items"]] == [a["id"] for a in applicants[:3]]
        assert _wait_job(first, job_id, _finished) == done
    finally:
        first.stop()
        second.stop()


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_two_front_processes_answer_and_share_the_jobs(tmp_path, model_dir, applicants):
    """``--processes 2``: both processes answer on the one port (told apart by the pid of
    their in-process lane in /v1/status), and a job submitted to one is seen from either."""
    import concurrent.futures

    server = launch(tmp_path, model_dir, "fronts", "--processes", "2", "--workers", "1")
    try:
        wait_ready(server)
        with server.client() as c:
            r = c.post("/v1/models/loan/jobs", json={"items": applicants[:3], "method": "nearest_neighbour"})
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]

        def ask(_: int) -> tuple[int, int]:  # one fresh connection: one process answers both
            with server.client() as c:
                front = c.get("/v1/status").json()["in_process"]["workers"][0]["pid"]
                return front, c.get(f"/v1/jobs/{job_id}").status_code

        answers: list[tuple[int, int]] = []
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for _ in range(20):  # until both processes have answered (concurrent connections)
                answers += pool.map(ask, range(40))
                if len({front for front, _ in answers}) == 2:
                    break
        assert len({front for front, _ in answers}) == 2, "one process answered every connection"
        assert {code for _, code in answers} == {200}
        assert _wait_job(server, job_id, _finished)["status"] == "done"
    finally:
        server.stop()


def test_a_store_that_cannot_be_opened_is_one_line(tmp_path, model_dir, capsys):
    from robustce.cli import main

    (tmp_path / "dir.sqlite3").mkdir()
    for store, says in [("nosuchdb://x/y", "job store nosuchdb://x/y"),
                        (str(tmp_path / "dir.sqlite3"), "job store sqlite:///")]:
        code = main(["serve", "--model", f"loan={model_dir}", "--port", str(free_port()), "--store", store])
        err = capsys.readouterr().err
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
        assert "serving" not in err
