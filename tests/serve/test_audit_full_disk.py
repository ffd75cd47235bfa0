"""A full disk, for real: the server's file-size limit (``RLIMIT_FSIZE``, set and raised again
from outside with ``prlimit``) makes the audit write fail in the kernel — a short write, then
``EFBIG`` — as a full disk does. The request is answered 503 with ``Retry-After``, the log stays
whole lines and verifies, and once the limit is lifted ("space returns") a retry with the same
``Idempotency-Key`` gets the finished results, not recomputed, with one audit record."""

from __future__ import annotations

import json
import sys

import pytest

from robustce.serve.audit_log import verify_log

from .conftest import launch, wait_ready

resource = pytest.importorskip("resource")
if not sys.platform.startswith("linux") or not hasattr(resource, "prlimit"):
    pytest.skip("needs Linux prlimit(2) to limit a running server's file size", allow_module_level=True)


@pytest.fixture(scope="module")
def disk_server(tmp_path_factory, model_dir):
    server = launch(tmp_path_factory.mktemp("disk"), model_dir, "disk", "--workers", "1")
    try:
        wait_ready(server)
        yield server
    finally:
        server.stop()


def _limit(server, size: int | None) -> None:
    """Let the server's writes extend no file past ``size`` bytes (None: no limit)."""
    soft = resource.RLIM_INFINITY if size is None else size
    resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE, (soft, resource.RLIM_INFINITY))


def _whole_lines(raw: bytes) -> list[dict]:
    assert raw == b"" or raw.endswith(b"\n")
    return [json.loads(line) for line in raw.splitlines()]


def test_full_disk_answers_503_keeps_the_log_whole_and_the_results_for_a_retry(disk_server, applicants):
    server = disk_server
    body = {"items": applicants[:2], "method": "nearest_neighbour", "seed": 3}
    with server.client() as c:
        assert c.post("/v1/models/loan/explain", json=body).status_code == 200
        size = server.audit_log.stat().st_size
        before = server.audit_log.read_bytes()
        _limit(server, size + 100)  # room for a part of the next record only: a short write
        try:
            full = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": "k-1"})
            assert full.status_code == 503, full.text
            assert int(full.headers["retry-after"]) >= 1 and full.headers["idempotency-key"] == "k-1"
            assert "Idempotency-Key: k-1" in full.json()["detail"]
            kept_id = full.headers["x-request-id"]
            no_key = c.post("/v1/models/loan/explain", json=body)  # the server names a key
            assert no_key.status_code == 503 and no_key.headers["idempotency-key"] == _rid(no_key)
            _limit(server, size)  # nothing more fits: EFBIG (SIGXFSZ must not kill the server)
            read = c.get("/v1/models")  # a plain read is not answered without its record either
            assert read.status_code == 503 and int(read.headers["retry-after"]) >= 1
            refused = c.get("/v1/models", headers={"Authorization": "Bearer wrong"})
            assert refused.status_code == 503
            early = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": "k-1"})
            assert early.status_code == 503 and _rid(early) == kept_id  # still full: kept again
            assert server.proc.poll() is None
            assert server.audit_log.read_bytes() == before  # no torn line, nothing glued
        finally:
            _limit(server, None)  # space returns
        again = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": "k-1"})
        assert again.status_code == 200, again.text
        assert again.json()["request_id"] == kept_id == _rid(again)  # the kept answer, not redone
        assert [it["status"] for it in again.json()["items"]] == ["found", "found"]
        named = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": _rid(no_key)})
        assert named.status_code == 200 and named.json()["request_id"] == _rid(no_key)
        gone = c.post("/v1/models/loan/explain", json=body, headers={"Idempotency-Key": "k-1"})
        assert gone.status_code == 200 and gone.json()["request_id"] != kept_id  # answered once
    records = _whole_lines(server.audit_log.read_bytes())
    assert [r["request_id"] for r in records].count(kept_id) == 1
    rec = next(r for r in records if r["request_id"] == kept_id)
    assert rec["answered_on_retry"] is True and rec["idempotency_key"] == "k-1"
    assert [it["id"] for it in rec["items"]] == [it["id"] for it in applicants[:2]]
    check = verify_log(server.audit_log)
    assert check.ok, check.problems


def _rid(response) -> str:
    return response.headers["x-request-id"]
