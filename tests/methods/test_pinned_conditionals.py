"""Conditional consequences that *decrease* a feature: ``if a increases then b decreases by >= 2``
(integer) and ``if a increases then grade decreases`` (ordinal, one level). Checked on the raw
CE here (``q_b − b ≥ 2``, the level index dropping), and MILPNearest's optimum brute-forced over
the grid (a, b in 0..6, grade one of four levels) of points the forest puts in the target class."""

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

LEVELS = ("d", "c", "b", "a")
RULES = {"integer": "if a increases then b decreases by >= 2",
         "ordinal": "if a increases then grade decreases"}


def _data():
    rng = np.random.default_rng(5)
    n = 300
    a, b = rng.integers(0, 7, n), rng.integers(0, 7, n)
    grade = rng.integers(0, 4, n)
    y = ((a >= 4) | (b + grade >= 8)).astype(int)  # raising a is the cheap way in
    df = pd.DataFrame({"a": a, "b": b, "grade": [LEVELS[k] for k in grade], "y": y})
    schema = Schema([Feature("a", "integer", 0, 6), Feature("b", "integer", 0, 6),
                     Feature("grade", "ordinal", categories=LEVELS)])
    return from_frame(df, "y", schema)


@pytest.fixture(scope="module")
def setup():
    data = _data()
    enc = rc.models.MLP((2,), epochs=1, random_state=0).fit(data).encoder
    rf = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    rf.fit(enc.transform(data.frame), data.y)
    forest = rc.models.wrap(rf, enc)
    grid = pd.DataFrame(list(itertools.product(range(7), range(7), LEVELS)),
                        columns=["a", "b", "grade"])
    rej = np.flatnonzero(forest.predict(data.frame) == 0)
    return data, enc, forest, grid, data.frame.iloc[rej[:10]]


def _keeps(rule: str, raw: pd.DataFrame, q: pd.Series) -> np.ndarray:
    """The conditional on raw rows, evaluated here: a did not increase, or the consequence holds."""
    up = raw["a"].to_numpy() > q["a"]
    if rule == "integer":
        return ~up | (q["b"] - raw["b"].to_numpy() >= 2)
    level = raw["grade"].map(LEVELS.index).to_numpy()
    return ~up | (level < LEVELS.index(q["grade"]))


@pytest.mark.parametrize("rule", list(RULES))
def test_a_decreasing_consequence_is_kept_and_optimal(setup, rule):
    data, enc, forest, grid, queries = setup
    G = enc.transform(grid)
    target = forest.predict(G) == 1
    c = Constraints(conditionals=[RULES[rule]])
    res = MILPNearest(forest, data, norm="l1", constraints=c, time_limit=20).explain(queries)
    free = MILPNearest(forest, data, norm="l1", time_limit=20).explain(queries)
    broken = 0
    for i, (label, q_row) in enumerate(queries.iterrows()):
        q = enc.transform(q_row.to_frame().T.astype({"a": int, "b": int}))[0]
        ok = target & _keeps(rule, grid, q_row)
        if not ok.any():
            assert res.status.iloc[i] == "infeasible"
            continue
        assert res.status.iloc[i] == "found", res.to_frame()["message"].iloc[i]
        cf = res.counterfactuals[res.counterfactuals["query_id"] == label][["a", "b", "grade"]]
        assert _keeps(rule, cf, q_row).all(), (q_row.to_dict(), cf)
        expect = feature_distance(enc, q, G[ok], "l1").min()
        assert res.certificates.iloc[i]["distance"] == pytest.approx(expect, abs=1e-6)
        fcf = free.counterfactuals[free.counterfactuals["query_id"] == label][["a", "b", "grade"]]
        broken += int((~_keeps(rule, fcf, q_row)).any())
    assert broken >= 2  # without the conditional the nearest CE raises a alone


@pytest.mark.parametrize("rule", list(RULES))
def test_mace_milp_keeps_a_decreasing_consequence(setup, rule):
    data, _, forest, _, queries = setup
    c = Constraints(conditionals=[RULES[rule]])
    res = rc.methods.MACE(forest, data, backend="milp", epsilon=1e-3, constraints=c,
                          time_limit=30).explain(queries.iloc[:5])
    assert set(res.status) <= {"found", "infeasible"}, res.to_frame()["message"]
    cfs = res.counterfactuals
    assert len(cfs) >= 2
    for label, cf in cfs.groupby("query_id"):
        assert _keeps(rule, cf[["a", "b", "grade"]], queries.loc[label]).all()


@pytest.mark.parametrize("level", LEVELS)
def test_an_ordinal_equality_condition_on_every_level(setup, level):
    """``grade == level -> a <= 3`` (the thermometer's "exactly this level", first and last
    levels included): MILPNearest's CEs keep it and its distance is the brute-force optimum."""
    data, enc, forest, grid, _ = setup
    declined = data.frame[forest.predict(data.frame) == 0]
    at = declined[declined["grade"] == level]  # applicants at this level, a-route cheapest first
    queries = at.sort_values(["a", "b"], ascending=[False, True], kind="stable").head(4)
    assert len(queries) >= 2
    G = enc.transform(grid)
    target = forest.predict(G) == 1
    c = Constraints(conditionals=[f'grade == "{level}" -> a <= 3'])
    res = MILPNearest(forest, data, norm="l1", constraints=c, time_limit=20).explain(queries)
    keeps = (grid["grade"] != level).to_numpy() | (grid["a"] <= 3).to_numpy()
    bites = 0
    for i, (label, q_row) in enumerate(queries.iterrows()):
        q = enc.transform(q_row.to_frame().T.astype({"a": int, "b": int}))[0]
        ok = target & keeps
        assert res.status.iloc[i] == ("found" if ok.any() else "infeasible")
        if not ok.any():
            continue
        cf = res.counterfactuals[res.counterfactuals["query_id"] == label].iloc[0]
        assert cf["grade"] != level or cf["a"] <= 3, (q_row.to_dict(), cf.to_dict())
        expect = feature_distance(enc, q, G[ok], "l1").min()
        assert res.certificates.iloc[i]["distance"] == pytest.approx(expect, abs=1e-6)
        bites += int(feature_distance(enc, q, G[target], "l1").min() < expect - 1e-9)
    assert bites >= 1  # the condition changes the optimum of some query at this level
