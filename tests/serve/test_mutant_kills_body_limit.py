"""The body limits (:class:`robustce.serve.app.BodyLimit`): a synchronous request whose
``Content-Length`` is over ``--max-sync-body`` — though under the job limit — is refused
with 413 before a byte of its body is read (mutant
``body_limit_header_checked_against_the_job_limit`` read it first), a job of the same size
goes through; and a chunked body (no ``Content-Length``) is cut off once its bytes pass the
limit, with the 413 locating the body (``api_error_body_drops_loc``)."""

from __future__ import annotations

import asyncio
import json

import pytest

from robustce.serve.app import BodyLimit

SYNC, JOB = 1000, 100_000


def _call(path: str, length: int | None) -> tuple[list[dict], list[str]]:
    """What BodyLimit sends, and what happened (``read``: the body was asked for,
    ``app``: the route was called) for a POST of ``length`` bytes announced."""
    sent: list[dict] = []
    events: list[str] = []

    async def receive() -> dict:
        events.append("read")
        return {"type": "http.request", "body": b"x" * 10, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    async def app(scope, rcv, snd) -> None:
        events.append("app")
        await rcv()
        await snd({"type": "http.response.start", "status": 200, "headers": []})
        await snd({"type": "http.response.body", "body": b""})

    headers = [] if length is None else [(b"content-length", str(length).encode())]
    scope = {"type": "http", "method": "POST", "path": path, "headers": headers}
    asyncio.run(BodyLimit(app, limit=JOB, sync_limit=SYNC)(scope, receive, send))
    return sent, events


@pytest.mark.parametrize("path", ["/v1/models/loan/explain", "/v1/models/loan/certify"])
def test_a_sync_body_announced_over_its_limit_is_refused_unread(path):
    sent, events = _call(path, SYNC + 1)
    assert sent[0]["status"] == 413 and events == []  # neither read nor routed
    body = json.loads(sent[1]["body"])
    assert body["loc"] == ["body"] and f"larger than {SYNC} bytes" in body["detail"]
    sent, events = _call(path, SYNC)  # exactly the limit: routed
    assert sent[0]["status"] == 200 and events == ["app", "read"]


def test_a_job_of_the_same_size_is_routed_and_one_over_the_job_limit_refused():
    sent, events = _call("/v1/models/loan/jobs", SYNC + 1)
    assert sent[0]["status"] == 200 and events == ["app", "read"]
    sent, events = _call("/v1/models/loan/jobs", JOB + 1)
    assert sent[0]["status"] == 413 and events == []


def test_a_chunked_sync_body_over_the_limit_is_413_at_the_body(model_dir):
    httpx = pytest.importorskip("httpx")
    from robustce.serve import app as app_module
    from robustce.serve.registry import model_spec
    from robustce.serve.settings import ServeSettings

    app = app_module.create_app([model_spec(model_dir, "loan")],
                                ServeSettings(max_sync_body_bytes=SYNC, max_body_bytes=JOB))

    async def chunks():
        for _ in range(5):
            yield b" " * 400  # 2000 bytes in all, no Content-Length

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post("/v1/models/loan/explain", content=chunks(),
                                     headers={"content-type": "application/json"})

    reply = asyncio.run(post())
    assert reply.status_code == 413, reply.text
    assert reply.json()["loc"] == ["body"] and f"larger than {SYNC} bytes" in reply.json()["detail"]
