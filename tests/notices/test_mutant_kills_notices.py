"""Notices' principal reasons never name a protected feature, *even when the CE changes it*
(a CE from a method or a user that ignores the role): the tests of the notices build CEs that
keep protected features, so they could not tell (issue 47, mutant
``notice_protected_among_reasons``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import robustce as rc
from robustce.data.dataset import from_frame
from robustce.data.schema import Feature, Schema
from robustce.notices import principal_reasons


def test_a_changed_protected_feature_is_never_a_reason_and_the_others_still_are():
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({"income": rng.uniform(10, 100, n).round(2), "sex": rng.choice(["F", "M"], n),
                       "debt": rng.uniform(0, 50, n).round(2)})
    # the model leans on sex, so changing it carries a real share of the margin
    df["y"] = (0.05 * df.income - 0.05 * df.debt + 1.5 * (df.sex == "M") > 2.0).astype(int)
    schema = Schema([Feature("income", "continuous", 10, 100),
                     Feature("sex", "binary", categories=("F", "M"), actionability="protected"),
                     Feature("debt", "continuous", 0, 50)])
    data = from_frame(df, "y", schema)
    model = rc.models.MLP((8,), epochs=40, random_state=0).fit(data)
    enc = model.encoder
    raw = pd.DataFrame({"income": [30.0], "sex": ["F"], "debt": [40.0]})
    raw_cf = pd.DataFrame({"income": [80.0], "sex": ["M"], "debt": [10.0]})
    x, x_cf = enc.transform(raw)[0], enc.transform(raw_cf)[0]
    reasons, per_feature = principal_reasons(model, x, x_cf, target_class=1)
    assert per_feature["sex"] != 0  # the CE moves sex and the model feels it
    assert sorted(r.feature for r in reasons) == ["debt", "income"]
