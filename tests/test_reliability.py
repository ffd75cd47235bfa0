"""Regressions found by the reliability probe and the fuzz suite (each failed before its fix)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError


@pytest.fixture(scope="module")
def mixed():
    """A mixed-kind schema (float, integer, categorical) and a small MLP on it."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.random(60), "n": rng.integers(0, 5, 60),
                       "c": rng.choice(["x", "y"], 60)})
    df["y"] = ((df.a > 0.5) ^ (df.c == "y")).astype(int)
    data = rc.data.from_frame(df, "y")
    return data, rc.models.MLP((4,), epochs=20, random_state=0).fit(data)


def test_single_query_as_series_on_mixed_schema(mixed):
    data, model = mixed
    nn = rc.methods.NearestNeighbour(model, data)
    one = nn.explain(data.frame.iloc[3])
    framed = nn.explain(data.frame.iloc[[3]])
    assert list(one.query_ids) == [3]
    pd.testing.assert_frame_equal(one.to_frame().drop(columns="time_s"),
                                  framed.to_frame().drop(columns="time_s"))
    assert one.queries.dtypes.to_dict() == data.frame.dtypes.to_dict()


def test_training_on_one_class_is_refused(mixed):
    data, _ = mixed
    one = data.subset(np.flatnonzero(data.y == 1))
    with pytest.raises(ValidationError, match="one class"):
        rc.models.MLP((4,), epochs=2).fit(one)


@pytest.mark.parametrize("param, value", [
    ("lr", math.nan), ("lr", math.inf), ("weight_decay", math.nan), ("weight_decay", math.inf),
    ("epochs", 2.5), ("epochs", math.nan), ("batch_size", 0), ("hidden_layers", "x"),
    ("hidden_layers", (4, math.nan)), ("hidden_layers", (10**12,)), ("random_state", math.nan),
    ("ordinal_encoding", "binary"),
])
def test_mlp_parameters_validated(param, value):
    with pytest.raises(ValidationError, match=param):
        rc.models.MLP(**{param: value})


def test_explainer_n_jobs_and_n_neighbours_bounded(mixed):
    data, model = mixed
    with pytest.raises(ValidationError, match="n_jobs"):
        rc.methods.MILPNearest(model, data, n_jobs=10**18)
    with pytest.raises(ValidationError, match="n_neighbours"):
        rc.methods.NearestNeighbour(model, data, n_neighbours=10**18)


def test_wachter_distance_weights_of_wrong_type(mixed):
    data, model = mixed
    with pytest.raises(ValidationError, match="distance_weights"):
        rc.methods.Wachter(model, data, distance_weights=object())
