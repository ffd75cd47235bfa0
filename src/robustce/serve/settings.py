"""The service's configuration: limits, pool size, auth token, audit log path, ledger."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from robustce.errors import ConfigError

__all__ = ["ServeSettings", "read_token", "sync_body_limit"]


@dataclass(frozen=True)
class ServeSettings:
    """Parameters
    ----------
    workers : solver processes in the pool.
    max_queue : requests that may wait for a worker; more get 429.
    max_items : items per synchronous explain/certify request; more get 422 (use a job).
    max_job_items : items per job.
    max_jobs : jobs queued or running at once; more get 429.
    job_chunk : items per worker task of a job.
    max_body_bytes : the largest request body, a job submission's (``POST
        /v1/models/{id}/jobs``); larger ones get 413.
    max_sync_body_bytes : the largest body of every other route (explain, certify: their
        answer is computed while the client waits, and their items are bounded by
        ``max_items``); larger ones get 413 by their ``Content-Length`` (or while counted, for
        a chunked body) before they are read or parsed. Capped by ``max_body_bytes``.
    max_request_s : time budget of one request (items past it get status ``timeout``).
    solver_nodes : the work limit of every MILP solve of a request's items: HiGHS's
        ``mip_max_nodes`` (branch-and-bound nodes). Unlike the request's wall-clock deadline (from
        the per-item ``time_limit_s``, itself CPU seconds of the solver), it does not depend on
        the host's load: an item answers the same on a busy host as on an idle one unless the
        cap is reached. A solve it stops has
        solver status ``limit``, treated as a time limit: the best point found is not
        claimed optimal, and a certificate it leaves unproven is ``timeout``, never robust.
    token : bearer token the ``/v1`` routes require (None: no auth).
    audit_log : JSON-lines audit file (None: no audit log).
    store : the job store, an SQLAlchemy URL (``sqlite:///PATH``, ``postgresql+psycopg://...``);
        None: an SQLite file beside the audit log, or in memory without an audit log
        (:func:`~robustce.serve.store.default_store_url`).
    ledger : the recourse ledger (an SQLite path or SQLAlchemy URL; None: none): every option
        the service gives is recorded there as a promise before it goes out
        (:mod:`robustce.serve.promises`, docs/serve.md "Keeping a ledger").
    ledger_hash_ids : keep salted hashes of the applicant ids in the ledger, not the ids
        (the salt: ``$ROBUSTCE_LEDGER_SALT``, else the ledger's own).
    retry_after_s : the ``Retry-After`` of a 429.
    in_process : methods whose synchronous explain requests (without extra certificates) run
        on one thread of the server process instead of a worker (cheap methods such as
        ``nearest_neighbour``: one vectorised index query). Default none: on two or more cores
        the workers run beside the event loop, while the thread shares its GIL (see
        docs/serve.md, "Throughput").
    """

    workers: int = 2
    max_queue: int = 64
    max_items: int = 100
    max_job_items: int = 10_000
    max_jobs: int = 4
    job_chunk: int = 100
    max_body_bytes: int = 2 * 1024 * 1024
    max_sync_body_bytes: int = 256 * 1024
    max_request_s: float = 120.0
    solver_nodes: int = 10_000
    token: str | None = None
    audit_log: str | None = None
    store: str | None = None
    ledger: str | None = None
    ledger_hash_ids: bool = False
    retry_after_s: int = 1
    in_process: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("workers", "max_items", "max_job_items", "max_jobs", "job_chunk",
                     "max_body_bytes", "max_sync_body_bytes", "retry_after_s", "solver_nodes"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_queue < 0 or not self.max_request_s > 0:
            raise ConfigError("max_queue must be >= 0 and max_request_s > 0")


def sync_body_limit(settings: ServeSettings) -> int:
    """The body limit of the synchronous routes: ``max_sync_body_bytes``, at most ``max_body_bytes``."""
    return min(settings.max_sync_body_bytes, settings.max_body_bytes)


def read_token(path: str | Path) -> str:
    """The bearer token in ``path`` (surrounding whitespace stripped); :class:`ConfigError`
    if the file is missing, empty or shorter than 16 characters."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"--token-file {path}: {exc.strerror or exc}") from None
    if len(token) < 16 or any(c.isspace() for c in token):
        raise ConfigError(f"--token-file {path}: the token must be one word of at least 16 characters")
    return token
