"""The ledger from the command line: ``explain --ledger`` then ``ledger check --json`` on a
retrained model (a recount of the raw records), the gate's exit codes, ``notice --ledger``
(one promise per option, with its certificate; a resume records nothing twice), and bad
arguments refused in one line before any work."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.cli import main

COMMON = ["--dataset", "synthetic_loan", "--hidden", "8", "--epochs", "100"]


def _stored(path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT target_class, target_row, applicant_row, model_hash, "
                           "certificate, method, applicant_key FROM robustce_ledger_promises "
                           "ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def retrained(tmp_path_factory):
    """A retrained model (another seed) on the training split ``explain`` uses, saved."""
    data = rc.datasets.load("synthetic_loan")
    train, _ = data.split(test_size=0.2, random_state=0)
    path = tmp_path_factory.mktemp("v2") / "model"
    rc.models.MLP((8,), epochs=100, lr=5e-3, random_state=7).fit(train).save(path)
    return path


def test_explain_then_check_a_retrained_model_with_the_gate(tmp_path, capsys, retrained):
    ledger, out = tmp_path / "ledger.sqlite3", tmp_path / "expl"
    assert main(["explain", *COMMON, "--method", "milp_nearest", "--queries", "12", "--quiet",
                 "--out", str(out), "--ledger", str(ledger)]) == 0
    assert "promises recorded" in capsys.readouterr().out
    expl = rc.Explanations.load(out)
    v1 = rc.models.load(out / "model")
    rows = _stored(ledger)
    assert len(rows) == int((v1.predict(expl.counterfactuals_encoded) == 1).sum()) > 0
    assert {r[3] for r in rows} == {rc.notices.record.model_hash(v1)}

    args = ["ledger", "check", "--ledger", str(ledger), "--model", str(retrained), "--json",
            "--group", "housing", "--n-boot", "50"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    v2 = rc.models.load(retrained)
    targets = pd.DataFrame([json.loads(r[1]) for r in rows])[v2.encoder.schema.names]
    kept = v2.predict(targets) == np.array([r[0] for r in rows])
    assert (doc["records"], doc["outstanding"], doc["honoured"]) == (len(rows), len(rows),
                                                                     int(kept.sum()))
    assert doc["honour_rate"] == kept.mean() and 0 < kept.sum() < len(rows)
    assert len(doc["broken"]) == len(rows) - kept.sum()
    assert all({"id", "method", "repair"} <= set(b) for b in doc["broken"])
    lowest = min([doc["honour_rate"]] + [e["honour_rate"] for e in
                                         doc["by_group"]["housing"].values()])
    assert main([*args, "--min-honour-rate", repr(lowest)]) == 0  # no rate is below it
    capsys.readouterr()
    assert main([*args, "--no-repair", "--min-honour-rate", str(lowest + 1e-9)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "ledger gate failed" in err


def test_notice_records_each_option_with_its_certificate(tmp_path, capsys):
    ledger, out = tmp_path / "ledger.sqlite3", tmp_path / "notices"
    args = ["notice", *COMMON, "--method", "milp_nearest", "--method", "nearest_neighbour",
            "--applicants", "2", "--options", "2", "--delta", "0.01", "--out", str(out),
            "--ledger", str(ledger), "--promise-days", "30"]
    assert main(args) == 0
    docs = {json.loads(p.read_text())["applicant_id"]: json.loads(p.read_text())
            for p in out.glob("notice_*.json")}
    rows = _stored(ledger)
    assert len(rows) == sum(len(d["options"]) for d in docs.values()) > 0
    k = {a: 0 for a in docs}
    for target, target_row, applicant_row, digest, cert, method, key in rows:
        doc = docs[key]
        assert target == 1  # approved, the favourable outcome
        option, entry = doc["options"][k[key]], doc["record"]["options"][k[key]]
        k[key] += 1
        assert (method, digest) == (option["method"], doc["record"]["model_hash"])
        cert = json.loads(cert)
        assert cert["kind"] == "delta" and cert["delta"] == 0.01
        assert (cert["verdict"] == "robust") == entry["shift"]["proven"]
        applicant, promised = json.loads(applicant_row), json.loads(target_row)
        assert {f: promised[f] for f in promised if promised[f] != applicant[f]} == \
            {c["feature"]: c["required"] for c in option["changes"]}
    assert main(args) == 0  # a resume: the notices are kept, nothing recorded twice
    assert len(_stored(ledger)) == len(rows)


def test_bad_arguments_are_refused_before_any_work(tmp_path, capsys, retrained):
    missing = tmp_path / "none.sqlite3"
    assert main(["ledger", "check", "--ledger", str(missing), "--model", str(retrained)]) == 2
    assert "no such ledger file" in capsys.readouterr().err and not missing.exists()
    book = tmp_path / "l.sqlite3"
    rc.ledger.Ledger(str(book)).close()
    for extra, says in ((["--min-honour-rate", "1.5"], "--min-honour-rate"),
                        (["--n-boot", "-1"], "--n-boot"),
                        (["--as-of", "yesterday-ish"], "not a time"),
                        (["--repair-method", "nope"], "unknown method")):
        assert main(["ledger", "check", "--ledger", str(book), "--model", str(retrained),
                     *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and says in err, err
    corrupt = tmp_path / "corrupt.sqlite3"
    corrupt.write_bytes(b"not a database at all\n" * 200)
    out = tmp_path / "e"
    assert main(["explain", *COMMON, "--method", "milp_nearest", "--out", str(out),
                 "--ledger", str(corrupt)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"ledger sqlite:///{corrupt}" in err, err
    assert "training" not in err and not out.exists()
    assert main(["explain", *COMMON, "--method", "milp_nearest", "--out", str(out),
                 "--promise-days", "3"]) == 2
    assert "--promise-days needs --ledger" in capsys.readouterr().err
