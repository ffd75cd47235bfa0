"""The service's audit log: one JSON object per line, hash-chained, fsynced, never torn.

Each line carries ``seq`` (its number, from 1) and ``prev`` (the SHA-256, in hex, of the
previous line's bytes, its newline included; :data:`GENESIS` on the first line), so
:func:`verify_log` finds an edited, deleted, inserted, unparsable or torn line by its number.

Writing (:meth:`AuditLog.write_many`): under a thread lock and an exclusive ``flock`` of the
file (several processes may share one log), the writer reads the chain's head again if the
file grew under it, appends each line with one ``os.write`` and ``fsync``\\ s before anyone is
told the record is written; the service's records (:meth:`AuditLog.write_async`) that arrive
while a write is under way share the next ``fsync`` (group commit). A short or
failed write or a failed ``fsync`` (full disk, ``EFBIG``, ``EIO``) truncates the file back to
the end of the last whole line and raises :class:`AuditWriteError`: the file is whole lines
only, and the next record is never glued onto a partial one. A log whose last line has no
newline (a crash mid-write, or a truncation that failed) is not continued: the writer ends the
torn line with a newline and writes a ``torn_line`` record naming it, so ``verify`` reports it
and the chain goes on from it.

The chain shows damage and naive edits; whoever can write the file can also recompute every
hash after an edit, or drop the last records. Against that, keep the head hash that
``robustce audit-log verify`` prints somewhere the log's writers cannot change, and check the log
against it later (``--head``): :func:`verify_log` then requires that record in an intact chain.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import platform
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from robustce.errors import RobustCEError

__all__ = ["GENESIS", "AuditCheck", "AuditLog", "AuditWriteError", "Problem", "library_versions",
           "line_hash", "verify_log"]

#: the ``prev`` of a log's first line
GENESIS = "0" * 64

_TAIL_CHUNK = 1 << 16
_MAX_BATCH = 256  # records per group commit


def _settle(done: asyncio.Future, result: Any) -> None:
    if done.done():  # the caller went away
        return
    if isinstance(result, BaseException):
        done.set_exception(result)
    else:
        done.set_result(result)


class AuditWriteError(RobustCEError):
    """A record could not be written (and was not: the log holds whole lines only)."""


def library_versions() -> dict[str, str]:
    """Versions of robustce, its solvers and the runtime, for each audit record."""
    from robustce.utils import package_version

    out = {"robustce": package_version(), "python": platform.python_version()}
    for name in ("highspy", "z3-solver", "torch", "numpy", "scikit-learn"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def line_hash(line: bytes) -> str:
    """The hash a line's successor records as ``prev``: SHA-256 of its bytes, newline included."""
    return hashlib.sha256(line).hexdigest()


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
            + "\n").encode("utf-8")


class AuditLog:
    """Append hash-chained JSON records to ``path`` (created with mode 0600 if missing;
    parents too). ``fsync=False`` skips the per-record ``fsync`` (tests, benchmarks)."""

    def __init__(self, path: str | os.PathLike, *, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise AuditWriteError(f"audit log {self.path}: cannot open it for appending "
                                  f"({exc.strerror or exc})") from None
        self._lock = threading.Lock()
        self._end = -1  # the file's size after our last write; another size: read the head again
        self._prev, self._seq = GENESIS, 0
        self._executor: ThreadPoolExecutor | None = None
        self._pending: list[tuple[dict[str, Any], asyncio.Future, asyncio.AbstractEventLoop]] = []
        self._pending_lock = threading.Lock()
        self._draining = False
        try:
            with self._lock, self._file_lock():
                self._sync_head()
        except BaseException:
            os.close(self._fd)
            raise

    # --- writing --------------------------------------------------------------------------
    def write(self, record: dict[str, Any]) -> dict[str, Any]:
        """Append ``record`` (with ``seq`` and ``prev`` added in front) as one fsynced line;
        returns the record as written. Raises :class:`AuditWriteError` when the line could
        not be written whole (the file is then as it was before)."""
        out = self.write_many([record])[0]
        if isinstance(out, AuditWriteError):
            raise out
        return out

    def write_many(self, records: list[dict[str, Any]]) -> list[dict[str, Any] | AuditWriteError]:
        """Append ``records`` in order, each as one line, with one ``fsync`` for all (group
        commit); per record, the record as written or the :class:`AuditWriteError` that kept
        it out (a failed ``fsync`` takes every line of the call back out)."""
        with self._lock:
            if self._fd < 0:
                return [AuditWriteError(f"audit log {self.path} is closed")] * len(records)
            with self._file_lock():
                self._sync_head()
                start = (self._end, self._prev, self._seq)
                out: list[dict[str, Any] | AuditWriteError] = []
                for record in records:
                    try:
                        out.append(self._append(record))
                    except AuditWriteError as exc:
                        out.append(exc)
                if self.fsync and self._end != start[0]:
                    try:
                        os.fsync(self._fd)
                    except OSError as exc:
                        self._truncate(start[0])
                        if self._end != -1:
                            self._end, self._prev, self._seq = start
                        err = AuditWriteError(f"audit log {self.path}: fsync failed ({exc}); the "
                                              "records were taken out again")
                        out = [err] * len(records)
                return out

    async def write_async(self, record: dict[str, Any]) -> dict[str, Any]:
        """:meth:`write` on the log's own thread, so the ``fsync`` does not hold the event
        loop; the records handed over while a write is under way go out together with one
        ``fsync`` (each caller still resumes only once its own line is on disk)."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        with self._pending_lock:
            self._pending.append((record, done, loop))
            if self._draining:
                start = False
            else:
                self._draining = start = True
        if start:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="audit-log")
            self._executor.submit(self._drain)
        return await done

    def _drain(self) -> None:
        """Write what ``write_async`` handed over, in batches, until nothing is left."""
        while True:
            with self._pending_lock:
                batch, self._pending = self._pending[:_MAX_BATCH], self._pending[_MAX_BATCH:]
                if not batch:
                    self._draining = False
                    return
            try:
                results = self.write_many([record for record, _, _ in batch])
            except Exception as exc:  # noqa: BLE001 - handed to every waiting caller
                results = [AuditWriteError(f"audit log {self.path}: {exc}")] * len(batch)
            for (_, done, loop), result in zip(batch, results, strict=True):
                loop.call_soon_threadsafe(_settle, done, result)

    def _append(self, record: dict[str, Any]) -> dict[str, Any]:
        full = {"seq": self._seq + 1, "prev": self._prev,
                **{k: v for k, v in record.items() if k not in ("seq", "prev")}}
        line = _encode(full)
        start = self._end
        try:
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(f"wrote {written} of {len(line)} bytes")
        except OSError as exc:
            self._truncate(start)
            raise AuditWriteError(f"audit log {self.path}: the record was not written ({exc}); "
                                  "the log is unchanged") from None
        self._end = start + len(line)
        self._prev, self._seq = line_hash(line), full["seq"]
        return full

    def _truncate(self, size: int) -> None:
        """Cut a partly written line off; if even that fails the file keeps a torn tail,
        which the next write finds (the size differs from ``_end``) and closes."""
        try:
            os.ftruncate(self._fd, size)
            if self.fsync:
                os.fsync(self._fd)
        except OSError:
            self._end = -1

    # --- the chain's head -----------------------------------------------------------------
    def _file_lock(self) -> _Flock:
        return _Flock(self._fd)

    def _sync_head(self) -> None:
        """Read the last line's hash and number again if the file is not as this writer left
        it (another process wrote, or a torn tail remains); close a torn tail."""
        size = os.fstat(self._fd).st_size
        if size == self._end:
            return
        if size == 0:
            self._end, self._prev, self._seq = 0, GENESIS, 0
            return
        last = _last_line(self._fd, size)
        if not last.endswith(b"\n"):
            self._close_torn_line(size, last)
            return
        self._end, self._prev = size, line_hash(last)
        try:
            self._seq = int(json.loads(last)["seq"])
        except (ValueError, KeyError, TypeError):  # a line not of this format: count the lines
            self._seq = _count_lines(self._fd, size)

    def _close_torn_line(self, size: int, torn: bytes) -> None:
        try:
            if os.write(self._fd, b"\n") != 1:
                raise OSError("short write")
            if self.fsync:
                os.fsync(self._fd)
        except OSError as exc:
            self._end = -1
            raise AuditWriteError(f"audit log {self.path} ends with a torn line that could not "
                                  f"be closed ({exc})") from None
        closed = torn + b"\n"
        self._end, self._prev = size + 1, line_hash(closed)
        self._seq = _count_lines(self._fd, size + 1)
        self._append({"event": "torn_line", "line": self._seq, "bytes": len(torn),
                      "note": "this line was found unfinished (a write that did not complete) "
                              "and ended with a newline; the chain continues after it"})
        if self.fsync:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise AuditWriteError(f"audit log {self.path}: fsync failed ({exc})") from None

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


class _Flock:
    """An exclusive ``flock`` of an open file while in a ``with`` block."""

    def __init__(self, fd: int):
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def _last_line(fd: int, size: int) -> bytes:
    """The file's last line (with its newline, if it has one), read backwards in chunks."""
    end = size - 1 if os.pread(fd, 1, size - 1) == b"\n" else size
    pos, chunks = end, []
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        chunk = os.pread(fd, step, pos - step)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            chunks.append(chunk[cut + 1:])
            break
        chunks.append(chunk)
        pos -= step
    return b"".join(reversed(chunks)) + os.pread(fd, size - end, end)


def _count_lines(fd: int, size: int) -> int:
    """Lines in the first ``size`` bytes (a last one without newline counts)."""
    count, pos, last = 0, 0, b"\n"
    while pos < size:
        chunk = os.pread(fd, min(1 << 20, size - pos), pos)
        if not chunk:
            break
        count += chunk.count(b"\n")
        pos, last = pos + len(chunk), chunk[-1:]
    return count + (last != b"\n")


# --- verification -------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """One problem of a log: its line number (0: the file as a whole) and what is wrong."""

    line: int
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}" if self.line else self.what


@dataclass
class AuditCheck:
    """What :func:`verify_log` found: the lines read, the chain's head and the problems."""

    lines: int = 0
    head: str = GENESIS
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class _Line:
    number: int
    hash: str
    record: dict[str, Any] | None  # None: not a JSON object


def _read_lines(path: Path, check: AuditCheck):
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            check.lines = number
            record: Any = None
            if not raw.endswith(b"\n"):
                check.problems.append(Problem(number, "torn line: it has no newline (a write that "
                                                      "did not finish)"))
            else:
                try:
                    record = json.loads(raw)
                except ValueError as exc:
                    check.problems.append(Problem(number, f"bad JSON ({exc})"))
                else:
                    if not isinstance(record, dict):
                        check.problems.append(Problem(number, "not a JSON object"))
                        record = None
            yield _Line(number, line_hash(raw), record)


def verify_log(path: str | os.PathLike, head: str | None = None) -> AuditCheck:
    """Check an audit log's chain line by line; ``head``: a line hash recorded earlier, which
    must be in the log (records up to it intact, the log not cut before it)."""
    path = Path(path)
    check = AuditCheck()
    if not path.is_file():
        check.problems.append(Problem(0, f"{path}: no such file"))
        return check
    tip: _Line | None = None  # the chain's last line so far: the next line's prev is its hash
    pending: _Line | None = None  # a line whose prev is not the tip's hash, judged at the next line
    pending_tip: _Line | None = None
    last: _Line | None = None
    seen_head = head is None
    torn_closed: set[int] = set()
    for line in _read_lines(path, check):
        rec = line.record
        if rec is not None and rec.get("event") == "torn_line" and isinstance(rec.get("line"), int):
            torn_closed.add(rec["line"])
        if pending is not None:
            if rec is not None and rec.get("prev") == _hash_of(pending_tip):
                check.problems.append(Problem(pending.number, "inserted line: not in the chain (the "
                                                              "next line follows the one before it)"))
                tip = pending_tip
            else:
                _judge_break(check, pending, pending_tip)
                tip = pending
            pending = None
        if rec is None:
            tip = line  # reported already; its bytes may still be in the chain (a closed torn line)
        elif rec.get("prev") != _hash_of(tip):
            pending, pending_tip = line, tip
        else:
            if not _seq_follows(rec, tip):
                check.problems.append(Problem(line.number, f"seq {rec.get('seq')!r} does not follow "
                                                           "the previous line's"))
            tip = line
        seen_head = seen_head or line.hash == head
        last = line
    if pending is not None:
        _judge_break(check, pending, pending_tip)
    for k, problem in enumerate(check.problems):
        if problem.line in torn_closed and problem.what.startswith("bad JSON"):
            check.problems[k] = Problem(problem.line, "torn line: a write that did not finish, "
                                                      "closed by the service when it wrote again")
    check.head = _hash_of(last)
    if not seen_head:
        check.problems.append(Problem(0, f"the head {head} is not in the log: records up to it were "
                                         "changed, or the log was cut before it"))
    check.problems.sort(key=lambda p: p.line)
    return check


def _hash_of(line: _Line | None) -> str:
    return line.hash if line is not None else GENESIS


def _seq_follows(rec: dict[str, Any], before: _Line | None) -> bool:
    if before is None:
        return rec.get("seq") == 1
    if before.record is None or not isinstance(before.record.get("seq"), int):
        return isinstance(rec.get("seq"), int)
    return rec.get("seq") == before.record["seq"] + 1


def _judge_break(check: AuditCheck, line: _Line, before: _Line | None) -> None:
    """Name the cause of a broken link from ``before`` to ``line`` (not an insertion)."""
    rec = line.record or {}
    if "prev" not in rec:
        check.problems.append(Problem(line.number, "no prev hash: not a chained record"))
        return
    seq = rec.get("seq")
    prev_seq = 0 if before is None else (before.record or {}).get("seq")
    if isinstance(seq, int) and isinstance(prev_seq, int) and seq > prev_seq + 1:
        n = seq - prev_seq - 1
        after = f"seq {prev_seq} is followed by {seq}" if before is not None else f"the first seq is {seq}"
        check.problems.append(Problem(line.number, f"{n} line{'s' if n > 1 else ''} deleted before "
                                                   f"it ({after})"))
    elif before is not None and before.record is not None and seq == prev_seq + 1:
        check.problems.append(Problem(before.number, "edited line: its bytes no longer match the "
                                                     f"hash line {line.number} records"))
    else:
        what = f"line {before.number}" if before is not None else "the genesis value"
        check.problems.append(Problem(line.number, f"chain break: its prev hash is not that of {what}"))
