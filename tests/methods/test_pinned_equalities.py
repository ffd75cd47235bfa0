"""Equality relations (``a + b == c``) in every exact method — MILPNearest, MILPRobust, APAS,
EnsembleRobust, MACE (MILP backend), PROPLACE: every CE satisfies the equality, computed here
from the raw CE (not with ``Constraints.satisfied``), and the equality bites (the unconstrained
CEs break it). Ordinal ``f == level`` conditions on every level: test_pinned_conditionals.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier

import robustce as rc
from robustce.data import Constraints, Feature, Schema, from_frame

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

EQUALITY = "a + b == c"
LEVELS = ("low", "mid", "high", "top")


def _data(c_weight: float, n: int = 300, seed: int = 0):
    """a, b in [0, 5], c in [0, 10], c = a + b on half the rows (off by up to 2 on the others,
    so the model learns c's own weight). ``c_weight < 0``: the free CE raises a or b alone
    (a + b > c, what ``>=`` would allow); ``> 0``: it raises c alone (what ``<=`` would allow)."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 5, n), rng.uniform(0, 5, n)
    c = np.clip(a + b + np.where(rng.uniform(size=n) < 0.5, 0.0, rng.uniform(-2, 2, n)), 0, 10)
    level = rng.integers(0, 4, n)
    score = (0.8 * a + 0.5 * b + c_weight * c + 0.4 * level - 2.5 - 7.3 * max(c_weight, 0)
             + rng.normal(0, 0.3, n))
    df = pd.DataFrame({"a": a, "b": b, "c": c, "grade": [LEVELS[k] for k in level],
                       "y": (score > 0).astype(int)})
    schema = Schema([Feature("a", "continuous", 0.0, 5.0), Feature("b", "continuous", 0.0, 5.0),
                     Feature("c", "continuous", 0.0, 10.0),
                     Feature("grade", "ordinal", categories=LEVELS)])
    return from_frame(df, "y", schema)


@pytest.fixture(scope="module", params=[-0.3, 0.6], ids=["c-penalised", "c-rewarded"])
def models(request):
    data = _data(request.param)
    mlp = rc.models.MLP((6,), epochs=50, lr=0.02, random_state=0).fit(data)
    rf = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0)
    rf.fit(mlp.encoder.transform(data.frame), data.y)
    return data, mlp, rc.models.wrap(rf, mlp.encoder), request.param


def _gap(cfs: pd.DataFrame) -> np.ndarray:
    """|a + b − c| on the raw CEs, relative to the scale of the terms (raw units, <= 20)."""
    return np.abs(cfs["a"].to_numpy() + cfs["b"].to_numpy() - cfs["c"].to_numpy())


def _queries(data, model, n):
    rej = np.flatnonzero(model.predict(data.frame) == 0)
    return data.frame.iloc[rej[:n]]


METHODS = {
    "milp_nearest": ("mlp", lambda m, d, c: rc.methods.MILPNearest(m, d, constraints=c, time_limit=20)),
    "milp_robust": ("mlp", lambda m, d, c: rc.methods.MILPRobust(m, d, shift=0.02, constraints=c,
                                                                 time_limit=20)),
    "apas": ("mlp", lambda m, d, c: rc.methods.APAS(m, d, delta=0.02, n=100, constraints=c,
                                                     time_limit=20)),
    "ensemble_robust": ("forest", lambda m, d, c: rc.methods.EnsembleRobust(
        m, d, delta=0.02, epsilon=0.01, constraints=c, time_limit=20)),
    "mace_milp": ("mlp", lambda m, d, c: rc.methods.MACE(m, d, backend="milp", epsilon=1e-3,
                                                         constraints=c, time_limit=30)),
    "mace_milp_forest": ("forest", lambda m, d, c: rc.methods.MACE(m, d, backend="milp",
                                                                   epsilon=1e-3, constraints=c,
                                                                   time_limit=30)),
    "proplace": ("mlp", lambda m, d, c: rc.methods.PROPLACE(m, d, shift=0.02, k=6, constraints=c,
                                                            time_limit=20)),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_every_ce_keeps_the_equality(models, name):
    data, mlp, forest, _ = models
    which, make = METHODS[name]
    model = mlp if which == "mlp" else forest
    queries = _queries(data, model, 5)
    res = make(model, data, Constraints([EQUALITY])).explain(queries)
    assert "error" not in set(res.status), res.to_frame()[["status", "message"]]
    cfs = res.counterfactuals
    assert len(cfs) >= 2, res.to_frame()[["status", "message"]]
    assert (_gap(cfs) <= 1e-5).all(), cfs[["a", "b", "c"]].assign(gap=_gap(cfs))
    # a CE of a rejected query changes something: the equality is kept while moving
    q = queries.loc[cfs["query_id"].to_numpy()]
    moved = (np.abs(cfs[["a", "b", "c"]].to_numpy() - q[["a", "b", "c"]].to_numpy()) > 1e-6).any(axis=1)
    assert moved.any()


def test_the_equality_bites(models):
    """Without the relation MILPNearest's nearest CEs break it on the side the label pushes
    them (a + b > c where c is penalised, < where it is rewarded): an equality compiled as
    ``>=`` or ``<=`` fails the test above on one of the two models."""
    data, mlp, _, c_weight = models
    queries = _queries(data, mlp, 5)
    cfs = rc.methods.MILPNearest(mlp, data, time_limit=20).explain(queries).counterfactuals
    signed = cfs["a"].to_numpy() + cfs["b"].to_numpy() - cfs["c"].to_numpy()
    assert (signed < -1e-3).any() if c_weight > 0 else (signed > 1e-3).any(), signed
