"""The exact (δ, ε)-test for tree ensembles against independent evidence: brute force over
the corners of the set on tiny ensembles, sampled and corner ensembles on real boosters and
forests, and every witness checked by its own trees."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.boosting import AdditiveTrees
from robustce.models.sklearn_import import from_sklearn
from robustce.models.trees import TreeView
from robustce.robustness import EnsembleCertifier, EnsembleShift, ensemble_worst_case
from robustce.robustness.certifier import CertStatus


def _random_tree(rng: np.random.Generator, d: int, n_classes: int, boosted: bool) -> TreeView:
    """A depth-2 tree: root, two internal children, four leaves (node ids 0..6)."""
    feature = np.array([rng.integers(d), rng.integers(d), rng.integers(d), -1, -1, -1, -1])
    threshold = np.r_[rng.uniform(0.2, 0.8, 3), np.full(4, np.nan)]
    left = np.array([1, 3, 5, -1, -1, -1, -1])
    right = np.array([2, 4, 6, -1, -1, -1, -1])
    if boosted:
        value = rng.normal(0, 1, (7, 1))
    else:
        value = rng.dirichlet(np.ones(n_classes), 7)
    return TreeView(feature, threshold, left, right, value, d)


def _votes(model, X):
    """Summed votes by the model's own arrays (not the certificate's code)."""
    if isinstance(model, AdditiveTrees):
        z = model.logits(X)
        return np.hstack([np.zeros_like(z), z]) if z.shape[1] == 1 else z
    return sum(t.predict_proba(X) for t in model)


def _perturbed(model, thr_moves, value_moves):
    """The model with every internal node's threshold and every leaf value moved."""
    trees = model.trees if isinstance(model, AdditiveTrees) else model
    out = []
    for t, dt, dv in zip(trees, thr_moves, value_moves, strict=True):
        thr = t.threshold.copy()
        thr[t.left >= 0] += dt
        out.append(TreeView(t.feature, thr, t.left, t.right, t.value + dv, t.n_features))
    if isinstance(model, AdditiveTrees):
        return AdditiveTrees(out, model.output, model.baseline)
    return out


def _brute_worst(model, x, target, delta, eps):
    """min over the set's corners of the target's summed-vote margin. Routing is monotone in
    each threshold, so the corners θ ± ε realise every routing; the margin is linear in the
    leaf values, so its minimum per rival is at v[t] − δ, v[k] + δ."""
    trees = model.trees if isinstance(model, AdditiveTrees) else model
    n_int = [int((t.left >= 0).sum()) for t in trees]
    n_cls = _votes(model, x[None]).shape[1]
    best = np.inf
    for signs in itertools.product(sorted({-eps, eps}), repeat=sum(n_int)):
        moves = np.split(np.array(signs), np.cumsum(n_int)[:-1])
        for k in range(n_cls):
            if k == target:
                continue
            dv = []
            for m, t in enumerate(trees):
                v = np.zeros_like(t.value)
                if isinstance(model, AdditiveTrees):
                    col = 1 if model.n_logits == 1 else int(model.output[m])
                    v[:, 0] = delta * (int(col == k) - int(col == target))
                else:
                    v[:, target] -= delta
                    v[:, k] += delta
                dv.append(v)
            votes = _votes(_perturbed(model, moves, dv), x[None])[0]
            best = min(best, votes[target] - votes[k])
    return best


@pytest.mark.parametrize("kind", ["forest2", pytest.param("forest3", marks=pytest.mark.slow), "boosted2",
                                  pytest.param("boosted3", marks=pytest.mark.slow)])
def test_worst_case_equals_brute_force_on_tiny_ensembles(kind):
    rng = np.random.default_rng({"forest2": 0, "forest3": 1, "boosted2": 2, "boosted3": 3}[kind])
    d = 2
    n_cls = int(kind[-1])
    boosted = kind.startswith("boosted")
    if boosted:
        n_logits = 1 if n_cls == 2 else n_cls
        trees = [_random_tree(rng, d, n_cls, True) for _ in range(3)]
        model = AdditiveTrees(trees, np.arange(3) % n_logits, rng.normal(0, 0.3, n_logits))
    else:
        model = [_random_tree(rng, d, n_cls, False) for _ in range(3)]
    X = rng.uniform(0, 1, (8, d))
    targets = rng.integers(0, n_cls, len(X))
    for delta, eps in [(0.0, 0.0), (0.05, 0.0), (0.0, 0.1), (0.1, 0.15)]:
        got = ensemble_worst_case(model, X, EnsembleShift(delta, eps), targets)
        want = np.array([_brute_worst(model, x, t, delta, eps) for x, t in zip(X, targets, strict=True)])
        np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(5)
    X = rng.random((600, 4))
    y = ((X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=600)) > 1).astype(int)
    df = pd.DataFrame(X, columns=list("abcd"))
    xgboost = pytest.importorskip("xgboost")
    lightgbm = pytest.importorskip("lightgbm")
    from sklearn.ensemble import RandomForestClassifier

    out = {}
    for name, est in [("xgboost", xgboost.XGBClassifier(n_estimators=40, max_depth=3)),
                      ("lightgbm", lightgbm.LGBMClassifier(n_estimators=30, num_leaves=7,
                                                           verbose=-1)),
                      ("forest", RandomForestClassifier(15, max_depth=4, random_state=0))]:
        est.fit(df, y)
        model = from_sklearn(est, df)
        out[name] = (model, model.encoder.transform(df))
    return out


def _parts(model):
    return model.additive_trees() if model.kind == "boosted" else model.trees()


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "forest"])
def test_sampled_and_corner_ensembles_never_flip_a_certified_ce(fitted, name):
    model, X = fitted[name]
    shift = EnsembleShift(0.02, 0.02)
    certs = EnsembleCertifier(shift).certify(model, X[:300], None)
    robust = certs.robust
    assert robust.any() and certs.not_robust.any()
    parts = _parts(model)
    trees = parts.trees if isinstance(parts, AdditiveTrees) else parts
    rng = np.random.default_rng(0)
    Xr, t = X[:300][robust], certs.target_class[robust]
    for s in range(120):
        corner = s % 2 == 0  # half the draws at the corners of the box
        draw = (lambda size: rng.choice([-1.0, 1.0], size)) if corner else (
            lambda size: rng.uniform(-1, 1, size))
        moves = [shift.epsilon * draw(int((tr.left >= 0).sum())) for tr in trees]
        dv = [shift.delta * draw(tr.value.shape) for tr in trees]
        pred = np.argmax(_votes(_perturbed(parts, moves, dv), Xr), axis=1)
        assert np.array_equal(pred, t), f"draw {s} flips a certified CE"


@pytest.mark.parametrize("name", ["xgboost", "lightgbm", "forest"])
def test_every_witness_is_inside_the_set_and_flips_the_ce(fitted, name):
    model, X = fitted[name]
    shift = EnsembleShift(0.03, 0.05)
    certs = EnsembleCertifier(shift).certify(model, X[:200], None)
    parts = _parts(model)
    trees = parts.trees if isinstance(parts, AdditiveTrees) else parts
    bad = np.flatnonzero(certs.not_robust)
    assert bad.size > 0
    for i in bad:
        w = certs.evidence[i]
        wt = w.trees if isinstance(w, AdditiveTrees) else w
        if isinstance(w, AdditiveTrees):
            np.testing.assert_array_equal(w.baseline, parts.baseline)
            np.testing.assert_array_equal(w.output, parts.output)
        for a, b in zip(trees, wt, strict=True):
            np.testing.assert_array_equal(a.feature, b.feature)
            np.testing.assert_array_equal(a.left, b.left)
            inner = a.left >= 0
            assert np.all(np.abs(a.threshold[inner] - b.threshold[inner]) <= shift.epsilon)
            assert np.all(np.abs(a.value - b.value) <= shift.delta * (1 + 1e-12))
        votes = _votes(w, X[i][None])[0]
        assert int(np.argmax(votes)) != certs.target_class[i]
        assert certs.upper[i] == pytest.approx(
            votes[certs.target_class[i]] - np.delete(votes, certs.target_class[i]).max())


def test_the_empty_set_certifies_exactly_the_predicted_class(fitted):
    model, X = fitted["xgboost"]
    pred = model.predict(X)
    certs = EnsembleCertifier(0.0).certify(model, X, pred)
    margins = np.abs(certs.lower)
    clear = margins > 1e-6
    assert certs.robust[clear].all()
    other = EnsembleCertifier(0.0).certify(model, X, 1 - pred)
    assert other.not_robust[clear].all()


def test_a_larger_set_certifies_no_more_ces(fitted):
    model, X = fitted["lightgbm"]
    small = EnsembleCertifier(EnsembleShift(0.01, 0.01)).certify(model, X, None).robust
    large = EnsembleCertifier(EnsembleShift(0.05, 0.03)).certify(model, X, None).robust
    assert not np.any(large & ~small)
    assert large.sum() < small.sum()


def test_per_column_epsilon_only_moves_those_columns(fitted):
    model, X = fitted["forest"]
    eps = np.zeros(X.shape[1])
    eps[2:] = 0.2  # columns c, d carry no signal
    per_col = ensemble_worst_case(model, X, EnsembleShift(0.0, eps))
    everywhere = ensemble_worst_case(model, X, EnsembleShift(0.0, 0.2))
    assert np.all(per_col >= everywhere - 1e-12)
    assert np.any(per_col > everywhere)


@pytest.mark.parametrize("kwargs, match", [
    ({"delta": -0.1}, "delta"), ({"epsilon": -1e-3}, "epsilon"), ({"epsilon": np.nan}, "epsilon"),
    ({"epsilon": [[0.1]]}, "epsilon"), ({"delta": float("inf")}, "delta")])
def test_bad_sets_are_refused(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        EnsembleShift(**kwargs)


class _Opaque:
    """Not a number, not a sequence (hypothesis found this input raising a bare TypeError)."""


@pytest.mark.parametrize("epsilon", [
    _Opaque(), [_Opaque()], "0.1", ["0.1"], b"1", True, [True, 0.1], np.array(["0.1"]),
    np.array([True]), {"a": 0.1}, [], [[0.1], [0.2, 0.3]], None, 10 ** 400])
def test_non_numeric_epsilon_is_refused_by_name(epsilon):
    """Objects, strings, bools (also inside a list) and ragged lists: a ValidationError that
    names epsilon, never a bare TypeError from the float conversion or a silent str -> float."""
    with pytest.raises(ValidationError, match="epsilon must be a finite number"):
        EnsembleShift(delta=0.01, epsilon=epsilon)


def test_numeric_epsilons_are_kept_as_floats():
    assert EnsembleShift(0.0, np.float32(0.5)).epsilon == 0.5
    assert EnsembleShift(0.0, 2).params() == {"delta": 0.0, "epsilon": 2.0}
    np.testing.assert_array_equal(EnsembleShift(0.0, (1, 0.5)).epsilon, [1.0, 0.5])
    np.testing.assert_array_equal(EnsembleShift(0.0, np.array([1, 2])).epsilon, [1.0, 2.0])


def test_bad_inputs_get_typed_errors(fitted):
    model, X = fitted["xgboost"]
    with pytest.raises(ValidationError, match="epsilon has 3 entries"):
        EnsembleCertifier(EnsembleShift(0.0, [0.1, 0.1, 0.1])).certify(model, X[:2], None)
    with pytest.raises(ValidationError, match="shape"):
        EnsembleCertifier(0.1).certify(model, X[:2, :3], None)
    with pytest.raises(UnsupportedModelError, match="tree model"):
        EnsembleCertifier(0.1).certify(object(), X[:2], None)
    tree = _parts(fitted["forest"][0])[0]
    broken = TreeView(tree.feature, np.where(tree.left >= 0, np.nan, tree.threshold), tree.left,
                      tree.right, tree.value, tree.n_features)
    with pytest.raises(ValidationError, match="NaN"):
        EnsembleCertifier(0.1).certify([broken], X[:2], None)
    certs = EnsembleCertifier(0.1).certify(model, np.vstack([X[:1], np.full((1, 4), np.nan)]), 1)
    assert certs.status[1] is CertStatus.ERROR and not certs.robust[1]


def test_the_metrics_take_the_ensemble_set_unchanged(fitted):
    """``evaluate(..., shift=EnsembleShift)`` reports v_delta from the (δ, ε)-test."""
    from robustce.data.dataset import from_frame
    from robustce.evaluation.metrics import evaluate
    from robustce.methods import NearestNeighbour

    model, X = fitted["xgboost"]
    frame = model.encoder.inverse_transform(X)
    data = from_frame(frame.assign(y=model.predict(X)), "y")
    res = NearestNeighbour(model, data).explain(frame[model.predict(X) == 0].iloc[:20])
    shift = EnsembleShift(0.02, 0.02)
    got = evaluate(res, model, data=data, shift=shift, metrics=["v_delta"])["v_delta"]
    pos, C = res.first_counterfactuals()
    want = EnsembleCertifier(shift).certify(model, C, 1).robust
    np.testing.assert_array_equal(got.to_numpy(), want.astype(float))
    assert 0 < want.sum() < len(want)


def test_a_tie_the_witness_does_not_break_is_inconclusive():
    """A leaf whose two classes tie keeps class 0 (the first maximum wins): worst margin 0,
    no member of the (0, 0)-set flips it, so it is neither robust nor not_robust."""
    tree = TreeView(np.array([0, -1, -1]), np.array([0.5, np.nan, np.nan]), np.array([1, -1, -1]),
                    np.array([2, -1, -1]), np.array([[0.5, 0.5], [0.5, 0.5], [0.9, 0.1]]), 1)
    certs = EnsembleCertifier(EnsembleShift(0.0, 0.0)).certify([tree], np.array([[0.2], [0.8]]), 0)
    assert certs.status[0] is CertStatus.INCONCLUSIVE and certs.evidence[0] is None
    assert certs.status[1] is CertStatus.ROBUST
    flipped = EnsembleCertifier(EnsembleShift(0.01, 0.0)).certify([tree], np.array([[0.2]]), 0)
    assert flipped.status[0] is CertStatus.NOT_ROBUST
