"""The job resource: large batches explained in the background, chunk by chunk, durably.

``POST /v1/models/{id}/jobs`` checks the batch like a synchronous request, stores the job
(:class:`~robustce.serve.store.JobStore`), writes an audit record (``event: accepted``) and
answers 202; a task on the event loop then sends chunks of ``job_chunk`` items to the pool one
after another (waiting for a worker rather than taking 429s), so a job never holds more than
one worker and synchronous requests keep their share. Each finished chunk's results are
committed to the store with the job's progress, so a job outlives the process running it: a
process that stops (SIGTERM) gives its jobs back to the store, and one that dies (``kill -9``)
leaves them to its lease; the next process serving the job's model (at its start, or within
:data:`TICK_S` seconds when several share the store) resumes each from the items already done.
``GET /v1/jobs/{id}`` reads the store, so any process sharing it answers for any job. At the
end the job's record is written (``event: finished``, per item id and status). With a ledger
(``--ledger``), each chunk's options are recorded as promises before its results are committed
(a chunk redone after a crash may record its promises twice, never none); a chunk whose
promises cannot be recorded fails the job (``ledger_error`` in its record). At most
``max_jobs`` jobs are queued or running in the store; finished jobs are kept
:data:`KEEP_FINISHED_S` seconds.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from robustce.serve.api_error import ApiError
from robustce.serve.promises import LedgerWriteError
from robustce.serve.store import UNFINISHED, JobRow, JobStore, LeaseLost, process_owner

__all__ = ["JobRunner", "job_view"]

log = logging.getLogger("robustce.serve")

#: seconds a process holds a job without renewing its lease (another process may then take it)
LEASE_S = 30.0
#: seconds between a process's rounds of lease renewal, takeover of orphaned jobs and clean-up
TICK_S = 5.0
#: seconds a finished job is kept in the store
KEEP_FINISHED_S = 7 * 24 * 3600.0


class JobRunner:
    """The jobs this process runs, over the shared ``store`` (``service`` runs the chunks and
    writes the audit log)."""

    def __init__(self, service: Any, store: JobStore, max_jobs: int):
        self.service, self.store, self.max_jobs = service, store, max_jobs
        self.owner = process_owner()
        self._tasks: dict[str, asyncio.Task] = {}
        self._ticker: asyncio.Task | None = None

    # --- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Resume the unfinished jobs this process may take, then keep doing so every
        :data:`TICK_S` seconds (with lease renewal and clean-up)."""
        await self._adopt()
        self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def close(self) -> None:
        """Stop: every running job is given back to the store (resumed by the next process)."""
        tasks = ([self._ticker] if self._ticker else []) + list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                await asyncio.to_thread(self.store.renew, self.owner, list(self._tasks), LEASE_S)
                await self._adopt()
                await asyncio.to_thread(self.store.forget_finished, KEEP_FINISHED_S)
            except Exception as exc:  # noqa: BLE001 - the store is away: try again next round
                log.warning("job store round failed: %s: %s", type(exc).__name__, exc)

    async def _adopt(self) -> None:
        served = {m.id: m.hash for m in self.service.models.values()}
        ids = await asyncio.to_thread(self.store.claim_orphans, self.owner, served, LEASE_S,
                                      self.max_jobs - len(self._tasks))
        for job_id in ids:
            self._launch(job_id)

    def _launch(self, job_id: str) -> None:
        task = asyncio.get_running_loop().create_task(self._run(job_id))
        self._tasks[job_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(job_id, None))

    # --- the resource ------------------------------------------------------------------
    async def counts(self) -> dict[str, int]:
        return await asyncio.to_thread(self.store.counts)

    async def submit(self, model: Any, request: Any, records: list[dict], method: str,
                     target: int, accept: Callable[[dict[str, Any]], Awaitable[None]] | None = None
                     ) -> dict[str, Any]:
        """Store, audit and start a job; its view (429 when ``max_jobs`` are unfinished).
        ``accept(record)`` writes the accept record as the HTTP request's own audit record
        (raising when it cannot: the job is then removed, never started); without it, the
        record is written by :meth:`Service.log`."""
        counts = await self.counts()
        active = sum(counts.get(s, 0) for s in UNFINISHED)
        if active >= self.max_jobs:
            raise ApiError(429, f"{active} jobs are queued or running (at most {self.max_jobs}); "
                           "retry later", {"Retry-After": str(self.service.settings.retry_after_s)})
        job_id = uuid.uuid4().hex
        body = await asyncio.to_thread(request.model_dump, mode="json")  # a large batch: off the loop
        await asyncio.to_thread(
            self.store.create, job_id, model_id=model.id, model_hash=model.hash, method=method,
            target=target, request=body, total=len(records), owner=self.owner, lease_s=LEASE_S)
        record = self.service.record(  # endpoint "jobs": the HTTP request's record, not an event
            job_id, "jobs", model, method, request.params, request.seed, target,
            [{"id": it.id, "status": "queued"} for it in request.items],
            time_limit_s=request.time_limit_s, job_id=job_id, event="accepted", job_status="queued")
        try:
            if accept is not None:
                await accept(record)
            elif self.service.audit is not None:
                self.service.audit.write(record)
        except BaseException:  # not audited: not accepted
            await asyncio.to_thread(self.store.delete, job_id)
            raise
        self._launch(job_id)
        return job_view(job_id, "queued", 0, len(records))

    async def view(self, job_id: str) -> dict[str, Any]:
        """The job's state, and its items in request order once done (404 if unknown)."""
        row = await asyncio.to_thread(self.store.get, job_id)
        if row is None:
            raise ApiError(404, f"no job {job_id!r}")
        result = None
        if row.status == "done":
            results = await asyncio.to_thread(self.store.results, job_id)
            result = {"request_id": row.id, "items": _items(row, results), "method": row.method,
                      "model": {"id": row.model_id, "hash": row.model_hash}, "target_class": row.target}
        return job_view(row.id, row.status, row.done, row.total, row.error, result)

    # --- running -----------------------------------------------------------------------
    async def _run(self, job_id: str) -> None:
        from robustce.serve.schemas import ExplainRequest

        row = await asyncio.to_thread(self.store.get, job_id)
        if row is None:
            return
        model = self.service.models.get(row.model_id)
        status, error, ledger_error = "done", None, None
        try:
            ledger = self.service.ledger
            if model is None or model.hash != row.model_hash:
                raise RuntimeError(f"model {row.model_id!r} with hash {row.model_hash} is not served here")
            request = await asyncio.to_thread(ExplainRequest.model_validate, row.request)
            records = [it.features for it in request.items]
            await asyncio.to_thread(self.store.start, job_id, self.owner)
            if row.done:
                self._audit(row, model, [], event="resumed", done=row.done)
            done, size = row.done, self.service.settings.job_chunk
            while done < row.total:
                chunk = records[done:done + size]
                try:
                    res = await self.service.explain(model, request, chunk, row.method, row.target,
                                                     wait=True)
                except ApiError as exc:  # a crashed worker: this chunk's items get status error
                    res = [{"status": "error", "message": str(exc.detail)} for _ in chunk]
                if ledger is not None:  # on record before the results are kept (at least once)
                    ids = [it.id for it in request.items[done:done + size]]
                    await ledger.record(await asyncio.to_thread(
                        ledger.rows_of, model, row.method, row.target, ids, chunk, res, job_id,
                        done))
                done = await asyncio.to_thread(self.store.append_results, job_id, done, res, self.owner)
        except asyncio.CancelledError:  # the server stops: the next process resumes the job
            self._give_back(row, model)
            raise
        except LeaseLost:  # another process took the job over
            return
        except LedgerWriteError as exc:  # results not on record are not delivered
            status, ledger_error = "failed", str(exc)
            error = f"the ledger could not be written, so the results are withheld: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported on the job
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        results = await asyncio.to_thread(self.store.results, job_id)
        try:
            if model is not None:
                self._audit(row, model, _items(row, results), event="finished", job_status=status,
                            **({"ledger_error": ledger_error} if ledger_error else {}))
        except Exception as exc:  # noqa: BLE001 - results without their record are not delivered
            status, error = "failed", f"the audit record could not be written: {exc}"
        try:
            await asyncio.to_thread(self.store.finish, job_id, self.owner, status, error)
        except Exception as exc:  # noqa: BLE001 - its lease runs out: another round finishes it
            log.warning("job %s not marked %s: %s: %s", job_id, status, type(exc).__name__, exc)

    def _give_back(self, row: JobRow, model: Any) -> None:
        try:
            released = self.store.release(row.id, self.owner)
            if released and model is not None:
                now = self.store.get(row.id)
                self._audit(row, model, [], event="interrupted", done=now.done if now else None)
        except Exception as exc:  # noqa: BLE001 - the lease runs out instead
            log.warning("job %s not given back: %s: %s", row.id, type(exc).__name__, exc)

    def _audit(self, row: JobRow, model: Any, items: list[dict[str, Any]], **extra: Any) -> None:
        req = row.request
        self.service.log(row.id, "job", model, row.method, req.get("params"), req.get("seed"),
                         row.target, items, time_limit_s=req.get("time_limit_s"), **extra)


def job_view(job_id: str, status: str, done: int, total: int, error: str | None = None,
             result: dict[str, Any] | None = None) -> dict[str, Any]:
    """A job as ``GET /v1/jobs/{id}`` shows it (:class:`~robustce.serve.schemas.JobOut`)."""
    return {"job_id": job_id, "status": status, "progress": {"done": done, "total": total},
            "error": error, "result": result}


def _items(row: JobRow, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": it.get("id"), **res} for it, res in zip(row.request["items"], results, strict=False)]
