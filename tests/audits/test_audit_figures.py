"""The audit report's figures add up (issue 53): every interval contains its point estimate
(a coverage spread of 0 had the interval [0.0025, 0.102]: the max − min of each replicate is
another statistic, above the value by construction), "highest" and "lowest" name different
groups or say they tie, and the HTML page is styled like the demo report, without literal
backticks."""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.audits import GroupAccumulator


def _rows(groups: dict[str, tuple[int, int]], rng: np.random.Generator) -> pd.DataFrame:
    """Per declined applicant: group level -> (applicants, with a CE); costs drawn at random."""
    parts = []
    for level, (n, found) in groups.items():
        ok = np.arange(n) < found
        cost = np.where(ok, rng.gamma(2.0, 0.5, n), np.nan)
        parts.append(pd.DataFrame({
            "grp": level, "found": ok, "cost_l1_model": cost, "cost_l1_raw": cost / 2,
            "n_changed": np.where(ok, rng.integers(1, 4, n), np.nan),
            "valid": np.where(ok, 1.0, np.nan), "vr": np.where(ok, rng.random(n), np.nan),
            "delta_valid": np.nan}))
    return pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=0)


def _accumulate(rows: pd.DataFrame, n_boot: int = 200, seed: int = 0) -> GroupAccumulator:
    acc = GroupAccumulator(["grp"], n_boot=n_boot, seed=seed, hist_bins=np.linspace(0, 5, 11))
    half = len(rows) // 2
    acc.add(rows.iloc[:half], 0)
    acc.add(rows.iloc[half:], 1)
    return acc


def test_a_tie_is_said_and_its_interval_holds_its_value():
    """Two groups with the same coverage (36 of 40 each): the spread is 0, its interval holds
    0, and both "highest" and "lowest" say the groups tie; burden differs: two names."""
    acc = _accumulate(_rows({"A": (40, 36), "B": (40, 36)}, np.random.default_rng(0)))
    fair = acc.fairness_gaps(min_group=10).set_index("measure")
    cov = fair.loc["coverage_spread"]
    assert cov["value"] == 0
    assert cov["ci_low"] <= 0 <= cov["ci_high"]
    assert cov["highest"] == cov["lowest"] == "A and B (tie)"
    burden = fair.loc["burden_spread"]
    assert {burden["highest"], burden["lowest"]} == {"A", "B"}
    assert burden["ci_low"] <= burden["value"] <= burden["ci_high"]


@pytest.mark.parametrize("seed", range(12))
def test_every_interval_contains_its_point_estimate(seed):
    rng = np.random.default_rng(seed)
    # near-equal coverage (about 0.9 in every group), where the spread's replicates differ
    # most from it, a small group, and two groups of one share
    sizes = {lv: int(rng.integers(40, 80)) for lv in "ABCD"}
    groups = {lv: (n, min(n, round(0.9 * n) + int(rng.integers(-1, 2)))) for lv, n in sizes.items()}
    groups["E"] = (int(rng.integers(3, 8)), 2)
    groups["F"] = (30, 27)
    acc = _accumulate(_rows(groups, rng), n_boot=50, seed=seed)
    table = acc.table(min_group=5)
    fair = acc.fairness_gaps(min_group=5)
    checked = 0
    for frame, (value, low, high) in ((table, ("value", "ci_low", "ci_high")),
                                      (table, ("gap", "gap_low", "gap_high")),
                                      (fair, ("value", "ci_low", "ci_high"))):
        for _, row in frame.iterrows():
            if np.isfinite(row[value]) and np.isfinite(row[low]):
                assert row[low] <= row[value] <= row[high], row.to_dict()
                checked += 1
    assert checked > 40
    for _, row in fair.iterrows():
        assert row["highest"] != row["lowest"] or row["highest"].endswith("(tie)")


def test_html_report_is_styled_like_the_demo_report(tmp_path):
    from robustce.evaluation.report import _CSS

    data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    res = rc.audit(model, test.frame, train=train, method="milp_nearest", groups=["housing"],
                   out=tmp_path, n_boot=20, min_group=5)
    page = (tmp_path / "report.html").read_text()
    assert f"<style>{_CSS}</style>" in page
    assert len(re.findall(r"<table", page)) == len(re.findall(r"<div class=\"table-wrap\"><table",
                                                               page)) >= 3
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "`" not in text
    assert "<code>milp_nearest</code>" in page
    assert page.count("<figcaption>") == len([f for f in res.files if f.endswith(".png")])
    assert "`milp_nearest`" in (tmp_path / "report.md").read_text()  # Markdown keeps its code
