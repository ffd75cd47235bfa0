"""The job resource: large batches explained in the background, chunk by chunk.

``POST /v1/models/{id}/jobs`` checks the batch like a synchronous request, then a task on the
event loop sends chunks of ``job_chunk`` items to the pool one after another (waiting for a
worker rather than taking 429s), so a job never holds more than one worker and synchronous
requests keep their share. ``GET /v1/jobs/{id}`` reports progress and, once done, the items in
request order. At most ``max_jobs`` jobs are queued or running; finished jobs are kept (the
oldest beyond 100 are forgotten).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from robustce.serve.api_error import ApiError

__all__ = ["Job", "JobStore"]

KEEP_FINISHED = 100


@dataclass
class Job:
    id: str
    model: Any
    request: Any
    records: list[dict[str, Any]]
    method: str
    target: int
    status: str = "queued"
    done: int = 0
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    created: float = field(default_factory=time.time)

    def view(self) -> dict[str, Any]:
        out: dict[str, Any] = {"job_id": self.id, "status": self.status,
                               "progress": {"done": self.done, "total": len(self.records)},
                               "error": self.error, "result": None}
        if self.status == "done":
            items = [{"id": it.id, **res} for it, res in zip(self.request.items, self.results, strict=True)]
            out["result"] = {"request_id": self.id, "items": items, "method": self.method,
                             "model": {"id": self.model.id, "hash": self.model.hash},
                             "target_class": self.target}
        return out


class JobStore:
    """The jobs of one service (``service`` runs the chunks and writes the audit log)."""

    def __init__(self, service: Any, max_jobs: int):
        self.service, self.max_jobs = service, max_jobs
        self.jobs: dict[str, Job] = {}
        self._tasks: set[asyncio.Task] = set()

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for job in self.jobs.values():
            out[job.status] = out.get(job.status, 0) + 1
        return out

    def submit(self, model: Any, request: Any, records: list[dict], method: str, target: int) -> Job:

        active = sum(j.status in ("queued", "running") for j in self.jobs.values())
        if active >= self.max_jobs:
            raise ApiError(429, f"{active} jobs are queued or running (at most {self.max_jobs}); "
                           "retry later", {"Retry-After": str(self.service.settings.retry_after_s)})
        job = Job(uuid.uuid4().hex, model, request, records, method, target)
        self.jobs[job.id] = job
        task = asyncio.get_running_loop().create_task(self._run(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._forget_old()
        return job

    def get(self, job_id: str) -> Job:

        if job_id not in self.jobs:
            raise ApiError(404, f"no job {job_id!r}")
        return self.jobs[job_id]

    def _forget_old(self) -> None:
        finished = [j for j in self.jobs.values() if j.status in ("done", "failed")]
        for job in sorted(finished, key=lambda j: j.created)[:max(0, len(finished) - KEEP_FINISHED)]:
            del self.jobs[job.id]

    async def _run(self, job: Job) -> None:

        job.status = "running"
        size = self.service.settings.job_chunk
        try:
            for start in range(0, len(job.records), size):
                chunk = job.records[start:start + size]
                try:
                    res = await self.service.explain(job.model, job.request, chunk, job.method,
                                                     job.target, wait=True)
                except ApiError as exc:  # a crashed worker: this chunk's items get status error
                    res = [{"status": "error", "message": str(exc.detail)} for _ in chunk]
                job.results.extend(res)
                job.done = len(job.results)
            job.status = "done"
        except Exception as exc:  # noqa: BLE001 - reported on the job
            job.status, job.error = "failed", f"{type(exc).__name__}: {exc}"
        items = [{"id": it.id, **r} for it, r in zip(job.request.items, job.results, strict=False)]
        self.service.log(job.id, "job", job.model, job.method, job.request.params, job.request.seed,
                         job.target, items, time_limit_s=job.request.time_limit_s, status=job.status)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
