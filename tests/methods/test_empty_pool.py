"""An empty candidate pool is a per-query status (``infeasible`` with a message), never an
exception, in every method: a model that puts no training row in the target class, and a schema
where every feature is immutable."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

import robustce as rc

METHODS = [rc.methods.NearestNeighbour, rc.methods.Wachter, rc.methods.MILPNearest,
           rc.methods.MILPRobust]


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.random(80), "b": rng.random(80),
                       "c": rng.choice(["x", "y"], 80)})
    df["y"] = ((df.a + df.b > 1) ^ (df.c == "y")).astype(int)
    return rc.data.from_frame(df, "y")


@pytest.fixture(scope="module")
def constant_model(tiny):
    """An MLP whose output bias makes it predict class 0 for every row."""
    m = rc.models.MLP((4,), epochs=3, random_state=0).fit(tiny)
    with torch.no_grad():
        m.module_[-1].bias.fill_(-1e3)
    m._network = None
    assert (m.predict(tiny.frame) == 0).all()
    return m


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__)
def test_no_training_row_in_target_class_is_infeasible(tiny, constant_model, method):
    q = tiny.frame.iloc[:4]
    res = method(constant_model, tiny, target_class=1, time_limit=2).explain(q).to_frame()
    assert set(res["status"]) <= {"infeasible", "timeout", "not_found"}, res["status"].tolist()
    assert res["message"].str.len().gt(0).all()
    if method is not rc.methods.Wachter:  # a gradient search cannot prove infeasibility
        assert (res["status"] == "infeasible").all()


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__)
def test_every_feature_immutable_is_infeasible(tiny, method):
    frozen = dataclasses.replace(tiny, schema=tiny.schema.with_actionability(
        a="immutable", b="immutable", c="immutable"))
    model = rc.models.MLP((8,), epochs=40, random_state=0).fit(frozen)
    pred = model.predict(frozen.frame)
    assert len(np.unique(pred)) == 2  # the pool of the target class is not empty ...
    q = frozen.frame.iloc[:4]
    res = method(model, frozen, time_limit=2).explain(q).to_frame()
    active = res["status"] != "already_target"
    assert active.any()
    # ... but nothing in it is reachable: infeasible, with a message saying why
    assert (res.loc[active, "status"] == "infeasible").all(), res["status"].tolist()
    assert res.loc[active, "message"].str.len().gt(0).all()


def test_nearest_neighbour_empty_class_message(tiny, constant_model):
    res = rc.methods.NearestNeighbour(constant_model, tiny, target_class=1).explain(
        tiny.frame.iloc[:2]).to_frame()
    assert (res["status"] == "infeasible").all()
    assert "training point" in res["message"].iloc[0]
