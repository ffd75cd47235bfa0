"""(δ, ε) certificates against the user's own estimator (issue 47): every CE that
:class:`~robustce.methods.EnsembleRobust` returns is attacked by a copy of the fitted
scikit-learn / XGBoost / LightGBM model whose thresholds are moved by at most ε and whose leaf
values are moved by at most δ — the model's own arrays and its own ``predict``, not
robustce's tree view.

The attack, per tree: for every leaf, move each threshold on the leaf's path to the corner of
``[t − ε, t + ε]`` that favours the path's side (``t + ε`` where the path goes left, ``t − ε``
where it goes right), ask the library's own comparison whether the CE then reaches the leaf,
and keep the reached leaf worst for the target; then move every leaf value by δ against the
target. The CE must keep its class."""

from __future__ import annotations

import copy
import functools
import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.data.dataset import from_frame
from robustce.methods import EnsembleRobust
from robustce.robustness import EnsembleCertifier, EnsembleShift

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


def _data(n: int = 300, seed: int = 0):
    """Three continuous columns, every split's threshold a float between training values."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = ((X[:, 0] + X[:, 1] - 0.5 * X[:, 2] + 0.2 * rng.normal(size=n)) > 0.75).astype(int)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    data = from_frame(df.assign(y=y), "y")
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    return data, enc, enc.transform(data.frame), data.y


# --- scikit-learn: the fitted estimator's own tree_ arrays, its own apply / predict ----------

def _sk_trees(est):
    return [est] if hasattr(est, "tree_") else list(est.estimators_)


def _leaf_paths(left, right):
    """Per leaf, the internal nodes on its path and whether the path goes left there."""
    out, stack = [], [(0, [])]
    while stack:
        node, path = stack.pop()
        if left[node] < 0:
            out.append((node, path))
            continue
        stack.append((int(left[node]), [*path, (node, True)]))
        stack.append((int(right[node]), [*path, (node, False)]))
    return out


def attack_sklearn(est, x: np.ndarray, target: int, delta: float, eps) -> int:
    """The class the worst corner copy of ``est`` (sklearn tree / forest) predicts at ``x``;
    ``eps``: one number, or one per input of the estimator."""
    est = copy.deepcopy(est)
    eps_of = np.broadcast_to(np.asarray(eps, dtype=np.float64), (len(x),))
    rival = 1 - target
    x32 = np.asarray(x, dtype=np.float32)[None]
    for tree in _sk_trees(est):
        tr = tree.tree_
        thr = tr.threshold
        orig = thr.copy()
        value = tr.value[:, 0, :] / tr.value[:, 0, :].sum(axis=1, keepdims=True)
        best, best_path = np.inf, None
        e = eps_of[np.maximum(tr.feature, 0)]
        for leaf, path in _leaf_paths(tr.children_left, tr.children_right):
            for node, go_left in path:
                thr[node] = orig[node] + e[node] if go_left else orig[node] - e[node]
            if int(tree.apply(x32)[0]) == leaf and value[leaf, target] - value[leaf, rival] < best:
                best, best_path = value[leaf, target] - value[leaf, rival], path
            thr[:] = orig
        for node, go_left in best_path:
            thr[node] = orig[node] + e[node] if go_left else orig[node] - e[node]
        leaves = tr.children_left < 0
        moved = value.copy()
        moved[:, target] -= delta
        moved[:, rival] += delta
        tr.value[leaves, 0, :] = moved[leaves]
    return int(est.predict(x32)[0])


# --- XGBoost: the booster's JSON edited and loaded back, its own predict --------------------

def _f32_down(v: float) -> float:
    f = np.float32(v)
    return float(f if float(f) <= v else np.nextafter(f, np.float32(-np.inf)))


def _f32_up(v: float) -> float:
    f = np.float32(v)
    return float(f if float(f) >= v else np.nextafter(f, np.float32(np.inf)))


@functools.lru_cache(maxsize=8)
def _xgb_json(est) -> dict:
    return json.loads(est.get_booster().save_raw("json"))


def attack_xgboost(est, x: np.ndarray, target: int, delta: float, eps: float) -> int:
    """The class the worst corner copy of the XGBoost classifier predicts at ``x``: XGBoost
    sends ``float32(x) < cond`` left and stores ``cond`` as float32, so the corners are the
    float32 values nearest ``cond ± ε`` inside the interval."""
    model = copy.deepcopy(_xgb_json(est))
    x32 = np.asarray(x, dtype=np.float32)
    sign = -1.0 if target == 1 else 1.0  # leaves move against the target's logit
    for tree in model["learner"]["gradient_booster"]["model"]["trees"]:
        left = np.array(tree["left_children"])
        right = np.array(tree["right_children"])
        feat = np.array(tree["split_indices"])
        # the JSON holds float32 values as short decimals: the stored value is their float32
        cond = [float(np.float32(c)) for c in tree["split_conditions"]]
        orig = list(cond)

        def corner(node, go_left, orig=orig):
            return _f32_down(orig[node] + eps) if go_left else _f32_up(orig[node] - eps)

        best, best_path = np.inf, None
        for leaf, path in _leaf_paths(left, right):
            # the booster's own comparison, float32(x) < cond, at the corner thresholds
            reached = all((x32[feat[n]] < np.float32(corner(n, g))) == g for n, g in path)
            score = -sign * orig[leaf]  # how much the leaf favours the target
            if reached and score < best:
                best, best_path = score, path
        for node, go_left in best_path:
            cond[node] = corner(node, go_left)
        for leaf in np.flatnonzero(left < 0):
            cond[leaf] = orig[leaf] + sign * delta
        tree["split_conditions"] = cond
        tree["base_weights"] = [cond[i] if left[i] < 0 else w
                                for i, w in enumerate(tree["base_weights"])]
    booster = xgb.Booster()
    booster.load_model(bytearray(json.dumps(model).encode()))
    p = booster.predict(xgb.DMatrix(np.asarray(x, dtype=np.float64)[None]))
    return int(p[0] > 0.5)


# --- LightGBM: the model text edited and loaded back, its own predict ------------------------

def _lgb_field(block: str, name: str) -> list[str]:
    return re.search(rf"^{name}=(.*)$", block, re.M).group(1).split()


def _lgb_set(block: str, name: str, values: list[float]) -> str:
    text = " ".join(repr(float(v)) for v in values)
    return re.sub(rf"^{name}=.*$", f"{name}={text}", block, count=1, flags=re.M)


def attack_lightgbm(est, x: np.ndarray, target: int, delta: float, eps: float) -> int:
    """The class the worst corner copy of the LightGBM classifier predicts at ``x``: LightGBM
    sends ``x <= threshold`` left with double thresholds."""
    text = est.booster_.model_to_string()
    head, *blocks = re.split(r"(?m)^(?=Tree=\d+$)", text)
    sign = -1.0 if target == 1 else 1.0
    out = [re.sub(r"(?m)^tree_sizes=.*\n", "", head)]  # the byte sizes change with the edits
    for block in blocks:
        if "split_feature=" not in block:  # a one-leaf tree, or the trailer after the trees
            out.append(block)
            continue
        assert set(_lgb_field(block, "decision_type")) <= {"2", "0", "8", "10"}, "numeric splits"
        feat = [int(v) for v in _lgb_field(block, "split_feature")]
        thr = [float(v) for v in _lgb_field(block, "threshold")]
        lc = [int(v) for v in _lgb_field(block, "left_child")]
        rc_ = [int(v) for v in _lgb_field(block, "right_child")]
        leaf_value = [float(v) for v in _lgb_field(block, "leaf_value")]
        # nodes: internal i >= 0, leaf l as n_internal + l
        n_in = len(thr)
        left = np.array([c if c >= 0 else n_in + ~c for c in lc] + [-1] * len(leaf_value))
        right = np.array([c if c >= 0 else n_in + ~c for c in rc_] + [-1] * len(leaf_value))
        orig = list(thr)

        def corner(node, go_left, orig=orig):
            return orig[node] + eps if go_left else orig[node] - eps

        best, best_path = np.inf, None
        for leaf, path in _leaf_paths(left, right):
            reached = all((float(x[feat[n]]) <= corner(n, g)) == g for n, g in path)
            score = -sign * leaf_value[leaf - n_in]
            if reached and score < best:
                best, best_path = score, path
        for node, go_left in best_path:
            thr[node] = corner(node, go_left)
        block = _lgb_set(block, "threshold", thr)
        block = _lgb_set(block, "leaf_value", [v + sign * delta for v in leaf_value])
        out.append(block)
    booster = lgb.Booster(model_str="".join(out))
    z = booster.predict(np.asarray(x, dtype=np.float64)[None], raw_score=True)
    return int(z[0] > 0)


FAMILIES = {
    "tree": (lambda: DecisionTreeClassifier(max_depth=4, random_state=0), attack_sklearn),
    "forest": (lambda: RandomForestClassifier(6, max_depth=3, random_state=0), attack_sklearn),
    "extra_trees": (lambda: ExtraTreesClassifier(6, max_depth=3, random_state=0), attack_sklearn),
    "xgboost": (lambda: xgb.XGBClassifier(n_estimators=6, max_depth=3, random_state=0, n_jobs=1),
                attack_xgboost),
    "lightgbm": (lambda: lgb.LGBMClassifier(n_estimators=6, num_leaves=6, random_state=0,
                                            verbose=-1, n_jobs=1), attack_lightgbm),
}


def certified_ces(family: str, delta: float, eps: float, n_queries: int = 8, seed: int = 0):
    """The fitted estimator, and the model-space CEs EnsembleRobust returns as ``found``
    (proven (δ, ε)-robust for class 1) for the first rejected rows."""
    make, _ = FAMILIES[family]
    data, enc, X, y = _data(seed=seed)
    est = make().fit(X, y)
    model = rc.models.wrap(est, enc)
    rejected = data.frame[model.predict(data.frame) == 0].head(n_queries)
    res = EnsembleRobust(model, data, delta=delta, epsilon=eps, time_limit=30).explain(rejected)
    found = res.status == "found"
    return est, model, res.counterfactuals_encoded[np.asarray(found)]


@pytest.mark.parametrize("delta,eps", [(0.02, 0.01), (0.0, 0.01), (0.02, 0.0)],
                         ids=["delta_eps", "eps_only", "delta_only"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_certified_ce_survives_the_users_own_estimator_at_the_corners(family, delta, eps):
    attack = FAMILIES[family][1]
    n, flipped = 0, []
    for seed in (0, 1, 2):
        est, _, ces = certified_ces(family, delta, eps, seed=seed)
        n += len(ces)
        flipped += [(seed, i) for i, x in enumerate(ces) if attack(est, x, 1, delta, eps) != 1]
    assert n >= 12, "the queries have certified CEs to attack"
    assert flipped == [], f"{len(flipped)} of {n} certified CEs flipped"


def _rows_on_splits(model, X: np.ndarray, eps: float, n_nodes: int = 12) -> np.ndarray:
    """Training rows with one column set exactly on a split of the model: on its view
    threshold ``t``, on ``t ± ε``, one float64 and one float32 step either side of each."""
    from robustce.robustness.ensemble import VoteEnsemble

    s = VoteEnsemble.of(model).stack
    inner = np.flatnonzero(~s.is_leaf)[:n_nodes]
    rows = []
    for k, node in enumerate(inner):
        t = float(s.threshold[node])
        base = X[k % len(X)]
        for c in (t, t - eps, t + eps):
            c32 = np.float32(c)
            for v in (c, np.nextafter(c, -1.0), np.nextafter(c, 2.0), float(c32),
                      float(np.nextafter(c32, np.float32(-1))), float(np.nextafter(c32, np.float32(2)))):
                r = base.copy()
                r[s.feature[node]] = v
                rows.append(r)
    return np.array(rows)


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.slow) if f == "xgboost" else f
                                    for f in FAMILIES])
def test_rows_exactly_on_splits_are_certified_as_the_users_estimator_routes_them(family):
    """ε = 0: a row on a split (or one float step off it) is certified for the class the
    user's own estimator gives it, never for the other. ε > 0: every such row certified
    robust keeps its class at the corners of the user's estimator."""
    make, attack = FAMILIES[family]
    _, enc, X, y = _data()
    est = make().fit(X, y)
    model = rc.models.wrap(est, enc)
    eps = 0.01
    R = _rows_on_splits(model, X, eps)
    own = est.predict(R.astype(np.float64)).astype(int)
    at_zero = EnsembleCertifier(EnsembleShift(0.0, 0.0))
    assert at_zero.certify(model, R, own).robust.all()
    assert not at_zero.certify(model, R, 1 - own).robust.any()
    shifted = EnsembleCertifier(EnsembleShift(0.02, eps)).certify(model, R, own)
    robust = np.flatnonzero(shifted.robust)
    assert len(robust) >= 10, "some rows on the splits are (δ, ε)-robust"
    flipped = [i for i in robust if attack(est, R[i], int(own[i]), 0.02, eps) != own[i]]
    assert flipped == [], f"{len(flipped)} of {len(robust)} certified rows flipped"


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_a_forest_on_raw_values_of_a_narrow_high_column_survives_its_own_corners():
    """A forest fitted on the raw frame (``from_sklearn``): a year column 2000–2020 is read
    by the estimator in float32 steps of 2^-13 year, 6e-6 of its range — far above a float32
    step of the model-space threshold (the margin must count the raw magnitude). ε = 0.01 of
    the range is 0.2 year on the estimator's own thresholds; every certified CE's raw row,
    and every certified row near a year split's ε boundary, keeps its class at the corners."""
    from robustce.models.sklearn_import import from_sklearn

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"year": 2000.0 + 20.0 * rng.random(n), "b": rng.random(n)})
    y = ((df.year - 2000) / 20 + df.b + 0.2 * rng.normal(size=n) > 1.0).astype(int).to_numpy()
    est = RandomForestClassifier(6, max_depth=3, random_state=0).fit(df, y)
    data = from_frame(df.assign(y=y), "y")
    model = from_sklearn(est, data)
    span = np.array([data.schema[c].upper - data.schema[c].lower for c in df.columns])
    delta, eps = 0.02, 0.01
    queries = df[est.predict(df) == 0].head(12)
    res = EnsembleRobust(model, data, delta=delta, epsilon=eps, time_limit=30).explain(queries)
    raw = res.counterfactuals[list(df.columns)].to_numpy(np.float64)
    assert len(raw) >= 8
    flipped = [i for i, x in enumerate(raw) if attack_sklearn(est, x, 1, delta, eps * span) != 1]
    assert flipped == [], f"{len(flipped)} of {len(raw)} certified CEs flipped"
    # rows swept across the model-space boundaries θ ± ε of the year splits, in steps of
    # 2e-6 (4e-5 year): each certified one keeps its class at the estimator's own corners
    from robustce.robustness.ensemble import VoteEnsemble

    s = VoteEnsemble.of(model).stack
    X = model.encoder.transform(df)
    rows = []
    for node in np.flatnonzero(~s.is_leaf & (s.feature == 0)):
        for face in (s.threshold[node] - eps, s.threshold[node] + eps):
            for k in range(-20, 21):
                for base in X[:1]:
                    r = base.copy()
                    r[0] = face + k * 2e-6
                    rows.append(r)
    R = np.array(rows)
    raw = model.encoder.inverse_transform(R)[list(df.columns)]
    own = est.predict(raw).astype(int)
    robust = np.flatnonzero(EnsembleCertifier(EnsembleShift(0.0, eps)).certify(model, R, own).robust)
    assert len(robust) >= 30
    raw = raw.to_numpy(np.float64)
    flipped = [i for i in robust if attack_sklearn(est, raw[i], int(own[i]), 0.0, eps * span) != own[i]]
    assert flipped == [], f"{len(flipped)} of {len(robust)} certified rows flipped"
