"""Fixtures for the explainer tests: small MLPs on diabetes and (subsampled) adult.

Datasets come from ``ROBUSTCE_DATA`` (the offline copy, set by ``tests/conftest.py``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import robustce as rc
from robustce.models.network import class_margin
from robustce.robustness.attack import sign_attack


def _load(name: str):
    try:
        return rc.datasets.load(name)
    except rc.errors.DatasetUnavailableError as exc:  # pragma: no cover - offline copy missing
        pytest.skip(f"dataset {name!r} unavailable: {exc}")


@pytest.fixture(scope="session")
def diabetes_setup():
    """(train, test, model) on diabetes: a 20-10 ReLU MLP, loader schema (3 immutables)."""
    data = _load("diabetes")
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((20, 10), epochs=60, random_state=0).fit(train)
    return train, test, model


@pytest.fixture(scope="session")
def adult_setup():
    """(train, test, model) on a 4 000-row subsample of CARLA adult (5 immutables)."""
    data = _load("adult")
    rows = np.random.default_rng(0).choice(len(data), size=4000, replace=False)
    small = data.subset(np.sort(rows))
    train, test = small.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((20, 10), epochs=15, random_state=0).fit(train)
    return train, test, model


def _free_diabetes():
    """Diabetes with its three immutable features made free (the loader marks continuous
    features immutable, so no training point shares a query's values and neighbour-based
    methods have no candidates), a small 10-5 MLP. Skips when diabetes is unavailable."""
    data = _load("diabetes")
    act = {name: "free" for name in data.schema.immutable}
    data = dataclasses.replace(data, schema=data.schema.with_actionability(**act))
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((10, 5), epochs=40, random_state=0).fit(train)
    return train, test, model


def _assert_delta_robust_independently(model, res, shift, n_samples: int = 5000) -> None:
    """Every returned CE keeps its target class under ``n_samples`` sampled networks of the
    shift set and under a sign-gradient weight attack (vertices of Δ) — evidence independent
    of the certifier that called them robust."""
    cfs = res.counterfactuals_encoded
    owner = res.counterfactuals["query_id"].to_numpy()
    targets = res.target_class.loc[owner].to_numpy()
    net = model.network()
    z = shift.sample(net, n_samples, random_state=1).forward(cfs)  # (n, m, k)
    for j, t in enumerate(targets):
        assert (class_margin(z[:, j], int(t)) > 0).all(), f"a sampled network flips CE {j}"
    worst, _ = sign_attack(net, cfs, shift, targets, steps=8)
    assert (np.asarray(worst) > 0).all(), f"the weight attack flips a CE: {worst}"


@pytest.fixture(scope="session")
def free_diabetes_setup():
    """(train, test, model): diabetes with its immutables made free, a 10-5 MLP."""
    return _free_diabetes()


@pytest.fixture(scope="session")
def check_delta_robust():
    """``check(model, explanations, shift)``: every CE survives sampling and a weight attack."""
    return _assert_delta_robust_independently


def _assert_feasible(res, model, queries):
    """The found CEs reach their target on the model, keep immutables, respect monotone
    actionability and are valid encodings; returns (positions, CEs, encoded queries)."""
    enc = model.encoder
    pos, C = res.first_counterfactuals()
    assert (model.predict(C) == res.target_class.to_numpy()[pos]).all()
    X = enc.transform(queries)[pos]
    np.testing.assert_array_equal(C[:, enc.immutable_mask_], X[:, enc.immutable_mask_])
    assert np.all(C[:, enc.increasing_mask_] >= X[:, enc.increasing_mask_] - 1e-12)
    assert np.all(C[:, enc.decreasing_mask_] <= X[:, enc.decreasing_mask_] + 1e-12)
    np.testing.assert_array_equal(enc.project(C), C)
    return pos, C, X


@pytest.fixture(scope="session")
def check_feasible():
    """``check(explanations, model, queries) -> (positions, CEs, X)``: see _assert_feasible."""
    return _assert_feasible


@pytest.fixture(scope="module")
def continuous_lr_fit():
    """(data, model, estimator): a scikit-learn logistic regression on three continuous
    features — ``b`` increase-only, ``c`` immutable — wrapped as a robustce model (MACE's and
    AR's LP-checkable world)."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    from robustce.data import Feature, Schema, from_frame

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.uniform(0, 10, 300), "b": rng.uniform(-5, 5, 300),
                          "c": rng.uniform(0, 1, 300)})
    frame["y"] = ((frame.a / 10 + frame.b / 10 + frame.c + rng.normal(0, 0.2, 300)) > 1.0).astype(int)
    schema = Schema([Feature("a", "continuous", lower=0.0, upper=10.0),
                     Feature("b", "continuous", lower=-5.0, upper=5.0, actionability="increase"),
                     Feature("c", "continuous", lower=0.0, upper=1.0, actionability="immutable")])
    data = from_frame(frame, "y", schema=schema)
    enc = rc.data.Encoder(schema).fit(data.frame)
    est = LogisticRegression().fit(enc.transform(data.frame), data.y)
    return data, rc.models.wrap(est, enc), est
