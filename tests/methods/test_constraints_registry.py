"""Registry-wide (issue 34): every CE from every registered method satisfies every constraint
shipped with ``synthetic_loan`` (plus ``max_changes``), checked on the raw rows by an evaluator
written here from the constraint *text* (``pandas.eval`` of each side, not the library's parser);
each query's certificate says how many CEs the constraints removed, and ``meta`` records the
constraints and, per CE row, the relations that are tight."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import robustce as rc
from robustce.data.builtin import synthetic_loan
from robustce.methods.registry import METHOD_CLASSES, build_explainer, get_method, trains_own_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MAX_CHANGES = 4
#: a guarantor comes with a new housing arrangement, or neither changes
GROUPS = [["has_guarantor", "housing"]]
#: a degree takes time (age is immutable here, so no CE may raise education), and owners'
#: debt stays within two incomes
CONDITIONALS = ["if education increases then age increases by >= 1",
                'housing == "own" -> debt <= 2 * income']
TOL = 1e-6
#: the model each method explains (default: the MLP)
MODEL_FOR = {"pft": "forest", "ensemble_robust": "forest", "ar": "lr"}
PARAMS = {
    "wachter": {"max_iter": 60, "max_lambda_steps": 4},
    "wachter_robust": {"max_iter": 60, "max_lambda_steps": 4, "shift": 0.01},
    "proto_robust": {"shift": 0.01},
    "milp_robust": {"shift": 0.01},
    "apas": {"delta": 0.01},
    "robust_nearest_neighbour": {"shift": 0.01},
    "rbr": {"max_iter": 40, "n_samples": 40, "n_line": 20, "n_neighbours": 50},
    "counternet": {"hidden": ((16,), (8,), (8,)), "epochs": 30, "progress": False},
    "rocoursenet": {"hidden": ((16,), (8,), (8,)), "epochs": 4, "progress": False, "n_steps": 2},
    "mace": {"epsilon": 1e-3},
    "retrain_robust": {"n_search": 2, "max_models": 10, "share": 0.5, "confidence": 0.8,
                       "n_looks": 1, "max_tries": 1},
    "dice": {"n_counterfactuals": 3},
    "diverse_robust": {"n_counterfactuals": 3},
}


@pytest.fixture(scope="module")
def world():
    data = synthetic_loan(500, random_state=0)
    mlp = rc.models.MLP((8,), epochs=60, random_state=0).fit(data)
    enc = mlp.encoder
    X = enc.transform(data.frame)
    rf = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, data.y)
    lr = LogisticRegression(max_iter=500).fit(X, data.y)
    return data, {"mlp": mlp, "forest": rc.models.wrap(rf, enc), "lr": rc.models.wrap(lr, enc)}


def _sides(text: str) -> tuple[str, str, str]:
    """``lhs``, operator, ``rhs`` of a relation text (split on its one comparison)."""
    m = re.fullmatch(r"(.+?)\s*(<=|>=|==)\s*(.+)", text.strip())
    assert m, text
    return m.group(1), m.group(2), m.group(3)


def independent_violations(raw: pd.DataFrame, relations: list[str]) -> pd.DataFrame:
    """Per row and relation, whether it is violated by more than TOL relative to its sides'
    magnitude — both sides evaluated with ``pandas.eval`` on the raw rows."""
    out = {}
    for text in relations:
        lhs, op, rhs = _sides(text)
        a = raw.eval(lhs).to_numpy(np.float64)
        b = np.broadcast_to(np.asarray(raw.eval(rhs), dtype=np.float64), a.shape)
        slack = TOL * (1.0 + np.abs(a) + np.abs(b))
        gap = {"<=": a - b, ">=": b - a, "==": np.abs(a - b)}[op]
        out[text] = gap > slack
    return pd.DataFrame(out, index=raw.index)


def _level(values: pd.Series, data) -> np.ndarray:
    feat = data.schema[values.name]
    if feat.kind.value == "ordinal":
        return np.array([list(feat.categories).index(v) for v in values], dtype=np.float64)
    return values.to_numpy(np.float64)


def independent_conditionals(raw: pd.DataFrame, q: pd.DataFrame, data, texts: list[str]
                             ) -> np.ndarray:
    """Per row, whether every conditional holds: the condition ('f increases' or
    'f == "value"') is false, or the consequence ('f increases by >= k' or a relation) holds."""
    ok = np.ones(len(raw), dtype=bool)
    for text in texts:
        m = re.fullmatch(r"if (.+) then (.+)", text) or re.fullmatch(r"(.+?) -> (.+)", text)
        cond, cons = m.group(1).strip(), m.group(2).strip()
        if cond.endswith(" increases"):
            f = cond.split()[0]
            on = _level(raw[f], data) > _level(q[f], data)
        else:
            f, value = (p.strip() for p in cond.split("=="))
            on = (raw[f] == value.strip('"')).to_numpy()
        mb = re.fullmatch(r"(\w+) increases by >= (.+)", cons)
        if mb:
            f = mb.group(1)
            holds = _level(raw[f], data) - _level(q[f], data) >= float(mb.group(2)) - TOL
        else:
            holds = ~independent_violations(raw, [cons]).to_numpy()[:, 0]
        ok &= ~on | holds
    return ok


def independent_changes(raw: pd.DataFrame, q: pd.DataFrame) -> np.ndarray:
    """Per row, how many raw features differ from its query (numbers beyond TOL relative)."""
    n = np.zeros(len(raw), dtype=np.int64)
    for c in raw.columns:
        a, b = raw[c].to_numpy(), q[c].to_numpy()
        if pd.api.types.is_numeric_dtype(raw[c]) and pd.api.types.is_numeric_dtype(q[c]):
            a, b = a.astype(np.float64), b.astype(np.float64)
            n += np.abs(a - b) > TOL * np.maximum(1.0, np.abs(b))
        else:
            n += a != b
    return n


@pytest.mark.parametrize("method", sorted(METHOD_CLASSES))
def test_every_ce_satisfies_the_constraints(world, method):
    cls = get_method(method)
    missing = cls.missing_dependency()
    if missing:
        pytest.skip(f"{method}: {missing}")
    data, models = world
    relations = list(data.meta["constraints"]["relations"])
    causal = data.meta["causal"]  # income := β · education + U
    spec = {"relations": relations, "max_changes": MAX_CHANGES, "conditionals": CONDITIONALS,
            "causal": causal, "groups": GROUPS}
    params = {"time_limit": 10.0, "constraints": spec, **PARAMS.get(method, {})}
    if method == "proplace":  # the hull of training points cannot keep max_changes
        params["constraints"] = {"relations": relations, "conditionals": CONDITIONALS,
                                 "causal": causal, "groups": GROUPS}
    if "random_state" in cls.param_names():
        params.setdefault("random_state", 0)
    model = None if trains_own_model(method) else models[MODEL_FOR.get(method, "mlp")]
    ex = build_explainer(method, model, data, **params)
    assert cls.constraint_support() in ("exact", "filter")
    pred = ex.model.predict(data.frame)
    queries = data.frame.iloc[np.flatnonzero(pred == 0)[:4]]
    res = ex.explain(queries)

    # an exact method still finds CEs (PROPLACE's region needs a Δ-robust training point that
    # satisfies the constraints: on this small pool none does)
    if cls.constraint_support() == "exact" and method != "proplace":
        assert (res.status == "found").any(), res.to_frame()[["status", "message"]]
    cfs = res.counterfactuals
    raw = cfs[data.schema.names].reset_index(drop=True)
    q = queries.loc[cfs["query_id"].to_numpy()].reset_index(drop=True)
    bad = independent_violations(raw, relations)
    assert not bad.to_numpy().any(), raw[bad.any(axis=1)]
    assert independent_conditionals(raw, q, data, CONDITIONALS).all()
    for child, parents in causal.items():  # the structural equation applied to the actions
        want = q[child].to_numpy(np.float64) + sum(
            beta * (_level(raw[p], data) - _level(q[p], data)) for p, beta in parents.items())
        assert np.allclose(raw[child].to_numpy(np.float64), want, rtol=1e-6, atol=1e-3)
    for group in GROUPS:  # none or all of a group's features change
        moved = np.column_stack([raw[f].to_numpy() != q[f].to_numpy() for f in group])
        assert (~moved.any(axis=1) | moved.all(axis=1)).all()
    if "max_changes" in params["constraints"]:
        assert (independent_changes(raw, q) <= MAX_CHANGES).all()

    # per query, the CEs the constraints removed; meta records them and the tight relations
    removed = res.to_frame()["constraints_removed"]
    active = res.status != "already_target"
    assert (removed[active] >= 0).all() and removed[active].notna().all()
    if cls.constraint_support() == "exact":
        assert (removed[active] == 0).all()
    meta = res.meta["constraints"]
    assert meta["relations"] == relations and meta["support"] == cls.constraint_support()
    assert len(meta["active"]) == len(cfs)
    for row, tight in zip(raw.itertuples(index=False), meta["active"], strict=True):
        frame = pd.DataFrame([row._asdict()])
        for text in relations:
            lhs, _, rhs = _sides(text)
            a, b = float(frame.eval(lhs).iloc[0]), float(np.asarray(frame.eval(rhs)).reshape(-1)[0])
            is_tight = abs(a - b) <= 1e-6 * (1.0 + abs(a) + abs(b))
            if abs(abs(a - b) / (1.0 + abs(a) + abs(b)) - 1e-6) > 1e-7:  # not on the border
                assert (text in tight) == is_tight, (text, a, b, tight)


def test_meta_survives_concat_and_save(world, tmp_path):
    data, models = world
    ex = build_explainer("milp_nearest", models["mlp"], data,
                         constraints={"relations": ["debt <= 0.2 * income"]})
    pred = models["mlp"].predict(data.frame)
    rows = np.flatnonzero(pred == 0)[:6]
    a, b = ex.explain(data.frame.iloc[rows[:3]]), ex.explain(data.frame.iloc[rows[3:]])
    both = rc.Explanations.concat([a, b])
    active = both.meta["constraints"]["active"]
    assert len(active) == len(both.counterfactuals)
    assert active == a.meta["constraints"]["active"] + b.meta["constraints"]["active"]
    assert any(active), "no CE sits on the relation: nothing tight to record"
    back = rc.Explanations.load(both.save(tmp_path / "ce"))
    assert back.meta["constraints"] == both.meta["constraints"]
    assert back.to_frame()["constraints_removed"].tolist() == \
        both.to_frame()["constraints_removed"].tolist()


#: age is immutable: no CE of a query younger than 75 satisfies it
IMPOSSIBLE = ["age >= 75"]


#: the slowest methods here (seconds each on the 2-core machine) run with ``make test-all``
_SLOW_WHEN_EMPTY = {"proto_robust", "rbr", "counternet"}


@pytest.mark.parametrize("method", [pytest.param(m, marks=pytest.mark.slow) if m in _SLOW_WHEN_EMPTY
                                    else m for m in sorted(METHOD_CLASSES)])
def test_constraints_that_remove_everything_give_the_documented_status(world, method):
    """Constraints no CE can satisfy: no method answers ``error`` or ``found``; a query
    whose every returned CE the constraints removed (some perhaps dropped as invalid too) is
    ``not_found`` (docs/constraints.md); an exact method removes none."""
    cls = get_method(method)
    missing = cls.missing_dependency()
    if missing:
        pytest.skip(f"{method}: {missing}")
    data, models = world
    params = {"time_limit": 10.0, "constraints": {"relations": IMPOSSIBLE},
              **PARAMS.get(method, {})}
    if "random_state" in cls.param_names():
        params.setdefault("random_state", 0)
    model = None if trains_own_model(method) else models[MODEL_FOR.get(method, "mlp")]
    ex = build_explainer(method, model, data, **params)
    pred = ex.model.predict(data.frame)
    queries = data.frame.iloc[np.flatnonzero((pred == 0) & (data.frame["age"] < 75))[:4]]
    res = ex.explain(queries)
    frame = res.to_frame()
    assert len(res.counterfactuals) == 0
    assert set(res.status) <= {"infeasible", "no_robust_point", "not_found", "timeout"}, \
        frame[["status", "message"]]
    # a query whose CEs the constraints removed (a filtering method's returned CEs; a
    # neighbour method filters its pool first and reports on the pool) is not_found
    removed = frame["constraints_removed"] > 0
    if cls.constraint_support() == "exact":
        assert not removed.any()
    assert (frame.loc[removed, "status"] == "not_found").all(), frame[["status", "message"]]
