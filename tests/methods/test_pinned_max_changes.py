"""``max_changes`` counts a multi-level categorical once, at exactly the cap: on a tiny grid (a, b
integers 0..6, city one of four levels, one-hot), a CE that changes k raw features, the city
among them, is allowed at ``max_changes = k`` and refused at ``k − 1``. Changed features are
counted here on the raw CE, not by the library; the optimum under each cap is brute-forced over
every grid point the forest puts in the target class."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier

import robustce as rc
from robustce.data import Constraints, Feature, Schema, from_frame
from robustce.methods import MILPNearest
from robustce.nearest import feature_distance

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CITIES = ("n", "e", "s", "w")


def _data():
    rng = np.random.default_rng(4)
    n = 300
    a, b = rng.integers(0, 7, n), rng.integers(0, 7, n)
    city = rng.choice(CITIES, n)
    y = ((city == "w") & (a >= 3) & (b >= 3)).astype(int)  # from n/e/s: up to three changes
    df = pd.DataFrame({"a": a, "b": b, "city": city, "y": y})
    schema = Schema([Feature("a", "integer", 0, 6), Feature("b", "integer", 0, 6),
                     Feature("city", "categorical", categories=CITIES)])
    return from_frame(df, "y", schema)


@pytest.fixture(scope="module")
def setup():
    data = _data()
    enc = rc.models.MLP((2,), epochs=1, random_state=0).fit(data).encoder
    rf = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    rf.fit(enc.transform(data.frame), data.y)
    forest = rc.models.wrap(rf, enc)
    grid = pd.DataFrame(list(itertools.product(range(7), range(7), CITIES)),
                        columns=["a", "b", "city"])
    G = enc.transform(grid)
    rej = np.flatnonzero(forest.predict(data.frame) == 0)
    queries = data.frame.iloc[rej[:40]]
    return data, enc, forest, grid, G, forest.predict(G) == 1, queries


def _n_changed(raw: pd.DataFrame, q: pd.Series) -> np.ndarray:
    """Raw features that differ from the query, each counted once (the city too)."""
    return ((raw["a"].to_numpy() != q["a"]).astype(int) + (raw["b"].to_numpy() != q["b"])
            + (raw["city"].to_numpy() != q["city"]))


def _brute(enc, q_row, grid, G, target, cap):
    """The least l1 distance over grid points in the target class with at most ``cap``
    changed raw features (inf when none)."""
    q = enc.transform(q_row.to_frame().T.astype({"a": int, "b": int}))[0]
    ok = target & (_n_changed(grid, q_row) <= cap)
    if not ok.any():
        return np.inf, None
    z = feature_distance(enc, q, G[ok], "l1")
    return float(z.min()), grid[ok].iloc[int(np.argmin(z))]


def test_a_categorical_change_counts_once_at_exactly_the_cap(setup):
    data, enc, forest, grid, G, target, queries = setup
    exercised, ks = 0, set()
    for label, q_row in queries.iterrows():
        free, best = _brute(enc, q_row, grid, G, target, 3)
        if best is None or best["city"] == q_row["city"]:
            continue
        k = int(_n_changed(best.to_frame().T, q_row)[0])
        if k < 2:
            continue
        # the unconstrained optimum changes k features, the city one of them
        at_cap, _ = _brute(enc, q_row, grid, G, target, k)
        below, _ = _brute(enc, q_row, grid, G, target, k - 1)
        assert at_cap == pytest.approx(free)
        for cap, expect in ((k, at_cap), (k - 1, below)):
            res = MILPNearest(forest, data, norm="l1", constraints=Constraints(max_changes=cap),
                              time_limit=20).explain(queries.loc[[label]])
            if np.isinf(expect):
                assert res.status.iloc[0] == "infeasible", (label, cap)
                continue
            assert res.status.iloc[0] == "found", (label, cap, res.to_frame()["message"])
            cf = res.counterfactuals.iloc[[0]][["a", "b", "city"]]
            assert _n_changed(cf, q_row)[0] <= cap, (label, cap, cf)
            assert res.certificates.iloc[0]["distance"] == pytest.approx(expect, abs=1e-6)
        exercised += 1
        ks.add(k)
    assert ks == {2, 3}, ks  # the city with one other feature, and with both
