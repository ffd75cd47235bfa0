"""RobustNearestNeighbour (PROPLACE Definition 9): the nearest *certified* training points."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.data.builtin import moons
from robustce.errors import RobustCEError, ValidationError
from robustce.methods.robust_nearest_neighbour import RobustNearestNeighbour
from robustce.robustness import ExactDeltaCertifier, ParameterShift, exact_worst_case
from robustce.robustness.certifier import CertStatus

DELTA = 0.05


@pytest.fixture(scope="module")
def moons_setup():
    data = moons(300, noise=0.25, random_state=0)
    model = rc.models.MLP((8, 8), epochs=25, lr=0.01, random_state=0).fit(data)
    return data, model


def _brute_force(model, data, target, delta):
    """Every distinct training point the model puts in ``target``, tested one at a time with the
    full MILP (no prechecks, no batching): (points, exact worst-case margins)."""
    X = model.encoder.transform(data.frame)
    X = np.unique(X[model.predict(X) == target], axis=0)
    net = model.network()
    shift = ParameterShift(delta)
    values = np.array([exact_worst_case(net, x[None], shift, target, precheck=False).value[0]
                       for x in X])
    return X, values


def test_equals_brute_force(moons_setup):
    data, model = moons_setup
    ex = RobustNearestNeighbour(model, data, shift=DELTA, n_neighbours=1)
    queries = data.frame.iloc[:40]
    Xq = model.encoder.transform(queries)
    targets = 1 - model.predict(Xq)
    k = 4
    neigh = ex.k_robust_neighbours(Xq, k)
    res = ex.explain(queries)
    for t in (0, 1):
        P, v = _brute_force(model, data, t, DELTA)
        pool = P[v >= ex.tol]
        assert 0 < len(pool) < len(P)  # the Δ-test removes some points and keeps others
        assert ex.pool_info[t].n_certified == len(pool)
        for i in np.flatnonzero(targets == t):
            d = np.abs(pool - Xq[i]).sum(axis=1)
            order = np.argsort(d, kind="stable")[:k]
            np.testing.assert_allclose(np.abs(neigh[i] - Xq[i]).sum(axis=1), d[order], atol=1e-12)
            # the rank-0 CE and its certificate
            qid = queries.index[i]
            assert res.status[qid] == "found"
            cf = res.counterfactuals_encoded[res.cf_positions(qid)[0]]
            assert np.abs(cf - Xq[i]).sum() == pytest.approx(d[order[0]], abs=1e-12)
            cert = res.certificates.loc[qid]
            assert cert["distance"] == pytest.approx(d[order[0]], abs=1e-12)
            j = int(np.flatnonzero(np.abs(pool - cf).max(axis=1) == 0)[0])
            assert cert["worst_case_margin"] == pytest.approx(v[v >= ex.tol][j], abs=1e-6)
            assert cert["delta"] == DELTA


def test_pool_is_robust_under_sampled_realisations(moons_setup):
    data, model = moons_setup
    ex = RobustNearestNeighbour(model, data, shift=DELTA)
    for t in (0, 1):
        pool = ex.index(t).X
        margins = ParameterShift(DELTA).sample(model, 10_000, random_state=0).margin(pool, t)
        assert margins.min() > 0


def test_pool_certified_once_and_cached(moons_setup):
    """One batched test of the pool per target class (through the certifier protocol), reused
    by every later explain / k_robust_neighbours call."""
    data, model = moons_setup

    class Counting(ExactDeltaCertifier):
        calls: list[int] = []

        def certify(self, network, X, targets, **kw):
            self.calls.append(len(np.atleast_2d(X)))
            return super().certify(network, X, targets, **kw)

    counting = Counting(DELTA, tol=1e-6)
    ex = RobustNearestNeighbour(model, data, shift=DELTA, target_class=1, certifier=counting)
    q = data.frame.iloc[:60]
    ex.explain(q)
    n_pool_calls = len(counting.calls)
    ex.explain(q)
    ex.k_robust_neighbours(model.encoder.transform(q), 3)
    assert n_pool_calls == 2  # one batched pool test + one re-certification of returned points
    assert len(counting.calls) == n_pool_calls  # nothing certified again
    assert counting.calls[0] == ex.pool_info[1].n_candidates


def test_empty_pool_is_no_robust_point(moons_setup):
    data, model = moons_setup
    res = RobustNearestNeighbour(model, data, shift=3.0).explain(data.frame.iloc[:10])
    active = res.status != "already_target"
    assert active.any()
    assert (res.status[active] == "no_robust_point").all()
    assert len(res.counterfactuals) == 0



@pytest.mark.parametrize("outcome, status", [("inconclusive", "no_robust_point"),
                                             ("timeout", "timeout")])
def test_a_borderline_pool_is_no_robust_point_and_a_timed_out_one_a_timeout(
        moons_setup, outcome, status):
    """A candidate whose worst case is within tolerance of 0 (inconclusive) is decided — left
    out, as no time limit would change it — while one whose test ran out of time is undecided:
    only the latter makes an empty pool a timeout."""
    data, model = moons_setup

    class Fixed(ExactDeltaCertifier):
        def certify(self, network, X, targets, **kw):
            res = super().certify(network, X, targets, **kw)
            res.status[:] = CertStatus(outcome)
            return res

    ex = RobustNearestNeighbour(model, data, shift=DELTA, target_class=1,
                                certifier=Fixed(DELTA, tol=1e-6))
    res = ex.explain(data.frame.iloc[:10])
    active = res.status != "already_target"
    assert active.any() and (res.status[active] == status).all()
    info = ex.pool_info[1]
    assert info.n_certified == 0
    if outcome == "inconclusive":
        assert info.n_borderline == info.n_candidates and info.n_undecided == 0
        assert "within tolerance" in res.messages[active].iloc[0]
    else:
        assert info.n_undecided == info.n_candidates and info.n_borderline == 0

def test_a_robust_verdict_below_the_tolerance_does_not_enter_the_pool(moons_setup):
    """A certifier that says ``robust`` with a worst-case margin below ``tol`` (a certifier of
    the user's, or rounding): the point is borderline, left out of the pool, never returned."""
    data, model = moons_setup
    tol = 1e-3

    class Shy(ExactDeltaCertifier):
        def certify(self, network, X, targets, **kw):
            res = super().certify(network, X, targets, **kw)
            res.status[:] = CertStatus.ROBUST
            res.lower[:] = 0.5 * tol
            return res

    ex = RobustNearestNeighbour(model, data, shift=DELTA, target_class=1, tol=tol,
                                certifier=Shy(DELTA, tol=tol))
    res = ex.explain(data.frame.iloc[:10])
    active = res.status != "already_target"
    assert active.any() and (res.status[active] == "no_robust_point").all()
    info = ex.pool_info[1]
    assert info.n_certified == 0 and info.n_borderline == info.n_candidates > 0


def test_immutables_kept():
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"a": rng.uniform(0, 1, n), "b": rng.uniform(0, 1, n),
                          "g": rng.integers(0, 2, n)})
    frame["y"] = ((frame.a + 0.5 * frame.b + 0.3 * frame.g + rng.normal(0, 0.1, n)) > 0.9).astype(int)
    schema = Schema([Feature("a", "continuous", lower=0, upper=1),
                     Feature("b", "continuous", lower=0, upper=1, actionability="increase"),
                     Feature("g", "binary", categories=(0, 1), actionability="immutable")])
    data = from_frame(frame, "y", schema)
    model = rc.models.MLP((8, 8), epochs=150, random_state=0).fit(data)
    ex = RobustNearestNeighbour(model, data, shift=0.02, n_neighbours=3)
    res = ex.explain(data.frame.iloc[:50])
    found = res.status == "found"
    assert found.sum() >= 10
    cf = res.counterfactuals.set_index("query_id")
    q = data.frame.loc[cf.index]
    assert (cf["g"].to_numpy() == q["g"].to_numpy()).all()
    assert (cf["b"].to_numpy() >= q["b"].to_numpy() - 1e-9).all()


def test_bad_input(moons_setup):
    data, model = moons_setup
    forest = rc.models.wrap(__import__("sklearn.ensemble", fromlist=["x"]).RandomForestClassifier(
        n_estimators=3, random_state=0).fit(model.encoder.transform(data.frame), data.y),
        model.encoder)
    with pytest.raises(RobustCEError, match="ReLU"):
        RobustNearestNeighbour(forest, data, shift=DELTA)
    with pytest.raises(ValidationError, match="shift"):
        RobustNearestNeighbour(model, data, shift="big")
    with pytest.raises(ValidationError, match="tol"):
        RobustNearestNeighbour(model, data, shift=DELTA, tol=0)
    ex = RobustNearestNeighbour(model, data, shift=DELTA)
    with pytest.raises(ValidationError, match="k must"):
        ex.k_robust_neighbours(data.frame.iloc[:2], 0)


def test_a_class_the_model_never_predicts(moons_setup):
    """No training point in the target class: NearestNeighbour says infeasible, the robust one
    no_robust_point (both used to fail on the empty candidate set)."""
    data, model = moons_setup
    never_one = rc.models.NetworkModel([(np.zeros((1, 2)), np.array([-1.0]))], model.encoder)
    q = data.frame.iloc[:5]
    assert (rc.methods.NearestNeighbour(never_one, data).explain(q).status == "infeasible").all()
    res = RobustNearestNeighbour(never_one, data, shift=DELTA).explain(q)
    assert (res.status == "no_robust_point").all()
