"""benchmarks/booster_table.py: method rows and extra columns are parameters; a small run on a
built-in dataset gives one table row per method with the promised columns."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import robustce as rc

pytest.importorskip("xgboost", reason="xgboost is not installed (pip install robustce[xgboost])")

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "booster_table.py"


@pytest.fixture(scope="module")
def table_module():
    spec = importlib.util.spec_from_file_location("booster_table", PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["booster_table"] = mod  # dataclasses look their module up while building
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("booster_table", None)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_rows_and_columns_are_parameters(table_module, monkeypatch):
    bt = table_module
    real = bt.booster

    def small(name, random_state=0):
        return real(name, random_state).set_params(n_estimators=5)

    monkeypatch.setattr(bt, "booster", small)
    seen = {}

    def build(s):
        seen["setting"] = s
        return rc.methods.NearestNeighbour(s.model, s.train, norm="l2", target_class=1)

    custom = bt.MethodRow("my NN (l2)", build)
    broken = bt.MethodRow("broken", lambda s: rc.methods.RobustNearestNeighbour(s.model, s.train))
    table = bt.run(["breast_cancer"], ["xgboost"], [bt.METHODS["NN"], custom, broken,
                                                     bt.METHODS["EnsembleRobust"]],
                   n_queries=4, n_retrain=1, n_drop=1,
                   columns={"n_cf": lambda s, res: float(len(res.counterfactuals))},
                   log=lambda m: None)
    assert list(table["method"]) == ["NN", "my NN (l2)", "broken", "EnsembleRobust"]
    # the (δ, ε)-robust column is the exact test's share; the robust row's CEs all pass it
    robust = table.iloc[3]
    assert robust["coverage"] > 0 and robust["robust"] == 1.0 and robust["validity"] == 1.0
    assert ((table["robust"].iloc[:2] >= 0) & (table["robust"].iloc[:2] <= 1)).all()
    ok = table.iloc[:2]
    assert (ok["coverage"] == 1.0).all() and (ok["validity"] == 1.0).all()
    assert ((ok["vr"] >= 0) & (ok["vr"] <= 1)).all() and (ok["lof"] > 0).all()
    assert (ok["n_cf"] == 4).all() and (ok["n_queries"] == 4).all()
    # NN (ℓ1) returns the nearest candidate in ℓ1: the ℓ2 row's CE is never nearer in ℓ1
    assert ok["l1"].iloc[0] <= ok["l1"].iloc[1] + 1e-12
    assert "UnsupportedModelError" in table["note"].iloc[2]
    s = seen["setting"]
    assert s.model.kind == "boosted" and len(s.family) == 2
    assert s.pipe.predict(s.test.frame).shape == (len(s.test),)
    text = bt.to_markdown(table, extra=["n_cf"])
    assert text.splitlines()[0].startswith("| dataset | booster | method | coverage | validity")
    assert "| my NN (l2) |" in text and "n_cf" in text and "test accuracy" in text
    assert np.isfinite(table.attrs["settings"][0]["family_accuracy"])
