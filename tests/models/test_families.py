"""Retraining families on small synthetic data: structure, determinism, validity, δ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models import (
    MLP,
    FamilyValidity,
    ModelFamily,
    continued_family,
    group_family,
    incremental_family,
    proplace_family,
    split_halves,
)

FAST = {"hidden_layers": (6, 3), "epochs": 2, "batch_size": 32, "lr": 5e-3}


@pytest.fixture(scope="module")
def loan():
    data = rc.datasets.load("synthetic_loan", n_samples=500, random_state=3)
    return data.split(test_size=0.2, random_state=0)


@pytest.fixture(scope="module")
def proplace(loan):
    train, test = loan
    base, fam = proplace_family(train, FAST, n_retrain=3, n_drop=3, drop_fraction=0.05, test=test,
                                random_state=0)
    return base, fam


def test_proplace_family_structure(loan, proplace):
    train, test = loan
    base, fam = proplace
    assert isinstance(fam, ModelFamily) and fam.protocol == "proplace" and len(fam) == 6
    assert fam.meta["kinds"] == ["retrain_full"] * 3 + ["drop_subset"] * 3
    assert len(set(fam.seeds)) == 6 and fam.meta["base_seed"] not in fam.seeds
    d1, d2 = fam.meta["d1_index"], fam.meta["d2_index"]
    assert len(d1) == len(train) // 2 and len(d1) + len(d2) == len(train)
    assert set(d1).isdisjoint(d2) and set(d1) | set(d2) == set(train.frame.index)
    # the same halves as split_halves with the same seed
    h1, h2 = split_halves(train, random_state=0)
    assert list(h1.frame.index) == list(d1) and list(h2.frame.index) == list(d2)
    dropped = fam.meta["dropped_index"]
    assert len(dropped) == 3 and all(len(d) == round(0.05 * len(d1)) for d in dropped)
    assert all(set(d) <= set(d1) for d in dropped)
    assert len({tuple(d) for d in dropped}) == 3  # a different subset per model
    # one model space for all
    assert all(m.encoder is base.encoder for m in fam)
    assert fam.accuracies.shape == (6,) and np.all((fam.accuracies > 0) & (fam.accuracies <= 1))
    np.testing.assert_allclose(fam.accuracies, fam.score(test))
    assert 0 < fam.meta["base_accuracy"] <= 1
    assert "proplace" in repr(fam)
    assert fam.summary()["n_models"] == 6


def test_proplace_models_are_what_the_protocol_says(loan, proplace):
    train, _ = loan
    base, fam = proplace
    d1 = train.subset(fam.meta["d1_index"])
    again = MLP(**{**FAST, "random_state": fam.meta["base_seed"]}).fit(d1, encoder=base.encoder)
    np.testing.assert_array_equal(again.network().flat(), base.network().flat())
    full = MLP(**{**FAST, "random_state": fam.seeds[0]}).fit(train, encoder=base.encoder)
    np.testing.assert_array_equal(full.network().flat(), fam[0].network().flat())
    keep = ~d1.frame.index.isin(fam.meta["dropped_index"][0])
    dropped = MLP(**{**FAST, "random_state": fam.seeds[3]}).fit(d1.subset(keep), encoder=base.encoder)
    np.testing.assert_array_equal(dropped.network().flat(), fam[3].network().flat())


def test_families_are_identical_for_any_n_jobs(loan):
    train, _ = loan
    small = train.subset(np.arange(200))
    kw = dict(n_retrain=2, n_drop=1, random_state=5)
    b1, f1 = proplace_family(small, FAST, n_jobs=1, **kw)
    b2, f2 = proplace_family(small, FAST, n_jobs=2, **kw)
    np.testing.assert_array_equal(b1.network().flat(), b2.network().flat())
    for m1, m2 in zip(f1, f2, strict=True):
        np.testing.assert_array_equal(m1.network().flat(), m2.network().flat())
    i1 = incremental_family(b1, small, n_models=2, epochs=1, random_state=1, n_jobs=1)
    i2 = incremental_family(b1, small, n_models=2, epochs=1, random_state=1, n_jobs=2)
    for m1, m2 in zip(i1, i2, strict=True):
        np.testing.assert_array_equal(m1.network().flat(), m2.network().flat())


def test_predict_and_validity(loan, proplace):
    _, test = loan
    base, fam = proplace
    X = base.encoder.transform(test.frame)
    P = fam.predict(test.frame)
    assert P.shape == (len(fam), len(test))
    np.testing.assert_array_equal(P, fam.predict(X))
    np.testing.assert_array_equal(P[2], fam[2].predict(X))
    v = fam.validity(X, 1)
    assert isinstance(v, FamilyValidity)
    np.testing.assert_allclose(v.per_ce, (P == 1).mean(axis=0))
    np.testing.assert_allclose(v.per_model, (P == 1).mean(axis=1))
    assert v.mean == pytest.approx((P == 1).mean())
    # per-row targets; complementary targets sum to one
    v0 = fam.validity(X, 0)
    np.testing.assert_allclose(v.per_ce + v0.per_ce, 1.0)
    targets = np.where(np.arange(len(X)) % 2 == 0, 1, 0)
    vt = fam.validity(test.frame, targets)
    np.testing.assert_allclose(vt.per_ce, np.where(targets == 1, v.per_ce, v0.per_ce))
    # rows without a CE (NaN) are left out
    Xn = X[:5].copy()
    Xn[1] = np.nan
    vn = fam.validity(Xn, 1)
    assert np.isnan(vn.per_ce[1]) and not np.isnan(vn.per_ce[[0, 2, 3, 4]]).any()
    np.testing.assert_allclose(vn.per_ce[[0, 2, 3, 4]], v.per_ce[[0, 2, 3, 4]])
    frame = test.frame.iloc[:3].copy()
    frame.iloc[0] = np.nan
    vf = fam.validity(frame, 1)
    assert np.isnan(vf.per_ce[0]) and vf.per_ce[1] == v.per_ce[1]
    nothing = fam.validity(np.full((2, X.shape[1]), np.nan), 1)
    assert np.isnan(nothing.mean)
    with pytest.raises(ValidationError, match="target_class"):
        fam.validity(X, [1, 0])


def test_validity_on_a_handmade_family():
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 4.0]})
    schema = rc.data.infer_schema(df, kinds={"x": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)

    class Threshold(rc.models.Model):
        def __init__(self, t):
            self.encoder, self.t = enc, t

        def logits(self, X):
            return (self.encode(X)[:, :1] - self.t) * 10

    fam = ModelFamily([Threshold(0.3), Threshold(0.6), Threshold(0.9)], "hand", [0, 1, 2])
    cfs = np.array([[0.1], [0.5], [0.7], [1.0]])
    v = fam.validity(cfs, 1)
    np.testing.assert_allclose(v.per_ce, [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(v.per_model, [3 / 4, 2 / 4, 1 / 4])
    assert v.mean == pytest.approx(0.5)
    with pytest.raises(UnsupportedModelError):
        fam.empirical_deltas(fam[0])


def test_empirical_deltas(proplace, loan):
    train, _ = loan
    base, fam = proplace
    deltas = fam.empirical_deltas(base)
    assert deltas.shape == (len(fam),) and np.all(deltas > 0)
    expected = [rc.robustness.empirical_delta(base, m) for m in fam]
    np.testing.assert_allclose(deltas, expected)
    assert ModelFamily([base], "self", [0]).empirical_deltas(base)[0] == 0.0


def test_incremental_family_mlp(loan, proplace):
    train, test = loan
    base, fam = proplace
    d2 = train.subset(fam.meta["d2_index"])
    before = base.network().flat().copy()
    inc = incremental_family(base, d2, fraction=0.2, epochs=2, n_models=3, lr=1e-3, test=test,
                             random_state=0)
    np.testing.assert_array_equal(base.network().flat(), before)  # the base is not modified
    assert inc.protocol == "incremental" and len(inc) == 3
    rows = inc.meta["rows"]
    assert all(len(r) == round(0.2 * len(d2)) for r in rows) and len({tuple(r) for r in rows}) == 3
    deltas = inc.meta["empirical_deltas"]
    np.testing.assert_allclose(deltas, inc.empirical_deltas(base))
    # each Adam step moves a weight by about lr at most
    steps = 2 * int(np.ceil(round(0.2 * len(d2)) / base.batch_size))
    assert np.all(deltas > 0) and np.all(deltas <= steps * 1e-3 * 1.5)
    assert inc.accuracies.shape == (3,)
    assert inc.meta["base_accuracy"] == fam.meta["base_accuracy"]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_incremental_family_sklearn_partial_fit(loan):
    from sklearn.neural_network import MLPClassifier

    train, test = loan
    enc = rc.data.Encoder(train.schema).fit(train.frame)
    X = enc.transform(train.frame)
    clf = MLPClassifier(hidden_layer_sizes=(8,), max_iter=50, random_state=0).fit(X, train.y)
    base = rc.models.wrap(clf, enc, class_names=train.class_names)
    inc = incremental_family(base, train, fraction=0.3, epochs=2, n_models=2, random_state=0, test=test)
    assert len(inc) == 2 and all(isinstance(m, rc.models.SklearnModel) for m in inc)
    assert np.all(inc.meta["empirical_deltas"] > 0)
    np.testing.assert_array_equal(base.network().flat(), rc.models.wrap(clf, enc).network().flat())
    # deterministic
    again = incremental_family(base, train, fraction=0.3, epochs=2, n_models=2, random_state=0)
    for a, b in zip(inc, again, strict=True):
        np.testing.assert_array_equal(a.network().flat(), b.network().flat())
    from sklearn.tree import DecisionTreeClassifier

    tree = rc.models.wrap(DecisionTreeClassifier(max_depth=2).fit(X, train.y), enc)
    with pytest.raises(UnsupportedModelError, match="partial_fit"):
        incremental_family(tree, train, n_models=1)


def test_proplace_with_a_sklearn_estimator(loan):
    from sklearn.linear_model import LogisticRegression

    train, test = loan
    base, fam = proplace_family(train, LogisticRegression(max_iter=500), n_retrain=2, n_drop=2,
                                test=test, random_state=0)
    assert isinstance(base, rc.models.SklearnModel) and len(fam) == 4
    assert fam.accuracies.min() > 0.6
    assert np.all(fam.empirical_deltas(base) > 0)


def test_group_family(loan):
    train, _ = loan
    groups = pd.Series(np.where(train.frame["age"] < 40, "young", "older"), index=train.frame.index)
    data = rc.data.Dataset(train.frame, train.target, train.schema, class_names=train.class_names,
                           groups=groups)
    fam = group_family(data, FAST, test_size=0.25, random_state=0)
    assert fam.protocol == "group" and fam.meta["groups"] == ["older", "young"]
    assert fam.meta["sizes"] == [int((groups == "older").sum()), int((groups == "young").sum())]
    assert fam.accuracies.shape == (2,)
    assert all(m.encoder is fam[0].encoder for m in fam)
    test_idx = fam.meta["test_index"][1]
    assert set(test_idx) <= set(groups[groups == "young"].index)
    whole = group_family(data, FAST, test_size=None, random_state=0)
    assert whole.accuracies is None
    with pytest.raises(ValidationError, match="no groups"):
        group_family(train, FAST)


def test_family_argument_validation(loan, proplace):
    train, _ = loan
    base, _ = proplace
    with pytest.raises(ValidationError, match="n_retrain"):
        proplace_family(train, FAST, n_retrain=0, n_drop=0)
    with pytest.raises(ValidationError, match="drop_fraction"):
        proplace_family(train, FAST, drop_fraction=0)
    with pytest.raises(ValidationError, match="Dataset"):
        proplace_family(train.frame, FAST)
    with pytest.raises(ValidationError, match="model parameters"):
        proplace_family(train, "mlp", n_retrain=1, n_drop=0)
    with pytest.raises(ValidationError, match="fraction"):
        incremental_family(base, train, fraction=0)
    with pytest.raises(ValidationError, match="epochs"):
        incremental_family(base, train, epochs=0)
    with pytest.raises(ValidationError, match="lr"):
        incremental_family(base, train, lr=-1)
    with pytest.raises(ValidationError, match="at least one model"):
        ModelFamily([], "empty", [])
    with pytest.raises(ValidationError, match="seeds"):
        ModelFamily([base], "x", [1, 2])


def test_continued_family_trains_the_proplace_base_on_over_d2(loan, proplace):
    train, test = loan
    base, fam = continued_family(train, FAST, n_models=2, fraction=0.5, epochs=1, test=test,
                                 random_state=0)
    # the same halves and base seed as proplace_family: the same base model
    pbase, pfam = proplace
    assert list(fam.meta["d1_index"]) == list(pfam.meta["d1_index"])
    np.testing.assert_array_equal(base.predict(test.frame), pbase.predict(test.frame))
    assert fam.protocol == "continued" and len(fam) == 2 and fam.accuracies.shape == (2,)
    # each member saw half of D2 only, and moved from the base by a small shift
    d2 = set(fam.meta["d2_index"])
    for rows in fam.meta["rows"]:
        assert set(rows) <= d2 and len(rows) == round(0.5 * len(d2))
    moved = fam.empirical_deltas(base)
    retrained = pfam.empirical_deltas(pbase)
    assert np.all(moved > 0) and moved.max() < np.median(retrained)


# --- the authors' construction (junqi-jiang/proplace, clfutils.py; issue 31) ---------------------
def test_shared_drop_leaves_the_same_rows_out_of_every_leave_out_model(loan, proplace):
    train, _ = loan
    _, own = proplace
    base, fam = proplace_family(train, FAST, n_retrain=1, n_drop=3, drop_fraction=0.05,
                                random_state=0, shared_drop=True)
    dropped = fam.meta["dropped_index"]
    assert len(dropped) == 3 and fam.meta["shared_drop"]
    assert all(list(d) == list(dropped[0]) for d in dropped)  # one set, drawn once
    assert len({tuple(d) for d in own.meta["dropped_index"]}) == 3  # the default: one per model
    # and the leave-out models were trained on D1 minus that set, with their own seeds
    d1 = train.subset(fam.meta["d1_index"])
    keep = ~d1.frame.index.isin(dropped[0])
    for i in (1, 3):
        again = MLP(**{**FAST, "random_state": fam.seeds[i]}).fit(d1.subset(keep), encoder=base.encoder)
        np.testing.assert_array_equal(again.network().flat(), fam[i].network().flat())
    assert len(set(fam.seeds)) == 4


def test_member_params_give_the_retrained_models_their_own_layers(loan):
    train, _ = loan
    base, fam = proplace_family(train, FAST, n_retrain=1, n_drop=1, random_state=0,
                                member_params={**FAST, "hidden_layers": (9, 9)})
    assert base.network().layer_sizes[1:-1] == [6, 3]
    assert [m.network().layer_sizes[1:-1] for m in fam] == [[9, 9], [9, 9]]
    again = MLP(**{**FAST, "hidden_layers": (9, 9), "random_state": fam.seeds[0]}).fit(
        train, encoder=base.encoder)
    np.testing.assert_array_equal(again.network().flat(), fam[0].network().flat())


@pytest.mark.filterwarnings("ignore::robustce.errors.ConstantModelWarning")  # untrained on purpose
def test_same_init_members_start_from_the_base_models_initial_weights(loan):
    train, _ = loan
    # a learning rate so small that every trained network is its initial weights to 1e-6
    frozen = {**FAST, "lr": 1e-12, "epochs": 1}
    kw = dict(n_retrain=2, n_drop=3, random_state=0)
    base, plain = proplace_family(train, frozen, **kw)
    base2, fam = proplace_family(train, frozen, same_init_retrain=[1], same_init_drop=[3], **kw)
    start = base.network().flat()
    np.testing.assert_array_equal(base2.network().flat(), start)
    for i in (0, 4):  # retrained 1, leave-out 3
        assert fam.seeds[i] == fam.meta["base_seed"]
        assert np.abs(fam[i].network().flat() - start).max() < 1e-6
        assert np.abs(plain[i].network().flat() - start).max() > 1e-2  # a new seed, new weights
    assert fam.meta["same_init"] == ["retrain_full:1", "drop_subset:3"]
    # the other members are untouched
    for i in (1, 2, 3):
        assert fam.seeds[i] == plain.seeds[i]
        np.testing.assert_array_equal(fam[i].network().flat(), plain[i].network().flat())


@pytest.mark.parametrize(("kw", "message"), [
    ({"same_init_retrain": [2]}, "same_init_retrain: positions must be integers in 1..1"),
    ({"same_init_drop": [0]}, "same_init_drop: positions must be integers in 1..1"),
    ({"same_init_drop": [1, 1]}, "repeated positions"),
    ({"same_init_retrain": 1}, "sequence of 1-based positions"),
])
def test_same_init_positions_are_checked(loan, kw, message):
    train, _ = loan
    with pytest.raises(ValidationError, match=message):
        proplace_family(train, FAST, n_retrain=1, n_drop=1, **kw)
