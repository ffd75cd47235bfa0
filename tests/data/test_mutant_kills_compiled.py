"""The model-space forms the exact methods check their CEs with, against hand counts on
synthetic_loan rows: ``max_changes`` counts a one-hot category change once (mutant
``compiled_max_changes_counts_columns`` counted its two columns), and a compiled conditional
holds wherever its condition is false, whatever its consequence (material implication;
``conditional_compiled_implication_dropped`` required the consequence everywhere)."""

from __future__ import annotations

import pandas as pd
import pytest

import robustce as rc
from robustce.data.constraints import Constraints


@pytest.fixture(scope="module")
def setup():
    data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    f = data.frame
    pick = (f["housing"] != "own") & (f["age"] <= 70) & (f["years_employed"].between(2, 50))
    q = f[pick].iloc[[0]].reset_index(drop=True)
    return enc, q


def _rows(q: pd.DataFrame, changes: list[dict]) -> pd.DataFrame:
    return pd.concat([q.assign(**c) for c in changes], ignore_index=True)


def test_max_changes_counts_a_category_change_once(setup):
    enc, q = setup
    cands = _rows(q, [{}, {"housing": "own"}, {"housing": "own", "age": q.loc[0, "age"] + 1},
                      {"age": q.loc[0, "age"] + 2}])
    by_hand = [0, 1, 2, 1]  # raw features that differ from the query
    compiled = Constraints(max_changes=1).compile(enc)
    X, x0 = enc.transform(cands), enc.transform(q)[0]
    assert compiled.n_changed(x0, X).tolist() == by_hand
    assert compiled.satisfied(x0, X).tolist() == [n <= 1 for n in by_hand]


def test_a_compiled_conditional_holds_where_its_condition_is_false(setup):
    enc, q = setup
    age, years = int(q.loc[0, "age"]), int(q.loc[0, "years_employed"])
    rule = "if age increases then years_employed increases by >= 2"
    cands = _rows(q, [
        {"age": age + 1, "years_employed": years + 2},  # condition and consequence: holds
        {"age": age + 1, "years_employed": years},      # condition, no consequence: broken
        {"age": age, "years_employed": years},          # no condition: holds
        {"age": age, "years_employed": years - 1},      # no condition (consequence false): holds
        {"age": age - 1, "years_employed": years},      # age decreases: no condition, holds
    ])
    by_hand = [True, False, True, True, True]
    compiled = Constraints(conditionals=[rule]).compile(enc)
    X, x0 = enc.transform(cands), enc.transform(q)[0]
    assert compiled.satisfied(x0, X).tolist() == by_hand
