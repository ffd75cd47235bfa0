"""Every audited request gets exactly one record, refusals included (live servers): 401, 404,
405, 413, 422 on the ``main`` server, 429 and 504 on the ``faults`` server (1 worker, a queue
of 1); the open routes get none; the logs verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robustce.serve.audit_log import verify_log

from .test_faults import SLOW_CERTIFY, SLOW_ITEMS, post_in_thread, wait_busy, wait_idle


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _request_records(path: Path) -> list[dict]:
    """The records of HTTP requests (a job's record at its end is written on its own)."""
    return [r for r in _records(path) if r.get("endpoint") != "job"]


def _rid(response) -> str:
    return response.headers["x-request-id"]


def test_every_request_gets_exactly_one_record_refusals_included(server, applicants):
    before = len(_request_records(server.audit_log))
    good = applicants[0]["features"]
    sent = []  # (response, the status it must have)
    with server.client(token=None) as anon:
        sent.append((anon.get("/v1/models"), 401))
        sent.append((anon.post("/v1/models/loan/explain", json={"items": applicants[:1]}), 401))
        assert anon.get("/health").status_code == 200  # open routes: no record
        assert anon.get("/ready").status_code == 200
        assert anon.get("/").status_code == 200
    with server.client(token=server.token[:-1] + "x") as wrong:
        sent.append((wrong.get("/v1/models"), 401))
    with server.client() as c:
        sent.append((c.get("/v1/models"), 200))
        sent.append((c.get("/v1/models/nope"), 404))
        sent.append((c.get("/v1/no/such/route"), 404))
        sent.append((c.get("/v1/models/loan/explain"), 405))
        sent.append((c.post("/v1/models/loan/explain",
                            json={"items": applicants[:1], "params": {"pad": "x" * (300 * 1024)}}), 413))

        def chunks():  # no Content-Length: refused while read
            for _ in range(40):
                yield b" " * 8192

        sent.append((c.post("/v1/models/loan/explain", content=chunks(),
                            headers={"content-type": "application/json"}), 413))
        bad_field = c.post("/v1/models/loan/explain",
                           json={"items": [{"features": dict(good, housing="castle-9137")}]})
        sent.append((bad_field, 422))
        sent.append((c.post("/v1/models/loan/explain", json={"items": applicants[:1]},
                            headers={"Idempotency-Key": "bad key with spaces"}), 422))
        ok = c.post("/v1/models/loan/explain", json={"items": applicants[:2], "method": "nearest_neighbour"})
        sent.append((ok, 200))
        cert = c.post("/v1/models/loan/certify", json={"counterfactuals": applicants[:1], "target_class": 0})
        sent.append((cert, 200))
        job = c.post("/v1/models/loan/jobs", json={"items": applicants[:2], "method": "nearest_neighbour"})
        sent.append((job, 202))
    for response, status in sent:
        assert response.status_code == status, (response.request.url, response.text)
    records = _request_records(server.audit_log)[before:]
    assert len(records) == len(sent)  # one each: none for the open routes, none twice
    by_id: dict[str, list[dict]] = {}
    for rec in records:
        by_id.setdefault(rec["request_id"], []).append(rec)
    for response, status in sent:
        rid = _rid(response)
        assert len(by_id[rid]) == 1, (rid, by_id[rid])
        rec = by_id[rid][0]
        assert rec["status"] == status and rec["path"] == response.request.url.path
        assert rec["verb"] == response.request.method and rec["client"] == "127.0.0.1"
        assert rec["ts"] > 0
    assert ok.json()["request_id"] == _rid(ok) and by_id[_rid(ok)][0]["endpoint"] == "explain"
    assert by_id[_rid(ok)][0]["method"] == "nearest_neighbour"  # the route's own record, full
    assert by_id[_rid(cert)][0]["endpoint"] == "certify"
    assert by_id[_rid(job)][0]["job_id"] == job.json()["job_id"]  # the accept, traceable to the job
    reasons = {rec["status"]: rec["reason"] for rec in records if rec["status"] in (401, 404, 413)}
    assert "token" in reasons[401] and "larger than" in reasons[413] and reasons[404]
    refused_422 = by_id[_rid(bad_field)][0]
    assert refused_422["reason"] == [{"loc": ["body", "items", 0, "features", "housing"],
                                      "type": refused_422["reason"][0]["type"]}]
    raw = server.audit_log.read_text()
    assert "castle-9137" not in raw  # a refusal records where the field error was, not the value
    assert server.token not in raw and server.token[:-1] + "x" not in raw
    check = verify_log(server.audit_log)
    assert check.ok, check.problems


def test_a_full_queue_and_a_timeout_are_recorded(servers, applicants):
    faults = servers["faults"]
    wait_idle(faults)
    before = len(_request_records(faults.audit_log))
    first: list = []
    second: list = []
    t1 = post_in_thread(faults, "/v1/models/loan/explain",
                        {"items": applicants[:SLOW_ITEMS], "method": "nearest_neighbour",
                         "certify": SLOW_CERTIFY},
                        first)
    wait_busy(faults)
    t2 = post_in_thread(faults, "/v1/models/loan/certify",
                        {"counterfactuals": applicants[:SLOW_ITEMS], "target_class": 0, **SLOW_CERTIFY},
                        second)
    wait_busy(faults, waiting=1)
    with faults.client() as c:
        full = c.post("/v1/models/loan/explain",
                      json={"items": applicants[:1], "method": "nearest_neighbour"})
    t1.join(60)
    t2.join(60)
    assert full.status_code == 429 and second[0].status_code == 504 and first[0].status_code == 200
    records = {r["request_id"]: r for r in _request_records(faults.audit_log)[before:]
               if r.get("path", "").endswith(("/explain", "/certify"))}
    assert records[_rid(full)]["status"] == 429 and "queue" in records[_rid(full)]["reason"]
    assert records[_rid(second[0])]["status"] == 504
    assert records[_rid(first[0])]["endpoint"] == "explain"
    assert len(records) == 3
    check = verify_log(faults.audit_log)
    assert check.ok, check.problems


@pytest.mark.parametrize("name", ["main", "faults"])
def test_the_session_logs_verify(servers, name):
    """Whatever the other service tests did so far, their servers' logs are intact chains."""
    check = verify_log(servers[name].audit_log)
    assert check.ok, check.problems


def test_an_unexpected_error_is_recorded_once_as_500(tmp_path):
    """The 500 path, in process: a route that raises gets one record (status 500, the error's
    type, not its message) and the client a plain 500."""
    import asyncio

    import httpx
    from fastapi import FastAPI

    from robustce.serve.audit_log import AuditLog
    from robustce.serve.audit_trail import AuditTrail

    app = FastAPI()

    @app.get("/v1/boom")
    async def boom() -> None:
        raise RuntimeError("secret detail 4711")

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    log = AuditLog(tmp_path / "audit.jsonl", fsync=False)
    app.add_middleware(AuditTrail, log=log, retry_after_s=1)

    async def calls() -> list[int]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False, client=("10.1.2.3", 5555))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return [(await client.get("/v1/boom?token=abc")).status_code,
                    (await client.get("/health")).status_code]

    assert asyncio.run(calls()) == [500, 200]
    log.close()
    records = _records(tmp_path / "audit.jsonl")
    assert len(records) == 1
    assert records[0]["status"] == 500 and records[0]["reason"] == "internal error (RuntimeError)"
    assert records[0]["path"] == "/v1/boom" and "abc" not in json.dumps(records[0])
    assert records[0]["client"] == "10.1.2.3" and "4711" not in json.dumps(records[0])
    assert verify_log(tmp_path / "audit.jsonl").ok


def test_x_forwarded_for_never_names_the_client(server):
    """A loopback peer cannot write another address into the audit record with
    ``X-Forwarded-For`` (uvicorn trusts it from loopback by default: the record said
    203.0.113.7 before ``proxy_headers`` was switched off)."""
    with server.client() as c:
        reply = c.get("/v1/models", headers={"X-Forwarded-For": "203.0.113.7"})
    assert reply.status_code == 200
    record = {r["request_id"]: r for r in _request_records(server.audit_log)}[_rid(reply)]
    assert record["client"] == "127.0.0.1"
