"""ActionableRecourse (AR, MACE's LR baseline): valid, actionable CEs on AR's percentile grid;
the IP optimum equals brute force over the grid (enumerated here, independently of the code);
never closer than MACE's certified δ_min; invalid encodings reported as not covered unless
``plausible_types=True``; clear errors."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.methods import ActionableRecourse, build_explainer, get_method
from robustce.methods.mace import MACE

TAU = 1e-4


@pytest.fixture(scope="module")
def continuous_lr(continuous_lr_fit):
    return continuous_lr_fit


@pytest.fixture(scope="module")
def categorical_lr():
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame({"a": rng.uniform(0, 10, n), "cat": rng.choice(["a", "b", "c"], n)})
    score = frame.a / 10 + (frame.cat == "b") * 0.8 - (frame.cat == "a") * 0.3
    frame["y"] = ((score + rng.normal(0, 0.15, n)) > 0.8).astype(int)
    schema = Schema([Feature("a", "continuous", lower=0.0, upper=10.0),
                     Feature("cat", "categorical", categories=("a", "b", "c"))])
    data = from_frame(frame, "y", schema=schema)
    enc = rc.data.Encoder(schema).fit(data.frame)
    X = enc.transform(data.frame)
    est = LogisticRegression(C=10.0).fit(X, data.y)
    return data, rc.models.wrap(est, enc), est


def _margin(est, X: np.ndarray, target: int) -> np.ndarray:
    z = est.decision_function(np.atleast_2d(X))
    return z if target == 1 else -z


def _grid(col: np.ndarray, size: int) -> np.ndarray:
    """AR's default grid for a continuous column: 1st to 99th percentile, ``size`` points."""
    return np.linspace(np.percentile(col, 1), np.percentile(col, 99), size)


def _cf(res, label) -> np.ndarray:
    return res.counterfactuals_encoded[res.cf_positions(label)[0]]


def _check_ce(ex, q: np.ndarray, cf: np.ndarray, target: int) -> None:
    enc = ex.encoder
    assert int(ex.model.predict(cf[None])[0]) == target  # a plain forward pass
    assert np.all(cf[enc.immutable_mask_] == q[enc.immutable_mask_])
    assert np.all(cf[enc.increasing_mask_] >= q[enc.increasing_mask_])
    for j in range(len(q)):  # every column stays or takes a grid value
        assert cf[j] == q[j] or np.any(np.isclose(ex.column_grids_[j], cf[j], rtol=0, atol=1e-12))


# --- the continuous world ---------------------------------------------------------------------


def test_grid_is_the_percentile_grid(continuous_lr):
    data, model, _ = continuous_lr
    ex = ActionableRecourse(model, data)
    X = model.encoder.transform(data.frame)
    assert len(ex.column_grids_) == 3
    for j in range(3):
        np.testing.assert_allclose(ex.column_grids_[j], _grid(X[:, j], 101), rtol=0, atol=1e-15)


@pytest.mark.parametrize("size", [1, 10**18])
def test_a_grid_size_out_of_range_is_refused_by_name(continuous_lr, size):
    """``grid_size=10**18`` asked numpy for 7 EiB (found by the slow parameter fuzz)."""
    data, model, _ = continuous_lr
    with pytest.raises(rc.errors.RobustCEError, match="grid_size"):
        ActionableRecourse(model, data, grid_size=size)


@pytest.mark.parametrize("norm", ["l1", "linf", "l0"])
def test_ip_optimum_equals_brute_force_over_the_grid(continuous_lr, norm):
    data, model, est = continuous_lr
    G = 9
    ex = ActionableRecourse(model, data, norm=norm, grid_size=G)
    X = model.encoder.transform(data.frame)
    grids = [_grid(X[:, j], G) for j in range(3)]
    queries = data.frame.iloc[:25]
    res = ex.explain(queries)
    Q = model.encoder.transform(queries)
    checked = 0
    for i, label in enumerate(queries.index):
        if res.status[label] == "already_target":
            continue
        t, q = int(res.target_class[label]), Q[i]
        options = [np.r_[q[0], grids[0]],
                   np.r_[q[1], grids[1][grids[1] >= q[1]]],  # b: increase-only
                   np.array([q[2]])]  # c: immutable
        combos = np.array(list(itertools.product(*options)))
        ok = _margin(est, combos, t) >= TAU
        if not ok.any():
            assert res.status[label] == "infeasible"
            continue
        delta = np.abs(combos[ok] - q)  # model space = range-normalised raw deltas
        cost = {"l1": delta.sum(1), "linf": delta.max(1), "l0": (delta > 0).sum(1)}[norm] / 3
        assert res.status[label] == "found"
        cf = _cf(res, label)
        _check_ce(ex, q, cf, t)
        assert res.certificates.loc[label, "distance"] == pytest.approx(cost.min(), abs=1e-9)
        assert res.certificates.loc[label, "ip_status"] == "optimal"
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("norm", ["l1", "linf", "l0"])
def test_never_closer_than_mace(continuous_lr, norm):
    data, model, _ = continuous_lr
    queries = data.frame.iloc[:8]
    ar = ActionableRecourse(model, data, norm=norm).explain(queries)
    mace = MACE(model, data, norm=norm, backend="smt").explain(queries)
    n = 0
    for label in queries.index:
        if ar.status[label] != "found":
            continue
        assert mace.status[label] == "found"
        assert ar.certificates.loc[label, "distance"] >= mace.certificates.loc[label, "delta_min"] - 1e-9
        n += 1
    assert n >= 3


# --- a categorical feature: data-type plausibility -------------------------------------------


def _brute_force_categorical(enc, est, data, q: np.ndarray, t: int, G: int, plausible: bool):
    """min over the grid of the MACE l1 distance (a: |Δ|; one-hot columns ½|Δ| each; J = 2);
    None when nothing on the grid flips the model."""
    X = enc.transform(data.frame)
    a_opts = np.r_[q[0], _grid(X[:, 0], G)]
    if plausible:
        cat_opts = [tuple(r) for r in np.eye(3)]
    else:
        cat_opts = list(itertools.product(*[(0.0, 1.0)] * 3))
    combos = np.array([[a, *c] for a in a_opts for c in cat_opts])
    ok = _margin(est, combos, t) >= TAU
    if not ok.any():
        return None
    delta = np.abs(combos[ok] - q)
    return ((delta[:, 0] + 0.5 * delta[:, 1:].sum(1)) / 2).min()


def test_invalid_encodings_are_not_covered_unless_types_are_plausible(categorical_lr):
    data, model, est = categorical_lr
    G = 11
    queries = data.frame.iloc[:40]
    raw = ActionableRecourse(model, data, grid_size=G).explain(queries)
    typed = ActionableRecourse(model, data, grid_size=G, plausible_types=True).explain(queries)
    Q = model.encoder.transform(queries)
    n_invalid = n_found = 0
    for i, label in enumerate(queries.index):
        if raw.status[label] == "already_target":
            continue
        t, q = int(raw.target_class[label]), Q[i]
        for res, plausible in ((raw, False), (typed, True)):
            best = _brute_force_categorical(model.encoder, est, data, q, t, G, plausible)
            if best is None:
                assert res.status[label] == "infeasible"
                continue
            assert res.certificates.loc[label, "distance"] == pytest.approx(best, abs=1e-9)
        if raw.status[label] == "not_found":
            n_invalid += 1
            assert raw.certificates.loc[label, "plausible"] is False or \
                not raw.certificates.loc[label, "plausible"]
            assert "cat" in raw.messages[label] and "not covered" in raw.messages[label]
            assert len(raw.cf_positions(label)) == 0
        # the typed AR always answers with a valid encoding
        if typed.status[label] == "found":
            n_found += 1
            cf = _cf(typed, label)
            np.testing.assert_array_equal(model.encoder.project(cf[None])[0], cf)
            assert int(model.predict(cf[None])[0]) == t
            assert bool(typed.certificates.loc[label, "plausible"])
            # AR without types is a relaxation: never farther
            assert raw.certificates.loc[label, "distance"] <= \
                typed.certificates.loc[label, "distance"] + 1e-12
        if raw.status[label] == "found":
            _check_ce(ActionableRecourse(model, data, grid_size=G), q, _cf(raw, label), t)
    assert n_invalid >= 1 and n_found >= 3
    assert raw.status_counts()["not_found"] == n_invalid


def test_immutable_override_and_l0_on_categorical(categorical_lr):
    data, model, _ = categorical_lr
    queries = data.frame.iloc[:30]
    ex = ActionableRecourse(model, data, norm="l0", plausible_types=True,
                            actionability={"cat": "immutable"})
    res = ex.explain(queries)
    Q = model.encoder.transform(queries)
    for i, label in enumerate(queries.index):
        if res.status[label] == "found":
            cf = _cf(res, label)
            np.testing.assert_array_equal(cf[1:], Q[i][1:])  # the category never moves
            assert res.certificates.loc[label, "distance"] == pytest.approx(0.5)


# --- registry and errors ------------------------------------------------------------------------


def test_registry_and_params(continuous_lr):
    data, model, _ = continuous_lr
    assert get_method("ar") is ActionableRecourse
    assert get_method("actionable_recourse") is ActionableRecourse
    ex = build_explainer("actionable-recourse", model, data, norm="linf", grid_size=5)
    assert isinstance(ex, ActionableRecourse) and ex.name == "ar"
    again = ActionableRecourse(model, data, **ex.get_params())
    assert again.get_params() == ex.get_params()
    res = ex.explain(data.frame.iloc[:5])
    assert list(res.certificates.columns) == ["distance", "ip_status", "plausible"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bad_input(continuous_lr):
    data, model, est = continuous_lr
    enc = model.encoder
    X = enc.transform(data.frame)
    tree = rc.models.wrap(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, data.y), enc)
    with pytest.raises(UnsupportedModelError, match="DecisionTreeClassifier"):
        ActionableRecourse(tree, data)
    mlp = rc.models.wrap(MLPClassifier(hidden_layer_sizes=(4,), max_iter=50, random_state=0)
                         .fit(X, data.y), enc)
    with pytest.raises(UnsupportedModelError, match="linear"):
        ActionableRecourse(mlp, data)
    for bad in ({"grid_size": 1}, {"grid_size": 2.5}, {"norm": "l2"}, {"norm": {"l1": 0.3}},
                {"tau": 0.0}, {"percentiles": (99, 1)}, {"plausible_types": "yes"},
                {"actionability": {"a": "sideways"}}):
        with pytest.raises(ValidationError):
            ActionableRecourse(model, data, **bad)
    with pytest.raises(ValidationError, match="training data"):
        ActionableRecourse(model)


def test_thermometer_ordinal_with_and_without_type_plausibility():
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame({"a": rng.uniform(0, 10, n),
                          "level": rng.choice(["low", "mid", "high", "top"], n)})
    lv = frame.level.map({"low": 0, "mid": 1, "high": 2, "top": 3})
    frame["y"] = ((frame.a / 10 + lv * 0.3 + rng.normal(0, 0.1, n)) > 1.0).astype(int)
    schema = Schema([Feature("a", "continuous", lower=0.0, upper=10.0),
                     Feature("level", "ordinal", categories=("low", "mid", "high", "top"))])
    data = from_frame(frame, "y", schema=schema)
    enc = rc.data.Encoder(schema).fit(data.frame)
    model = rc.models.wrap(LogisticRegression(C=10.0).fit(enc.transform(data.frame), data.y), enc)
    queries = data.frame.iloc[:40]
    raw = ActionableRecourse(model, data, grid_size=11).explain(queries)
    typed = ActionableRecourse(model, data, grid_size=11, plausible_types=True).explain(queries)
    for res in (raw, typed):
        _, C = res.first_counterfactuals()
        np.testing.assert_array_equal(enc.project(C), C)  # every returned CE is a valid code
    assert typed.status_counts()["not_found"] == 0 and raw.status_counts()["not_found"] >= 1
    for label in queries.index[raw.status == "not_found"]:
        assert "level" in raw.messages[label]
        assert raw.certificates.loc[label, "distance"] <= typed.certificates.loc[label, "distance"]
