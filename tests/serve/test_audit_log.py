"""The audit log under concurrent writers: every line whole, none lost, one intact chain; a
failed write leaves the file as it was; a torn last line is not continued."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from robustce.errors import RobustCEError
from robustce.serve.audit_log import (
    GENESIS,
    AuditLog,
    AuditWriteError,
    library_versions,
    line_hash,
    verify_log,
)


def _writer(path: str, k: int, n: int) -> None:
    log = AuditLog(path)
    for i in range(n):  # lines far longer than PIPE_BUF (4 KiB)
        log.write({"writer": k, "i": i, "pad": chr(0x41 + k) * 20_000, "text": "ünï—cøde"})
    log.close()


def test_concurrent_processes_never_interleave_lines(tmp_path):
    path = tmp_path / "logs" / "audit.jsonl"  # parent created by AuditLog
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), k, 150)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    records = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    assert len(records) == 600
    for rec in records:
        assert rec["pad"] == chr(0x41 + rec["writer"]) * 20_000 and rec["text"] == "ünï—cøde"
    for k in range(4):  # each writer's lines all there, in its order
        assert [r["i"] for r in records if r["writer"] == k] == list(range(150))
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    # one chain through the four processes' lines: each carries the hash of the line before it
    lines = raw.splitlines(keepends=True)
    assert [r["seq"] for r in records] == list(range(1, 601))
    assert [r["prev"] for r in records] == [GENESIS] + [line_hash(x) for x in lines[:-1]]
    assert verify_log(path).ok


def test_short_write_is_an_error_and_leaves_whole_lines(tmp_path, monkeypatch):
    import robustce.serve.audit_log as mod

    path = tmp_path / "a.jsonl"
    log = AuditLog(path)
    log.write({"a": 0})
    before = path.read_bytes()
    real_write = os.write

    def short_write(fd, data):  # what a full disk does: part of the line lands, then it stops
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(mod.os, "write", short_write)
    with pytest.raises(AuditWriteError, match="wrote"):
        log.write({"a": 1})
    assert isinstance(AuditWriteError("x"), RobustCEError)
    assert path.read_bytes() == before  # the half line was cut off again
    monkeypatch.setattr(mod.os, "write", real_write)
    log.write({"a": 2})  # space is back: the next record is a line of its own, in the chain
    log.close()
    assert [json.loads(x)["a"] for x in path.read_bytes().splitlines()] == [0, 2]
    assert verify_log(path).ok


def test_a_torn_last_line_is_closed_recorded_and_not_continued(tmp_path):
    path = tmp_path / "a.jsonl"
    log = AuditLog(path)
    for i in range(3):
        log.write({"i": i})
    log.close()
    with open(path, "ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"seq":4,"prev":"ab')
    log = AuditLog(path)  # on open: the torn line is ended and named by a record
    log.write({"i": 4})
    log.close()
    lines = path.read_bytes().splitlines()
    assert lines[3] == b'{"seq":4,"prev":"ab'
    assert json.loads(lines[4])["event"] == "torn_line" and json.loads(lines[4])["line"] == 4
    assert json.loads(lines[5])["i"] == 4 and json.loads(lines[5])["seq"] == 6
    check = verify_log(path)
    assert [(p.line, p.what.split(":")[0]) for p in check.problems] == [(4, "torn line")]


def test_appending_to_a_log_continues_its_chain(tmp_path):
    path = tmp_path / "a.jsonl"
    for i in range(3):  # a service restarted between records
        log = AuditLog(path, fsync=False)
        log.write({"i": i})
        log.close()
    assert [json.loads(x)["seq"] for x in path.read_bytes().splitlines()] == [1, 2, 3]
    assert verify_log(path).ok


def test_versions_name_the_solvers():
    v = library_versions()
    assert {"robustce", "python", "highspy", "z3-solver", "torch"} <= set(v)


def test_concurrent_async_writers_share_fsyncs_and_keep_one_chain(tmp_path, monkeypatch):
    import asyncio

    import robustce.serve.audit_log as mod

    real_fsync, calls = os.fsync, []

    def counting_fsync(fd):
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(mod.os, "fsync", counting_fsync)
    path = tmp_path / "a.jsonl"
    log = AuditLog(path)

    async def client(k: int) -> list[int]:
        return [(await log.write_async({"client": k, "i": i}))["seq"] for i in range(20)]

    async def run() -> list[list[int]]:
        return await asyncio.gather(*(client(k) for k in range(32)))

    seqs = asyncio.run(run())
    log.close()
    records = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert len(records) == 640 and sorted(s for per in seqs for s in per) == list(range(1, 641))
    for k in range(32):  # each client's records in its order
        assert [r["i"] for r in records if r["client"] == k] == list(range(20))
    assert verify_log(path).ok
    assert 0 < len(calls) < 640  # every record on disk before its caller resumed, fsyncs shared


def test_an_async_write_that_fails_raises_and_leaves_the_log_whole(tmp_path, monkeypatch):
    import asyncio

    import robustce.serve.audit_log as mod

    path = tmp_path / "a.jsonl"
    log = AuditLog(path)
    log.write({"a": 0})
    before = path.read_bytes()
    real_fsync = os.fsync

    def failing_fsync(fd):  # what an I/O error at fsync does
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(mod.os, "fsync", failing_fsync)

    async def run() -> list:
        return await asyncio.gather(*(log.write_async({"a": i}) for i in range(1, 4)),
                                    return_exceptions=True)

    results = asyncio.run(run())
    assert all(isinstance(r, AuditWriteError) for r in results)
    assert path.read_bytes() == before  # the lines written before the failed fsync are out again
    monkeypatch.setattr(mod.os, "fsync", real_fsync)
    log.write({"a": 9})
    log.close()
    assert verify_log(path).ok
