"""The audit log under concurrent writers: every line whole, none lost."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from robustce.errors import RobustCEError
from robustce.serve.audit_log import AuditLog, library_versions


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


def test_short_write_is_an_error(tmp_path, monkeypatch):
    import robustce.serve.audit_log as mod

    log = AuditLog(tmp_path / "a.jsonl")
    monkeypatch.setattr(mod.os, "write", lambda fd, data: len(data) - 1)
    with pytest.raises(RobustCEError, match="wrote"):
        log.write({"a": 1})
    log.close()


def test_versions_name_the_solvers():
    v = library_versions()
    assert {"robustce", "python", "highspy", "z3-solver", "torch"} <= set(v)
