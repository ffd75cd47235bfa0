"""The retry key of a request (:meth:`Service.retry_key`): its body is hashed only when the
request carries an ``Idempotency-Key`` — a request without one is never answered from the
kept results, so hashing its body (up to the body limit) would be work for nothing."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from starlette.requests import Request

from robustce.serve.app import NO_RETRY_KEY, Service

PATH = "/v1/models/loan/explain"
BODY = b'{"items": [{"features": {}}]}'


def _request(headers: dict[str, str], reads: list[int]) -> Request:
    async def receive() -> dict:
        reads.append(1)
        return {"type": "http.request", "body": BODY, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": PATH, "raw_path": PATH.encode(),
             "query_string": b"", "root_path": "", "scheme": "http", "server": ("test", 80),
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    return Request(scope, receive)


def _retry_key(request: Request) -> tuple:
    service = object.__new__(Service)  # retry_key reads the request only
    return asyncio.run(service.retry_key(request))


def test_without_an_idempotency_key_the_body_is_not_read_nor_hashed():
    reads: list[int] = []
    assert _retry_key(_request({"authorization": "Bearer t"}, reads)) == NO_RETRY_KEY
    assert reads == []


def test_with_an_idempotency_key_the_holder_and_the_path_and_body_are_hashed():
    reads: list[int] = []
    key = _retry_key(_request({"authorization": "Bearer t", "idempotency-key": "k-1"}, reads))
    assert reads == [1]
    assert key == (hashlib.sha256(b"Bearer t").hexdigest(), "k-1",
                   hashlib.sha256(PATH.encode() + b"\0" + BODY).hexdigest())


def test_a_malformed_idempotency_key_is_422_before_the_body_is_read():
    from robustce.serve.api_error import ApiError

    reads: list[int] = []
    with pytest.raises(ApiError) as caught:
        _retry_key(_request({"idempotency-key": "two words"}, reads))
    assert caught.value.status == 422 and reads == []
