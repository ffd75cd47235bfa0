"""MILPNearest (Mohammadi et al.) and MILPRobust (MILP-R): optimal, valid, actionable, honest."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.milp_robust import MILPRobust
from robustce.models.network import class_margin
from robustce.nearest import column_weights, feature_distance
from robustce.robustness import ParameterShift, is_delta_robust
from robustce.solvers import MILP, SolveResult, SolveStatus, available_solvers

# --- a tiny discrete world where brute force is possible ----------------------------------------

LEVELS = ("low", "mid", "high")
CATS = ("a", "b", "c")


def _tiny_schema(immutable_all: bool = False, monotone: bool = True) -> Schema:
    act = "immutable" if immutable_all else None
    return Schema([
        Feature("n", "integer", lower=0, upper=4, actionability=act or ("increase" if monotone else "free")),
        Feature("level", "ordinal", categories=LEVELS, actionability=act or "free"),
        Feature("cat", "categorical", categories=CATS, actionability=act or "free"),
        Feature("flag", "binary", categories=(0, 1), actionability=act or "free"),
    ])


def _tiny_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "n": rng.integers(0, 5, size=n),
        "level": rng.choice(LEVELS, size=n),
        "cat": rng.choice(CATS, size=n),
        "flag": rng.integers(0, 2, size=n),
    })
    score = (frame["n"] / 4 + frame["level"].map({"low": 0, "mid": 0.5, "high": 1.0})
             + (frame["cat"] == "b") * 0.7 - frame["flag"] * 0.6 + rng.normal(0, 0.2, size=n))
    frame["y"] = (score > 1.0).astype(int)
    return frame


@pytest.fixture(scope="module")
def tiny():
    frame = _tiny_frame(400, 0)
    data = from_frame(frame, "y", _tiny_schema())
    model = rc.models.MLP((6,), epochs=40, random_state=0).fit(data)
    return data, model


def _grid(encoder) -> np.ndarray:
    rows = itertools.product(range(5), LEVELS, CATS, (0, 1))
    frame = pd.DataFrame(list(rows), columns=["n", "level", "cat", "flag"])
    return encoder.transform(frame)


def _brute_force(model, q, target, norm, tau, actionable_fn):
    G = _grid(model.encoder)
    margin = class_margin(model.network().forward(G), target)
    ok = (margin >= tau) & actionable_fn(q, G)
    if not ok.any():
        return None
    return feature_distance(model.encoder, q, G[ok], norm).min()


@pytest.mark.parametrize("norm", ["l1", "l0", "linf"])
def test_equals_brute_force_on_a_discrete_domain(tiny, norm):
    """Complete and optimal: ``found`` exactly where brute force over the whole grid finds a
    valid actionable point, at the brute-force optimum; ``infeasible`` exactly where none
    exists; nothing else (no error, no timeout) on this tiny domain."""
    data, model = tiny
    ex = MILPNearest(model, data, norm=norm, tau=1e-3, mip_gap=1e-9, time_limit=20)
    queries = data.frame.iloc[:40]
    res = ex.explain(queries)
    Q = model.encoder.transform(queries)
    pred = model.predict(Q)
    cfs = res.counterfactuals_encoded
    owner = res.counterfactuals["query_id"].to_numpy()
    n_found = n_infeasible = 0
    for i, label in enumerate(queries.index):
        best = _brute_force(model, Q[i], 1 - int(pred[i]), norm, 1e-3, ex.actionable)
        if best is None:
            assert res.status[label] == "infeasible", (label, norm, res.messages[label])
            n_infeasible += 1
            continue
        assert res.status[label] == "found", (label, norm, res.messages[label])
        mine = cfs[owner == label]
        assert len(mine) == 1
        got = feature_distance(model.encoder, Q[i], mine, norm)[0]
        assert got == pytest.approx(best, abs=1e-6), (label, norm)
        n_found += 1
    assert n_found >= 10  # the grid world has both kinds of queries
    assert n_found + n_infeasible == len(queries)


def test_no_farther_than_any_valid_training_point(diabetes_setup):
    train, test, model = diabetes_setup
    ex = MILPNearest(model, train, time_limit=20)
    res = ex.explain(test.frame.iloc[:12])
    assert (res.status == "found").sum() >= 8
    Xtr = model.encoder.transform(train.frame)
    w = column_weights(model.encoder)
    Q = model.encoder.transform(test.frame.iloc[:12])
    pos = {label: i for i, label in enumerate(test.frame.index[:12])}
    for cf, label in zip(res.counterfactuals_encoded, res.counterfactuals["query_id"], strict=True):
        i = pos[label]
        target = 1 - int(model.predict(Q[i:i + 1])[0])
        valid = (class_margin(model.network().forward(Xtr), target) >= ex.tau) & ex.actionable(Q[i], Xtr)
        if not valid.any():
            continue
        d_train = feature_distance(model.encoder, Q[i], Xtr[valid], "l1", w).min()
        d_cf = feature_distance(model.encoder, Q[i], cf[None], "l1", w)[0]
        assert d_cf <= d_train * (1 + ex.mip_gap) + 1e-6
    cert = res.certificates
    assert {"distance", "bound", "gap", "optimal", "margin"} <= set(cert.columns)
    found = res.status == "found"
    assert (cert.loc[found, "margin"] >= ex.tau - 1e-6).all()
    assert cert.loc[found, "optimal"].all()


def test_statuses_for_bad_queries():
    frame = _tiny_frame(300, 1)
    data = from_frame(frame, "y", _tiny_schema(immutable_all=True))
    model = rc.models.MLP((6,), epochs=20, random_state=0).fit(data)
    ex = MILPNearest(model, data, time_limit=10)
    res = ex.explain(data.frame.iloc[:20])
    pred = model.predict(data.frame.iloc[:20])
    # every query is either already in the target class (impossible here: binary, target = other)
    # or has nothing to change: infeasible, per query, no exception
    assert set(res.status) == {"infeasible"}
    # with a fixed target class: already_target where the model agrees, infeasible elsewhere
    for t in (0, 1):
        res_t = MILPNearest(model, data, target_class=t, time_limit=10).explain(data.frame.iloc[:20])
        assert set(res_t.status[pred == t]) <= {"already_target"}
        assert set(res_t.status[pred != t]) <= {"infeasible"}
        assert res_t.counterfactuals.empty


def test_timeout_status(tiny, monkeypatch):
    data, model = tiny

    def timed_out(self, time_limit=None, *, cutoff=None, target=None):
        return SolveResult(SolveStatus.TIME_LIMIT, time=0.0, solver="highs")

    monkeypatch.setattr(MILP, "solve", timed_out)
    res = MILPNearest(model, data, time_limit=1, warm_start=False).explain(data.frame.iloc[:5])
    assert set(res.status) <= {"timeout", "already_target"}
    assert (res.status == "timeout").any()
    # with the training-point incumbent, a time limit returns it: found, but not optimal
    warm = MILPNearest(model, data, time_limit=1).explain(data.frame.iloc[:5])
    found = warm.status == "found"
    assert found.sum() == (res.status == "timeout").sum()
    assert not warm.certificates.loc[found, "optimal"].astype(bool).any()


def test_bad_parameters(tiny):
    data, model = tiny
    with pytest.raises(rc.errors.ValidationError):
        MILPNearest(model, data, norm="l2")
    with pytest.raises(rc.errors.ValidationError):
        MILPNearest(model, data, tau=0)
    with pytest.raises(rc.errors.SolverError, match="unknown MILP solver"):
        MILPNearest(model, data, solver="cplex")
    with pytest.raises(rc.errors.ValidationError):
        MILPRobust(model, data, growth=1.0)
    with pytest.raises(rc.errors.ValidationError):
        MILPRobust(model, data, shift="big")


@pytest.mark.skipif("gurobi" not in available_solvers(), reason="gurobipy is not installed")
def test_gurobi_backend_gives_the_same_distances(tiny):
    data, model = tiny
    h = MILPNearest(model, data, mip_gap=1e-9, time_limit=20).explain(data.frame.iloc[:10])
    g = MILPNearest(model, data, solver="gurobi", mip_gap=1e-9, time_limit=20).explain(data.frame.iloc[:10])
    if (g.status == "error").any():
        pytest.skip(f"gurobi failed (licence limit?): {g.summary() if hasattr(g, 'summary') else ''}")
    assert list(h.status) == list(g.status)
    found = h.status == "found"
    assert np.allclose(h.certificates.loc[found, "distance"], g.certificates.loc[found, "distance"],
                       atol=1e-6)


# --- MILP-R -----------------------------------------------------------------------------------


def test_milp_robust_ces_are_proven_and_survive_sampling(diabetes_setup):
    train, test, model = diabetes_setup
    shift = ParameterShift(0.01)
    ex = MILPRobust(model, train, shift=shift, time_limit=30)
    res = ex.explain(test.frame.iloc[:8])
    found = res.status == "found"
    assert found.sum() >= 4
    cfs = res.counterfactuals_encoded
    owner = res.counterfactuals["query_id"].to_numpy()
    targets = res.target_class.loc[owner].to_numpy()
    assert is_delta_robust(model, cfs, shift, targets, precheck=False).all()
    margins = shift.sample(model.network(), 10_000, random_state=0).forward(cfs)
    for j, t in enumerate(targets):
        assert (class_margin(margins[:, j], int(t)) > 0).all()
    cert = res.certificates.loc[found]
    assert (cert["delta_status"] == "robust").all() and (cert["worst_case_margin"] > 0).all()
    assert (cert["delta"] == 0.01).all() and (cert["rounds"] >= 1).all()
    # robustness costs distance: never closer than the plain nearest CE
    plain = MILPNearest(model, train, time_limit=30).explain(test.frame.iloc[:8])
    both = found & (plain.status == "found")
    assert (cert.loc[both, "distance"] >= plain.certificates.loc[both, "distance"] - 1e-6).all()


def test_milp_robust_round_cap_gives_no_robust_point(tiny):
    data, model = tiny
    ex = MILPRobust(model, data, shift=ParameterShift(0.5), max_rounds=1, time_limit=20)
    res = ex.explain(data.frame.iloc[:10])
    statuses = set(res.status)
    assert statuses <= {"no_robust_point", "already_target", "infeasible", "found"}
    assert "no_robust_point" in statuses
    for label in res.status.index[res.status == "no_robust_point"]:
        assert res.certificates.loc[label, "rounds"] == 1


def test_milp_robust_undecided_delta_tests_give_timeout_not_no_robust_point(tiny):
    """When the Δ-test cannot decide, "no robust point" was never shown: the status is timeout."""
    from robustce.robustness import ExactDeltaCertifier
    from robustce.robustness.exact import DeltaStatus

    data, model = tiny

    class Undecided(ExactDeltaCertifier):  # the exact test, with every answer made a timeout
        def certify(self, *args, **kwargs):
            res = super().certify(*args, **kwargs)
            res.status[:] = DeltaStatus.TIMEOUT
            return res

    res = MILPRobust(model, data, shift=ParameterShift(0.5), max_rounds=2, time_limit=20,
                     certifier=Undecided(ParameterShift(0.5))).explain(data.frame.iloc[:10])
    statuses = set(res.status)
    assert "no_robust_point" not in statuses and "found" not in statuses
    assert "timeout" in statuses
    for label in res.status.index[res.status == "timeout"]:
        assert "undecided" in res.messages[label]


# logit z = 1 · relu(2x) − 1 over one feature x in [0, 1]
RELU_2X_MINUS_1 = [(np.array([[2.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0]))]


def test_milp_robust_bisects_the_margin_when_growth_overshoots():
    # one feature x in [0, 1]; logit z = 1 · relu(2x) − 1, so the largest reachable margin is 1
    # (x = 1). Under δ = 0.15 the worst network gives 0.85 · relu(1.85x − 0.15) − 1.15, positive
    # iff x > 0.8124, i.e. margin z > 0.625. Round 1 (τ = 0.55) finds x = 0.775: not Δ-robust;
    # the doubled margin 1.1 is unreachable; only a margin in (0.625, 1] gives a Δ-robust CE.
    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    schema = Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])
    enc = rc.data.Encoder(schema).fit(frame)
    model = rc.models.NetworkModel(RELU_2X_MINUS_1, enc)
    shift = ParameterShift(0.15)
    q = pd.DataFrame({"x": [0.0]}, index=["q"])
    assert model.predict(q).tolist() == [0]
    # the largest reachable margin, by brute force and by the MILP: 1.0 at x = 1
    grid = np.linspace(0.0, 1.0, 10_001)[:, None]
    assert class_margin(model.network().forward(grid), 1).max() == pytest.approx(1.0)
    assert MILPNearest(model, tau=1.0, time_limit=10).explain(q).status["q"] == "found"
    assert MILPNearest(model, tau=1.1, time_limit=10).explain(q).status["q"] == "infeasible"
    # Δ-robust grid points exist, all above margin 0.625
    robust = is_delta_robust(model, grid[::100], shift, 1, precheck=False)
    assert robust.any() and (class_margin(model.network().forward(grid[::100][robust]), 1) > 0.62).all()

    # growth alone overshoots: one raise (2 rounds) ends at the unreachable margin
    two = MILPRobust(model, shift=shift, tau=0.55, growth=2.0, max_rounds=2, time_limit=20).explain(q)
    assert two.status["q"] == "no_robust_point"
    assert two.certificates.loc["q", "tau"] == pytest.approx(1.1)
    assert "bisecting the margin between 0.55" in two.messages["q"]

    # Jiang et al.'s loop (minimal=False): the first Δ-robust CE, at the bisection's midpoint
    res = MILPRobust(model, shift=shift, tau=0.55, growth=2.0, time_limit=20,
                     minimal=False).explain(q)
    assert res.status["q"] == "found"
    cert = res.certificates.loc["q"]
    assert cert["rounds"] == 3 and 0.625 < cert["tau"] < 1.0
    assert cert["tau"] == pytest.approx(0.825)  # the midpoint of (0.55, 1.1)
    assert cert["delta_status"] == "robust" and cert["worst_case_margin"] > 0
    assert "bisection" in res.messages["q"]
    cf = res.counterfactuals_encoded
    assert cf[0, 0] == pytest.approx(0.9125, abs=1e-6)  # z = 2x − 1 = 0.825
    assert cert["distance"] == pytest.approx(0.9125, abs=1e-6)
    assert is_delta_robust(model, cf, shift, 1, precheck=False).all()
    margins = shift.sample(model.network(), 10_000, random_state=0).forward(cf)
    assert (class_margin(margins[:, 0], 1) > 0).all()


def test_minimal_milp_robust_closes_on_the_nearest_delta_robust_point():
    """The network above at δ = 0.15: the Δ-robust points are x > x* = (0.15 + 1.15/0.85) / 1.85
    (the worst network 0.85 · relu(1.85x − 0.15) − 1.15 crosses zero there; checked on a grid by
    the exact test), so the nearest Δ-robust CE from x = 0 is x* itself. The first Δ-robust CE of
    the loop is at x = 0.9125 (12 % farther); the refined one must be within its stated
    ``margin_gap`` of x* and never nearer than x* (it is certified)."""
    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    enc = rc.data.Encoder(Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    model = rc.models.NetworkModel(RELU_2X_MINUS_1, enc)
    shift = ParameterShift(0.15)
    q = pd.DataFrame({"x": [0.0]}, index=["q"])
    x_star = (0.15 + 1.15 / 0.85) / 1.85
    grid = np.linspace(0.80, 0.83, 301)[:, None]
    robust = is_delta_robust(model, grid, shift, 1, precheck=False)
    assert grid[robust, 0].min() == pytest.approx(x_star, abs=2e-4)  # the exact test agrees

    res = MILPRobust(model, shift=shift, tau=0.55, growth=2.0, time_limit=20,
                     refine_tol=1e-3).explain(q)
    assert res.status["q"] == "found"
    cert = res.certificates.loc["q"]
    x = float(res.counterfactuals_encoded[0, 0])
    assert x >= x_star - 1e-6  # never nearer than the nearest Δ-robust point
    # margin z = 2x − 1: the returned margin is within margin_gap of a not-robust one
    assert 0 < cert["margin_gap"] <= 1e-3 * cert["tau"] + 1e-9
    assert x - x_star <= cert["margin_gap"] / 2 + 1e-6
    assert x < 0.9125 - 0.05  # far nearer than the first Δ-robust CE
    assert is_delta_robust(model, res.counterfactuals_encoded, shift, 1, precheck=False).all()
    assert 3 < cert["rounds"] <= 3 + 8
    # the default tolerance (1 %) is already within 1 % of x* in distance
    default = MILPRobust(model, shift=shift, tau=0.55, growth=2.0, time_limit=20).explain(q)
    x_default = float(default.counterfactuals_encoded[0, 0])
    assert x_star - 1e-6 <= x_default <= x_star * 1.01
    with pytest.raises(rc.errors.ValidationError, match="refine_tol"):
        MILPRobust(model, refine_tol=1.0)
    with pytest.raises(rc.errors.ValidationError, match="minimal"):
        MILPRobust(model, minimal="yes")


def test_milp_robust_bisection_ends_with_no_robust_point_when_no_margin_works():
    # same network, δ = 0.3: the worst network gives 0.7 · relu(1.7x − 0.3) − 1.3 < 0 on [0, 1],
    # so no point is Δ-robust; the bisection must stop on its tolerance, not on the round cap
    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    enc = rc.data.Encoder(Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    model = rc.models.NetworkModel(RELU_2X_MINUS_1, enc)
    q = pd.DataFrame({"x": [0.0]}, index=["q"])
    ex = MILPRobust(model, shift=0.3, tau=0.55, max_rounds=40, bisect_tol=1e-2, time_limit=30)
    res = ex.explain(q)
    assert res.status["q"] == "no_robust_point"
    assert "bisected the margin down to" in res.messages["q"]
    cert = res.certificates.loc["q"]
    assert cert["rounds"] < 40
    assert 0.98 < cert["tau"] <= 1.1  # converged on the largest reachable margin, 1.0
    with pytest.raises(rc.errors.ValidationError, match="bisect_tol"):
        MILPRobust(model, bisect_tol=0)


def test_a_second_certifier_plugs_into_the_milp_robust_loop():
    """A toy certifier (robust iff the margin is at least 0.96; its evidence lowers the margin by
    0.96) drives the same margin loop — raise, unreachable margin, bisection — on the network
    above, whose largest reachable margin is 1."""
    from robustce.robustness import Certificates, Certifier

    class MarginAtLeast(Certifier):
        name = "margin_at_least"

        def __init__(self, need: float):
            self.need, self.calls = need, 0

        def params(self):
            return {"need": self.need}

        def certify(self, network, X, targets, *, time_limit=None):
            self.calls += 1
            m = network.margin(X, np.asarray(targets))
            status = np.where(m >= self.need, "robust", "not_robust")
            return Certificates(status, m - self.need, m - self.need, [None] * len(X),
                                np.zeros(len(X)), targets, self.name, self.params())

    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    enc = rc.data.Encoder(Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    model = rc.models.NetworkModel(RELU_2X_MINUS_1, enc)
    q = pd.DataFrame({"x": [0.0]}, index=["q"])
    toy = MarginAtLeast(0.96)
    ex = MILPRobust(model, shift=0.15, tau=0.1, growth=2.0, time_limit=20, certifier=toy,
                    minimal=False)
    res = ex.explain(q)
    cert = res.certificates.loc["q"]
    assert res.status["q"] == "found" and cert["delta_status"] == "robust"
    # τ1 = 0.1 fails with drop 0.96 -> τ2 = max(0.2, 0.96·1.05 + 1e-6) = 1.008001, unreachable
    # (no call) -> bisect from (0.1, 1.008001): 0.5540005, 0.78100075, 0.894500875, 0.95125044
    # fail, τ7 = 0.97962522 >= 0.96 passes
    assert cert["rounds"] == 7 and toy.calls == 6
    assert cert["tau"] == pytest.approx(0.97962521875, abs=1e-6)
    assert cert["worst_case_margin"] == pytest.approx(0.97962521875 - 0.96, abs=1e-5)
    assert class_margin(model.network().forward(res.counterfactuals_encoded), 1)[0] >= 0.96
    assert "bisection" in res.messages["q"]
    assert ex.get_params()["certifier"] is toy
    assert ex._plain_params()["certifier"] == {"certifier": "margin_at_least", "need": 0.96}
    with pytest.raises(rc.errors.ValidationError, match="certify"):
        MILPRobust(model, certifier=object())
    # minimal (the default): the refinement closes on the smallest margin the toy accepts
    toy = MarginAtLeast(0.96)
    res = MILPRobust(model, shift=0.15, tau=0.1, growth=2.0, time_limit=20,
                     certifier=toy).explain(q)
    cert = res.certificates.loc["q"]
    assert res.status["q"] == "found" and cert["delta_status"] == "robust"
    assert 0.96 <= cert["tau"] <= 0.96 * 1.01 and cert["tau"] < 0.97962521875
    assert cert["margin_gap"] < 0.01 * cert["tau"]
