"""PFT (Plausible Feature Tweaking): against an independent per-path reference (boxes from
``TreeView.paths()``, tweaks and projection per candidate, plain forward pass, distance from
decoded values); valid, plausible, decodable CEs; never nearer than MACE's lower bound; clear
errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.data.schema import FeatureKind
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.methods import MACE, PlausibleFeatureTweaking

LEVELS = ("low", "mid", "high", "top")
CATS = ("a", "b", "c")
EPS = 1e-3


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    f = pd.DataFrame({
        "c1": rng.uniform(0, 10, n).round(2), "n": rng.integers(0, 7, n),
        "level": rng.choice(LEVELS, n), "cat": rng.choice(CATS, n), "flag": rng.integers(0, 2, n),
        "c2": rng.uniform(-1, 1, n).round(3),
    })
    score = (f.c1 / 10 + f.n / 6 + f.level.map(dict(zip(LEVELS, (0, 0.3, 0.6, 0.9), strict=True)))
             + (f.cat == "b") * 0.5 - f.flag * 0.3 + 0.3 * f.c2 + rng.normal(0, 0.15, n))
    f["y"] = (score > 1.2).astype(int)
    return f


def _schema() -> Schema:
    return Schema([
        Feature("c1", "continuous", lower=0.0, upper=10.0),
        Feature("n", "integer", lower=0, upper=6, actionability="increase"),
        Feature("level", "ordinal", categories=LEVELS),
        Feature("cat", "categorical", categories=CATS),
        Feature("flag", "binary", categories=(0, 1), actionability="immutable"),
        Feature("c2", "continuous", lower=-1.0, upper=1.0, actionability="decrease"),
    ])


@pytest.fixture(scope="module")
def world():
    data = from_frame(_frame(300, 0), "y", schema=_schema())
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    X = enc.transform(data.frame)
    models = {
        "tree": DecisionTreeClassifier(max_depth=6, random_state=0),
        "forest1": RandomForestClassifier(n_estimators=1, max_depth=5, random_state=0),
        "forest": RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0),
    }
    return data, {k: rc.models.wrap(m.fit(X, data.y), enc) for k, m in models.items()}


# --- an independent reference --------------------------------------------------------------


def _reference_distance(enc, q: np.ndarray, C: np.ndarray, norm: str) -> np.ndarray:
    """MACE eq. 3 from decoded raw values: numeric |Δ|/range, ordinal |Δ level|/(k-1),
    categorical/binary 𝕀[≠], divided by the number of raw features."""
    a = enc.level_indices(np.atleast_2d(q))
    b = enc.level_indices(np.atleast_2d(C))
    delta = np.zeros_like(b)
    for j, blk in enumerate(enc.blocks_):
        f = blk.feature
        if f.kind.is_numeric:
            delta[:, j] = np.abs(b[:, j] - a[:, j]) / (f.upper - f.lower)
        elif f.kind is FeatureKind.ORDINAL:
            delta[:, j] = np.abs(b[:, j] - a[:, j]) / (f.n_levels - 1)
        else:
            delta[:, j] = (b[:, j] != a[:, j]).astype(float)
    parts = {"l0": (delta > 0).sum(axis=1), "l1": delta.sum(axis=1), "linf": delta.max(axis=1)}
    return parts[norm] / len(enc.blocks_)


def _reference_candidate(enc, x: np.ndarray, path, eps: float, acts: dict) -> np.ndarray:
    """One FT candidate, scalar by scalar: the path's box, each violated single-column
    condition fixed by ε (midpoint of a box narrower than 2ε), multi-column features moved to
    the nearest level their encoding allows, actionability resets, then the encoder's
    projection."""
    d = len(x)
    lo, hi = [-math.inf] * d, [math.inf] * d
    for f, t, went_left in path:
        if went_left:
            hi[f] = min(hi[f], t)
        else:
            lo[f] = max(lo[f], t)
    c = x.copy()
    for blk in enc.blocks_:
        cols = range(blk.start, blk.stop)
        if blk.encoding in ("onehot", "thermometer"):
            k = blk.feature.n_levels
            codes = []
            for level in range(k):
                if blk.encoding == "onehot":
                    codes.append([1.0 if j == level else 0.0 for j in range(k)])
                else:
                    codes.append([1.0 if level >= j + 1 else 0.0 for j in range(k - 1)])
            own = next(i for i, e in enumerate(codes) if list(x[blk.slice]) == e)
            best, best_cost = own, math.inf
            for level, e in enumerate(codes):
                if all(lo[col] < v <= hi[col] for col, v in zip(cols, e, strict=True)):
                    cost = abs(level - own) if blk.encoding == "thermometer" else float(level != own)
                    if cost < best_cost:
                        best, best_cost = level, cost
            c[blk.slice] = codes[best]
        else:
            col = blk.start
            if x[col] > hi[col]:
                c[col] = hi[col] - eps if hi[col] - eps > lo[col] else (lo[col] + hi[col]) / 2
            elif x[col] <= lo[col]:
                c[col] = lo[col] + eps if lo[col] + eps <= hi[col] else (lo[col] + hi[col]) / 2
        act = acts.get(blk.name, blk.actionability.value)
        moved = c[blk.slice] - x[blk.slice]
        if (act == "immutable" or (act == "increase" and (moved < 0).any())
                or (act == "decrease" and (moved > 0).any())):
            c[blk.slice] = x[blk.slice]
    return enc.project(c[None])[0]


def _reference(model, x: np.ndarray, target: int, norm: str, eps: float = EPS, acts=None):
    """(best distance or None, number of distinct valid candidates) by a per-path loop."""
    enc = model.encoder
    cands = []
    for tree in model.trees():
        for leaf, path in tree.paths():
            if int(np.argmax(tree.value[leaf])) == target:
                cands.append(_reference_candidate(enc, x, path, eps, acts or {}))
    C = np.unique(np.array(cands), axis=0)
    C = C[np.array([int(model.predict(row[None])[0]) == target for row in C], dtype=bool)]
    if not len(C):
        return None, 0
    return float(_reference_distance(enc, x, C, norm).min()), len(C)


def _check_ce(model, q: np.ndarray, cf: np.ndarray, target: int, acts=None) -> None:
    enc = model.encoder
    assert int(model.predict(cf[None])[0]) == target  # a plain forward pass
    np.testing.assert_array_equal(enc.project(cf[None])[0], cf)  # type and range consistent
    raw = enc.inverse_transform(cf[None])
    again = enc.transform(raw)  # decodes to a valid raw row that encodes back to the CE
    np.testing.assert_allclose(again[0], cf, rtol=0, atol=1e-12)
    assert int(model.predict(again)[0]) == target  # ε keeps it off the thresholds
    acts = acts or {}
    for blk in enc.blocks_:
        act = acts.get(blk.name, blk.actionability.value)
        moved = cf[blk.slice] - q[blk.slice]
        if act == "immutable":
            assert np.all(moved == 0), blk.name
        elif act == "increase":
            assert np.all(moved >= 0), blk.name
        elif act == "decrease":
            assert np.all(moved <= 0), blk.name


# --- behaviour -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tree", "forest1", "forest"])
@pytest.mark.parametrize("norm", ["l0", "l1", "linf"])
def test_matches_the_per_path_reference(world, kind, norm):
    data, models = world
    model = models[kind]
    enc = model.encoder
    queries = data.frame.iloc[200:230]
    Q = enc.transform(queries)
    res = PlausibleFeatureTweaking(model, norm=norm, epsilon=EPS).explain(queries)
    n_found = 0
    for i, label in enumerate(queries.index):
        if res.status[label] == "already_target":
            continue
        t = int(res.target_class[label])
        best, n = _reference(model, Q[i], t, norm)
        assert res.certificates.loc[label, "n_candidates"] == n
        if best is None:
            assert res.status[label] == "not_found"
            assert math.isnan(res.certificates.loc[label, "distance"])
            continue
        assert res.status[label] == "found"
        n_found += 1
        assert res.certificates.loc[label, "distance"] == pytest.approx(best, abs=1e-12)
        cf = res.counterfactuals_encoded[(res.counterfactuals["query_id"] == label).to_numpy()][0]
        assert _reference_distance(enc, Q[i], cf, norm)[0] == pytest.approx(best, abs=1e-12)
        _check_ce(model, Q[i], cf, t)
    assert n_found >= 5


@pytest.mark.parametrize("kind", ["tree", "forest"])
def test_never_nearer_than_mace(world, kind):
    """MACE is optimal: PFT's distance is >= MACE's certified lower bound δ_min."""
    data, models = world
    model = models[kind]
    queries = data.frame.iloc[230:238]
    pft = PlausibleFeatureTweaking(model, norm="l1").explain(queries)
    mace = MACE(model, norm="l1", backend="smt", epsilon=1e-3).explain(queries)
    found = pft.status == "found"
    assert found.sum() >= 2
    for label in queries.index[found.to_numpy()]:
        assert mace.status[label] == "found"
        d_pft = pft.certificates.loc[label, "distance"]
        assert d_pft >= mace.certificates.loc[label, "delta_min"] - 1e-9


def test_actionability_overrides_epsilon_and_not_found(world):
    """Overrides (level frozen, c1 made increase-only; the base class re-checks the schema's
    actionability, so overrides may only tighten it) leave some queries with no valid
    candidate: ``not_found`` exactly where the reference has none."""
    data, models = world
    model = models["forest"]
    enc = model.encoder
    queries = data.frame.iloc[200:230]
    Q = enc.transform(queries)
    acts = {"level": "immutable", "c1": "increase"}
    res = PlausibleFeatureTweaking(model, actionability=acts, epsilon=0.01).explain(queries)
    counts = res.status.value_counts()
    assert counts.get("found", 0) >= 3 and counts.get("not_found", 0) >= 3
    for i, label in enumerate(queries.index):
        t = int(res.target_class[label])
        best, n = _reference(model, Q[i], t, "l1", eps=0.01, acts=acts)
        assert res.certificates.loc[label, "n_candidates"] == n
        if best is None:
            assert res.status[label] == "not_found"
            assert not (res.counterfactuals["query_id"] == label).any()
            continue
        cf = res.counterfactuals_encoded[(res.counterfactuals["query_id"] == label).to_numpy()][0]
        _check_ce(model, Q[i], cf, t, acts)
        assert res.certificates.loc[label, "distance"] == pytest.approx(best, abs=1e-12)


def test_leaf_boxes_cover_the_target_leaves(world):
    """Every target-class leaf box contains the training rows that reach that leaf."""
    from robustce.methods.feature_tweaking import leaf_boxes

    data, models = world
    X = models["tree"].encoder.transform(data.frame)
    tree = models["tree"].trees()[0]
    lo, hi = leaf_boxes(tree, 1)
    leaves = [leaf for leaf, _ in tree.paths() if np.argmax(tree.value[leaf]) == 1]
    assert len(lo) == len(leaves)
    inside = np.all((X[:, None, :] > lo[None]) & (X[:, None, :] <= hi[None]), axis=2)
    assert np.all(inside.sum(axis=1) <= 1)  # the boxes are disjoint
    reach = tree.apply(X)
    np.testing.assert_array_equal(inside.any(axis=1), np.isin(reach, leaves))


# --- registry and bad input --------------------------------------------------------------------


def test_built_from_the_registry(world):
    data, models = world
    for name in ("pft", "feature_tweaking", "PlausibleFeatureTweaking"):
        ex = rc.methods.build_explainer(name, models["tree"], None, epsilon=0.01)
        assert isinstance(ex, PlausibleFeatureTweaking)
    res = ex.explain(data.frame.iloc[:4])
    assert res.status.isin(["found", "not_found", "already_target"]).all()
    again = PlausibleFeatureTweaking(models["tree"], **ex.get_params())
    assert again.get_params() == ex.get_params()


def test_unsupported_model_is_named(world):
    data, models = world
    enc = models["tree"].encoder
    lr = LogisticRegression().fit(enc.transform(data.frame), data.y)
    with pytest.raises(UnsupportedModelError, match="LogisticRegression"):
        PlausibleFeatureTweaking(rc.models.wrap(lr, enc))


@pytest.mark.parametrize("norm", ["l2", {"l1": 0.7}, {"l3": 1.0}])
def test_bad_norm(world, norm):
    with pytest.raises(ValidationError, match="norm"):
        PlausibleFeatureTweaking(world[1]["tree"], norm=norm)


@pytest.mark.parametrize("eps", [0, -1e-3, float("nan"), 0.6, "x"])
def test_bad_epsilon(world, eps):
    with pytest.raises(ValidationError, match="epsilon"):
        PlausibleFeatureTweaking(world[1]["tree"], epsilon=eps)


def test_bad_actionability(world):
    tree = world[1]["tree"]
    with pytest.raises(ValidationError, match="nope"):
        PlausibleFeatureTweaking(tree, actionability={"nope": "immutable"})
    with pytest.raises(ValidationError, match="categorical"):
        PlausibleFeatureTweaking(tree, actionability={"cat": "increase"})
