"""Audit figures against simulation and brute force: the 95 % bootstrap intervals of a group's
coverage and burden hold their stated coverage on data drawn from a known distribution (small
groups, many simulated datasets, one vectorised accumulator); a group of exactly ``min_group``
declined applicants is compared, one fewer is flagged and left out of the gaps; greedy global
actions never count an applicant twice (coverage recounted here by applying each action by hand)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.audits import GroupAccumulator, global_actions
from robustce.data import Feature, Schema, from_frame

N_SIM, N_ROWS, P_FOUND, MEAN_COST = 400, 40, 0.7, 0.5


def _rows(level: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n = len(level)
    found = rng.uniform(size=n) < P_FOUND
    cost = np.where(found, rng.exponential(MEAN_COST, n), np.nan)
    one = np.where(found, 1.0, np.nan)
    return pd.DataFrame({"sim": level, "found": found, "cost_l1_model": cost, "cost_l1_raw": cost,
                         "n_changed": one, "valid": one, "vr": np.nan, "delta_valid": np.nan})


def test_bootstrap_intervals_hold_their_stated_coverage():
    """Each level of ``sim`` is one simulated dataset of 40 declined applicants (found ~
    Bernoulli(0.7), burden ~ Exponential(mean 0.5)); the share of the 400 intervals that contain
    the true value must be 95 % within a binomial tolerance (3.5 standard errors, and a
    percentile bootstrap on n = 40 is allowed to run 1.5 points under)."""
    rng = np.random.default_rng(11)
    levels = np.repeat([f"s{i:03d}" for i in range(N_SIM)], N_ROWS)
    acc = GroupAccumulator(["sim"], n_boot=300, seed=0, hist_bins=np.linspace(0, 5, 6))
    acc.add(_rows(levels, rng), 0)
    t = acc.table(min_group=1).set_index("metric")
    se = np.sqrt(0.95 * 0.05 / N_SIM)
    for metric, truth in (("coverage", P_FOUND), ("burden", MEAN_COST)):
        rows = t.loc[metric]
        assert len(rows) == N_SIM
        hit = ((rows["ci_low"] <= truth) & (truth <= rows["ci_high"])).mean()
        assert 0.95 - 0.015 - 3.5 * se <= hit <= 0.95 + 3.5 * se, (metric, hit)


def test_a_group_of_exactly_min_group_is_compared_and_one_fewer_is_not():
    rng = np.random.default_rng(12)
    sizes = {"big": 60, "edge": 30, "under": 29}
    levels = np.concatenate([[k] * v for k, v in sizes.items()])
    acc = GroupAccumulator(["sim"], n_boot=50, seed=0, hist_bins=np.linspace(0, 5, 6))
    acc.add(_rows(levels, rng), 0)
    t = acc.table(min_group=30).set_index(["level", "metric"])
    assert (t.loc[("edge", "coverage"), "n_declined"], t.loc[("under", "coverage"), "n_declined"]) == (30, 29)
    assert not t.loc[("edge", "coverage"), "too_few"] and np.isfinite(t.loc[("edge", "coverage"), "gap"])
    assert t.loc[("under", "coverage"), "too_few"] and np.isnan(t.loc[("under", "coverage"), "gap"])
    spread = acc.fairness_gaps(min_group=30).set_index("measure").loc["coverage_spread"]
    compared = {s.strip() for s in str(spread["compared"]).split("−")}
    named = f"{spread['highest']} {spread['lowest']}"
    assert "under" not in compared and "under" not in named
    assert compared == {"big", "edge"}


@pytest.fixture(scope="module")
def two_routes():
    """Approval iff a >= 5 or b >= 5 (a depth-2 tree learns it exactly); declined applicants
    with a, b < 5, each with a CE raising the nearer of the two to 5.2: an action raising a by
    a quantile of those steps covers the applicants near 5 in a, and some of them are near 5 in
    b too (the overlap a double count would show)."""
    rng = np.random.default_rng(13)
    n = 600
    a, b = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    y = ((a >= 5) | (b >= 5)).astype(int)
    schema = Schema([Feature("a", "continuous", 0.0, 10.0), Feature("b", "continuous", 0.0, 10.0)])
    data = from_frame(pd.DataFrame({"a": a, "b": b, "y": y}), "y", schema)
    with pytest.warns(UserWarning):  # the one-epoch MLP is only there for its encoder
        enc = rc.models.MLP((2,), epochs=1, random_state=0).fit(data).encoder
    tree = DecisionTreeClassifier(max_depth=2, random_state=0).fit(enc.transform(data.frame), y)
    model = rc.models.wrap(tree, enc)
    m = 80
    qa, qb = rng.uniform(0, 4.9, m), rng.uniform(0, 4.9, m)
    up_a = qa >= qb
    cfa = np.where(up_a, 5.2, qa)
    cfb = np.where(up_a, qb, 5.2)
    sample = pd.DataFrame({"x:a": qa, "x:b": qb, "cf:a": cfa, "cf:b": cfb, "found": True,
                           "grp": np.where(np.arange(m) < 30, "p", "q")})
    return model, sample


def _covers(model, sample, text: str) -> np.ndarray:
    """Apply an action's description by hand (add, clipped to [0, 10]) and ask the model."""
    x = sample[["x:a", "x:b"]].rename(columns=lambda c: c[2:]).astype(float)
    for part in text.split(" and "):
        verb, feat, _, amount = part.split()
        x[feat] = np.clip(x[feat] + (1 if verb == "increase" else -1) * float(amount), 0.0, 10.0)
    return model.predict(x) == 1


def test_greedy_global_actions_never_count_an_applicant_twice(two_routes):
    model, sample = two_routes
    assert (model.predict(sample[["x:a", "x:b"]].rename(columns=lambda c: c[2:])) == 0).all()
    actions, by_group = global_actions(model, sample, ["grp"], 1, max_actions=4, pair_pool=1)
    assert len(actions) >= 2  # an a-route and a b-route, which overlap on some applicants
    union = np.zeros(len(sample), dtype=bool)
    gains = []
    for _, row in actions.iterrows():
        cov = _covers(model, sample, row["action"])
        assert row["coverage"] == pytest.approx(cov.mean())
        gains.append(int((cov & ~union).sum()))
        union |= cov
        assert row["cumulative_coverage"] == pytest.approx(union.mean())
        per = by_group[by_group["rank"] == row["rank"]]
        assert (per["coverage"] * per["n"]).sum() == pytest.approx(cov.sum())
        assert per["n"].sum() == len(sample)
    assert all(g > 0 for g in gains)  # greedy stops when an action adds no one
    assert sum(gains) == union.sum() <= len(sample)
    singles = [_covers(model, sample, r) for r in actions["action"]]
    assert sum(c.sum() for c in singles) > union.sum()  # the actions do overlap
