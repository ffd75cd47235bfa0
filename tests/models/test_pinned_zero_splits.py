"""A split that separates 0 from the negatives (XGBoost ``z < 0``, LightGBM's ``z <= -1e-35``) on
a column that takes negative values and many zeros: the threshold and 0 round to the same
model-space value (``(z − lower) / span``), and the view used to send the zeros left where the
booster sends them right (a wrong probability on every zero row). The oracle is the booster's
own ``predict_proba`` on the training rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from robustce.models import from_sklearn

xgb = pytest.importorskip("xgboost", reason="xgboost is not installed (pip install robustce[xgboost])")
lgb = pytest.importorskip("lightgbm", reason="lightgbm is not installed (pip install robustce[lightgbm])")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def zero_heavy():
    rng = np.random.default_rng(3)
    n = 300
    s = rng.uniform(-1, 1, n)
    s[rng.uniform(size=n) < 0.3] = 0.0
    w = rng.uniform(1, 2, n)
    y = ((s == 0) ^ (s > 0.1) ^ (w > 1.5)).astype(int)
    return pd.DataFrame({"s": s, "w": w}), y


@pytest.mark.parametrize("make", [
    lambda: xgb.XGBClassifier(n_estimators=10, max_depth=3, n_jobs=1, random_state=0),
    lambda: lgb.LGBMClassifier(n_estimators=10, num_leaves=6, min_child_samples=5, verbose=-1,
                               n_jobs=1, random_state=0),
], ids=["xgboost", "lightgbm"])
def test_zero_rows_go_where_the_booster_sends_them(zero_heavy, make):
    frame, y = zero_heavy
    clf = make().fit(frame, y)
    model = from_sklearn(clf, frame)
    atol = 1e-6 if isinstance(clf, xgb.XGBClassifier) else 1e-12  # XGBoost sums in float32
    zeros = frame[frame["s"] == 0]
    assert len(zeros) > 50
    np.testing.assert_allclose(model.predict_proba(model.encoder.transform(frame)),
                               clf.predict_proba(frame), rtol=0, atol=atol)
