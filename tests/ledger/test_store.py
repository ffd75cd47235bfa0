"""The ledger's store: every field round-trips (SQLite and a real PostgreSQL), ids kept as
salted hashes, promises never rewritten, outstanding promises, the grandfather policy's
deciding version, two processes appending at once, and one-line errors for a corrupt file,
a foreign database and a newer ledger."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from robustce.errors import ConfigError
from robustce.ledger import Ledger, LedgerError

T0 = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
CERT = {"kind": "apas", "delta": 0.02, "p": "inf", "alpha": 0.999, "R": 0.995, "n": 1379,
        "verdict": "robust"}
APPLICANT = {"age": 41, "education": "bachelor", "years_employed": 7, "income": 30703.01,
             "housing": "rent", "debt": 5000.5, "has_guarantor": 0, "prior_default": "no",
             "region": "Nörth"}
TARGET = {**APPLICANT, "income": 41234.567890123, "housing": "own"}


def _record(book: Ledger, **kw) -> int:
    args = {"applicant_id": "A-17", "applicant_row": APPLICANT, "target_row": TARGET,
            "model": "sha256:v1", "method": "milp_nearest", "target_class": 1,
            "certificate": CERT, "issued_at": T0, "expires_at": T0 + timedelta(days=90)}
    args.update(kw)
    return book.record(**args)


def test_every_field_round_trips(ledger_url):
    with Ledger(ledger_url) as book:
        pid = _record(book)
        book.add_status(pid, "broken", model_hash="sha256:v2", note="checked",
                        at=T0 + timedelta(days=3))
    with Ledger(ledger_url) as book:  # read back by a new connection
        got = book.promise(pid)
        events = book.events(pid)
        (part,) = list(book.promises(outstanding=False))
    expected = {"id": pid, "applicant_key": "A-17", "applicant_hashed": False,
                "applicant_row": APPLICANT, "model_hash": "sha256:v1", "method": "milp_nearest",
                "target_class": 1, "target_label": None, "target_row": TARGET,
                "changed": ["income", "housing"], "certificate_kind": "apas",
                "certificate": CERT, "issued_at": T0, "expires_at": T0 + timedelta(days=90),
                "origin": "python", "reissue_of": None}
    assert got == expected
    assert type(got["target_row"]["income"]) is float and type(got["applicant_row"]["age"]) is int
    row = part.iloc[0].to_dict()
    assert {k: row[k] for k in ("id", "applicant_key", "method", "target_row", "certificate")} \
        == {k: expected[k] for k in ("id", "applicant_key", "method", "target_row", "certificate")}
    assert row["issued_at"].to_pydatetime() == T0
    assert [(e["status"], e["model_hash"], e["note"], e["at"]) for e in events] == [
        ("broken", "sha256:v2", "checked", T0 + timedelta(days=3))]


def test_ids_not_kept_are_salted_sha256_and_found_again(tmp_path):
    url = str(tmp_path / "l.sqlite3")
    with Ledger(url, salt="pepper") as book:
        pid = _record(book, keep_ids=False)
        key = book.promise(pid)["applicant_key"]
        assert book.deciding_version("A-17", now=T0 + timedelta(days=1)) == "sha256:v1"
    want = "sha256:" + hashlib.sha256(b"pepper\x00A-17").hexdigest()
    assert key == want
    raw = sqlite3.connect(tmp_path / "l.sqlite3").execute(
        "SELECT applicant_key, applicant_hashed FROM robustce_ledger_promises").fetchall()
    assert raw == [(want, 1)]
    with Ledger(url) as book:  # the ledger's own stored salt is another salt
        assert book.applicant_key("A-17") != want


def test_a_status_is_appended_never_written_into_the_promise(tmp_path):
    path = tmp_path / "l.sqlite3"
    with Ledger(str(path)) as book:
        pid = _record(book)
        before = sqlite3.connect(path).execute(
            "SELECT * FROM robustce_ledger_promises").fetchall()
        assert book.status(pid) == "issued"
        book.add_status(pid, "honoured", model_hash="sha256:v2", at=T0 + timedelta(days=1))
        book.add_status(pid, "withdrawn", at=T0 + timedelta(days=2))
        assert book.status(pid) == "withdrawn"
        with pytest.raises(LedgerError, match="unknown status"):
            book.add_status(pid, "kept")
    after = sqlite3.connect(path).execute("SELECT * FROM robustce_ledger_promises").fetchall()
    assert after == before
    assert sqlite3.connect(path).execute(
        "SELECT status FROM robustce_ledger_events ORDER BY seq").fetchall() == [
        ("honoured",), ("withdrawn",)]


def test_outstanding_promises_leave_out_expired_and_ended_ones(tmp_path):
    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        a = _record(book)  # expires at T0 + 90 d
        b = _record(book, expires_at=None)
        c = _record(book, expires_at=None)
        d = _record(book, expires_at=None, issued_at=T0 + timedelta(days=10))
        book.add_status(b, "broken", at=T0 + timedelta(days=1))  # broken: still outstanding
        book.add_status(c, "withdrawn", at=T0 + timedelta(days=5))

        def ids(days: float) -> list[int]:
            return [int(i) for p in book.promises(as_of=T0 + timedelta(days=days),
                                                  partition_size=1) for i in p["id"]]

        assert ids(1) == [a, b, c]
        assert ids(20) == [a, b, d]
        assert ids(100) == [b, d]
        assert sum(len(p) for p in book.promises(outstanding=False, partition_size=3)) == 4


def test_grandfather_picks_the_issuing_version_until_expiry(tmp_path):
    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        _record(book, applicant_id="A", model="sha256:v1", expires_at=T0 + timedelta(days=30))
        later = _record(book, applicant_id="A", model="sha256:v2",
                        issued_at=T0 + timedelta(days=10), expires_at=T0 + timedelta(days=20))
        _record(book, applicant_id="B", model="sha256:v1", expires_at=None)
        assert book.deciding_version("A", now=T0 + timedelta(days=5)) == "sha256:v1"
        assert book.deciding_version("A", now=T0 + timedelta(days=15)) == "sha256:v2"  # latest
        assert book.deciding_version("A", now=T0 + timedelta(days=25)) == "sha256:v1"
        assert book.deciding_version("A", now=T0 + timedelta(days=30)) is None  # expired
        assert book.deciding_version("A", now=T0 - timedelta(days=1)) is None  # not yet issued
        assert book.deciding_version("C", now=T0) is None  # never promised anything
        assert book.deciding_version("B", now=T0 + timedelta(days=900)) == "sha256:v1"
        book.add_status(later, "withdrawn", at=T0 + timedelta(days=12))
        assert book.deciding_version("A", now=T0 + timedelta(days=15)) == "sha256:v1"


WRITER = """
import sys, time
from pathlib import Path
from robustce.ledger import Ledger
url, who, n, folder = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
book = Ledger(url)
row = {"income": 1.0, "debt": 2.0}
(folder / f"ready-{who}").touch()
while not (folder / "go").exists():  # both start writing at once
    time.sleep(0.01)
for i in range(n):
    book.record(applicant_id=f"{who}-{i}", applicant_row=row, target_row={**row, "income": 2.0},
                model="sha256:v1", method="m", target_class=1)
book.close()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def shared_url(request, tmp_path):
    """The two-process test's ledger (PostgreSQL in ``make test-slow``: two more processes)."""
    if request.param == "sqlite":
        return str(tmp_path / "shared.sqlite3")
    import psycopg

    base = request.getfixturevalue("postgres_url")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE DATABASE ledger_shared")
    return base.rsplit("/", 1)[0] + "/ledger_shared"


def test_two_processes_writing_at_once_lose_nothing(shared_url, tmp_path):
    ledger_url = shared_url
    n = 80
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env_path = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": env_path + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, str(script), ledger_url, who, str(n),
                               str(tmp_path)], env=env, stderr=subprocess.PIPE, text=True)
             for who in ("a", "b")]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{w}").exists() for w in ("a", "b")):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            [p.communicate()[1] for p in procs if p.poll() is not None]
        time.sleep(0.02)
    (tmp_path / "go").touch()
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    with Ledger(ledger_url) as book:
        rows = [r for part in book.promises(outstanding=False, partition_size=64)
                for r in part[["id", "applicant_key"]].itertuples(index=False)]
    keys = sorted(k for _, k in rows)
    assert keys == sorted([f"a-{i}" for i in range(n)] + [f"b-{i}" for i in range(n)])
    assert len({i for i, _ in rows}) == 2 * n


def _one_line_error(url: str) -> str:
    with pytest.raises(ConfigError) as info:
        Ledger(url)
    text = str(info.value)
    assert len(text.splitlines()) == 1, text
    return text


def test_a_corrupt_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    path.write_bytes(b"this is not a database, only some bytes\n" * 100)
    text = _one_line_error(str(path))
    assert isinstance(_raised(str(path)), LedgerError)
    assert f"ledger sqlite:///{path}" in text and "not a database" in text


def _raised(url: str) -> Exception:
    try:
        Ledger(url)
    except Exception as exc:  # noqa: BLE001 - the test looks at its type
        return exc
    raise AssertionError("no error")


def test_a_foreign_database_is_one_line(tmp_path):
    path = tmp_path / "shop.sqlite3"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
    con.commit()
    con.close()
    text = _one_line_error(str(path))
    assert f"ledger sqlite:///{path}" in text and "other tables (orders)" in text
    con = sqlite3.connect(path)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")] \
        == ["orders"]  # nothing created in it


def test_a_newer_ledger_is_refused_in_one_line(tmp_path):
    path = tmp_path / "l.sqlite3"
    Ledger(str(path)).close()
    con = sqlite3.connect(path)
    con.execute("UPDATE robustce_ledger_meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    text = _one_line_error(str(path))
    assert "schema version 99 is newer" in text and str(path) in text


def test_a_file_is_private_and_a_bad_url_is_one_line(tmp_path):
    path = tmp_path / "l.sqlite3"
    Ledger(str(path)).close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert "nosuchdb://x/y" in _one_line_error("nosuchdb://x/y")


def test_json_rows_are_plain_values(tmp_path):
    import numpy as np

    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        pid = _record(book, applicant_row={"age": np.int64(40), "income": np.float64(1.5)},
                      target_row={"age": np.int64(40), "income": np.float64(2.5)})
    text = sqlite3.connect(tmp_path / "l.sqlite3").execute(
        "SELECT target_row, changed FROM robustce_ledger_promises WHERE id = ?", (pid,)).fetchone()
    assert json.loads(text[0]) == {"age": 40, "income": 2.5} and json.loads(text[1]) == ["income"]
