"""The DiCE adapter: a clear error naming the extra when dice-ml is missing; otherwise valid,
reproducible CE sets on the same model and queries as every method."""

from __future__ import annotations

import builtins

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import RobustCEError, ValidationError


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(size=(200, 2)), columns=["a", "b"])
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)
    model = rc.models.NetworkModel([(np.array([[2.0, 1.0]]), np.array([-1.6]))], enc)
    data = rc.data.Dataset(df, pd.Series(model.predict(df)), schema)
    queries = df[model.predict(df) == 0].iloc[:3]
    return model, data, queries


def test_missing_extra_is_named(tiny, monkeypatch):
    model, data, _ = tiny
    real_import = builtins.__import__

    def no_dice(name, *args, **kwargs):
        if name == "dice_ml" or name.startswith("dice_ml."):
            raise ImportError("No module named 'dice_ml'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dice)
    from robustce.methods.dice import DiCE

    with pytest.raises(RobustCEError, match=r"robustce\[dice\]"):
        DiCE(model, data)
    # the same reason, asked without building (the benchmark runner skips DiCE cells with it)
    reason = DiCE.missing_dependency()
    assert reason is not None and "robustce[dice]" in reason and "dice_ml" in reason
    assert rc.methods.NearestNeighbour.missing_dependency() is None


def test_no_missing_dependency_when_dice_ml_imports():
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    assert DiCE.missing_dependency() is None


@pytest.mark.parametrize("method", ["random", "genetic"])
def test_valid_reproducible_sets(tiny, method):
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, queries = tiny
    res = DiCE(model, data, n_counterfactuals=3, method=method, random_state=0).explain(queries)
    assert (res.status == "found").all(), res.messages.tolist()
    assert (model.predict(res.counterfactuals_encoded) == 1).all()
    assert res.counterfactuals.groupby("query_id").size().le(3).all()
    again = DiCE(model, data, n_counterfactuals=3, method=method, random_state=0).explain(queries)
    assert np.allclose(res.counterfactuals_encoded, again.counterfactuals_encoded)


def test_bad_parameters(tiny):
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, _ = tiny
    with pytest.raises(ValidationError, match="method"):
        DiCE(model, data, method="annealing")
    with pytest.raises(ValidationError, match="n_counterfactuals"):
        DiCE(model, data, n_counterfactuals=0)
    with pytest.raises(ValidationError, match="data"):
        DiCE(model, None)

