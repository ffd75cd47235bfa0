"""The audit's saved report: the CSV tables read back are the figures computed (to 1e-9
relative — they are written with 10 significant digits; mutant ``audit_report_csv_rounded``
kept 3), and ``report.md`` names every group too small to compare
(``audit_report_too_few_groups_hidden``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import robustce as rc
from robustce.audits import audit


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    data = rc.datasets.load("synthetic_loan", n_samples=600, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    model = rc.models.wrap(LogisticRegression(max_iter=500).fit(enc.transform(data.frame), data.y),
                           enc)
    out = tmp_path_factory.mktemp("audit")
    res = audit(model, data, groups=["housing"], bands={"age": [30, 50]}, out=out,
                partition_rows=300, n_boot=20, min_group=70, global_sample=200)
    return res, out


def test_the_saved_tables_are_the_computed_figures(result):
    res, out = result
    for name, frame in (("group_metrics.csv", res.groups), ("fairness_gaps.csv", res.fairness)):
        back = pd.read_csv(out / name)
        assert list(back.columns) == list(frame.columns) and len(back) == len(frame) > 0
        for c in frame.columns:
            if pd.api.types.is_float_dtype(frame[c]):
                np.testing.assert_allclose(back[c].to_numpy(float), frame[c].to_numpy(float),
                                           rtol=1e-9, atol=0, equal_nan=True, err_msg=f"{name}:{c}")


def test_the_report_names_every_group_too_small_to_compare(result):
    res, out = result
    too_few = res.totals["groups_too_few"]
    assert too_few, "the fixture must have a group below min_group"
    text = (out / "report.md").read_text()
    for g in too_few:
        assert f"{g['group']}={g['level']} (n={g['n_declined']})" in text
    counts = res.groups.drop_duplicates(["group", "level"]).set_index(["group", "level"])["n_declined"]
    small = {(g, lv) for (g, lv), n in counts.items() if n < 70}
    assert small == {(g["group"], g["level"]) for g in too_few}
