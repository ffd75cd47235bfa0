"""Metrics against hand-computed values, LOF against scikit-learn, evaluate/summarise."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.neighbors import LocalOutlierFactor

import robustce as rc
from robustce.errors import ConfigError
from robustce.evaluation import METRICS, MetricSpec, available_metrics, evaluate, summarise
from robustce.evaluation import metrics as M
from robustce.methods.base import Explainer, QueryResult
from robustce.methods.nearest_neighbour import NearestNeighbour

# ---------------------------------------------------------------------------------------------
# hand-computed distances
# ---------------------------------------------------------------------------------------------


def test_model_space_norms_by_hand():
    X = np.array([[0.0, 0.0, 0.0], [0.2, 0.2, 0.2]])
    C = np.array([[0.5, 0.0, 1.0], [0.2, 0.2, 0.2]])
    assert M.proximity(X, C, "l0").tolist() == [2.0, 0.0]
    assert M.proximity(X, C, "l1").tolist() == [1.5, 0.0]
    assert M.proximity(X, C, "l2")[0] == pytest.approx(math.sqrt(1.25))
    assert M.proximity(X, C, "linf").tolist() == [1.0, 0.0]
    assert M.lp_distance([0, 0], [1, 2], "l1", weights=[2.0, 0.5]) == pytest.approx(3.0)
    with pytest.raises(rc.errors.ValidationError):
        M.proximity(X, C, "l3")


@pytest.fixture()
def mixed():
    """numeric n ∈ [0, 10], ordinal o (low < mid < high), categorical c ∈ {a, b, c}, binary b."""
    df = pd.DataFrame({"n": [0.0, 10.0, 2.0], "o": ["low", "mid", "high"], "c": ["a", "b", "c"],
                       "b": [0, 1, 0]})
    schema = rc.data.infer_schema(df, ordinal={"o": ["low", "mid", "high"]})
    return rc.data.Encoder(schema).fit(df)


def test_mace_raw_distances_by_hand(mixed):
    enc = mixed
    q = enc.transform(pd.DataFrame({"n": [2.0], "o": ["low"], "c": ["a"], "b": [0]}))
    cf = enc.transform(pd.DataFrame({"n": [7.0], "o": ["high"], "c": ["c"], "b": [0]}))
    np.testing.assert_allclose(M.feature_deltas(enc, q, cf), [[0.5, 1.0, 1.0, 0.0]])
    assert M.raw_distance(enc, q, cf, "l1")[0] == pytest.approx(2.5)
    assert M.raw_distance(enc, q, cf, "l2")[0] == pytest.approx(1.5)
    assert M.raw_distance(enc, q, cf, "linf")[0] == pytest.approx(1.0)
    assert M.raw_distance(enc, q, cf, "l0")[0] == 3
    assert M.sparsity(enc, q, cf).tolist() == [3]
    # model space: n (1 col) + thermometer (2 cols) + one-hot (2 of 3 cols) change
    assert M.proximity(q, cf, "l0")[0] == 5
    mid = enc.transform(pd.DataFrame({"n": [2.0], "o": ["mid"], "c": ["a"], "b": [1]}))
    np.testing.assert_allclose(M.feature_deltas(enc, q, mid), [[0.0, 0.5, 0.0, 1.0]])


def test_proximity_l1_mean_by_hand(mixed):
    # PROPLACE's ℓ1: model-space L1 over the number of model-space columns
    X = np.array([[0.0, 0.0, 0.0, 0.0], [0.2, 0.2, 0.2, 0.2]])
    C = np.array([[0.5, 0.0, 1.0, 0.1], [0.2, 0.2, 0.2, 0.2]])
    np.testing.assert_allclose(M.proximity_l1_mean(X, C), [1.6 / 4, 0.0])
    spec = METRICS["proximity_l1_mean"]
    assert "divided by the number of model-space columns" in spec.description
    assert spec.needs == frozenset() and spec.higher_is_better is False
    assert "proximity_l1_mean" in M.default_metrics()
    # mixed types: d = 1 (n) + 2 (thermometer o) + 3 (one-hot c) + 1 (b) = 7 columns
    enc = mixed
    assert enc.n_features_out_ == 7
    q = enc.transform(pd.DataFrame({"n": [2.0], "o": ["low"], "c": ["a"], "b": [0]}))
    cf = enc.transform(pd.DataFrame({"n": [7.0], "o": ["high"], "c": ["c"], "b": [1]}))
    # |Δ| per column: n 0.5; thermometer 1, 1; one-hot 1, 0, 1; b 1 -> 5.5 / 7
    assert M.proximity_l1_mean(q, cf)[0] == pytest.approx(5.5 / 7)


def test_set_metrics_by_hand():
    S1 = np.array([[0.0, 0.0], [1.0, 0.0]])
    S2 = np.array([[0.0, 1.0]])
    # d(c1, S2) = 1, 2 (mean 1.5, max 2); d(c2, S1) = 1
    assert M.set_distance_sum(S1, S2) == pytest.approx(0.5 * 1.5 + 0.5 * 1.0)
    assert M.set_distance_max(S1, S2) == pytest.approx(0.5 * (2.0 + 1.0))
    assert M.set_distance_sum(S1, S2) <= M.set_distance_max(S1, S2)  # Lemma 1
    assert M.set_distance_sum(S2, S2[:1] + 0.5) == pytest.approx(M.lp_distance(S2[0], S2[0] + 0.5))
    assert M.k_distance([0.0, 0.0], S1) == pytest.approx(0.5)
    assert M.k_diversity(S1) == pytest.approx(1.0)
    S3 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])  # pairwise L1: 1, 2, 3
    assert M.k_diversity(S3) == pytest.approx(2.0)
    assert M.k_diversity(S3, "l2") == pytest.approx((1 + 2 + math.sqrt(5)) / 3)
    assert math.isnan(M.k_diversity(S2))


def test_batched_set_metrics_match_the_definitions():
    rng = np.random.default_rng(0)
    n, d = 7, 3
    sizes1, sizes2 = rng.integers(0, 5, n), rng.integers(1, 4, n)
    o1, o2 = np.repeat(np.arange(n), sizes1), np.repeat(np.arange(n), sizes2)
    perm = rng.permutation(len(o1))  # long format need not be sorted
    o1 = o1[perm]
    C1, C2 = rng.random((len(o1), d)), rng.random((len(o2), d))
    X = rng.random((n, d))
    for norm in ("l1", "l2"):
        kd = M.k_distance_batch(X, C1, o1, norm)
        kv = M.k_diversity_batch(C1, o1, n, norm)
        ss, sm = M.set_distances_batch(C1, o1, C2, o2, n, norm)
        for i in range(n):
            S1, S2 = C1[o1 == i], C2[o2 == i]
            if len(S1) == 0:
                assert math.isnan(kd[i]) and math.isnan(kv[i]) and math.isnan(ss[i])
                continue
            assert kd[i] == pytest.approx(M.k_distance(X[i], S1, norm))
            if len(S1) > 1:
                assert kv[i] == pytest.approx(M.k_diversity(S1, norm))
            else:
                assert math.isnan(kv[i])
            assert ss[i] == pytest.approx(M.set_distance_sum(S1, S2, norm))
            assert sm[i] == pytest.approx(M.set_distance_max(S1, S2, norm))


# ---------------------------------------------------------------------------------------------
# validity, vr, LOF, vΔ
# ---------------------------------------------------------------------------------------------


class FakeFamily:
    def __init__(self, labels):
        self.labels = np.asarray(labels)

    def predict(self, X):
        return self.labels[:, : len(X)]


def test_validity_and_vr_by_hand(diabetes_setup):
    _, test, model = diabetes_setup
    X = model.encoder.transform(test.frame.iloc[:4])
    pred = model.predict(X)
    assert M.validity(model, X, pred).all()
    assert not M.validity(model, X, 1 - pred).any()
    fam = FakeFamily([[1, 0, 1, 1], [1, 1, 0, 1], [0, 0, 0, 1]])
    np.testing.assert_allclose(M.retrained_validity(fam, X, 1), [2 / 3, 1 / 3, 1 / 3, 1.0])
    np.testing.assert_allclose(M.retrained_validity(fam, X, [0, 0, 1, 1]), [1 / 3, 2 / 3, 1 / 3, 1])


def test_vr_with_a_real_model_family(diabetes_setup):
    train, test, model = diabetes_setup
    models = [rc.models.MLP((8,), epochs=5, random_state=s).fit(train) for s in (1, 2)]
    fam = rc.models.families.ModelFamily(models, "test", [1, 2])
    X = model.encoder.transform(test.frame.iloc[:50])
    want = np.mean([m.predict(X) == 1 for m in models], axis=0)
    np.testing.assert_allclose(M.retrained_validity(fam, X, 1), want)


def test_lof_matches_sklearn():
    rng = np.random.default_rng(1)
    ref = rng.random((200, 4))
    C = np.vstack([rng.random((20, 4)), rng.random((5, 4)) + 3.0])
    lof, inlier = M.lof_scores(ref, C, n_neighbors=10)
    est = LocalOutlierFactor(n_neighbors=10, novelty=True).fit(ref)
    np.testing.assert_allclose(lof, -est.score_samples(C))
    np.testing.assert_array_equal(inlier, est.predict(C) == 1)
    assert (inlier[-5:] == 0).all() and (lof[-5:] > 1.5).all()


def test_lof_scorer_per_target_class_and_cached(diabetes_setup):
    train, test, model = diabetes_setup
    enc = model.encoder
    scorer = M.LOFScorer(train, enc, 10)
    C = enc.transform(test.frame.iloc[:30])
    t = np.array([0, 1] * 15)
    lof, inlier = scorer.score(C, t)
    Xtr = enc.transform(train.frame)
    for k in (0, 1):
        est = LocalOutlierFactor(n_neighbors=10, novelty=True).fit(Xtr[train.y == k])
        np.testing.assert_allclose(lof[t == k], -est.score_samples(C[t == k]))
        np.testing.assert_array_equal(inlier[t == k], est.predict(C[t == k]) == 1)
    assert scorer.estimator(0) is scorer.estimator(0)
    assert M.lof_scorer(train, enc, 10) is M.lof_scorer(train, enc, 10)


def test_evaluate_reuses_a_fitted_lof_scorer_and_checks_it_fits_the_data(diabetes_setup):
    from robustce.errors import ValidationError

    train, test, model = diabetes_setup
    expl = rc.methods.Wachter(model, train).explain(test.frame.iloc[:8])
    assert len(expl.counterfactuals) > 0
    scorer = M.LOFScorer(train, model.encoder, 10)
    shared = evaluate(expl, model, data=train, metrics=["lof", "lof_inlier"], lof=scorer)
    own = evaluate(expl, model, data=train, metrics=["lof", "lof_inlier"])
    pd.testing.assert_frame_equal(shared, own)
    assert scorer._fitted  # the given scorer did the work
    with pytest.raises(ValidationError, match="neighbours"):
        evaluate(expl, model, data=train, metrics=["lof"], lof=scorer, lof_neighbors=5)
    with pytest.raises(ValidationError, match="rows"):
        evaluate(expl, model, data=test, metrics=["lof"], lof=scorer)


def _one_hidden_worst_case(weights, X, delta, target):
    """Closed-form exact worst-case margin of a one-hidden-layer ReLU network over the box
    Δ = every weight and bias ±δ, for inputs X ≥ 0 (an oracle independent of the MILP): each
    hidden unit's range is [relu(lo), relu(hi)] with lo/hi at the box corners, and each output
    term v_j·h_j is minimised (maximised) at a corner of its own rectangle."""
    (W, b), (V, c) = weights
    lo = X @ (W - delta).T + (b - delta)
    hi = X @ (W + delta).T + (b + delta)
    hlo, hhi = np.maximum(lo, 0), np.maximum(hi, 0)
    corners = np.stack([(V[0] - delta) * hlo, (V[0] - delta) * hhi, (V[0] + delta) * hlo,
                        (V[0] + delta) * hhi])
    z_min = corners.min(axis=0).sum(axis=1) + c[0] - delta
    z_max = corners.max(axis=0).sum(axis=1) + c[0] + delta
    return np.where(target == 1, z_min, -z_max)


def test_v_delta_matches_a_closed_form_worst_case():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(0, 1, size=(200, 3)), columns=["a", "b", "c"])
    enc = rc.data.Encoder(rc.data.infer_schema(frame)).fit(frame)
    weights = [(rng.normal(size=(6, 3)), rng.normal(size=6) * 0.3),
               (rng.normal(size=(1, 6)), np.zeros(1))]
    X = enc.transform(frame)
    weights[1][1][0] = -np.median(rc.models.ReLUNetwork(weights).forward(X))  # both classes
    model = rc.models.NetworkModel(weights, enc)
    t = model.predict(X)
    assert 0 < t.mean() < 1
    delta = 0.05
    worst = _one_hidden_worst_case(weights, X, delta, t)
    clear = np.abs(worst) > 1e-6
    got = M.delta_validity(model, X[clear], rc.robustness.ParameterShift(delta=delta), t[clear])
    want = worst[clear] > 0
    assert want.any() and (~want).any()  # both answers occur: the comparison can fail
    np.testing.assert_array_equal(got.astype(bool), want)


# ---------------------------------------------------------------------------------------------
# registry, evaluate, summarise
# ---------------------------------------------------------------------------------------------


def test_registry():
    names = available_metrics()
    assert names == list(METRICS)
    for need in ("validity", "proximity_l1", "raw_l1", "sparsity", "lof", "vr", "v_delta", "time",
                 "k_distance_l1", "k_diversity_l2", "set_distance_sum_l1", "set_distance_max_l2",
                 "coverage"):
        assert need in names
    for spec in METRICS.values():
        assert isinstance(spec, MetricSpec) and spec.description
        assert spec.needs <= set(M.INPUTS)
    assert METRICS["vr"].needs == {"family"} and METRICS["v_delta"].needs == {"shift"}
    assert METRICS["lof"].needs == {"data"}
    with pytest.raises(ConfigError, match="'validty'"):
        M.check_metrics(["validity", "validty"])
    with pytest.raises(ConfigError, match="'vr' needs family"):
        M.check_metrics(["vr"])
    assert "lof" not in M.default_metrics() and "lof" in M.default_metrics(data=object())


class Fixed(Explainer):
    """Returns preset encoded CEs per query position (None = not_found)."""

    name = "fixed"

    def __init__(self, model, data=None, *, table=None, **kw):
        super().__init__(model, data, **kw)
        self.table = table

    def _explain_batch(self, X, targets):
        out = []
        for x in X:
            key = tuple(np.round(x, 12))
            cfs = self.table.get(key)
            out.append(QueryResult("found", cfs, time=0.5) if cfs is not None
                       else QueryResult("not_found", time=0.25))
        return out


def test_evaluate_and_summarise(diabetes_setup):
    import dataclasses

    train, test, _ = diabetes_setup
    train = dataclasses.replace(train, schema=train.schema.with_actionability(
        DiabetesPedigreeFunction="free", Pregnancies="free"))
    model = rc.models.MLP((20, 10), epochs=30, random_state=0).fit(train)
    enc = model.encoder
    nn = NearestNeighbour(model, train, n_neighbours=3)
    q = test.frame.iloc[:40]
    res = nn.explain(q)
    df = evaluate(res, model, data=train)
    found = res.status == "found"
    assert list(df.index) == list(res.query_ids[found])
    assert df.index.name == "query_id"
    assert list(df.columns) == M.default_metrics(data=train)
    pos, C = res.first_counterfactuals()
    X = res.queries_encoded[pos]
    np.testing.assert_allclose(df["proximity_l1"], np.abs(C - X).sum(axis=1))
    np.testing.assert_allclose(df["raw_l1"], M.raw_distance(enc, X, C))
    assert (df["validity"] == 1).all()
    np.testing.assert_allclose(df["proximity_l1"], res.certificates.loc[found, "distance"])
    # the nearest neighbour is the first of the set, so k-distance ≥ proximity
    assert (df["k_distance_l1"] >= df["proximity_l1"] - 1e-12).all()
    lof, _ = M.LOFScorer(train, enc).score(C, res.target_class.to_numpy()[pos])
    np.testing.assert_allclose(df["lof"], lof)

    summary = summarise(df, res)
    assert summary["coverage"] == pytest.approx(res.coverage)
    assert summary["n_queries"] == 40 and summary["n_evaluated"] == found.sum()
    assert summary["n_found"] + summary["n_infeasible"] + summary["n_already_target"] == 40
    assert summary["proximity_l1"] == pytest.approx(df["proximity_l1"].mean())
    assert summary["k_diversity_l1"] == pytest.approx(df["k_diversity_l1"].dropna().mean())

    fam = FakeFamily(np.ones((3, 100), dtype=int))
    only = evaluate(res, model, family=fam, metrics=["vr", "time", "n_counterfactuals"])
    assert list(only.columns) == ["vr", "time", "n_counterfactuals"]
    np.testing.assert_allclose(only["vr"], (res.target_class[found] == 1).astype(float))
    with pytest.raises(ConfigError, match="'lof' needs data"):
        evaluate(res, model, metrics=["lof"])
    with pytest.raises(ConfigError, match="unknown metric 'l1'"):
        evaluate(res, model, metrics=["l1"])


@pytest.fixture()
def toy():
    """Two continuous features in [0, 1]; class 1 iff a > 0.5; preset CE sets per query."""
    df = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    enc = rc.data.Encoder(rc.data.infer_schema(df, kinds={"a": "continuous",
                                                         "b": "continuous"})).fit(df)

    class Half(rc.models.Model):
        encoder = enc

        def logits(self, X):
            return (self.encode(X)[:, :1] - 0.5)

    q = pd.DataFrame({"a": [0.1, 0.2, 0.3], "b": [0.0, 0.5, 1.0]}, index=["x", "y", "z"])
    return enc, Half(), q


def test_set_distances_through_evaluate(toy):
    enc, model, q = toy
    X = enc.transform(q)
    S = {0: np.array([[0.6, 0.0]]), 1: np.array([[0.7, 0.5], [0.9, 0.1]])}
    S2 = {0: np.array([[0.6, 0.2], [0.8, 0.0]]), 1: np.array([[0.7, 0.6]])}
    key = [tuple(np.round(x, 12)) for x in X]
    res = Fixed(model, table={key[i]: v for i, v in S.items()}).explain(q)
    res2 = Fixed(model, table={key[i]: v for i, v in S2.items()}).explain(q)
    assert res.status.tolist() == ["found", "found", "not_found"]
    df = evaluate(res, model, perturbed=res2, metrics=[
        "set_distance_sum_l1", "set_distance_max_l1", "k_distance_l1", "k_diversity_l1",
        "n_counterfactuals", "time", "proximity_l1"])
    assert list(df.index) == ["x", "y"]
    # x: S1 = {(.6,0)}, S2 = {(.6,.2), (.8,0)}: d(c1,S2) = .2; d(c2,S1) = .2, .2
    assert df.loc["x", "set_distance_sum_l1"] == pytest.approx(0.2)
    assert df.loc["x", "set_distance_max_l1"] == pytest.approx(0.2)
    # y: S1 = {(.7,.5), (.9,.1)}, S2 = {(.7,.6)}: d(c1,S2) = .1, .7; d(c2,S1) = .1
    assert df.loc["y", "set_distance_sum_l1"] == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)
    assert df.loc["y", "set_distance_max_l1"] == pytest.approx(0.5 * (0.7 + 0.1))
    assert df.loc["y", "k_distance_l1"] == pytest.approx((0.5 + 0.7 + 0.4) / 2)
    assert df.loc["y", "k_diversity_l1"] == pytest.approx(0.6)
    assert math.isnan(df.loc["x", "k_diversity_l1"])
    assert df["n_counterfactuals"].tolist() == [1.0, 2.0]
    assert df["time"].tolist() == [0.5, 0.5]
    assert df.loc["x", "proximity_l1"] == pytest.approx(0.5)
    means = evaluate(res, model, metrics=["proximity_l1", "proximity_l1_mean"])
    assert list(means.columns) == ["proximity_l1", "proximity_l1_mean"]
    # x: |(.6, 0) − (.1, 0)| = .5 over d = 2; y: |(.7, .5) − (.2, .5)| = .5 over 2
    np.testing.assert_allclose(means["proximity_l1_mean"], [0.25, 0.25])
    summary = summarise(df, res)
    assert summary["n_not_found"] == 1 and summary["coverage"] == pytest.approx(2 / 3)
    assert summary["time_total"] == pytest.approx(1.25)
    with pytest.raises(rc.errors.ValidationError, match="paired by position"):
        evaluate(res, model, perturbed=Fixed(model, table={}).explain(q.iloc[:2]),
                 metrics=["set_distance_sum_l1"])


def test_evaluate_without_any_ce(toy):
    enc, model, q = toy
    res = Fixed(model, table={}).explain(q)
    df = evaluate(res, model)
    assert len(df) == 0 and list(df.columns) == M.default_metrics()
    summary = summarise(df, res)
    assert summary["coverage"] == 0 and math.isnan(summary["proximity_l1"])


def test_a_new_metric_is_one_registry_entry(toy):
    enc, model, q = toy
    X = enc.transform(q)
    key = [tuple(np.round(x, 12)) for x in X]
    res = Fixed(model, table={key[0]: np.array([[0.6, 0.0]]), key[1]: np.array([[0.7, 0.5]])}).explain(q)
    spec = MetricSpec("b_moved", "|Δ b| query→CE", frozenset(), False,
                      compute=lambda m: np.abs(m.C[:, 1] - m.X[:, 1]) + 1.0)
    M.register_metric(spec)
    try:
        assert "b_moved" in available_metrics() and "b_moved" in M.default_metrics()
        df = evaluate(res, model, metrics=["proximity_l1", "b_moved"])
        assert list(df.columns) == ["proximity_l1", "b_moved"]
        np.testing.assert_allclose(df["b_moved"], [1.0, 1.0])  # b unchanged by both CEs
        with pytest.raises(ConfigError, match="already registered"):
            M.register_metric(spec)
    finally:
        M.unregister_metric("b_moved")
    assert "b_moved" not in METRICS
    with pytest.raises(ConfigError, match="needs a compute function"):
        M.register_metric(MetricSpec("nothing", "no compute"))
    with pytest.raises(ConfigError, match="built in"):
        M.unregister_metric("validity")
    M.register_metric(MetricSpec("bad_shape", "one value too many", compute=lambda m: np.zeros(len(m.C) + 1)))
    try:
        with pytest.raises(rc.errors.ValidationError, match="'bad_shape' returned shape"):
            evaluate(res, model, metrics=["bad_shape"])
    finally:
        M.unregister_metric("bad_shape")


def test_every_per_query_metric_carries_its_compute_function():
    for spec in METRICS.values():
        assert callable(spec.compute) == spec.per_query, spec.name
