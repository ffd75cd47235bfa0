"""DiverseRobust (Leofante & Potyka): the cut, the two diversity filters and the line search on
tiny hand-made data whose expected sets were computed by hand (see the tables below)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.methods import DiverseRobust

# Two continuous features in [0, 1] (the corners (0, 0) and (1, 1) fix the bounds, so model
# space equals raw space). The model: class 1 iff a > 0.6 or b > 0.8.
# Query x = (0.3, 0.3), class 0. Class-1 training points, with L1 distance to x and the
# direction c - x:
#   T1 (0.70, 0.30)  0.4  (0.40, 0.00)
#   T2 (0.75, 0.35)  0.5  (0.45, 0.05)   |cos(T2, T1)| = 0.45 / 0.4528 = 0.994
#   T3 (0.30, 0.90)  0.6  (0.00, 0.60)   |cos(T3, T1)| = 0
#   T4 (0.80, 0.50)  0.7  (0.50, 0.20)   |cos(T4, T1)| = 0.5 / 0.5385 = 0.928
#   T5 (0.65, 0.95)  1.0  (0.35, 0.65)   |cos(T5, T1)| = 0.474, |cos(T5, T3)| = 0.880
#   T6 (1.00, 1.00)  1.4  (0.70, 0.70)   |cos(T6, T1)| = |cos(T6, T3)| = 0.707,
#                                         |cos(T6, T5)| = 1.0 / (0.7382 · 1.4142) = 0.958
# L1 distances between candidates (distance filter, m = 0.4, (1 + 0.5)·m = 0.6):
#   d(T2, T1) = 0.1, d(T3, T1) = 1.0, d(T4, T1) = 0.3, d(T5, T1) = 0.7, d(T5, T3) = 0.4,
#   d(T6, T1) = 1.0, d(T6, T3) = 0.8
T = {1: (0.70, 0.30), 2: (0.75, 0.35), 3: (0.30, 0.90), 4: (0.80, 0.50), 5: (0.65, 0.95),
     6: (1.00, 1.00)}
X_QUERY = (0.3, 0.3)


@pytest.fixture(scope="module")
def tiny():
    rows = [(0.0, 0.0), (0.1, 0.2), (0.2, 0.1)] + list(T.values())
    df = pd.DataFrame(rows, columns=["a", "b"])
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)

    class Region(rc.models.Model):
        encoder = enc

        def logits(self, X):
            Z = self.encode(X)
            return np.maximum(Z[:, 0] - 0.6, Z[:, 1] - 0.8)[:, None]

    model = Region()
    y = pd.Series(model.predict(df))
    assert y.tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 1]
    return model, rc.data.Dataset(df, y, schema)


def _set(res) -> list[tuple[float, float]]:
    cfs = res.counterfactuals.sort_values("cf_rank")
    return [tuple(round(v, 6) for v in r) for r in cfs[["a", "b"]].to_numpy()]


def _explain(tiny, **params):
    model, data = tiny
    ex = DiverseRobust(model, data, minimise=False, **params)
    return ex.explain(pd.DataFrame([X_QUERY], columns=["a", "b"]))


def test_number_cut_with_angle_filter(tiny):
    res = _explain(tiny, alpha=3, beta=0.5)  # S2 = {T1, T2, T3}; T2 is T1's direction
    assert _set(res) == [T[1], T[3]]
    assert res.certificates["n_candidates"].iloc[0] == 3
    assert res.certificates["n_kept"].iloc[0] == 2
    res = _explain(tiny, alpha=6, beta=0.9)  # T2 (0.994), T4 (0.928), T6 (0.958 with T5) out
    assert _set(res) == [T[1], T[3], T[5]]
    res = _explain(tiny, alpha=6, beta=0.9, n_counterfactuals=2)  # greedy stops at 2
    assert _set(res) == [T[1], T[3]]


def test_distance_cut(tiny):
    res = _explain(tiny, selection="distance", epsilon=0.3, beta=1.0)  # radius 0.52
    assert _set(res) == [T[1], T[2]]
    assert res.certificates["n_candidates"].iloc[0] == 2
    res = _explain(tiny, selection="distance", epsilon=0.8, beta=1.0)  # radius 0.72
    assert _set(res) == [T[1], T[2], T[3], T[4]]
    res = _explain(tiny, selection="distance", epsilon=0.8, beta=0.5)
    assert _set(res) == [T[1], T[3]]


def test_max_candidates_caps_the_distance_cut(tiny):
    """``max_candidates`` keeps the nearest ones of the cut (radius 0.72: T1–T4 inside)."""
    res = _explain(tiny, selection="distance", epsilon=0.8, beta=1.0, max_candidates=2)
    assert _set(res) == [T[1], T[2]]
    assert res.certificates["n_candidates"].iloc[0] == 2
    res = _explain(tiny, selection="distance", epsilon=0.8, beta=1.0, max_candidates=3)
    assert _set(res) == [T[1], T[2], T[3]]
    res = _explain(tiny, selection="distance", epsilon=0.8, beta=1.0, max_candidates=50)
    assert res.certificates["n_candidates"].iloc[0] == 4


def test_distance_filter(tiny):
    res = _explain(tiny, alpha=6, filter="distance", beta=0.5)  # keep d >= 0.6 from all kept
    assert _set(res) == [T[1], T[3], T[6]]
    cert = res.certificates.iloc[0]
    # k-distance (eq. 12): (0.4 + 0.6 + 1.4) / 3; k-diversity (eq. 13): (1.0 + 1.0 + 0.8) / 3
    assert cert["k_distance"] == pytest.approx(2.4 / 3)
    assert cert["k_diversity"] == pytest.approx(2.8 / 3)


def test_l2_changes_the_order(tiny):
    # L2 distances: T1 0.4, T2 0.4528, T4 0.5385, T3 0.6 — α = 3 keeps T1, T2, T4 (not T3)
    res = _explain(tiny, alpha=3, beta=1.0, norm="l2")
    assert _set(res) == [T[1], T[2], T[4]]


@pytest.mark.parametrize("gamma", [0.1, 0.01, 0.001])
def test_line_search_ends_valid_and_within_gamma_of_the_boundary(tiny, gamma):
    model, data = tiny
    ex = DiverseRobust(model, data, alpha=6, beta=0.5, gamma=gamma)
    res = ex.explain(pd.DataFrame([X_QUERY], columns=["a", "b"]))
    got = res.counterfactuals.sort_values("cf_rank")[["a", "b"]].to_numpy()
    # toward T1 the boundary is a = 0.6 (b stays 0.3); toward T3 it is b = 0.8 (a stays 0.3)
    assert got[0, 1] == pytest.approx(0.3) and 0.6 < got[0, 0] <= 0.6 + gamma
    assert got[1, 0] == pytest.approx(0.3) and 0.8 < got[1, 1] <= 0.8 + gamma
    assert (model.predict(got) == 1).all()


def _random_relu():
    """A random 5-16-1 ReLU network over 400 uniform rows of [0, 1]^5 (both classes)."""
    rng = np.random.default_rng(3)
    d = 5
    df = pd.DataFrame(rng.uniform(size=(400, d)), columns=[f"f{i}" for i in range(d)])
    schema = rc.data.infer_schema(df, kinds={c: "continuous" for c in df.columns})
    enc = rc.data.Encoder(schema).fit(df)
    net = [(rng.normal(size=(16, d)), rng.normal(size=16)), (rng.normal(size=(1, 16)), np.zeros(1))]
    return df, schema, enc, rc.models.NetworkModel(net, enc)


def test_line_search_never_returns_an_invalid_point():
    """A random ReLU network; many segments from class-0 points to class-1 points."""
    df, schema, enc, model = _random_relu()
    X = enc.transform(df)
    y = model.predict(X)
    x0, x1 = X[y == 0], X[y == 1]
    n = min(len(x0), len(x1), 150)
    assert n > 50
    ex = DiverseRobust(model, rc.data.Dataset(df, pd.Series(y), schema), gamma=0.05)
    out = ex.line_search(x0[:n], x1[:n], np.ones(n, dtype=np.int64))
    assert (model.predict(out) == 1).all()
    # independent evidence of "within γ of the boundary": on the segment, a point at most γ
    # (L1) from the result toward x is classified as x's class
    direction = x0[:n] - out
    length = np.abs(direction).sum(axis=1)
    steps = np.linspace(0.0, 1.0, 201)[1:]
    frac = np.minimum(1.0, 0.05 / np.maximum(length, 1e-12))
    probe = out[:, None, :] + (steps[None, :, None] * frac[:, None, None]) * direction[:, None, :]
    flips = (model.predict(probe.reshape(-1, enc.n_features_out_)).reshape(n, -1) == 0).any(axis=1)
    assert flips.all()


def _bisect_one_by_one(model, enc, x, c, target, gamma):
    """Algorithm 1 as the paper writes it: one segment, one forward pass per halving."""
    lo, hi, best = x.copy(), c.copy(), c.copy()
    while np.abs(hi - lo).sum() > gamma:
        mid = 0.5 * (lo + hi)
        p = enc.project(mid[None])
        if model.predict(p)[0] == target:
            hi, best = mid, p[0]
        else:
            lo = mid
    return best


@pytest.mark.parametrize(("gamma", "max_elements"), [(0.05, None), (1e-4, None), (1e-3, 200)])
def test_line_search_takes_the_sequential_steps(gamma, max_elements, monkeypatch):
    """The tree-batched search (several halvings per forward pass; at γ = 1e-4 more halvings
    than one tree holds; with a tiny memory cap, shallower trees) returns exactly the points
    of the one-segment, one-pass-per-halving loop."""
    from robustce.methods import diverse_robust

    if max_elements is not None:
        monkeypatch.setattr(diverse_robust, "_MAX_ELEMENTS", max_elements)
    df, schema, enc, model = _random_relu()
    X = enc.transform(df)
    y = model.predict(X)
    n = min(int((y == 0).sum()), int((y == 1).sum()), 60)
    assert n == 60
    x0, x1 = X[y == 0][:n], X[y == 1][:n]
    ex = DiverseRobust(model, rc.data.Dataset(df, pd.Series(y), schema), gamma=gamma)
    got = ex.line_search(x0, x1, np.ones(n, dtype=np.int64))
    want = np.array([_bisect_one_by_one(model, enc, a, b, 1, gamma)
                     for a, b in zip(x0, x1, strict=True)])
    np.testing.assert_array_equal(got, want)


def test_line_search_projects_mixed_types(tiny):
    """An integer feature: every tested midpoint is projected, the result is on the grid."""
    df = pd.DataFrame({"k": [0, 10, 2, 9, 8, 1], "a": [0.0, 1.0, 0.1, 0.9, 0.8, 0.3]})
    schema = rc.data.infer_schema(df, kinds={"k": "integer", "a": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)

    class Sum(rc.models.Model):
        encoder = enc

        def logits(self, X):
            Z = self.encode(X)
            return (Z[:, 0] + Z[:, 1] - 1.1)[:, None]

    model = Sum()
    data = rc.data.Dataset(df, pd.Series(model.predict(df)), schema)
    res = DiverseRobust(model, data, gamma=0.01).explain(pd.DataFrame({"k": [0], "a": [0.0]}))
    C = res.counterfactuals_encoded
    assert res.status.iloc[0] == "found" and len(C)
    assert np.allclose(enc.project(C), C)
    assert (model.predict(C) == 1).all()
    assert "dropped" not in res.messages.iloc[0]


def test_infeasible_when_no_candidate_is_reachable(tiny):
    model, data = tiny
    schema = data.schema.with_actionability(b="immutable")
    fixed = rc.data.Dataset(data.frame, data.target, schema)
    enc = rc.data.Encoder(schema).fit(data.frame)
    model.encoder = enc
    try:
        res = DiverseRobust(model, fixed).explain(pd.DataFrame([(0.3, 0.31)], columns=["a", "b"]))
    finally:
        model.encoder = type(model).encoder
    assert res.status.iloc[0] == "infeasible"
    assert res.certificates["n_candidates"].iloc[0] == 0


def test_k_metrics_agree_with_the_metrics_module(tiny):
    model, data = tiny
    from robustce.evaluation.metrics import k_distance, k_diversity

    res = DiverseRobust(model, data, alpha=6, beta=0.9).explain(
        pd.DataFrame([X_QUERY], columns=["a", "b"]))
    S = res.counterfactuals_encoded
    cert = res.certificates.iloc[0]
    assert cert["k_distance"] == pytest.approx(k_distance(np.array(X_QUERY), S, "l1"))
    assert cert["k_diversity"] == pytest.approx(k_diversity(S, "l1"))
    one = DiverseRobust(model, data, n_counterfactuals=1).explain(
        pd.DataFrame([X_QUERY], columns=["a", "b"]))
    assert math.isnan(one.certificates["k_diversity"].iloc[0])


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_k_metrics_of_a_batch_agree_per_query(norm):
    """One explain call over queries whose sets have different sizes: each query's
    certificate is the metrics module's value on that query's own CEs."""
    from robustce.evaluation.metrics import k_distance, k_diversity

    df, schema, enc, model = _random_relu()
    y = pd.Series(model.predict(df))
    res = DiverseRobust(model, rc.data.Dataset(df, y, schema), alpha=8, beta=0.4,
                        norm=norm).explain(df[y == 0].iloc[:40])
    sizes = res.certificates["n_kept"].to_numpy()
    assert len(set(sizes.tolist())) >= 3 and (sizes == 1).any()
    for qid in res.queries.index:
        S = res.counterfactuals_encoded[res.cf_positions(qid)]
        x = res.queries_encoded[res.queries.index.get_loc(qid)]
        cert = res.certificates.loc[qid]
        assert cert["n_kept"] == len(S)
        assert cert["k_distance"] == pytest.approx(k_distance(x, S, norm), rel=1e-12)
        if len(S) >= 2:
            assert cert["k_diversity"] == pytest.approx(k_diversity(S, norm), rel=1e-12)
        else:
            assert math.isnan(cert["k_diversity"])


@pytest.mark.parametrize(("params", "word"), [
    ({"n_counterfactuals": 0}, "n_counterfactuals"),
    ({"n_counterfactuals": 2.5}, "n_counterfactuals"),
    ({"beta": 1.5}, "beta"),
    ({"beta": -0.1}, "beta"),
    ({"beta": float("nan")}, "beta"),
    ({"gamma": 0.0}, "gamma"),
    ({"gamma": float("nan")}, "gamma"),
    ({"gamma": float("inf")}, "gamma"),
    ({"norm": "l7"}, "norm"),
    ({"filter": "cosine"}, "filter"),
    ({"selection": "all"}, "selection"),
    ({"alpha": 0}, "alpha"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"minimise": "yes"}, "minimise"),
])
def test_bad_parameters_name_themselves(tiny, params, word):
    model, data = tiny
    with pytest.raises(ValidationError, match=word):
        DiverseRobust(model, data, **params)


def test_needs_training_data_and_is_registered(tiny):
    model, _ = tiny
    with pytest.raises(ValidationError, match="data"):
        DiverseRobust(model, None)
    from robustce.methods.registry import get_method

    assert get_method("diverse_robust") is DiverseRobust
    assert DiverseRobust.certificate_columns == ("n_candidates", "n_kept", "k_distance",
                                                 "k_diversity")


def test_batch_equals_one_by_one_and_tree_built_once(tiny, monkeypatch):
    model, data = tiny
    ex = DiverseRobust(model, data, alpha=6, beta=0.9)
    Q = pd.DataFrame([(0.3, 0.3), (0.1, 0.5), (0.5, 0.1), (0.2, 0.7)], columns=["a", "b"])
    import robustce.methods.nearest_neighbour as nn_mod

    built = []
    real = nn_mod.cKDTree
    monkeypatch.setattr(nn_mod, "cKDTree", lambda *a, **k: built.append(1) or real(*a, **k))
    batch = ex.explain(Q)
    single = [ex.explain(Q.iloc[[i]]) for i in range(len(Q))]
    assert len(built) == 1
    for i, s in enumerate(single):
        got = batch.counterfactuals_encoded[batch.counterfactuals["query_id"].to_numpy() == Q.index[i]]
        assert np.allclose(got, s.counterfactuals_encoded)


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_distance_cut_matches_brute_force(norm):
    """Many candidates within (1 + ε)·m: the cut grows its KD-tree query until it has them."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(size=(1500, 2)), columns=["a", "b"])
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)
    model = rc.models.NetworkModel([(np.array([[1.0, 0.0]]), np.array([-0.7]))], enc)
    y = model.predict(df)
    data = rc.data.Dataset(df, pd.Series(y), schema)
    Q = df[y == 0].iloc[:20]
    res = DiverseRobust(model, data, selection="distance", epsilon=1.0, minimise=False,
                        norm=norm).explain(Q)
    X, C = enc.transform(Q), enc.transform(df[y == 1])
    p = {"l1": 1, "l2": 2, "linf": np.inf}[norm]
    D = np.linalg.norm(C[None, :, :] - X[:, None, :], ord=p, axis=2)
    expected = (D <= 2.0 * D.min(axis=1, keepdims=True) + 1e-12).sum(axis=1)
    assert expected.max() > 32  # more than the first KD-tree query returns
    assert res.certificates["n_candidates"].to_numpy().tolist() == expected.tolist()


def test_memory_chunks_give_the_same_sets(tiny, monkeypatch):
    model, data = tiny
    Q = pd.DataFrame([(0.3, 0.3), (0.1, 0.5), (0.5, 0.1), (0.2, 0.7)], columns=["a", "b"])
    whole = DiverseRobust(model, data, alpha=6, beta=0.9).explain(Q)
    import robustce.methods.diverse_robust as dr

    monkeypatch.setattr(dr, "_MAX_ELEMENTS", 1)  # one query per block
    ex = DiverseRobust(model, data, alpha=6, beta=0.9)
    assert [len(rows) for _, rows in ex._chunks(np.ones(4, dtype=np.int64), 2)] == [1, 1, 1, 1]
    parts = ex.explain(Q)
    assert np.array_equal(parts.counterfactuals_encoded, whole.counterfactuals_encoded)
    assert parts.counterfactuals["query_id"].tolist() == whole.counterfactuals["query_id"].tolist()
