"""The durable store of the service's jobs: one SQL database through SQLAlchemy.

A job's request, state and results live in two tables: ``robustce_jobs`` (one row per job:
the request as accepted, status, progress, the process running it and its lease) and
``robustce_job_chunks`` (the results of each finished chunk, keyed by its first item), so a
job survives the process that accepted it: after a restart, SIGTERM or ``kill -9``, the next
process serving its model resumes it from the items already done.

The default is an embedded SQLite file (WAL journal, ``synchronous=FULL``: a committed chunk
survives a crash of the process and of the machine); a PostgreSQL URL lets several service
processes, on one host or several, share one store. A running job is owned by one process
(its ``owner``: host, pid and process start time) under a lease that the owner renews; another
process takes the job over when the lease has run out, or at once when the owner is a process
of the same host that no longer exists.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robustce.errors import RobustCEError
from robustce.sql_store import open_engine, store_url

__all__ = ["JobRow", "JobStore", "LeaseLost", "default_store_url", "process_owner", "store_url"]

#: statuses of a job that is not finished (a process runs it or will)
UNFINISHED = ("queued", "running")


class LeaseLost(RobustCEError):
    """This process no longer owns the job (another process took it over)."""


@dataclass(frozen=True)
class JobRow:
    """A job as stored (``request``: the accepted request body as JSON values)."""

    id: str
    model_id: str
    model_hash: str
    method: str
    target: int
    request: dict[str, Any]
    status: str
    done: int
    total: int
    error: str | None
    created: float
    owner: str | None
    lease_until: float


def _start_time(pid: int) -> tuple[str, str] | None:
    """(start time in clock ticks since boot, state letter) of process ``pid`` from /proc
    (Linux); None where it does not exist or /proc is absent."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19], fields[0]


def process_owner() -> str:
    """This process as a job owner: ``host:pid:start`` (start: its start time where /proc
    tells it, else a random token)."""
    pid = os.getpid()
    found = _start_time(pid)
    start = found[0] if found else os.urandom(6).hex()
    return f"{socket.gethostname()}:{pid}:{start}"


def owner_gone(owner: str) -> bool:
    """Whether ``owner`` (:func:`process_owner`) is a process of this host that has ended
    (gone, a zombie, or its pid taken by another process). False where that cannot be told."""
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit() or not os.path.isdir("/proc/self"):
        return False
    found = _start_time(int(pid))
    return found is None or found[0] != start or found[1] in ("Z", "X")


def default_store_url(audit_log: str | os.PathLike | None) -> str:
    """The store when no ``--store`` is given: an SQLite file beside the audit log
    (``audit.jsonl`` → ``audit-jobs.sqlite3``), or an in-memory database (jobs are then lost
    with the process) when there is no audit log either."""
    if audit_log is None:
        return "sqlite://"
    path = Path(audit_log).expanduser().resolve()
    return store_url(str(path.with_name(f"{path.stem}-jobs.sqlite3")))


def _tables(sa: Any) -> tuple[Any, Any, Any]:
    meta = sa.MetaData()
    jobs = sa.Table(
        "robustce_jobs", meta,
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("model_id", sa.String(255), nullable=False),
        sa.Column("model_hash", sa.String(128), nullable=False),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("target", sa.Integer, nullable=False),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("done", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("created", sa.Float, nullable=False),
        sa.Column("updated", sa.Float, nullable=False),
        sa.Column("owner", sa.String(255)),
        sa.Column("lease_until", sa.Float, nullable=False),
    )
    chunks = sa.Table(
        "robustce_job_chunks", meta,
        sa.Column("job_id", sa.String(64), sa.ForeignKey("robustce_jobs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("start", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("results", sa.Text, nullable=False),
    )
    return meta, jobs, chunks


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class JobStore:
    """Jobs in the database at ``url`` (an SQLAlchemy URL; see :func:`store_url`). The tables
    are created when missing. Every method is a short transaction; the methods are safe to
    call from several threads."""

    def __init__(self, url: str):
        self._lock = threading.Lock()

        def prepare(sa: Any, engine: Any, _shown: str) -> None:
            self._sa, self.engine = sa, engine
            self.meta, self.jobs, self.chunks = _tables(sa)
            self._create_tables()

        _, self.url, _, _ = open_engine(url, what="job store", flag="--store", extra="serve",
                                        prepare=prepare)

    def _create_tables(self) -> None:
        for attempt in range(3):  # several processes starting at once may race to create them
            try:
                self.meta.create_all(self.engine, checkfirst=True)
                return
            except self._sa.exc.IntegrityError:
                if attempt == 2:
                    raise
            except self._sa.exc.ProgrammingError:
                if attempt == 2:
                    raise
            time.sleep(0.2)

    def close(self) -> None:
        self.engine.dispose()

    # --- writes ------------------------------------------------------------------------
    def create(self, job_id: str, *, model_id: str, model_hash: str, method: str, target: int,
               request: dict[str, Any], total: int, owner: str, lease_s: float) -> None:
        """Store a new job, queued and owned by ``owner`` for ``lease_s`` seconds."""
        now = time.time()
        with self._lock, self.engine.begin() as conn:
            conn.execute(self.jobs.insert().values(
                id=job_id, model_id=model_id, model_hash=model_hash, method=method, target=int(target),
                request=_dumps(request), status="queued", done=0, total=int(total), error=None,
                created=now, updated=now, owner=owner, lease_until=now + lease_s))

    def delete(self, job_id: str) -> None:
        with self._lock, self.engine.begin() as conn:
            conn.execute(self.chunks.delete().where(self.chunks.c.job_id == job_id))
            conn.execute(self.jobs.delete().where(self.jobs.c.id == job_id))

    def start(self, job_id: str, owner: str) -> None:
        """Mark the job running (raises :class:`LeaseLost` unless ``owner`` holds it)."""
        self._update_owned(job_id, owner, status="running")

    def append_results(self, job_id: str, start: int, results: list[dict[str, Any]], owner: str) -> int:
        """Store the results of the chunk starting at item ``start`` and advance the job's
        progress to its end, in one transaction; the new progress. Raises
        :class:`LeaseLost` (nothing stored) unless ``owner`` holds the job."""
        now = time.time()
        done = int(start) + len(results)
        with self._lock, self.engine.begin() as conn:
            updated = conn.execute(
                self.jobs.update()
                .where(self.jobs.c.id == job_id, self.jobs.c.owner == owner,
                       self.jobs.c.status.in_(UNFINISHED), self.jobs.c.done == int(start))
                .values(done=done, updated=now)).rowcount
            if updated != 1:
                raise LeaseLost(f"job {job_id}: not held by this process at item {start}")
            conn.execute(self.chunks.insert().values(job_id=job_id, start=int(start),
                                                     results=_dumps(results)))
        return done

    def finish(self, job_id: str, owner: str, status: str, error: str | None = None) -> None:
        """Mark the job finished (``done`` or ``failed``) and release it."""
        self._update_owned(job_id, owner, status=status, error=error, owner=None, lease_until=0.0)

    def release(self, job_id: str, owner: str) -> bool:
        """Give a job this process holds back to the store (queued, no owner), so any process
        may take it at once; whether it was held."""
        try:
            self._update_owned(job_id, owner, status="queued", owner=None, lease_until=0.0)
        except LeaseLost:
            return False
        return True

    def _update_owned(self, job_id: str, holder: str, **values: Any) -> None:
        with self._lock, self.engine.begin() as conn:
            updated = conn.execute(
                self.jobs.update()
                .where(self.jobs.c.id == job_id, self.jobs.c.owner == holder,
                       self.jobs.c.status.in_(UNFINISHED))
                .values(updated=time.time(), **values)).rowcount
        if updated != 1:
            raise LeaseLost(f"job {job_id} is not held by this process")

    def renew(self, owner: str, job_ids: list[str], lease_s: float) -> int:
        """Extend the lease of the unfinished jobs ``job_ids`` that ``owner`` holds; how many."""
        if not job_ids:
            return 0
        with self._lock, self.engine.begin() as conn:
            return conn.execute(
                self.jobs.update()
                .where(self.jobs.c.id.in_(job_ids), self.jobs.c.owner == owner,
                       self.jobs.c.status.in_(UNFINISHED))
                .values(lease_until=time.time() + lease_s)).rowcount

    def claim_orphans(self, owner: str, served: dict[str, str], lease_s: float,
                      limit: int) -> list[str]:
        """Take over at most ``limit`` unfinished jobs of the models ``served`` (id → hash)
        whose owner is none, whose lease ran out or whose owner process has ended; their ids,
        oldest first. A job is taken by one process only (a compare-and-set on its owner)."""
        if limit <= 0 or not served:
            return []
        sa, now = self._sa, time.time()
        j = self.jobs.c
        with self._lock, self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(j.id, j.model_id, j.model_hash, j.owner, j.lease_until)
                .where(j.status.in_(UNFINISHED), j.model_id.in_(list(served)),
                       sa.or_(j.owner.is_(None), j.owner != owner))
                .order_by(j.created)).all()
        taken: list[str] = []
        for row in rows:
            if len(taken) >= limit:
                break
            if served.get(row.model_id) != row.model_hash:
                continue
            if row.owner is not None and row.lease_until >= now and not owner_gone(row.owner):
                continue
            with self._lock, self.engine.begin() as conn:
                got = conn.execute(
                    self.jobs.update()
                    .where(j.id == row.id, j.owner.is_not_distinct_from(row.owner),
                           j.lease_until == row.lease_until, j.status.in_(UNFINISHED))
                    .values(owner=owner, lease_until=time.time() + lease_s, status="queued",
                            updated=time.time())).rowcount
            if got == 1:
                taken.append(row.id)
        return taken

    def forget_finished(self, older_than_s: float) -> int:
        """Delete jobs finished more than ``older_than_s`` seconds ago; how many."""
        sa = self._sa
        cutoff = time.time() - older_than_s
        with self._lock, self.engine.begin() as conn:
            old = sa.select(self.jobs.c.id).where(self.jobs.c.status.not_in(UNFINISHED),
                                                  self.jobs.c.updated < cutoff)
            conn.execute(self.chunks.delete().where(self.chunks.c.job_id.in_(old)))
            return conn.execute(self.jobs.delete().where(self.jobs.c.id.in_(old))).rowcount

    # --- reads -------------------------------------------------------------------------
    def get(self, job_id: str) -> JobRow | None:
        with self._lock, self.engine.connect() as conn:
            row = conn.execute(self._sa.select(self.jobs).where(self.jobs.c.id == job_id)).first()
        if row is None:
            return None
        values = row._asdict()
        values["request"] = json.loads(values["request"])
        del values["updated"]
        return JobRow(**values)

    def results(self, job_id: str) -> list[dict[str, Any]]:
        """The stored results of the job's items, in order (those of finished chunks)."""
        with self._lock, self.engine.connect() as conn:
            rows = conn.execute(self._sa.select(self.chunks.c.start, self.chunks.c.results)
                                .where(self.chunks.c.job_id == job_id)
                                .order_by(self.chunks.c.start)).all()
        out: list[dict[str, Any]] = []
        for row in rows:
            out.extend(json.loads(row.results))
        return out

    def counts(self) -> dict[str, int]:
        """Jobs per status."""
        sa = self._sa
        with self._lock, self.engine.connect() as conn:
            rows = conn.execute(sa.select(self.jobs.c.status, sa.func.count())
                                .group_by(self.jobs.c.status)).all()
        return {status: int(n) for status, n in rows}
