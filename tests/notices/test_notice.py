"""Adverse-action notices: reasons are the changed features ordered by their exact margin
share; protected features never appear and never change; the JSON validates; the HTML is
self-contained; batch notices resume."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier

import robustce as rc
from robustce.data.dataset import from_frame
from robustce.data.schema import Feature, Schema
from robustce.errors import ProtectedFeatureError, SchemaError, ValidationError
from robustce.notices import (
    feature_contributions,
    notice,
    principal_reasons,
    to_html,
    to_json,
    validate_notice,
    write_notices,
)
from robustce.notices.reasons import margin_change


def _data(n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "income": rng.uniform(10, 100, n).round(2),
        "debt": rng.uniform(0, 50, n).round(2),
        "years": rng.integers(0, 30, n),
        "sex": rng.choice(["F", "M"], n),
        "age": rng.integers(20, 70, n),
    })
    df["y"] = (0.05 * df.income - 0.06 * df.debt + 0.05 * df.years
               + rng.normal(0, 0.3, n) > 2.0).astype(int)
    schema = Schema([Feature("income", "continuous", 10, 100),
                     Feature("debt", "continuous", 0, 50),
                     Feature("years", "integer", 0, 30, actionability="increase"),
                     Feature("sex", "binary", categories=("F", "M"), actionability="protected"),
                     Feature("age", "integer", 20, 70, actionability="immutable")])
    return from_frame(df, "y", schema)


@pytest.fixture(scope="module")
def setup():
    data = _data()
    model = rc.models.MLP((8,), epochs=60, random_state=0).fit(data)
    rej = data.frame[model.predict(data.frame) == 0].iloc[:8]
    expl = rc.methods.NearestNeighbour(model, data).explain(rej, target_class=1)
    return data, model, expl


def _changed(model, x, c):
    enc = model.encoder
    return {b.name for b in enc.blocks_ if np.any(np.abs(c[b.slice] - x[b.slice]) > 1e-9)}


def test_network_contributions_sum_exactly_to_the_margin_change(setup):
    _, model, expl = setup
    pos, C = expl.first_counterfactuals()
    assert len(pos) >= 3
    for p, c in zip(pos, C, strict=True):
        x = expl.queries_encoded[p]
        phi = feature_contributions(model, x, c, 1)
        assert phi.sum() == pytest.approx(margin_change(model, x, c, 1), abs=1e-9)
        # no column the CE leaves alone gets a contribution
        assert np.all(phi[np.abs(c - x) <= 1e-12] == 0)


def test_contributions_match_a_fine_riemann_sum(setup):
    """The path integral checked independently: a 20 000-step midpoint rule of the gradient
    (finite differences of the model's own margin)."""
    _, model, expl = setup
    pos, C = expl.first_counterfactuals()
    x, c = expl.queries_encoded[pos[0]], C[0]
    phi = feature_contributions(model, x, c, 1)
    n, h = 20000, 1e-6
    s = (np.arange(n) + 0.5) / n
    P = x[None, :] + s[:, None] * (c - x)[None, :]
    approx = np.zeros(len(x))
    for j in np.flatnonzero(np.abs(c - x) > 0):
        e = np.zeros(len(x))
        e[j] = h
        g = (model.margin(P + e, 1) - model.margin(P - e, 1)) / (2 * h)
        approx[j] = g.mean() * (c[j] - x[j])
    assert np.allclose(phi, approx, atol=2e-3)


def test_reasons_are_exactly_the_changed_features_ordered_by_share(setup):
    _, model, expl = setup
    pos, C = expl.first_counterfactuals()
    for p, c in zip(pos, C, strict=True):
        x = expl.queries_encoded[p]
        reasons, per_feature = principal_reasons(model, x, c, 1)
        changed = _changed(model, x, c)
        assert {r.feature for r in reasons} == changed  # ≤ 4 features in this schema change
        contrib = [r.contribution for r in reasons]
        assert contrib == sorted(contrib, reverse=True)
        assert [r.contribution for r in reasons] == [per_feature[r.feature] for r in reasons]


def test_at_most_four_reasons_in_share_order():
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({f"f{i}": rng.uniform(0, 1, n) for i in range(6)})
    df["y"] = (df.sum(axis=1) + rng.normal(0, 0.2, n) > 3).astype(int)
    data = from_frame(df, "y", Schema([Feature(f"f{i}", "continuous", 0, 1) for i in range(6)]))
    model = rc.models.MLP((6,), epochs=40, random_state=0).fit(data)
    x = model.encode(df.iloc[:1].drop(columns="y"))[0] * 0 + 0.1
    c = np.full(6, 0.9)
    reasons, per_feature = principal_reasons(model, x, c, 1)
    assert len(reasons) == 4
    top = sorted(per_feature, key=lambda k: -per_feature[k])[:4]
    assert [r.feature for r in reasons] == top


def test_tree_leaf_path_attribution_is_exact_and_on_changed_features(setup):
    data, mlp, _ = setup
    enc = mlp.encoder
    rf = RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0)
    rf.fit(enc.transform(data.frame), data.y)
    forest = rc.models.wrap(rf, enc)
    rej = data.frame[forest.predict(data.frame) == 0].iloc[:6]
    expl = rc.methods.NearestNeighbour(forest, data).explain(rej, target_class=1)
    pos, C = expl.first_counterfactuals()
    assert len(pos) >= 3
    for p, c in zip(pos, C, strict=True):
        x = expl.queries_encoded[p]
        phi = feature_contributions(forest, x, c, 1)
        assert phi.sum() == pytest.approx(margin_change(forest, x, c, 1), abs=1e-9)
        assert np.all(phi[np.abs(c - x) <= 1e-12] == 0)
        reasons, _ = principal_reasons(forest, x, c, 1)
        assert {r.feature for r in reasons} == _changed(forest, x, c)
    doc = notice(forest, expl.query_ids[pos[0]], expl).to_dict()  # a notice for a forest
    assert doc["reasons"] and all(r["feature"] != "sex" for r in doc["reasons"])


def test_protected_feature_never_changes_nor_appears(setup):
    _, model, expl = setup
    assert model.encoder.schema["sex"].protected
    for qid in expl.query_ids:
        doc = notice(model, qid, expl).to_dict()
        names = [r["feature"] for r in doc["reasons"]]
        names += [c["feature"] for o in doc["options"] for c in o["changes"]]
        names += [r["feature"] for o in doc["options"] for r in o["reasons"]]
        assert "sex" not in names
        assert "sex" not in doc["applicant"]
        assert doc["protected_features"] == ["sex"]
    sex = expl.counterfactuals.set_index("query_id")["sex"]
    assert (sex == expl.queries.loc[sex.index, "sex"]).all()


def test_protected_role_reads_and_writes_and_is_immutable():
    f = Feature("sex", "binary", categories=("F", "M"), actionability="protected")
    assert f.protected and f.immutable
    assert Feature.from_dict(f.to_dict()) == f
    with pytest.raises(SchemaError, match="protected"):
        Schema([f]).replace("sex", actionability="free")


@pytest.mark.filterwarnings("ignore::robustce.errors.ConstantModelWarning")
def test_protected_only_mutable_feature_is_a_typed_error():
    data = _data(200)
    schema = Schema([Feature("income", "continuous", 10, 100, actionability="immutable"),
                     Feature("debt", "continuous", 0, 50, actionability="immutable"),
                     Feature("years", "integer", 0, 30, actionability="immutable"),
                     Feature("sex", "binary", categories=("F", "M"), actionability="protected"),
                     Feature("age", "integer", 20, 70, actionability="immutable")])
    data2 = from_frame(pd.concat([data.frame, pd.Series(data.y, name="y")], axis=1), "y", schema)
    model = rc.models.MLP((4,), epochs=5, random_state=0).fit(data2)
    rej = data2.frame[model.predict(data2.frame) == 0].iloc[:1]
    if len(rej) == 0:
        rej = data2.frame.iloc[:1]
    expl = rc.methods.NearestNeighbour(model, data2).explain(rej, target_class=1)
    with pytest.raises(ProtectedFeatureError, match="sex"):
        notice(model, rej.index[0], expl)


def test_json_validates_against_its_schema_and_the_schema_bites(setup):
    pytest.importorskip("jsonschema")
    _, model, expl = setup
    found = expl.query_ids[(expl.status == "found").to_numpy()]
    doc = json.loads(to_json(notice(model, found[0], expl, seed=0)))
    validate_notice(doc)
    assert doc["notice_version"] == "1.0"
    assert 1 <= len(doc["options"]) <= 3 and len(doc["reasons"]) <= 4
    bad = json.loads(json.dumps(doc))
    bad["reasons"] = bad["reasons"] * 3  # more than four reasons
    with pytest.raises(ValidationError, match="reasons"):
        validate_notice(bad)
    bad = json.loads(json.dumps(doc))
    del bad["record"]["schema_hash"]
    with pytest.raises(ValidationError, match="schema_hash"):
        validate_notice(bad)


def _options_setup(setup):
    data, model, expl = setup
    qid = expl.query_ids[(expl.status == "found").to_numpy()][0]
    rej = expl.queries.loc[[qid]]
    nn3 = rc.methods.NearestNeighbour(model, data, n_neighbours=3).explain(rej, target_class=1)
    milp = rc.methods.MILPNearest(model, data).explain(rej, target_class=1)
    return data, model, qid, rej, [nn3, milp]


def _applied(rej, option):
    row = rej.copy()
    for ch in option.changes:
        row[ch["feature"]] = ch["required"]
    return row


def test_options_without_certifiers_are_valid_and_cheapest_first(setup):
    _, model, qid, rej, expls = _options_setup(setup)
    n = notice(model, qid, expls, max_options=3)
    assert len(n.options) == 3
    costs = [o.cost_l1_model for o in n.options]
    assert costs == sorted(costs)
    assert n.options[0].method == "milp_nearest"  # the optimal ℓ1 CE is the cheapest
    for o in n.options:  # applying the option's changes flips the decision
        assert model.predict(_applied(rej, o))[0] == 1
    assert n.record["schema_hash"].startswith("sha256:")
    assert n.record["model_hash"] == rc.notices.record.model_hash(model)
    assert n.record["versions"]["robustce"]


def test_options_are_ranked_most_durable_first(setup):
    data, model, qid, rej, expls = _options_setup(setup)
    _, family = rc.models.families.seed_family(data, rc.models.MLP((8,), epochs=30),
                                               n_models=3, random_state=0)
    shift = rc.robustness.ParameterShift(0.01)
    n = notice(model, qid, expls, family=family, shift=shift, max_options=3)
    keys = []
    for o, entry in zip(n.options, n.record["options"], strict=True):
        C = model.encode(_applied(rej, o))
        robust = bool(rc.robustness.is_delta_robust(model, C, shift, 1)[0])
        vr = float(family.validity(C, 1).per_ce[0])
        keys.append((not robust, -vr, o.cost_l1_model))
        assert entry["vr"] == pytest.approx(vr) and entry["shift"]["proven"] == robust
        agree = round(vr * len(family))
        assert any(f": {agree} of them give" in s for s in o.certificates)
        assert any(("We have proven" in s) == robust for s in o.certificates if "0.01" in s)
    assert keys == sorted(keys)


def test_html_is_self_contained(setup):
    _, model, expl = setup
    found = expl.query_ids[(expl.status == "found").to_numpy()]
    page = to_html(notice(model, found[0], expl))
    assert page.startswith("<!DOCTYPE html>")
    for ref in ("http://", "https://", "<script", "src=", "<link"):
        assert ref not in page
    assert "Principal reasons" in page and "Audit record" in page


def test_declined_only_and_unknown_applicant(setup):
    data, model, expl = setup
    with pytest.raises(ValidationError, match="unknown query_id"):
        notice(model, "nobody", expl)
    ok = data.frame[model.predict(data.frame) == 1].iloc[:1]
    e2 = rc.methods.NearestNeighbour(model, data).explain(ok, target_class=1)
    with pytest.raises(ValidationError, match="already gets"):
        notice(model, ok.index[0], e2)


def test_batch_notices_resume_without_recomputing(setup, tmp_path, monkeypatch):
    _, model, expl = setup
    paths = write_notices(model, expl, tmp_path)
    assert len(paths) == len(expl) and all(p.exists() for p in paths)
    first = paths[0].read_text()
    paths[1].unlink()
    calls = []
    import robustce.notices.batch as batch

    real = batch.notice
    monkeypatch.setattr(batch, "notice", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    write_notices(model, expl, tmp_path)
    assert calls == [expl.query_ids[1]]
    assert paths[0].read_text() == first


def test_batch_notices_refuse_to_resume_with_other_settings(setup, tmp_path):
    """A rerun into the same folder with another actionability (the CLI's --immutable) or
    other method parameters kept the old notices silently; now it is refused."""
    data, model, expl = setup
    write_notices(model, expl, tmp_path)
    fixed = model.with_actionability(income="immutable")
    with pytest.raises(ValidationError, match="other settings.*model_hash"):
        write_notices(fixed, rc.methods.NearestNeighbour(fixed, data).explain(expl.queries),
                      tmp_path)
    other = rc.methods.NearestNeighbour(model, data, n_neighbours=2).explain(expl.queries)
    with pytest.raises(ValidationError, match="differs in methods"):
        write_notices(model, other, tmp_path)
    assert write_notices(model, expl, tmp_path)  # the same settings: a resume


@pytest.mark.slow
def test_pdf_via_headless_chromium(setup, tmp_path):
    pytest.importorskip("playwright")
    import shutil

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium on this machine")
    _, model, expl = setup
    found = expl.query_ids[(expl.status == "found").to_numpy()]
    pdf = rc.notices.to_pdf(notice(model, found[0], expl), tmp_path / "n.pdf",
                            executable_path=chromium)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 1000


def _without_times(path):
    doc = json.loads(path.read_text())
    for key in ("started_at", "created_at"):
        doc["record"].pop(key)
    return doc


def test_batch_notices_on_dask_equal_serial(setup, tmp_path):
    distributed = pytest.importorskip("distributed")
    _, model, expl = setup
    serial = write_notices(model, expl, tmp_path / "s")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        dask = write_notices(model, expl, tmp_path / "d", n_jobs=2, backend="dask")
    assert [p.name for p in serial] == [p.name for p in dask]
    for a, b in zip(serial, dask, strict=True):
        assert _without_times(a) == _without_times(b)


def test_multiclass_contributions_are_exact_across_rival_switches():
    data = rc.datasets.load("iris")
    model = rc.models.MLP((8,), epochs=80, random_state=0).fit(data)
    X = model.encode(data.frame)
    rng = np.random.default_rng(0)
    for target in range(3):
        for _ in range(10):
            a, b = X[rng.integers(len(X))], X[rng.integers(len(X))]
            phi = feature_contributions(model, a, b, target)
            assert phi.sum() == pytest.approx(margin_change(model, a, b, target), abs=1e-9)
