"""The FastAPI application: routes of the ``/v1`` API, the page at ``/``, limits, auth, audit.

:func:`create_app` builds it from the served models' :class:`ModelSpec`\\ s and the
:class:`ServeSettings`; ``robustce serve`` runs it with uvicorn. The solver work goes to the
:class:`~robustce.serve.pool.SolverPool` (429 when its queue is full, 503 when a worker dies);
requests are checked here first (413 body size, 401 token, 404 model, 422 fields).
"""

from __future__ import annotations

import asyncio
import copy
import gc
import hashlib
import hmac
import json
import logging
import re
import signal
import threading
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from robustce.errors import RobustCEError
from robustce.serve.api_docs import add_api_docs
from robustce.serve.api_error import ApiError
from robustce.serve.audit_log import AuditLog, AuditWriteError, library_versions
from robustce.serve.audit_trail import AuditTrail
from robustce.serve.batching import Coalescer
from robustce.serve.bodies import check_json_media, parse_job_body, parse_json_body, too_many_items
from robustce.serve.client_params import check_client_params
from robustce.serve.headers import SECURITY_HEADERS, SecurityHeaders
from robustce.serve.jobs import JobRunner
from robustce.serve.kept_results import KEEP_S, KeptResults
from robustce.serve.pool import DeadlineExceeded, InProcessLane, QueueFull, SolverPool, WorkerCrashed
from robustce.serve.promises import LedgerWriteError, ServiceLedger
from robustce.serve.records import RecordError, validate_records
from robustce.serve.registry import ModelSpec, ServedModel, load_served_model, resolve_class
from robustce.serve.schemas import (
    CertifyRequest,
    CertifyResponse,
    ExplainItemOut,
    ExplainRequest,
    ExplainResponse,
    FeatureOut,
    JobOut,
    ModelInfo,
    ModelList,
)
from robustce.serve.settings import ServeSettings, sync_body_limit
from robustce.serve.store import JobStore, default_store_url
from robustce.serve.worker import certify_task, explain_task, register_models

__all__ = ["ApiError", "create_app"]

STATIC = Path(__file__).parent / "static"
GRACE_S = 10.0
#: job bodies parsed at once (each on a thread of its own)
JOB_PARSERS = 1
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,200}")
#: the retry key of a request without an ``Idempotency-Key`` (holder, key, body hash)
NO_RETRY_KEY: tuple[str, None, str] = ("", None, "")
_log = logging.getLogger(__name__)


#: the route whose body may be large (a job's batch): ``POST /v1/models/{id}/jobs``
_JOB_ROUTE = re.compile(r"/v1/models/[^/]+/jobs")


class BodyLimit:
    """ASGI middleware: a body over its route's limit gets 413, by its ``Content-Length`` or,
    for a chunked body, as soon as the bytes read pass the limit — before it is parsed.

    ``POST /v1/models/{id}/jobs`` takes up to ``limit`` bytes (its body is parsed off the event
    loop); every other route (explain, certify: answered while the client waits) up to
    ``sync_limit``, so a large body there is refused unread instead of parsed on the loop."""

    def __init__(self, app: Any, limit: int, sync_limit: int | None = None):
        self.app, self.limit = app, limit
        self.sync_limit = limit if sync_limit is None else min(sync_limit, limit)

    def limit_of(self, scope: dict) -> tuple[int, str]:
        """(the body limit of the request, what it is the limit of)."""
        if scope.get("method") == "POST" and _JOB_ROUTE.fullmatch(scope["path"]):
            return self.limit, "a job submission"
        return self.sync_limit, ("a synchronous request; large batches go to POST "
                                 f"/v1/models/{{id}}/jobs, up to {self.limit} bytes")

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit, what = self.limit_of(scope)
        reason = f"request body larger than {limit} bytes (the limit of {what})"
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return await _send_413(send, reason)
        seen = 0

        async def limited_receive() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # raised in the route reading the body: its handler answers
                    raise ApiError(413, reason, loc=["body"])
            return message

        await self.app(scope, limited_receive, send)


async def _send_413(send: Any, message: str) -> None:
    body = json.dumps({"detail": message, "loc": ["body"]}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _shift_params(methods: list[str]) -> dict[str, str]:
    """Per method, the name of its parameter typed :class:`ParameterShift` (robust methods)."""
    from robustce.methods.registry import converter_for, get_method, param_annotations
    from robustce.robustness.shift import ParameterShift

    out = {}
    for name in methods:
        for key, (hint, _) in param_annotations(get_method(name)).items():
            found = converter_for(hint)
            if found is not None and found[0] is ParameterShift:
                out[name] = key
                break
    return out


def _model_info(m: ServedModel) -> ModelInfo:
    feats = [FeatureOut(**{**f.to_dict(), "categories": list(f.categories) if f.categories else None})
             for f in m.schema]
    default = "milp_robust" if "milp_robust" in m.methods else (m.methods[0] if m.methods else None)
    return ModelInfo(id=m.id, hash=m.hash, class_names=m.class_names,
                     favourable_class=m.class_names[m.favourable],
                     default_target_class=m.favourable, features=feats,
                     methods=m.methods, shift_params=_shift_params(m.methods),
                     default_method=default, has_training_data=m.data is not None,
                     family_size=len(m.family))


class Service:
    """The state behind the routes: models, pool, jobs, audit log, settings."""

    def __init__(self, specs: list[ModelSpec], settings: ServeSettings):
        self.specs, self.settings = specs, settings
        self.models: dict[str, ServedModel] = {}
        # opened first: a ledger that cannot be opened stops the start (one line, exit 2)
        self.ledger = (ServiceLedger(settings.ledger, settings.ledger_hash_ids)
                       if settings.ledger else None)
        self.pool = SolverPool(specs, settings.workers, settings.max_queue)
        self.audit = AuditLog(settings.audit_log) if settings.audit_log else None
        self.kept = KeptResults()
        self.versions = library_versions()
        self.store = JobStore(settings.store or default_store_url(settings.audit_log))
        self.jobs = JobRunner(self, self.store, settings.max_jobs)
        self.lane = InProcessLane(settings.max_queue)
        self.coalescer = Coalescer(self.pool, explain_task, settings.max_items)
        self.lane_coalescer = Coalescer(self.lane, explain_task, settings.max_items)
        self._checked: set[tuple] = set()
        self._vectorised: dict[str, bool] = {}
        self._parsers: anyio.CapacityLimiter | None = None

    def parsers(self) -> anyio.CapacityLimiter:
        """The threads that parse job bodies: :data:`JOB_PARSERS` at once (more wait, holding
        only their raw body), so a flood of 2 MB bodies takes neither every thread nor
        2 MB × 40 of parsed objects, and leaves the event loop its share of the cores."""
        if self._parsers is None:  # made on the event loop (anyio needs one)
            self._parsers = anyio.CapacityLimiter(JOB_PARSERS)
        return self._parsers

    def load(self) -> None:
        for spec in self.specs:
            self.models[spec.id] = load_served_model(spec)
        register_models(list(self.models.values()))  # for the in-process lane

    def model(self, model_id: str) -> ServedModel:
        if model_id not in self.models:
            raise ApiError(404, f"no model {model_id!r}; the models are {sorted(self.models)}")
        return self.models[model_id]

    # --- checks before any solver work ------------------------------------------------
    def target(self, m: ServedModel, value: Any) -> int:
        if value is None:
            return m.favourable
        try:
            return resolve_class(m.model, value)
        except RobustCEError as exc:
            raise ApiError(422, [{"loc": ["body", "target_class"], "msg": str(exc),
                                  "type": "value_error"}]) from None

    def check_method(self, m: ServedModel, method: str, params: dict[str, Any], seed: int) -> str:
        from robustce.methods.registry import build_explainer, method_name

        try:
            name = method_name(method)
        except RobustCEError:
            name = method
        if name not in m.methods:
            raise ApiError(422, [{"loc": ["body", "method"], "type": "value_error",
                                  "msg": f"method {method!r} is not served for {m.id}; "
                                         f"available: {m.methods}"}])
        refused = check_client_params(name, params)
        if refused:
            raise ApiError(422, refused)
        key = (m.id, name, json.dumps(params, sort_keys=True, default=str), seed)
        if key not in self._checked:
            try:
                build_explainer(name, m.model, m.data, seed=seed, **params)
            except Exception as exc:  # noqa: BLE001 - whatever the parameters broke, they are the cause
                raise ApiError(422, [{"loc": ["body", "params"], "type": "value_error",
                                      "msg": f"{type(exc).__name__}: {exc}"}]) from None
            if len(self._checked) >= 4096:  # bounded: a client cannot grow it without end
                self._checked.clear()
            self._checked.add(key)
        return name

    def check_items(self, m: ServedModel, items: list[Any], limit: int, loc: str) -> list[dict]:
        if len(items) > limit:
            raise too_many_items(len(items), limit, loc, to_jobs=loc == "items")
        records = [it.features for it in items]
        try:
            validate_records(m.schema, records, loc=("body", loc), checker=m.record_checker)
        except RecordError as exc:
            raise ApiError(422, exc.errors) from None
        return records

    def admit(self, model_id: str, items: list[Any], limit: int, loc: str, target_class: Any
              ) -> tuple[ServedModel, list[dict], int]:
        """The checks every solver request passes first: (model, validated records, target)."""
        m = self.model(model_id)
        return m, self.check_items(m, items, limit, loc), self.target(m, target_class)

    # --- solver work ------------------------------------------------------------------
    async def run(self, fn: Any, task: dict[str, Any], deadline_s: float, *, wait: bool = False) -> Any:
        """``fn(task)`` in the pool (429 when the queue is full, 503 when the worker dies)."""
        return await self._guard(self.pool.run(fn, task, deadline_s=deadline_s, wait=wait))

    async def _guard(self, work: Any) -> Any:
        try:
            return await work
        except QueueFull:
            raise ApiError(429, "all solver workers are busy and the queue is full; retry later",
                           {"Retry-After": str(self.settings.retry_after_s)}) from None
        except WorkerCrashed:
            raise ApiError(503, "the solver worker running this request stopped unexpectedly; "
                           "the request was not completed (retry it)") from None

    def vectorised(self, method: str) -> bool:
        """Whether ``method`` explains a batch at once (no per-query ``_explain_one``): only
        such requests are merged (merging per-query solver work would only queue it)."""
        if method not in self._vectorised:
            from robustce.methods.base import Explainer
            from robustce.methods.registry import get_method

            self._vectorised[method] = get_method(method)._explain_one is Explainer._explain_one
        return self._vectorised[method]

    def explain_deadline(self, req: ExplainRequest, n: int) -> float:
        cert = (req.certify.time_limit_s * 2 + 5) if req.certify else 0.0
        return min(self.settings.max_request_s, n * (req.time_limit_s + cert) + GRACE_S)

    async def explain(self, m: ServedModel, req: ExplainRequest, records: list[dict],
                      method: str, target: int, *, wait: bool = False) -> list[dict[str, Any]]:
        """Per-item results of an explain task; a task past its deadline gives every item
        status ``timeout``, one that raised gives status ``error`` with the reason."""
        task = {"model_id": m.id, "method": method, "params": req.params, "records": records,
                "target_class": target, "time_limit_s": req.time_limit_s, "seed": req.seed,
                "solver_nodes": self.settings.solver_nodes,
                "certify": req.certify.model_dump() if req.certify else None}
        deadline = self.explain_deadline(req, len(records))
        try:
            if wait or req.certify is not None or not self.vectorised(method):
                return await self.run(explain_task, task, deadline, wait=wait)
            key = (m.id, method, json.dumps(req.params, sort_keys=True, default=str), target,
                   req.time_limit_s, req.seed)
            coalescer = self.lane_coalescer if method in self.settings.in_process else self.coalescer
            return await self._guard(coalescer.run(
                key, task, records, lambda n: self.explain_deadline(req, n)))
        except DeadlineExceeded as exc:
            message = (f"the request's time budget of {deadline:g} s ran out while it waited for a "
                       "free worker (the service is overloaded); the item was not started"
                       if exc.queued else f"the request's time budget of {deadline:g} s (of the "
                       "worker's CPU time) ran out before this item was answered")
            return [{"status": "timeout", "message": message} for _ in records]
        except ApiError:
            raise
        except Exception as exc:  # noqa: BLE001 - the method failed: a status, with its reason
            return [{"status": "error", "message": f"{type(exc).__name__}: {exc}"} for _ in records]

    def record(self, request_id: str, endpoint: str, m: ServedModel, method: str, params: Any,
               seed: int, target: int, items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """One audit record: the request, the model's hash, versions, per item id/status/time."""
        return {"ts": time.time(), "versions": self.versions, "request_id": request_id,
                "endpoint": endpoint, "model_id": m.id, "model_hash": m.hash,
                "method": method, "params": params, "seed": seed, "target_class": target,
                **extra, "items": [{"id": it.get("id"), "status": it.get("status"),
                                    "time_s": it.get("time_s")} for it in items]}

    def log(self, request_id: str, endpoint: str, m: ServedModel, method: str, params: Any,
            seed: int, target: int, items: list[dict[str, Any]], **extra: Any) -> None:
        """Write :meth:`record` now (a job's events); raises :class:`AuditWriteError` when it
        cannot be written (the job runner then withholds what the record was to vouch for)."""
        if self.audit is None:
            return
        self.audit.write(self.record(request_id, endpoint, m, method, params, seed, target,
                                     items, **extra))

    # --- answers that need their audit record first ---------------------------------------
    async def retry_key(self, request: Request) -> tuple[str, str | None, str]:
        """(token holder, the request's ``Idempotency-Key``, SHA-256 of its path and body);
        without the header, ``NO_RETRY_KEY`` (nothing hashed: the answer is kept for no retry)."""
        key = request.headers.get("idempotency-key")
        if key is None:
            return NO_RETRY_KEY
        if not _IDEMPOTENCY_KEY.fullmatch(key):
            raise ApiError(422, [{"loc": ["header", "Idempotency-Key"], "type": "value_error",
                                  "msg": "1 to 200 visible ASCII characters"}])
        holder, digest = await _request_identity(request)
        return holder, key, digest

    async def kept_answer(self, request: Request, retry: tuple[str, str | None, str]
                          ) -> JSONResponse | None:
        """The answer kept for this retry (written to the audit log first), or None."""
        if ((self.audit is None and self.ledger is None) or retry[1] is None
                or (kept := self.kept.get(retry)) is None):
            return None
        self.kept.discard(retry)  # taken out first: two retries at once get it once
        record, body, *unrecorded = kept
        if unrecorded and unrecorded[0]:  # its promises first (kept again if they fail)
            await self.write_promises(request, record, body, retry, unrecorded[0])
        again = {**record, "ts": time.time(), "answered_on_retry": True}
        if self.audit is not None:
            await self.write_request_record(request, again, retry, record["request_id"],
                                            keep=(record, body))  # kept again if it fails
        return JSONResponse(body, headers={"X-Request-Id": record["request_id"]})

    async def answer(self, request: Request, record: dict[str, Any], body: dict[str, Any],
                     retry: tuple[str, str | None, str],
                     promises: list[dict[str, Any]] | None = None) -> JSONResponse:
        """``body`` as the response, once its ``promises`` are in the ledger and ``record``
        in the audit log; if either cannot be written, 503 and the answer kept for a retry
        (:class:`KeptResults`)."""
        if promises:
            await self.write_promises(request, record, body, retry, promises)
        if self.audit is not None:
            await self.write_request_record(request, record, retry, record["request_id"],
                                            keep=(record, body))
        return JSONResponse(body, headers={"X-Request-Id": record["request_id"]})

    async def write_promises(self, request: Request, record: dict[str, Any], body: dict[str, Any],
                             retry: tuple[str, str | None, str], rows: list[dict[str, Any]]
                             ) -> None:
        """The answer's promises into the ledger (off the event loop) before it goes out. When
        they cannot be written: 503 with ``Retry-After``, the answer and its promises kept
        for a retry by its idempotency key, and the request's audit record (status 503)
        says why in ``ledger_error`` — an option is given only once it is on record."""
        try:
            await self.ledger.record(rows)
            return
        except LedgerWriteError as exc:
            error = str(exc)
        _log.error("%s", error)
        rid = record["request_id"]
        key = retry[1] or rid
        holder, digest = (retry[0], retry[2]) if retry[1] else await _request_identity(request)
        self.kept.keep((holder, key, digest), (record, body, rows))
        if self.audit is not None:  # a failure here answers its own 503 (the answer is kept)
            await self.write_request_record(request, {**record, "ledger_error": error}, retry,
                                            rid, status=503)
        raise ApiError(503, "the ledger could not be written, so the options found are "
                       "withheld (an option is given only once it is on record); they are "
                       f"kept for {KEEP_S:g} s: send the same request again with the header "
                       f"Idempotency-Key: {key}",
                       {"Retry-After": str(self.settings.retry_after_s),
                        "Idempotency-Key": key, "X-Request-Id": rid})

    async def write_request_record(self, request: Request, record: dict[str, Any],
                                   retry: tuple[str, str | None, str], request_id: str,
                                   keep: Any = None, status: int = 200) -> None:
        """``record`` as the request's one audit record (path, verb, ``status``, client added);
        503 with ``Retry-After`` when it cannot be written (``keep``: the answer kept for a
        retry by its idempotency key)."""
        record = {**record, "path": request.url.path, "verb": request.method, "status": status,
                  "client": request.client.host if request.client else None,
                  "idempotency_key": retry[1]}
        try:
            await self.audit.write_async(record)
        except AuditWriteError as exc:
            _log.error("%s", exc)
            key = retry[1] or request_id
            if keep is not None:  # a request sent without a key is hashed only now, to be kept
                holder, digest = (retry[0], retry[2]) if retry[1] else await _request_identity(request)
                self.kept.keep((holder, key, digest), keep)
            raise ApiError(503, f"the audit log could not be written, so the finished results "
                           f"are withheld; they are kept for {KEEP_S:g} s: send the same request "
                           f"again with the header Idempotency-Key: {key}",
                           {"Retry-After": str(self.settings.retry_after_s),
                            "Idempotency-Key": key, "X-Request-Id": request_id}) from None
        request.state.audited = True


async def _request_identity(request: Request) -> tuple[str, str]:
    """(SHA-256 of the request's ``Authorization`` header: its token holder, SHA-256 of its
    path and body): what a retry must repeat to be given a kept answer."""
    holder = hashlib.sha256(request.headers.get("authorization", "").encode()).hexdigest()
    body = request.url.path.encode() + b"\0" + await request.body()
    return holder, hashlib.sha256(body).hexdigest()


def _telemetry_off() -> dict[str, Any]:
    """FastAPI's own OpenTelemetry hooks switched off (where this FastAPI has them): the
    service configures no telemetry, and asking the providers on every request cost a sixth
    of the event loop's time per request in a profile under load."""
    import inspect

    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "metrics": False, "logs": False}}


def _items_out(items: list[Any], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": it.id, **res} for it, res in zip(items, results, strict=True)]


#: the fields of an explained item, in the contract's order, with their defaults
_EXPLAIN_ITEM_FIELDS = [(name, f.get_default(call_default_factory=True))
                        for name, f in ExplainItemOut.model_fields.items() if name != "id"]


def _explain_items_out(items: list[Any], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of an explain response as :class:`ExplainItemOut` writes them (every field,
    defaults where a result lacks one, nothing else), without a pydantic pass per item."""
    return [{"id": it.id, **{name: res.get(name, copy.copy(default))
                             for name, default in _EXPLAIN_ITEM_FIELDS}}
            for it, res in zip(items, results, strict=True)]


def _json_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON request body of ``model`` (a component that
    :func:`_with_body_schemas` adds to the OpenAPI document) for a route that parses it itself."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


def _with_body_schemas(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Add ``models`` (request bodies that routes parse themselves, after the token check) and
    the models they use to the components of ``app``'s OpenAPI document."""
    from pydantic.json_schema import models_json_schema

    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            _, defs = models_json_schema([(m, "validation") for m in models],
                                         ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in defs.get("$defs", {}).items():
                components.setdefault(name, definition)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(specs: list[ModelSpec], settings: ServeSettings | None = None) -> FastAPI:
    """The service's ASGI app for the models ``specs`` (loaded, and the worker pool started,
    when the app starts)."""
    settings = settings or ServeSettings()
    service = Service(specs, settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await asyncio.to_thread(service.load)
        await service.pool.start()
        await service.lane.start()
        await service.jobs.start()  # resumes the unfinished jobs of the served models
        # the libraries and models (~290 000 objects, alive as long as the process) leave the
        # cyclic GC's passes: a full pass over them took ~140 ms, a stall of every request in
        # flight (the latency tail); objects made by requests are still collected
        gc.freeze()
        yield
        await service.jobs.close()
        service.lane.close()
        service.pool.close()
        service.store.close()
        if service.ledger is not None:
            service.ledger.close()
        if service.audit is not None:
            service.audit.close()

    app = FastAPI(title="robustce recourse service", version=service.versions["robustce"],
                  description="Robust counterfactual explanations (recourse) with certificates.",
                  lifespan=lifespan, docs_url=None, redoc_url=None, redirect_slashes=False,
                  **_telemetry_off())  # /docs from local files (api_docs); no /redoc; no 307s
    app.state.service = service

    async def auth(request: Request) -> None:  # async: no thread-pool hop per request
        if settings.token is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                                 settings.token.encode()):
            raise ApiError(401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
                  for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # answered by Starlette's outermost middleware, outside SecurityHeaders: headers set here
        return JSONResponse({"detail": f"internal error ({type(exc).__name__})"}, status_code=500,
                            headers=SECURITY_HEADERS)

    # --- health ---------------------------------------------------------------------------
    @app.get("/health", tags=["health"])
    async def health() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/ready", tags=["health"])
    async def ready() -> JSONResponse:
        """Models loaded and the worker pool started (503 otherwise)."""
        ok = service.pool.ready and len(service.models) == len(specs)
        return JSONResponse({"ready": ok, "models": sorted(service.models)}, status_code=200 if ok else 503)

    v1 = [Depends(auth)]

    @app.get("/v1/status", dependencies=v1, tags=["health"])
    async def pool_status() -> dict[str, Any]:
        """Worker processes (pids, busy), queue, crash and deadline counts, jobs."""
        return {**service.pool.status(), "in_process": service.lane.status(),
                "merged_requests": service.coalescer.merged + service.lane_coalescer.merged,
                "jobs": await service.jobs.counts()}

    # --- models ---------------------------------------------------------------------------
    @app.get("/v1/models", response_model=ModelList, dependencies=v1, tags=["models"])
    async def list_models() -> ModelList:
        return ModelList(models=[_model_info(m) for m in service.models.values()])

    @app.get("/v1/models/{model_id}", response_model=ModelInfo, dependencies=v1, tags=["models"])
    async def get_model(model_id: str) -> ModelInfo:
        return _model_info(service.model(model_id))

    @app.get("/v1/models/{model_id}/applicants", dependencies=v1, tags=["models"])
    async def applicants(model_id: str) -> dict[str, Any]:
        """Applicants the model does not give its favourable class (for the page's picker):
        the explained queries of an explain directory, else training rows; at most 50."""
        from robustce.serve.worker import plain

        m = service.model(model_id)
        rows = m.applicants.to_dict("records")
        return {"applicants": [{"id": plain(i), "features": plain(r)}
                               for i, r in zip(m.applicants.index, rows, strict=True)]}

    # --- explain / certify ----------------------------------------------------------------
    @app.post("/v1/models/{model_id}/explain", response_model=ExplainResponse, tags=["recourse"],
              openapi_extra=_json_body(ExplainRequest))
    async def explain(model_id: str, request: Request) -> JSONResponse:
        """Counterfactuals for a batch of applicants, in request order.

        The service's hot path: the auth check, the body's parse and validation
        (:class:`ExplainRequest`, one pydantic call) and the response (:class:`ExplainResponse`,
        written as JSON directly) happen here rather than in FastAPI's dependency and
        response-model passes (py-spy under 50 clients: FastAPI's dependency solving fell from
        15 % to 6.5 % of the server's samples; docs/serve.md, "Throughput"). The OpenAPI
        contract is the same."""
        await auth(request)
        req = await parse_json_body(request, ExplainRequest)
        retry = await service.retry_key(request)
        if (kept := await service.kept_answer(request, retry)) is not None:
            return kept
        m, records, target = service.admit(model_id, req.items, settings.max_items, "items",
                                           req.target_class)
        method = service.check_method(m, req.method, req.params, req.seed)
        rid = uuid.uuid4().hex
        results = await service.explain(m, req, records, method, target)
        items = _explain_items_out(req.items, results)
        record = service.record(rid, "explain", m, method, req.params, req.seed, target, items,
                                time_limit_s=req.time_limit_s,
                                certify=req.certify.model_dump() if req.certify else None)
        promises = None
        if service.ledger is not None:
            promises = await asyncio.to_thread(service.ledger.rows_of, m, method, target,
                                               [it.id for it in req.items], records, results, rid)
        return await service.answer(request, record, {
            "request_id": rid, "items": items, "model": {"id": m.id, "hash": m.hash},
            "method": method, "target_class": target}, retry, promises)

    @app.post("/v1/models/{model_id}/certify", response_model=CertifyResponse, tags=["recourse"],
              openapi_extra=_json_body(CertifyRequest))
    async def certify(model_id: str, request: Request) -> JSONResponse:
        """Exact Δ-test and/or APΔS certificates for counterfactuals the caller supplies
        (the token is checked before the body is read)."""
        await auth(request)
        req = await parse_json_body(request, CertifyRequest)
        retry = await service.retry_key(request)
        if (kept := await service.kept_answer(request, retry)) is not None:
            return kept
        m, records, target = service.admit(model_id, req.counterfactuals, settings.max_items,
                                           "counterfactuals", req.target_class)
        rid = uuid.uuid4().hex
        spec = {"delta": req.delta, "apas": req.apas.model_dump() if req.apas else None,
                "time_limit_s": req.time_limit_s}
        task = {"model_id": m.id, "records": records, "target_class": target, "certify": spec,
                "seed": req.seed, "solver_nodes": settings.solver_nodes}
        deadline = min(settings.max_request_s, len(records) * (2 * req.time_limit_s + 5) + GRACE_S)
        try:
            results = await service.run(certify_task, task, deadline)
        except DeadlineExceeded:
            raise ApiError(504, f"certification did not finish within {deadline:g} s") from None
        items = _items_out(req.counterfactuals, results)
        record = service.record(rid, "certify", m, "certify", spec, req.seed, target,
                                [{**it, "status": "valid" if it["valid"] else "invalid"} for it in items])
        body = CertifyResponse(request_id=rid, items=items, model={"id": m.id, "hash": m.hash},
                               target_class=target).model_dump(mode="json")
        return await service.answer(request, record, body, retry)

    # --- the ledger -----------------------------------------------------------------------
    @app.get("/v1/models/{model_id}/promises", dependencies=v1, tags=["ledger"])
    async def promises(model_id: str,
                       applicant: str = Query(..., min_length=1, max_length=200,
                                              description="the applicant's id (an item's id)"),
                       limit: int = Query(50, ge=1, le=500)) -> dict[str, Any]:
        """The applicant's earlier promises (newest first), each with whether the model served
        now still gives its promised row the promised class, and the hash of the model that
        issued it (404 when the service keeps no ledger: ``--ledger``)."""
        m = service.model(model_id)
        if service.ledger is None:
            raise ApiError(404, "this service keeps no ledger (start it with --ledger)")
        try:
            return await asyncio.to_thread(service.ledger.view, m, applicant, limit)
        except RobustCEError as exc:
            _log.error("%s", exc)
            raise ApiError(503, "the ledger could not be read; retry later",
                           {"Retry-After": str(settings.retry_after_s)}) from None

    # --- jobs -----------------------------------------------------------------------------
    @app.post("/v1/models/{model_id}/jobs", response_model=JobOut, status_code=202, tags=["jobs"],
              openapi_extra=_json_body(ExplainRequest))
    async def submit_job(model_id: str, request: Request) -> dict[str, Any]:
        """A large batch, explained in the background: poll ``GET /v1/jobs/{job_id}`` (the
        token is checked before the body is read, the model too; the body, up to
        ``--max-body``, is parsed and checked on a worker thread, off the event loop)."""
        await auth(request)
        check_json_media(request)
        m = service.model(model_id)
        body = await request.body()
        req, records = await anyio.to_thread.run_sync(parse_job_body, body, m.schema, m.record_checker,
                                                      settings.max_job_items, limiter=service.parsers())
        target = service.target(m, req.target_class)
        method = service.check_method(m, req.method, req.params, req.seed)

        async def accept(record: dict[str, Any]) -> None:  # the request's one audit record
            if service.audit is not None:
                await service.write_request_record(request, record, NO_RETRY_KEY, record["request_id"],
                                                   status=202)

        view = await service.jobs.submit(m, req, records, method, target, accept=accept)
        return JSONResponse(view, status_code=202, headers={"X-Request-Id": view["job_id"]})

    @app.get("/v1/jobs/{job_id}", response_model=JobOut, dependencies=v1, tags=["jobs"])
    async def get_job(job_id: str) -> dict[str, Any]:
        return await service.jobs.view(job_id)

    # --- the page -------------------------------------------------------------------------
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    _with_body_schemas(app, [ExplainRequest, CertifyRequest])
    add_api_docs(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes,
                       sync_limit=sync_body_limit(settings))
    if service.audit is not None:  # outermost of ours: it sees the 413s of BodyLimit too
        app.add_middleware(AuditTrail, log=service.audit, retry_after_s=settings.retry_after_s)
        if threading.current_thread() is threading.main_thread():
            # a file-size limit (RLIMIT_FSIZE) then fails the write (EFBIG, a 503) instead of
            # killing the server
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    app.add_middleware(SecurityHeaders)  # outermost of the app's own: on 413s and 503s too
    return app
