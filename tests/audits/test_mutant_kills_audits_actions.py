"""Greedy global actions count each applicant once, and a group of exactly the minimum size is
compared (issue 47, mutants ``global_actions_count_an_applicant_twice`` and
``audit_min_group_exclusive``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

from robustce.audits import global_actions
from robustce.models import from_sklearn

from .test_audit_figures import _accumulate, _rows


def test_every_chosen_global_action_reaches_applicants_no_earlier_action_reached():
    """Ten declined applicants; their CEs raise ``a`` (six) or ``b`` (four) by 6, and either
    raise alone reaches all ten (the model approves ``a >= 5 or b >= 5``). Counted once, the
    list ends when nobody is left to reach, so cumulative coverage rises with every action;
    counting the already covered again appends actions that reach no one new."""
    grid = np.array([[a, b] for a in range(11) for b in range(11)], dtype=float)
    frame = pd.DataFrame(grid, columns=["a", "b"])
    y = ((frame.a >= 5) | (frame.b >= 5)).astype(int)
    model = from_sklearn(DecisionTreeClassifier(random_state=0).fit(frame, y), frame)
    x = pd.DataFrame({"a": [0.0, 1, 2, 3, 4, 0, 1, 2, 3, 4], "b": [0.0] * 6 + [1, 2, 3, 4]})
    x.loc[6:, "a"] = [0.0, 1, 2, 3]
    cf = x.copy()
    cf.loc[:5, "a"] += 6.0  # the first six: raise a
    cf.loc[6:, "b"] += 6.0  # the other four: raise b
    assert (model.predict(x[["a", "b"]]) == 0).all() and (model.predict(cf[["a", "b"]]) == 1).all()
    sample = pd.concat([x.add_prefix("x:"), cf.add_prefix("cf:")], axis=1)
    sample["found"], sample["grp"] = True, "all"
    actions, _ = global_actions(model, sample, ["grp"], 1, max_actions=5)
    cumulative = actions["cumulative_coverage"].to_numpy()
    assert cumulative[-1] == 1.0
    assert np.all(np.diff(cumulative) > 0), actions[["action", "coverage", "cumulative_coverage"]]


def test_a_group_of_exactly_the_minimum_size_is_compared():
    acc = _accumulate(_rows({"A": (30, 27), "B": (40, 36)}, np.random.default_rng(0)), n_boot=50)
    at = acc.table(min_group=30)
    assert not at["too_few"].any() and at.loc[at.level == "A", "gap"].notna().all()
    above = acc.table(min_group=31)
    assert above.loc[above.level == "A", "too_few"].all()
    assert above.loc[above.level == "A", "gap"].isna().all()
