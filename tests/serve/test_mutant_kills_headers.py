"""The security-header middleware replaces what a route sets (issue 47's mutants): a route
that sends its own, looser Content-Security-Policy or framing header still answers with
exactly the service's, once each, whatever its status; its other headers pass through.

The middleware is driven directly as ASGI (no server): the live-server check that every
reply carries the headers is ``test_security.py``'s client."""

from __future__ import annotations

import asyncio

from robustce.serve.headers import SECURITY_HEADERS, SecurityHeaders

#: what a careless route might set: a policy allowing inline script, framing by anyone
LOOSE = [(b"content-security-policy", b"default-src * 'unsafe-inline'"),
         (b"X-Frame-Options", b"ALLOWALL"), (b"content-type", b"application/json")]


def _answer(status: int, headers: list[tuple[bytes, bytes]]) -> list[dict]:
    """The ASGI messages a route answering ``status`` with ``headers`` sends through the
    middleware."""
    async def route(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": list(headers)})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    asyncio.run(SecurityHeaders(route)({"type": "http"}, receive, send))
    return sent


def test_the_services_headers_replace_a_routes_own_once_each_at_every_status():
    for status in (200, 404, 500):
        start = _answer(status, LOOSE)[0]
        names = [k.decode().lower() for k, _ in start["headers"]]
        for name, value in SECURITY_HEADERS.items():
            assert names.count(name) == 1, (status, name, start["headers"])
            assert dict((k.decode().lower(), v.decode()) for k, v in start["headers"])[name] == value
        assert (b"content-type", b"application/json") in start["headers"]  # others kept


def test_a_route_without_headers_gets_them_all():
    start = _answer(204, [])[0]
    assert {k.decode(): v.decode() for k, v in start["headers"]} == SECURITY_HEADERS
