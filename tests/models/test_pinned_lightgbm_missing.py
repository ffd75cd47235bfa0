"""LightGBM's missing-value routing against the booster itself, on every combination of
``missing_type`` (None / Zero / NaN) and ``default_left`` (True / False).

Training only produces some combinations (None with default left, NaN and Zero with default
right on this data), so each combination is made by rewriting the ``decision_type`` of every
numeric node in the booster's own model string and loading it back into LightGBM: the oracle is
``Booster.predict(raw_score=True)`` (LightGBM's C++ evaluation), never robustce's view.

What must hold (module docstring of :mod:`robustce.models.boosters`): NaN is outside the model
space; every complete row — zeros, signed zeros, values LightGBM reads as zero (``|z| <= 1e-35``),
values on and beside every threshold — gets the booster's raw score; and the import is refused
exactly when a zero-as-missing split sends a value the column can take against its threshold
(decided here by walking the dump with LightGBM's own rule, independently of the import)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models import from_sklearn

lgb = pytest.importorskip("lightgbm", reason="lightgbm is not installed (pip install robustce[lightgbm])")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: LightGBM's kZeroThreshold (a float32 constant compared in double)
ZERO = float(np.float32(1e-35))
MISSING = {"None": 0, "Zero": 1, "NaN": 2}


def _column(shape: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """A column whose thresholds fall on one side of zero or both, and that takes 0 or not."""
    v = {"both": lambda: rng.uniform(-1, 1, n), "pos": lambda: rng.uniform(0.5, 1, n),
         "neg": lambda: rng.uniform(-1, -0.5, n), "far": lambda: rng.uniform(0.5, 1, n)}[shape]()
    if shape != "far":  # "far" never takes 0: conflicts there are harmless
        v[rng.uniform(size=n) < 0.25] = 0.0
    return v


@pytest.fixture(scope="module", params=["both", "pos", "neg", "far"])
def trained(request):
    """A booster on a column ``s`` of the given shape and a benign column ``w`` in [1, 2]."""
    rng = np.random.default_rng(3)
    n = 300
    s = _column(request.param, n, rng)
    w = rng.uniform(1, 2, n)
    y = ((s == 0) ^ (s > np.median(s[s != 0])) ^ (w > 1.5)).astype(int)
    frame = pd.DataFrame({"s": s, "w": w})
    clf = lgb.LGBMClassifier(n_estimators=12, num_leaves=6, min_child_samples=5, random_state=0,
                             verbose=-1, n_jobs=1).fit(frame, y)
    return request.param, frame, clf


def _with_routing(clf, missing_type: str, default_left: bool):
    """``clf`` with every numeric node's decision type rewritten (LightGBM's bit layout: 1 =
    categorical, 2 = default left, bits 2-3 = missing type), loaded back by LightGBM."""
    code = (MISSING[missing_type] << 2) | (2 if default_left else 0)

    def rewrite(match: re.Match) -> str:
        types = [int(t) for t in match.group(1).split()]
        assert not any(t & 1 for t in types)  # numeric splits only on this data
        return "decision_type=" + " ".join(str(code) for _ in types)

    text = re.sub(r"^decision_type=(.*)$", rewrite, clf.booster_.model_to_string(), flags=re.M)
    text = re.sub(r"^tree_sizes=.*\n", "", text, flags=re.M)  # byte offsets the rewrite changed
    clone = lgb.LGBMClassifier(**clf.get_params())
    clone.fit(pd.DataFrame({"s": [0.0, 1.0], "w": [1.0, 2.0]}), [0, 1])  # fitted attributes
    clone._Booster = lgb.Booster(model_str=text)
    return clone


def _splits(clf) -> list[dict]:
    out, stack = [], [t["tree_structure"] for t in clf.booster_.dump_model()["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_index" in node:
            out.append(node)
            stack += [node["left_child"], node["right_child"]]
    return out


def _must_refuse(clf, frame) -> bool:
    """LightGBM's rule, from the dump: a Zero node sends ``|z| <= 1e-35`` its default way; a
    conflict is a value in that band the column can take that its threshold sends elsewhere."""
    lo, hi = frame.min(), frame.max()
    for node in _splits(clf):
        if node["missing_type"] != "Zero":
            continue
        name = frame.columns[node["split_feature"]]
        a, b = max(-ZERO, lo[name]), min(ZERO, hi[name])
        if a > b:
            continue  # the column cannot take a value LightGBM reads as zero
        goes_left = [z <= node["threshold"] for z in (a, b)]
        if any(g != node["default_left"] for g in goes_left):
            return True
    return False


def _probe(frame, clf, zero_band: bool) -> pd.DataFrame:
    """Rows on zero (both signs), on every threshold and a hair (1e-12 of the range) either
    side; with ``zero_band`` also the values LightGBM reads as zero (``|z| <= 1e-35``, which
    model space cannot tell from 0). Only values the column can take (the schema's range)."""
    lo, hi = frame.min(), frame.max()
    cols = {}
    for name in frame.columns:
        hair = 1e-12 * (hi[name] - lo[name])
        vals = [0.0, -0.0, lo[name], hi[name]] + ([ZERO, -ZERO, 1e-300] if zero_band else [])
        for n in _splits(clf):
            t = n["threshold"]
            if frame.columns[n["split_feature"]] == name and abs(t) > 1e-30:
                vals += [t, t - hair, t + hair]
        cols[name] = np.array([v for v in vals if lo[name] <= v <= hi[name]])
    grid = np.array(np.meshgrid(cols["s"], cols["w"])).reshape(2, -1).T
    return pd.DataFrame(grid, columns=["s", "w"])


@pytest.mark.parametrize("default_left", [True, False], ids=["default-left", "default-right"])
@pytest.mark.parametrize("missing_type", ["None", "Zero", "NaN"])
def test_lightgbm_routing_equals_the_booster_on_every_side_and_default(trained, missing_type,
                                                                       default_left):
    shape, frame, clf = trained
    booster = _with_routing(clf, missing_type, default_left)
    nodes = _splits(booster)
    assert nodes and all(n["missing_type"] == missing_type and n["default_left"] == default_left
                         for n in nodes)
    refuse = _must_refuse(booster, frame)
    if missing_type == "Zero":  # the data make each outcome occur where it should
        # "neg": LightGBM reads -1e-35 as zero, and its zero bin edge -1e-35 sends it left
        expected = {"both": True, "pos": not default_left, "neg": True, "far": False}[shape]
        assert refuse == expected, (shape, [n["threshold"] for n in nodes if n["split_feature"] == 0])
    if refuse:
        with pytest.raises(UnsupportedModelError, match="as missing"):
            from_sklearn(booster, frame)
        return
    model = from_sklearn(booster, frame)
    rows = pd.concat([_probe(frame, booster, missing_type == "Zero"), frame], ignore_index=True)
    oracle = booster.booster_.predict(rows, raw_score=True)
    view = model.additive_trees().logits(model.encoder.transform(rows))[:, 0]
    np.testing.assert_allclose(view, oracle, rtol=0, atol=1e-12)
    # zero rows were probed where the column takes zero, and the booster sends them somewhere
    if shape != "far":
        assert (rows["s"] == 0).sum() > 0


def test_a_row_with_nan_is_refused_not_routed(trained):
    """NaN is outside the model space: a row with NaN gets a clear error, never a silent route
    (which would be a guess about ``default_left``)."""
    _, frame, clf = trained
    model = from_sklearn(clf, frame)
    rows = frame.head(3).copy()
    rows.loc[rows.index[1], "s"] = np.nan
    with pytest.raises((ValidationError, ValueError), match="(?i)nan|missing"):
        model.predict(model.encoder.transform(rows))
