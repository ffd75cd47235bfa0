"""benchmarks/ledger_honour.py --quick: its table agrees with an independent recount — the
recorded promises read from the SQLite file with ``sqlite3`` (not the ledger's code), scored by
the t+1 model's own ``predict``; the extra L1 recomputed from the raw rows with the issuing
model's encoder; and the table's file says what its cells say."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from robustce.notices.record import model_hash

pytest.importorskip("sqlalchemy")

REPO = Path(__file__).resolve().parents[2]
PATH = REPO / "benchmarks" / "ledger_honour.py"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("honour")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(PATH), "--quick", "--out", str(out / "res"),
                           "--keep-ledgers", str(out / "ledgers")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cell = json.loads((out / "res" / "synthetic_loan-mlp.json").read_text())
    return out, cell, proc.stdout


@pytest.fixture(scope="module")
def sequence():
    spec = importlib.util.spec_from_file_location("ledger_honour", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.synthetic_sequence(True, 1)


def _promises(path: Path) -> pd.DataFrame:
    with sqlite3.connect(path) as con:
        return pd.read_sql_query(
            "SELECT id, method, certificate_kind, applicant_key, applicant_row, target_row, "
            "target_class, model_hash FROM robustce_ledger_promises ORDER BY id", con)


def test_honour_rate_equals_recount_by_new_models_predict(quick_run, sequence):
    out, cell, _ = quick_run
    v_t, v_next = sequence["lines"]["mlp"]
    # the rebuilt models are the run's (the same content hashes)
    assert cell["model_hashes"] == [model_hash(v_t), model_hash(v_next)]
    rows = _promises(out / "ledgers" / "synthetic_loan-mlp.sqlite3")
    assert (rows["model_hash"] == model_hash(v_t)).all()
    assert len(rows) == cell["records"]
    h = cell["horizons"][0]
    targets = pd.DataFrame([json.loads(t) for t in rows["target_row"]])
    kept = np.asarray(v_next.predict(targets)) == rows["target_class"].to_numpy()
    for method in ("milp_nearest", "milp_robust"):
        mine = (rows["method"] == method).to_numpy()
        assert mine.sum() > 0
        entry = h["by_method"][method]
        assert entry["n"] == mine.sum()
        assert entry["honoured"] == kept[mine].sum()
        assert entry["honour_rate"] == pytest.approx(kept[mine].mean())
        assert entry["ci"][0] <= entry["honour_rate"] <= entry["ci"][1]
    for kind, entry in h["by_certificate"].items():
        mine = (rows["certificate_kind"] == kind).to_numpy()
        assert (entry["n"], entry["honoured"]) == (mine.sum(), kept[mine].sum())
    assert h["honour_rate"] == pytest.approx(kept.mean())
    # the promises are valid under v_t when issued (record_explanations keeps valid CEs only)
    assert (np.asarray(v_t.predict(targets)) == rows["target_class"].to_numpy()).all()


def test_cost_of_robustness_equals_l1_from_raw_rows(quick_run, sequence):
    out, cell, _ = quick_run
    v_t, v_next = sequence["lines"]["mlp"]
    rows = _promises(out / "ledgers" / "synthetic_loan-mlp.sqlite3")
    enc = v_t.encoder

    def per_applicant(method: str) -> pd.DataFrame:
        mine = rows[rows["method"] == method]
        a = enc.transform(pd.DataFrame([json.loads(t) for t in mine["applicant_row"]]))
        b = enc.transform(pd.DataFrame([json.loads(t) for t in mine["target_row"]]))
        targets = pd.DataFrame([json.loads(t) for t in mine["target_row"]])
        return pd.DataFrame({"l1": np.abs(np.asarray(b) - np.asarray(a)).sum(axis=1),
                             "kept": np.asarray(v_next.predict(targets)) == 1},
                            index=mine["applicant_key"].to_numpy())

    base, robust = per_applicant("milp_nearest"), per_applicant("milp_robust")
    common = base.index.intersection(robust.index)
    cost = cell["horizons"][0]["cost"]["milp_robust"]
    assert cost["n"] == len(common) > 0
    assert cost["l1_nearest"] == pytest.approx(base.loc[common, "l1"].mean(), abs=1e-6)
    assert cost["extra_l1"] == pytest.approx(
        (robust.loc[common, "l1"] - base.loc[common, "l1"]).mean(), abs=1e-6)
    assert cost["honour_gain"] == pytest.approx(
        robust.loc[common, "kept"].mean() - base.loc[common, "kept"].mean())


def test_table_file_states_the_cells(quick_run):
    out, cell, stdout = quick_run
    text = (out / "res" / "table.md").read_text()
    e = cell["horizons"][0]["by_method"]["milp_nearest"]
    rows = [x for x in text.splitlines() if "| milp_nearest |" in x]
    head = next(x for x in rows if "| none | 25 / 25 |" in x)  # the headline's row
    assert f"| {e['honour_rate']:.2f} [{e['ci'][0]:.2f}, {e['ci'][1]:.2f}] |" in head
    detail = next(x for x in rows if "| 25 / 25 | 1 |" in x)  # by method, j = 1
    assert f"| {e['honoured']} / {e['n']} | {e['honour_rate']:.3f} |" in detail
    assert text in stdout
    # a rerun skips the cell already there (resumable)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MPLBACKEND="Agg")
    again = subprocess.run([sys.executable, str(PATH), "--quick", "--out", str(out / "res")],
                           capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0 and "done already (skipped)" in again.stdout
    assert json.loads((out / "res" / "synthetic_loan-mlp.json").read_text()) == cell
