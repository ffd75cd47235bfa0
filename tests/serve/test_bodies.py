"""The job route's body parse (:func:`parse_job_body`, run off the event loop): the same
request and the same refusals, located the same way, as the synchronous routes' one pydantic
call; the item count and the records' keys checked before pydantic sees the items; JSON parsed
with Python hooks (the same values as ``json.loads``). And the route itself runs it on a
worker thread, not the event loop's."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from fastapi.exceptions import RequestValidationError

from robustce.serve import bodies
from robustce.serve.api_error import ApiError
from robustce.serve.bodies import CHUNK, gil_friendly_loads, parse_job_body
from robustce.serve.records import RecordChecker
from robustce.serve.schemas import ExplainRequest

from .test_records import GOOD, SCHEMA

CHECKER = RecordChecker(SCHEMA)


def _body(items: list[dict], **extra) -> bytes:
    return json.dumps({"items": items, **extra}).encode()


def _items(n: int) -> list[dict]:
    return [{"id": f"i{k}", "features": {**GOOD, "age": 18 + k % 50}} for k in range(n)]


def test_a_valid_body_gives_the_request_one_pydantic_call_gives():
    body = _body(_items(2 * CHUNK + 7), method="nearest_neighbour", seed=3, time_limit_s=2,
                 certify={"delta": 0.03})
    request, records = parse_job_body(body, SCHEMA, CHECKER, 10_000)
    assert request == ExplainRequest.model_validate_json(body)
    assert records == [it["features"] for it in json.loads(body)["items"]]


def _one_call_errors(body: bytes) -> list[tuple]:
    try:
        ExplainRequest.model_validate_json(body)
    except Exception as exc:  # noqa: BLE001 - a pydantic ValidationError
        return sorted((("body", *e["loc"]), e["type"]) for e in exc.errors())
    raise AssertionError("the body was accepted")


def test_errors_in_every_chunk_are_located_as_one_call_locates_them():
    items = _items(3 * CHUNK)
    for k in (0, CHUNK - 1, CHUNK, 2 * CHUNK + 5):  # in the head, a chunk's last and first items
        items[k] = {**items[k], "id": 7}
    items[CHUNK + 3] = {**items[CHUNK + 3], "colour": "red"}
    body = _body(items, seed=-1)
    with pytest.raises(RequestValidationError) as caught:
        parse_job_body(body, SCHEMA, CHECKER, 10_000)
    got = sorted((tuple(e["loc"]), e["type"]) for e in caught.value.errors())
    assert got == _one_call_errors(body)


def test_too_many_items_are_refused_before_pydantic_sees_them(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("pydantic was given the items")

    monkeypatch.setattr(bodies, "_validate_chunked", never)
    with pytest.raises(ApiError) as caught:
        parse_job_body(_body(_items(11)), SCHEMA, CHECKER, 10)
    (error,) = caught.value.detail
    assert caught.value.status == 422 and error["loc"] == ["body", "items"]
    assert error["type"] == "value_error.too_many" and "11 items; at most 10" in error["msg"]


def test_100_000_unknown_keys_are_refused_by_their_keys_before_pydantic(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("pydantic was given the items")

    monkeypatch.setattr(bodies, "_validate_chunked", never)
    features = {**GOOD, **{f"k{i:06d}": i for i in range(100_000)}}
    body = _body([{"id": "a", "features": GOOD}, {"id": "x", "features": features}])
    with pytest.raises(ApiError) as caught:
        parse_job_body(body, SCHEMA, CHECKER, 10_000)
    detail = caught.value.detail
    assert caught.value.status == 422 and len(detail) == 21
    assert detail[0]["loc"] == ["body", "items", 1, "features", "k000000"]
    assert "99980 more" in detail[-1]["msg"]


def test_a_missing_feature_and_a_bad_value_are_refused_with_their_paths():
    items = _items(3)
    items[1] = {"id": "m", "features": {k: v for k, v in GOOD.items() if k != "income"}}
    items[2] = {"id": "v", "features": {**GOOD, "housing": "castle"}}
    with pytest.raises(ApiError) as caught:
        parse_job_body(_body(items), SCHEMA, CHECKER, 10_000)
    assert caught.value.detail[0]["loc"] == ["body", "items", 1, "features", "income"]
    with pytest.raises(ApiError) as caught:
        parse_job_body(_body([items[0], items[2]]), SCHEMA, CHECKER, 10_000)
    assert caught.value.detail[0]["loc"] == ["body", "items", 1, "features", "housing"]


@pytest.mark.parametrize("text", [b"{not json", b'{"items": [1], "x": 1', b"[" * 100_000 + b"]" * 100_000])
def test_invalid_json_is_422_at_the_body(text):
    with pytest.raises(RequestValidationError) as caught:
        parse_job_body(text, SCHEMA, CHECKER, 10_000)
    (error,) = caught.value.errors()
    assert error["loc"] == ("body",) and error["type"] == "json_invalid"


def test_a_lone_surrogate_in_a_feature_name_is_refused_before_the_key_check():
    """The key check would quote the name in its error: a lone surrogate must be refused first
    (an error message that cannot be encoded was a 500)."""
    body = _body([{"id": "x", "features": {**GOOD, "\udc80bad": 1}}])
    with pytest.raises(RequestValidationError) as caught:
        parse_job_body(body, SCHEMA, CHECKER, 10_000)
    (error,) = caught.value.errors()
    assert error["loc"] == ("body",) and "Unicode" in error["msg"]
    json.dumps(caught.value.errors()).encode("utf-8")  # the answer can be written


def test_a_lone_surrogate_is_refused_as_by_one_call():
    body = _body([{"id": "\ud800", "features": GOOD}])
    assert b"\\ud800" in body  # json.dumps writes the escape
    with pytest.raises(RequestValidationError):
        parse_job_body(body, SCHEMA, CHECKER, 10_000)
    with pytest.raises(Exception):  # noqa: B017,PT011 - pydantic's ValidationError
        ExplainRequest.model_validate_json(body)


@pytest.mark.parametrize("text", [
    '{"a": [1, 2.5, -0.0, 1e400, NaN, -Infinity, 123456789012345678901234567890]}',
    '{"a": {"b": {"c": [true, false, null, "x\\u00e9"]}}, "a": 2}',
    '[{"k": 1}, [], {}, ""]'])
def test_the_hooked_parse_gives_json_loads_values(text):
    got, want = gil_friendly_loads(text), json.loads(text)
    assert json.dumps(got) == json.dumps(want)  # NaN written as NaN: equal where == is not
    assert type(got) is type(want)


def test_the_job_route_parses_its_body_on_a_worker_thread(monkeypatch, model_dir):
    """The app's job route hands the body to :func:`parse_job_body` on another thread than the
    event loop's (in-process app, the demo model loaded; a 422 body, so no job is made)."""
    httpx = pytest.importorskip("httpx")
    from robustce.serve import app as app_module
    from robustce.serve.registry import load_served_model, model_spec
    from robustce.serve.settings import ServeSettings

    threads: list[threading.Thread] = []
    parse = app_module.parse_job_body

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return parse(*args, **kwargs)

    monkeypatch.setattr(app_module, "parse_job_body", recording)
    spec = model_spec(model_dir, "loan")
    app = app_module.create_app([spec], ServeSettings(max_job_items=5))
    app.state.service.models["loan"] = load_served_model(spec, with_methods=False)

    async def post() -> tuple[httpx.Response, threading.Thread]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            items = [{"features": {"age": 40}}] * 6
            reply = await client.post("/v1/models/loan/jobs", json={"items": items})
            return reply, threading.current_thread()

    reply, loop_thread = asyncio.run(post())
    assert reply.status_code == 422 and reply.json()["detail"][0]["type"] == "value_error.too_many"
    assert len(threads) == 1 and threads[0] is not loop_thread
