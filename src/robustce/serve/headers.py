"""Security headers on every response of the service (ASGI middleware).

The page and the API docs are built by same-origin scripts only, so the Content-Security-Policy
allows no inline script or style, no other origin, no framing, no ``<base>`` and no form posting
elsewhere; ``data:`` images are allowed (the page's empty favicon, Swagger UI's icons): an image
runs no script. docs/serve.md, "Security", says why each header is there.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "SecurityHeaders"]

CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                           "base-uri 'none'; form-action 'self'")

#: header name → value, as the middleware sends them (names in lower case, as ASGI carries them)
SECURITY_HEADERS: dict[str, str] = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}

_RAW = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
_NAMES = {name for name, _ in _RAW}


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every HTTP response passing through it
    (replacing a header of the same name a route may have set)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": kept + _RAW}
            await send(message)

        await self.app(scope, receive, send_with_headers)
