"""Checking the ledger against a new model: the honour rate is a recount of the raw records
scored by the new model's own ``predict``; repairs are valid under the new model and keep
the schema's actionability; the gate fails exactly when the rate overall or of a group falls
below; the reissue and grandfather policies."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from robustce.ledger import Ledger, check
from robustce.notices.record import model_hash

EDUCATION = ("none", "high_school", "bachelor", "master", "doctorate")


def _raw(path) -> list[tuple]:
    """The promises as stored, read with plain sqlite3 (not through the ledger's code)."""
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT id, method, target_class, target_row, applicant_row, "
                           "model_hash FROM robustce_ledger_promises ORDER BY id").fetchall()
    finally:
        con.close()


def _rate_entry_ok(entry: dict) -> None:
    lo, hi = entry["ci"]
    assert lo <= entry["honour_rate"] <= hi
    assert entry["honour_rate"] == entry["honoured"] / entry["n"]


def test_the_honour_rate_equals_a_recount_from_the_raw_records(tmp_path, v1, v2, explanations):
    path = tmp_path / "l.sqlite3"
    with Ledger(str(path)) as book:
        ids = [i for e in explanations for i in book.record_explanations(v1, e)]
        report = check(book, v2, groups=["housing"], repair=False, n_boot=100,
                       partition_size=7)  # several partitions
        same = check(book, v1, repair=False, n_boot=0)
        capped = check(book, v2, repair=False, n_boot=0, max_broken=2, partition_size=3)
    n_valid = sum(int((v1.predict(e.counterfactuals_encoded) == 1).sum()) for e in explanations)
    rows = _raw(path)
    assert len(ids) == len(rows) == n_valid
    names = v2.encoder.schema.names
    targets = pd.DataFrame([json.loads(r[3]) for r in rows])[names]
    kept = v2.predict(targets) == np.array([r[2] for r in rows])
    assert 0 < kept.sum() < len(rows)  # a real mix of kept and broken promises
    assert (report.records, report.outstanding, report.honoured) == (len(rows), len(rows),
                                                                     int(kept.sum()))
    assert report.honour_rate == kept.mean()
    lo, hi = report.honour_rate_ci
    assert lo < report.honour_rate < hi  # a mix: the replicates spread on both sides
    methods = np.array([r[1] for r in rows])
    for m, entry in report.by_method.items():
        assert (entry["n"], entry["honoured"]) == ((methods == m).sum(), kept[methods == m].sum())
        _rate_entry_ok(entry)
    assert set(report.by_method) == {"milp_nearest", "nearest_neighbour"}
    housing = np.array([json.loads(r[4])["housing"] for r in rows])
    for level, entry in report.by_group["housing"].items():
        assert (entry["n"], entry["honoured"]) == ((housing == level).sum(),
                                                   kept[housing == level].sum())
        _rate_entry_ok(entry)
    assert sorted(b["id"] for b in report.broken) == [r[0] for r, k in zip(rows, kept, strict=True) if not k]
    broken_ids = [r[0] for r, k in zip(rows, kept, strict=True) if not k]
    assert report.broken_total == capped.broken_total == len(broken_ids)
    assert [b["id"] for b in capped.broken] == broken_ids[:2]  # listed: the first two
    assert report.by_age["0-30d"]["n"] == len(rows)
    assert same.honoured == same.outstanding == len(rows)  # the issuing model keeps them all
    doc = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert {"records", "outstanding", "honoured", "honour_rate", "by_method", "by_group",
            "broken"} <= set(doc)


def test_repairs_are_valid_under_the_new_model_and_keep_actionability(tmp_path, v1, v2,
                                                                       explanations):
    path = tmp_path / "l.sqlite3"
    with Ledger(str(path)) as book:
        book.record_explanations(v1, explanations[0])  # nearest CEs: v2 breaks many
        report = check(book, v2, n_boot=0)
    original = {r[0]: json.loads(r[4]) for r in _raw(path)}
    assert report.broken
    found = 0
    for b in report.broken:
        for which, start in (("from_promised", b["promised_row"]),
                             ("from_original", original[b["id"]])):
            fix = b["repair"][which]
            if fix["status"] != "found":
                assert "row" not in fix
                continue
            found += 1
            row = pd.DataFrame([fix["row"]])[v2.encoder.schema.names]
            assert v2.predict(row)[0] == b["target_class"] and fix["valid"]
            assert fix["row"]["age"] == start["age"]  # immutable
            assert fix["row"]["prior_default"] == start["prior_default"]  # immutable
            assert fix["row"]["years_employed"] >= start["years_employed"]  # increase-only
            assert EDUCATION.index(fix["row"]["education"]) >= EDUCATION.index(start["education"])
            assert {f: [start[f], fix["row"][f]] for f in fix["changes"]} == fix["changes"]
    assert found >= len(report.broken)  # most repairs exist (one per broken at least)


@pytest.fixture(scope="module")
def decided(loan, v2):
    """Test rows v2 approves and rows it declines (promises toward approval)."""
    frame = loan[1].frame
    pred = v2.predict(frame)
    return frame[pred == 1], frame[pred == 0]


def _promise(book: Ledger, row: pd.Series, region: str) -> int:
    target = row.to_dict()
    return book.record(applicant_id=f"{region}-{row.name}",
                       applicant_row={**target, "income": target["income"] / 2, "region": region},
                       target_row=target, model="sha256:v1", method="milp_nearest",
                       target_class=1)


def test_the_gate_fails_exactly_when_a_group_falls_below(tmp_path, v2, decided):
    approved, declined = decided
    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        for _, row in approved.iloc[:10].iterrows():
            _promise(book, row, "north")
        for _, row in approved.iloc[10:14].iterrows():
            _promise(book, row, "south")
        _promise(book, declined.iloc[0], "south")
        report = check(book, v2, groups=["region"], repair=False, n_boot=50)
    assert (report.outstanding, report.honoured) == (15, 14)
    south = report.by_group["region"]["south"]
    assert (south["n"], south["honoured"], report.by_group["region"]["north"]["honoured"]) == \
        (5, 4, 10)
    failures = report.gate(0.9)  # overall 14/15 = 0.933 passes, south 4/5 = 0.8 does not
    assert len(failures) == 1 and "region=south" in failures[0]
    assert report.gate(0.8) == []  # every rate at or above: passes
    assert len(report.gate(0.95)) == 2  # overall and south
    assert report.gate(0.0) == []


def test_all_groups_above_pass_the_gate(tmp_path, v2, decided):
    approved, _ = decided
    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        for k, (_, row) in enumerate(approved.iloc[:8].iterrows()):
            _promise(book, row, "north" if k % 2 else "south")
        report = check(book, v2, groups=["region"], repair=False, n_boot=20)
    assert report.honour_rate == 1.0 and report.gate(1.0) == [] and report.broken == []


def test_reissue_writes_valid_repairs_linked_to_the_broken_promises(tmp_path, v1, v2,
                                                                    explanations):
    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        book.record_explanations(v1, explanations[0], expires_at=datetime.now(UTC)
                                 + timedelta(days=60))
        first = check(book, v2, policy="reissue", n_boot=0)
        assert first.reissued
        new_hash = model_hash(v2)
        for old, new in first.reissued:
            assert book.status(old) == "reissued"
            assert book.events(old)[-1]["repair_id"] == new
            was, now = book.promise(old), book.promise(new)
            assert (now["reissue_of"], now["model_hash"], now["applicant_key"],
                    now["origin"]) == (old, new_hash, was["applicant_key"], "reissue")
            assert now["applicant_row"] == was["applicant_row"]
            assert now["expires_at"] == was["expires_at"]
            row = pd.DataFrame([now["target_row"]])[v2.encoder.schema.names]
            assert v2.predict(row)[0] == now["target_class"]  # the new model honours it
        second = check(book, v2, repair=False, n_boot=0)
    assert second.outstanding == first.outstanding  # each reissued one replaced by its repair
    assert len(second.broken) == len(first.broken) - len(first.reissued)
    assert second.records == first.records + len(first.reissued)


def test_grandfather_counts_what_the_issuing_version_still_decides(tmp_path, v1, v2,
                                                                   explanations):
    issued = datetime.now(UTC) - timedelta(days=1)
    with Ledger(str(tmp_path / "l.sqlite3")) as book:
        book.record_explanations(v1, explanations[0], issued_at=issued,
                                 expires_at=issued + timedelta(days=30))
        plain = check(book, v2, repair=False, n_boot=0)
        kept = check(book, v2, policy="grandfather", repair=False, n_boot=0)
        by_v1 = check(book, v1, policy="grandfather", repair=False, n_boot=0)
        after = check(book, v2, policy="grandfather", repair=False, n_boot=0,
                      as_of=issued + timedelta(days=31))
    assert plain.honoured < plain.outstanding
    assert (kept.honoured, kept.honoured_by_model, kept.honoured_by_policy) == (
        kept.outstanding, plain.honoured, plain.outstanding - plain.honoured)
    assert kept.broken == [] and kept.honour_rate == 1.0
    assert by_v1.honoured_by_policy == 0  # the same version: nothing to grandfather
    assert after.outstanding == 0 and after.honour_rate is None  # expired: no longer promised
