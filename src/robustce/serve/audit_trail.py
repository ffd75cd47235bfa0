"""ASGI middleware: one audit record for every request the service does not leave open.

Every request except the open routes (:data:`OPEN_PATHS`: health, readiness, the page, its
static files, the OpenAPI documents and /docs/assets/) gets exactly one record. A route that writes its own
record (explain, certify) marks the request ``state.audited`` (a route may add fields to the
middleware's record in ``state.audit_extra``: a job's id); for any other request —
refusals (401, 404, 405, 413, 422, 429, 503, 504), a 500, plain reads — this middleware writes
one before the response leaves: time, request id, path (no query string: it may carry a
token), verb, status, reason, client address. Refusal reasons are the service's own
messages, and for field errors only their locations and types: never the token, the body, or
a message that could quote a submitted value. The record's id goes out as ``X-Request-Id``.
A response whose record cannot be written is replaced by 503 with ``Retry-After``: no answer
goes out without its record.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from robustce.serve.audit_log import AuditLog, AuditWriteError

__all__ = ["OPEN_PATHS", "AuditTrail", "is_open_path"]

#: routes answered without a token and without an audit record
OPEN_PATHS = ("/health", "/ready", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json")

_REASON_BYTES = 64 * 1024  # an error body is read this far for its reason
_PATH_CHARS = 512
_log = logging.getLogger(__name__)


def is_open_path(path: str) -> bool:
    """Whether ``path`` is one of the open routes (no audit record)."""
    return path in OPEN_PATHS or path.startswith(("/static/", "/docs/assets/"))


def refusal_reason(body: bytes) -> Any:
    """What a refusal's record says about why: the ``detail`` message, or for field errors
    their locations and types (their messages may quote the submitted values)."""
    try:
        detail = json.loads(body)["detail"]
    except (ValueError, KeyError, TypeError):
        return None
    if isinstance(detail, list):
        return [{"loc": e.get("loc"), "type": e.get("type")} for e in detail if isinstance(e, dict)][:20]
    return str(detail)[:500]


class AuditTrail:
    """Wrap ``app``; write the record of every audited request the route did not record."""

    def __init__(self, app: Any, log: AuditLog, retry_after_s: int):
        self.app, self.log, self.retry_after_s = app, log, retry_after_s

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or is_open_path(scope["path"]):
            return await self.app(scope, receive, send)
        state = scope.setdefault("state", {})
        status: int | None = None
        held: dict | None = None  # an error response's start, sent once its record is written
        parts: list[bytes] = []
        started = replaced = False

        def audited() -> bool:
            return bool(state.get("audited"))

        async def audit_send(message: dict) -> None:
            nonlocal status, held, started, replaced
            if replaced:
                return
            if message["type"] == "http.response.start":
                status, started = message["status"], True
                if audited():
                    return await send(message)
                if status >= 400:
                    held = message
                    return
                if await self._record(scope, status, None, message):
                    return await send(message)
                replaced = True
                return await self._send_503(send)
            if message["type"] == "http.response.body" and held is not None:
                parts.append(message.get("body", b""))
                more = message.get("more_body", False)
                size = sum(map(len, parts))
                if more and size < _REASON_BYTES:
                    return
                body = b"".join(parts)
                reason = refusal_reason(body) if not more else f"(error body over {_REASON_BYTES} bytes)"
                start, held = held, None
                if not await self._record(scope, status, reason, start) and status != 503:
                    replaced = True
                    return await self._send_503(send)
                await send(start)
                return await send({"type": "http.response.body", "body": body, "more_body": more})
            await send(message)

        try:
            await self.app(scope, receive, audit_send)
        except Exception as exc:
            if not audited() and (not started or held is not None):
                ok = await self._record(scope, 500, f"internal error ({type(exc).__name__})")
                if not ok:
                    replaced = True
                    await self._send_503(send)
            raise
        if not started and not audited():
            await self._record(scope, None, "no response was sent (the client went away)")

    async def _record(self, scope: dict, status: int | None, reason: Any, start: dict | None = None
                      ) -> bool:
        """Write the request's record; False if it could not be written. The record's id is
        the response's ``X-Request-Id`` if it has one, else a new one, added to ``start``."""
        client = scope.get("client")
        headers = start["headers"] if start is not None else []
        rid = next((v.decode("latin-1") for k, v in headers if k.lower() == b"x-request-id"), None)
        if rid is None:
            rid = uuid.uuid4().hex
            if start is not None:
                start["headers"] = [*headers, (b"x-request-id", rid.encode())]
        record = {"ts": time.time(), "request_id": rid, "endpoint": "request",
                  "path": scope["path"][:_PATH_CHARS], "verb": scope["method"], "status": status,
                  "reason": reason, "client": client[0] if client else None,
                  **scope["state"].get("audit_extra", {})}
        try:
            await self.log.write_async(record)
        except AuditWriteError as exc:
            _log.error("%s", exc)
            return False
        scope["state"]["audited"] = True
        return True

    async def _send_503(self, send: Any) -> None:
        body = json.dumps({"detail": "the audit log could not be written, so this request was not "
                                     "answered; retry later"}).encode()
        await send({"type": "http.response.start", "status": 503,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"retry-after", str(self.retry_after_s).encode())]})
        await send({"type": "http.response.body", "body": body})
