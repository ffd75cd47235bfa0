"""Each method's certificate is kept with its kind, its parameters and its verdict, as the
method's own certificate columns give them (read back from the raw rows)."""

from __future__ import annotations

import json
import sqlite3

import robustce as rc
from robustce.ledger import Ledger


def _stored_certificates(path) -> list[dict]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT certificate_kind, certificate, applicant_key "
                           "FROM robustce_ledger_promises ORDER BY id").fetchall()
    finally:
        con.close()
    for kind, text, _ in rows:
        assert json.loads(text)["kind"] == kind
    return [{**json.loads(text), "query": key} for _, text, key in rows]


def test_network_certificates_keep_kind_parameters_and_verdict(tmp_path, loan, v1, declined):
    queries = declined.head(3)
    robust = rc.methods.MILPRobust(v1, loan[0], shift=0.02).explain(queries)
    apas = rc.methods.APAS(v1, loan[0], delta=0.02).explain(queries)
    path = tmp_path / "l.sqlite3"
    with Ledger(str(path)) as book:
        book.record_explanations(v1, robust)
        n_robust = len(_stored_certificates(path))
        book.record_explanations(v1, apas)
    stored = _stored_certificates(path)
    assert n_robust > 0 and len(stored) > n_robust
    for expl, certs, kind in ((robust, stored[:n_robust], "delta"),
                              (apas, stored[n_robust:], "apas")):
        for cert in certs:
            own = expl.certificates.loc[int(cert["query"])]
            assert cert["kind"] == kind
            assert cert["delta"] == own["delta"] and cert["verdict"] == own["delta_status"]
            if kind == "apas":
                assert (cert["alpha"], cert["R"], cert["n"]) == (own["alpha"], own["R"], own["n"])


def test_tree_ensemble_certificates_are_delta_epsilon(tmp_path, loan):
    from sklearn.ensemble import RandomForestClassifier

    train, test = loan
    enc = rc.data.Encoder(train.schema).fit(train.frame)
    forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    model = rc.models.wrap(forest.fit(enc.transform(train.frame), train.y), enc)
    rejected = test.frame[model.predict(test.frame) == 0].head(2)
    expl = rc.methods.EnsembleRobust(model, train, delta=0.01, epsilon=0.01).explain(rejected)
    path = tmp_path / "l.sqlite3"
    with Ledger(str(path)) as book:
        book.record_explanations(model, expl)
        none = book.record_explanations(model, expl, certificates={"kind": "none"})
    stored = _stored_certificates(path)
    assert len(stored) == 2 * len(none) > 0
    for cert in stored[:len(none)]:
        own = expl.certificates.loc[int(cert["query"])]
        assert (cert["kind"], cert["delta"], cert["epsilon"], cert["verdict"]) == (
            "delta_epsilon", own["delta"], own["epsilon"], own["delta_status"])
    assert all(c["kind"] == "none" for c in stored[len(none):])
