"""Typed errors for bad input to the XGBoost / LightGBM import beyond those in
``test_boosters.py``: an unfitted booster at the end of a pipeline and in ``booster_view``;
feature-name and count mismatches against a Schema or Dataset and after a pipeline's
preprocessing; infinite thresholds, NaN leaf values and NaN category sets in the dump."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import robustce as rc
from robustce.errors import NotFittedError, UnsupportedModelError
from robustce.models import boosters as bmod
from robustce.models import from_sklearn

xgb = pytest.importorskip("xgboost", reason="xgboost is not installed (pip install robustce[xgboost])")
lgb = pytest.importorskip("lightgbm", reason="lightgbm is not installed (pip install robustce[lightgbm])")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

NUM = ["u", "income", "years"]


@pytest.fixture(scope="module")
def credit():
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame({"u": rng.uniform(size=n), "income": rng.normal(50, 15, n).round(2),
                       "years": rng.integers(0, 30, n),
                       "housing": pd.Categorical(rng.choice(["own", "rent", "free"], n))})
    y = ((2 * df.u + 0.04 * df.income + (df.housing == "own")) > 2.6).astype(int).to_numpy()
    return df, y


def _xgb():
    return xgb.XGBClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1)


def _lgb():
    return lgb.LGBMClassifier(n_estimators=3, num_leaves=4, random_state=0, verbose=-1, n_jobs=1)


def _pre():
    return ColumnTransformer([("num", StandardScaler(), NUM),
                              ("cat", OneHotEncoder(handle_unknown="ignore"), ["housing"])])


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_an_unfitted_booster_in_a_pipeline_and_in_booster_view(credit, make):
    df, _ = credit
    pipe = Pipeline([("pre", _pre().fit(df)), ("clf", make())])
    with pytest.raises(NotFittedError, match="step 'clf'.*not fitted"):
        from_sklearn(pipe, df)
    enc = rc.data.Encoder(rc.data.infer_schema(df[NUM])).fit(df[NUM])
    with pytest.raises(NotFittedError, match="not fitted"):
        bmod.booster_view(make(), enc)


@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_name_and_count_mismatches_against_a_schema_or_dataset(credit, make):
    df, y = credit
    num = df[NUM]
    named = make().fit(num, y)
    schema = rc.data.infer_schema(num)
    renamed = rc.data.infer_schema(num.rename(columns={"years": "age"}))
    with pytest.raises(UnsupportedModelError, match="fitted on columns"):
        from_sklearn(named, renamed)
    wider = rc.data.from_frame(df.assign(extra=1.0, label=y)[[*NUM, "extra", "label"]], "label")
    with pytest.raises(UnsupportedModelError, match="fitted on columns"):
        from_sklearn(named, wider)
    unnamed = make().fit(num.to_numpy(), y)
    with pytest.raises(UnsupportedModelError, match="takes 3 features but is given 2"):
        from_sklearn(unnamed, schema.select(["u", "income"]))
    # a booster fitted on other inputs than its pipeline's preprocessing gives
    pipe = Pipeline([("pre", _pre().fit(df)), ("clf", make().fit(num.to_numpy(), y))])
    with pytest.raises(UnsupportedModelError, match="takes 3 features but is given 6"):
        from_sklearn(pipe, df)
    # booster_view: the model space must give the booster's inputs
    enc = rc.data.Encoder(schema).fit(num)
    with pytest.raises(UnsupportedModelError, match="takes 3 features but the model space gives 2"):
        bmod.booster_view(unnamed, enc, np.eye(3)[:2], np.zeros(2))


def _patched_xgb(monkeypatch, clf, edit):
    dump = bmod._xgb_dump(clf)
    edit(dump["learner"]["gradient_booster"]["model"]["trees"][0])
    monkeypatch.setattr(bmod, "_xgb_dump", lambda final: dump)


def _patched_lgb(monkeypatch, clf, edit):
    dump = copy.deepcopy(bmod._lgb_dump(clf))
    edit(dump["tree_info"][0]["tree_structure"])
    monkeypatch.setattr(bmod, "_lgb_dump", lambda final: dump)


def _first_leaf(node):
    while "leaf_value" not in node:
        node = node["left_child"]
    return node


@pytest.mark.parametrize("what, match", [("inf threshold", "NaN or infinite split threshold"),
                                         ("nan leaf", "NaN or infinite leaf value")])
@pytest.mark.parametrize("make", [_xgb, _lgb], ids=["xgboost", "lightgbm"])
def test_infinite_thresholds_and_nan_leaves_are_refused(credit, monkeypatch, make, what, match):
    df, y = credit
    num = df[NUM]
    clf = make().fit(num, y)
    if isinstance(clf, xgb.XGBClassifier):
        def edit(tree):
            leaf = np.asarray(tree["left_children"]) < 0
            i = int(np.flatnonzero(leaf if what == "nan leaf" else ~leaf)[0])
            tree["split_conditions"][i] = float("nan") if what == "nan leaf" else float("inf")
        _patched_xgb(monkeypatch, clf, edit)
    else:
        def edit(root):
            if what == "nan leaf":
                _first_leaf(root)["leaf_value"] = float("nan")
            else:
                root["threshold"] = float("inf")
        _patched_lgb(monkeypatch, clf, edit)
    with pytest.raises(UnsupportedModelError, match=match):
        from_sklearn(clf, num)


def test_a_nan_lightgbm_category_set_is_refused(credit, monkeypatch):
    df, y = credit
    clf = _lgb().fit(df, y)  # the pandas category column: categorical splits

    def categorical(node):
        if "decision_type" not in node:
            return None
        if node["decision_type"] == "==":
            return node
        return categorical(node["left_child"]) or categorical(node["right_child"])

    dump = copy.deepcopy(bmod._lgb_dump(clf))
    nodes = [categorical(t["tree_structure"]) for t in dump["tree_info"]]
    node = next(n for n in nodes if n is not None)
    node["threshold"] = "1||nan"
    monkeypatch.setattr(bmod, "_lgb_dump", lambda final: dump)
    with pytest.raises(UnsupportedModelError, match="not a list of integer codes"):
        from_sklearn(clf, df)
