"""Request bodies → validated requests: the synchronous routes' one-call parse, and the job
route's parse and checks, made to run off the event loop without stalling it.

A synchronous route (explain, certify) takes at most ``max_sync_body_bytes`` (256 KiB by
default): its body is parsed and validated by one pydantic call on the event loop
(:func:`parse_json_body`), a few milliseconds at most. A job's body may be up to
``max_body_bytes`` (2 MiB): :func:`parse_job_body` is run on a worker thread, and is written so
that the thread gives the interpreter lock back often. One C call that parses a 2 MB body
holds the lock for its whole run (50–160 ms measured here), so a thread alone would not help
(and a thread running Python keeps the lock 5 ms each time the loop waits for the network);
here the JSON is parsed with Python hooks on every object and number, every
:data:`YIELD_EVERY`-th of which hands the lock to the loop, the item count and the records'
keys are checked first, in bounded Python work (a record with 100 000 unknown keys never
reaches pydantic), and pydantic then validates the items in chunks of :data:`CHUNK`. The app
runs one such parse at a time (``Service.parsers``). One JSON object's members are still read
without a hook in between: a single huge object of strings holds the lock for its parse.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, TypeAdapter, ValidationError

from robustce.serve.api_error import ApiError
from robustce.serve.records import RecordError, check_record_keys, validate_records
from robustce.serve.schemas import UNICODE_CHECKED, ExplainRequest, Item, _no_lone_surrogates

__all__ = ["CHUNK", "check_json_media", "gil_friendly_loads", "parse_job_body", "parse_json_body",
           "too_many_items"]

#: items validated by one pydantic call of :func:`parse_job_body`
CHUNK = 200

#: a lone surrogate can only come from a \uD800-\uDFFF escape: without one, the per-string
#: Unicode walk (70 ms of a 100 000-key body) is skipped
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

_ITEMS = TypeAdapter(list[Item])


def check_json_media(request: Request) -> None:
    """422 unless the request says its body is JSON (``application/json`` or ``*+json``)."""
    media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise RequestValidationError([{
            "loc": ("body",), "type": "content_type",
            "msg": f"the body must be JSON (Content-Type: application/json), got "
                   f"{media or 'no Content-Type'}"}])


def _context(body: bytes) -> dict[str, Any] | None:
    return None if _SURROGATE_ESCAPE.search(body) else UNICODE_CHECKED


async def parse_json_body(request: Request, model: type[BaseModel]) -> Any:
    """The request's body as ``model``: one pydantic call parses and validates the JSON (422
    with field-level errors located under ``body``, as FastAPI reports them). For the
    synchronous routes, whose bodies are small (``max_sync_body_bytes``)."""
    check_json_media(request)
    body = await request.body()
    try:
        return model.model_validate_json(body, context=_context(body))
    except ValidationError as exc:
        raise RequestValidationError(_located(exc)) from None


def _located(exc: ValidationError, offset: int | None = None) -> list[dict[str, Any]]:
    """``exc``'s errors located under ``body`` (and, for a chunk of items starting at
    ``offset``, under ``body.items[offset + i]``)."""
    out = []
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        if offset is not None:
            loc = ("items", offset + int(loc[0]), *loc[1:]) if loc else ("items",)
        out.append({"loc": ("body", *loc), "msg": e["msg"], "type": e["type"]})
    return out


def too_many_items(n: int, limit: int, loc: str, to_jobs: bool = False) -> ApiError:
    """The 422 of a batch of ``n`` items over the route's ``limit`` (``to_jobs``: pointing
    to the job route)."""
    hint = " (use POST /v1/models/{id}/jobs for large batches)" if to_jobs else ""
    return ApiError(422, [{"loc": ["body", loc], "type": "value_error.too_many",
                           "msg": f"{n} items; at most {limit} per request{hint}"}])


# JSON hooks in Python: while the C parser calls them, the thread hands the interpreter lock
# to the event loop every YIELD_EVERY calls (time.sleep(0) releases it; Python never does
# inside one C call, and otherwise only every switch interval, 5 ms, when asked)
YIELD_EVERY = 256
_calls = threading.local()


def _tick() -> None:
    n = getattr(_calls, "n", 0) + 1
    _calls.n = n
    if n % YIELD_EVERY == 0:
        time.sleep(0)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    _tick()
    return dict(pairs)


def _int(text: str) -> int:
    _tick()
    return int(text)


def _float(text: str) -> float:
    _tick()
    return float(text)


def gil_friendly_loads(body: bytes | str) -> Any:
    """``json.loads(body)``, the same values, with a Python call per object and number (see
    the module docstring). :class:`ValueError` for invalid JSON (or JSON nested too deep)."""
    try:
        return json.loads(body, object_pairs_hook=_object, parse_int=_int, parse_float=_float)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def parse_job_body(body: bytes, schema: Any, checker: Any, max_items: int
                   ) -> tuple[ExplainRequest, list[dict[str, Any]]]:
    """A job's body as its :class:`ExplainRequest` and its validated records (run it on a
    worker thread: see the module docstring). The refusals are those of the synchronous
    routes — 422 for invalid JSON, an unknown or ill-typed field, more than ``max_items``
    items, a record's unknown, missing or invalid features — with the same locations; the
    item count and the records' keys are checked before pydantic sees the items."""
    context = _context(body)
    try:
        obj = gil_friendly_loads(body)
    except ValueError as exc:  # json.JSONDecodeError included
        raise RequestValidationError([{"loc": ("body",), "type": "json_invalid",
                                       "msg": f"Invalid JSON: {exc}"}]) from None
    if context is None:  # a \uD800-\uDFFF escape: no lone surrogate may reach a key check
        try:
            _no_lone_surrogates(obj)
        except ValueError as exc:
            raise RequestValidationError([{"loc": ("body",), "type": "value_error",
                                           "msg": str(exc)}]) from None
    items = obj.get("items") if isinstance(obj, dict) else None
    if isinstance(items, list):
        if len(items) > max_items:
            raise too_many_items(len(items), max_items, "items")
        features = [it.get("features") if isinstance(it, dict) else None for it in items]
        try:  # bounded: O(features + listed errors) a record, whatever its number of keys
            check_record_keys(schema, features, loc=("body", "items"))
        except RecordError as exc:
            raise ApiError(422, exc.errors) from None
    request = _validate_chunked(obj, context)
    records = [it.features for it in request.items]
    try:
        validate_records(schema, records, loc=("body", "items"), checker=checker)
    except RecordError as exc:
        raise ApiError(422, exc.errors) from None
    return request, records


def _validate_chunked(obj: Any, context: dict[str, Any] | None) -> ExplainRequest:
    """``ExplainRequest.model_validate(obj)``, its items validated :data:`CHUNK` at a time
    (every error of every chunk reported, located as one call would)."""
    items = obj.get("items") if isinstance(obj, dict) else None
    if not isinstance(items, list) or len(items) <= CHUNK:
        try:
            return ExplainRequest.model_validate(obj, context=context)
        except ValidationError as exc:
            raise RequestValidationError(_located(exc)) from None
    errors: list[dict[str, Any]] = []
    head = None
    try:
        head = ExplainRequest.model_validate({**obj, "items": items[:1]}, context=context)
    except ValidationError as exc:
        errors += _located(exc)
    rest: list[Item] = []
    for start in range(1, len(items), CHUNK):
        try:
            rest += _ITEMS.validate_python(items[start:start + CHUNK], context=context)
        except ValidationError as exc:
            errors += _located(exc, offset=start)
    if errors or head is None:
        raise RequestValidationError(errors)
    return head.model_copy(update={"items": [*head.items, *rest]})
