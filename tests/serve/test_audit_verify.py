"""``verify_log`` and ``robustce audit-log verify``: an intact log passes; an edited, a
deleted, an inserted, an unparsable and a torn line are each named by their line number."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from robustce.cli import main
from robustce.serve.audit_log import AuditLog, verify_log

from .conftest import SRC


@pytest.fixture
def log_lines(tmp_path) -> list[bytes]:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, fsync=False)
    for i in range(8):
        log.write({"request_id": f"r{i}", "status": 200, "items": [{"id": "a", "status": "found"}]})
    log.close()
    return path.read_bytes().splitlines(keepends=True)


def _check(tmp_path: Path, lines: list[bytes]) -> list[tuple[int, str]]:
    path = tmp_path / "changed.jsonl"
    path.write_bytes(b"".join(lines))
    return [(p.line, p.what) for p in verify_log(path).problems]


def test_an_intact_log_passes(tmp_path, log_lines):
    path = tmp_path / "audit.jsonl"
    check = verify_log(path)
    assert check.ok and check.lines == 8 and check.problems == []


def test_an_edited_line_is_named(tmp_path, log_lines):
    lines = list(log_lines)
    lines[4] = lines[4].replace(b'"status":200', b'"status":201')  # still valid JSON
    assert json.loads(lines[4])["status"] == 201
    problems = _check(tmp_path, lines)
    assert len(problems) == 1 and problems[0][0] == 5 and "edited" in problems[0][1]


def test_a_deleted_line_is_named(tmp_path, log_lines):
    lines = list(log_lines)
    del lines[3]
    problems = _check(tmp_path, lines)
    assert len(problems) == 1 and problems[0][0] == 4 and "1 line deleted" in problems[0][1]


def test_a_deleted_first_line_is_named(tmp_path, log_lines):
    problems = _check(tmp_path, log_lines[1:])
    assert len(problems) == 1 and problems[0][0] == 1 and "deleted" in problems[0][1]


def test_an_inserted_line_is_named(tmp_path, log_lines):
    forged = json.loads(log_lines[5])  # a copy of a real record, its chain fields and all
    forged["request_id"] = "forged"
    lines = [*log_lines[:6], (json.dumps(forged) + "\n").encode(), *log_lines[6:]]
    problems = _check(tmp_path, lines)
    assert len(problems) == 1 and problems[0][0] == 7 and "inserted" in problems[0][1]


def test_a_torn_and_a_bad_json_line_are_named(tmp_path, log_lines):
    problems = _check(tmp_path, [*log_lines[:-1], log_lines[-1][:25]])
    assert problems == [(8, "torn line: it has no newline (a write that did not finish)")]
    lines = list(log_lines)
    lines[2] = b'{"seq": 3, "prev": \n'
    problems = _check(tmp_path, lines)
    assert problems[0][0] == 3 and problems[0][1].startswith("bad JSON")


def test_the_head_must_still_be_in_the_log(tmp_path, log_lines):
    path = tmp_path / "audit.jsonl"
    head = verify_log(path).head
    assert verify_log(path, head=head).ok
    (tmp_path / "cut.jsonl").write_bytes(b"".join(log_lines[:-2]))  # the last records dropped
    cut = verify_log(tmp_path / "cut.jsonl")
    assert cut.ok  # a chain alone cannot see its end cut off ...
    problems = verify_log(tmp_path / "cut.jsonl", head=head).problems
    assert len(problems) == 1 and "not in the log" in problems[0].what  # ... the kept head can


def test_cli_exit_codes_and_messages(tmp_path, log_lines, capsys):
    path = tmp_path / "audit.jsonl"
    assert main(["audit-log", "verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: OK, 8 records") and out.count("\n") == 1
    lines = list(log_lines)
    del lines[2]
    lines[5] = lines[5].replace(b'"r6"', b'"r9"')
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    assert main(["audit-log", "verify", str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert out[0].startswith(f"{bad}: line 3: 1 line deleted")
    assert out[1].startswith(f"{bad}: line 6: edited line")
    assert main(["audit-log", "verify", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["audit-log", "verify", str(path), "--head", "xyz"]) == 2


def test_cli_as_a_process(tmp_path, log_lines):
    """The console entry (``python -m robustce.cli``) returns the exit status to the shell."""
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(log_lines[:-1]) + log_lines[-1][:10])
    run = subprocess.run([sys.executable, "-m", "robustce.cli", "audit-log", "verify", str(bad)],
                         capture_output=True, text=True, env={"PYTHONPATH": str(SRC)}, timeout=120)
    assert run.returncode == 1 and "line 8: torn line" in run.stdout


def test_an_audit_log_that_cannot_be_opened_stops_serve_with_one_line(tmp_path, model_dir, capsys):
    (tmp_path / "logs").mkdir()
    assert main(["serve", "--model", f"loan={model_dir}", "--audit-log", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "audit log" in err and "cannot open it" in err
