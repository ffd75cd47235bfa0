"""Property: every ``found`` CE of every method, decoded to raw, gets its target class from the
user's own model — for every registered method × every model kind (issue 29).

Model kinds: robustce's MLP, a logistic regression, a decision tree and a random forest
(``wrap``-ped, fitted on model space), GradientBoosting and HistGradientBoosting in a
scikit-learn pipeline with a ColumnTransformer (``from_sklearn``), a LogisticRegression
pipeline with StandardScaler / OneHotEncoder, and a torch module (``from_torch``); methods
that train their own predictor (CounterNet, RoCourseNet) are checked on it. Each pair is
either supported — then hypothesis draws queries and every CE returned as ``found`` must be
accepted by the *original* model on the raw row the user receives — or must raise the
library's typed error (:class:`~robustce.errors.RobustCEError`): :data:`SUPPORTED` lists
which, so a method that stops supporting a model kind, or starts accepting one silently,
fails here. The data mix a continuous feature with awkward decimals, a normal one, an
integer and a categorical, so decoding rounds.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robustce as rc
from robustce.errors import RobustCEError
from robustce.methods.registry import METHOD_CLASSES, build_explainer, get_method, trains_own_model

KINDS = ("mlp", "lr", "tree", "forest", "gb", "hgb", "pipeline", "torch")
NETWORKS = {"mlp", "lr", "pipeline", "torch"}
#: per method, the model kinds it explains (every other kind must raise a RobustCEError)
SUPPORTED: dict[str, set[str]] = {
    **{m: set(KINDS) for m in ("nearest_neighbour", "roar", "rbr", "robx", "diverse_robust",
                               "dice", "mace", "minimum_observable")},
    **{m: NETWORKS for m in ("wachter", "wachter_robust", "proto_robust", "milp_robust",
                             "robust_nearest_neighbour", "proplace", "apas")},
    "milp_nearest": set(KINDS),
    "ar": {"lr", "pipeline"},
    "pft": {"tree", "forest", "gb", "hgb"},
    "ensemble_robust": {"tree", "forest", "gb", "hgb"},
    "counternet": set(),
    "rocoursenet": set(),
    # robustce refits these by itself; a torch module needs the user's own procedure
    "retrain_robust": set(KINDS) - {"torch"},
}
#: small, fast settings (the property is about what is returned, not about its quality)
PARAMS: dict[str, dict[str, Any]] = {
    "wachter": {"max_iter": 60, "max_lambda_steps": 4},
    "wachter_robust": {"max_iter": 60, "max_lambda_steps": 4},
    "rbr": {"max_iter": 40, "n_samples": 40, "n_line": 20, "n_neighbours": 50},
    "counternet": {"hidden": ((16,), (8,), (8,)), "epochs": 30, "progress": False},
    "rocoursenet": {"hidden": ((16,), (8,), (8,)), "epochs": 4, "progress": False, "n_steps": 2},
    "mace": {"epsilon": 1e-3},
    "retrain_robust": {"n_search": 2, "max_models": 10, "share": 0.5, "confidence": 0.8,
                       "n_looks": 1, "max_tries": 1},
}
N_ROWS = 120


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = N_ROWS
    frame = pd.DataFrame({
        "income": np.round(rng.uniform(1000.5, 9000.25, n), 2),
        "debt": rng.normal(50.0, 20.0, n) / 3.0,
        "years": rng.integers(0, 30, n),
        "home": rng.choice(["own", "rent", "other"], n),
    })
    score = (frame["income"] / 3000 - frame["debt"] / 13 + frame["years"] / 15
             + (frame["home"] == "own") + rng.normal(0, 0.3, n))
    frame["target"] = (score > np.median(score)).astype(int)
    return frame


@functools.lru_cache(maxsize=1)
def _world() -> tuple[rc.datasets.Dataset, dict[str, Any], dict[str, Any]]:
    """The data, the robustce model of each kind, and each kind's *original* scorer of raw
    frames (class indices)."""
    import torch
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import (
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    data = rc.datasets.from_frame(_frame(), target="target")
    raw, y = data.frame, np.asarray(data.target)
    enc = rc.data.Encoder(data.schema).fit(raw)
    X = enc.transform(raw)
    models: dict[str, Any] = {}
    judges: dict[str, Any] = {}

    def pipeline(clf: Any) -> Pipeline:
        pre = ColumnTransformer([("num", StandardScaler(), ["income", "debt", "years"]),
                                 ("cat", OneHotEncoder(), ["home"])])
        return Pipeline([("pre", pre), ("clf", clf)]).fit(raw, y)

    mlp = rc.models.MLP(hidden_layers=(8,), epochs=150, random_state=0).fit(data)
    models["mlp"], judges["mlp"] = mlp, mlp.predict
    for kind, est in (("lr", LogisticRegression()),
                      ("tree", DecisionTreeClassifier(max_depth=3, random_state=0)),
                      ("forest", RandomForestClassifier(n_estimators=3, max_depth=3,
                                                        random_state=0))):
        est.fit(X, y)
        models[kind] = rc.models.wrap(est, enc)
        judges[kind] = functools.partial(lambda e, fr: e.predict(enc.transform(fr)), est)
    for kind, clf in (("gb", GradientBoostingClassifier(n_estimators=5, max_depth=2,
                                                        random_state=0)),
                      ("hgb", HistGradientBoostingClassifier(max_iter=5, max_depth=2,
                                                             random_state=0)),
                      ("pipeline", LogisticRegression())):
        pipe = pipeline(clf)
        models[kind] = rc.models.from_sklearn(pipe, data)
        judges[kind] = pipe.predict
    torch.manual_seed(0)
    pre = ColumnTransformer([("num", StandardScaler(), ["income", "debt", "years"]),
                             ("cat", OneHotEncoder(), ["home"])]).fit(raw)
    Z = torch.tensor(np.asarray(pre.transform(raw), dtype=np.float64))
    module = torch.nn.Sequential(torch.nn.Linear(Z.shape[1], 6), torch.nn.ReLU(),
                                 torch.nn.Linear(6, 1)).double()
    opt = torch.optim.Adam(module.parameters(), 0.05)
    target = torch.tensor(y, dtype=torch.float64)
    for _ in range(150):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(module(Z)[:, 0], target)
        loss.backward()
        opt.step()
    module.eval()
    models["torch"] = rc.models.from_torch(module, pre, data)

    def torch_judge(fr: pd.DataFrame) -> np.ndarray:
        with torch.no_grad():
            z = module(torch.tensor(np.asarray(pre.transform(fr), dtype=np.float64)))
        return (z[:, 0] > 0).numpy().astype(np.int64)

    judges["torch"] = torch_judge
    for kind, model in models.items():  # every model has both classes to explain
        assert len(np.unique(model.predict(raw))) == 2, kind
    return data, models, judges


def _build(method: str, model: Any, data: rc.datasets.Dataset) -> Any:
    params = {"time_limit": 5.0, **PARAMS.get(method, {})}
    if method not in ("counternet", "rocoursenet") or "random_state" in get_method(
            method).param_names():
        params.setdefault("random_state", 0)
    return build_explainer(method, model, data, **params)


def _check_found(res: rc.Explanations, data: rc.datasets.Dataset, judge: Any) -> int:
    """Every CE of a ``found`` query, as raw rows, gets its target from ``judge``."""
    cf = res.counterfactuals
    found = res.status[res.status == "found"].index
    rows = cf[cf["query_id"].isin(found)]
    if len(rows):
        want = res.target_class.loc[rows["query_id"]].to_numpy()
        got = np.asarray(judge(rows[data.schema.names].reset_index(drop=True)))
        bad = np.flatnonzero(got != want)
        assert not len(bad), (f"{len(bad)} of {len(rows)} found CEs rejected by the original "
                              f"model:\n{rows.iloc[bad]}")
    for q in found:
        assert (cf["query_id"] == q).any(), f"query {q} is 'found' without a CE"
    return len(rows)


queries = st.lists(st.integers(0, N_ROWS - 1), min_size=1, max_size=3, unique=True)
SETTINGS = settings(max_examples=2, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", sorted(METHOD_CLASSES))
def test_found_ces_pass_the_original_model_or_the_pair_raises(method, kind):
    cls = get_method(method)
    missing = cls.missing_dependency()
    if missing:
        pytest.skip(f"{method}: {missing}")
    data, models, judges = _world()
    model = models[kind]
    if kind not in SUPPORTED[method]:
        with pytest.raises(RobustCEError):
            ex = _build(method, model, data)
            ex.explain(data.frame.iloc[:2])
        return
    explainer = _build(method, model, data)

    @SETTINGS
    @given(rows=queries)
    def prop(rows: list[int]) -> None:
        res = explainer.explain(data.frame.iloc[rows])
        assert set(res.status) <= set(rc.explanations.STATUSES)
        _check_found(res, data, judges[kind])

    prop()


@pytest.mark.parametrize("method", [m for m in sorted(METHOD_CLASSES)
                                    if trains_own_model(m)])
def test_self_trained_methods_pass_their_own_predictor(method):
    """CounterNet and RoCourseNet explain the predictor they train: its raw ``predict`` is
    the original model."""
    data, _, _ = _world()
    explainer = _build(method, None, data)

    @SETTINGS
    @given(rows=queries)
    def prop(rows: list[int]) -> None:
        res = explainer.explain(data.frame.iloc[rows])
        _check_found(res, data, explainer.model.predict)

    prop()


def test_supported_table_covers_every_registered_method():
    assert set(SUPPORTED) == set(METHOD_CLASSES)
    assert {m for m, kinds in SUPPORTED.items() if not kinds} == {
        m for m in METHOD_CLASSES if trains_own_model(m)}
