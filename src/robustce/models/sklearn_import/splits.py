"""Tree splits on the pipeline's transformed inputs ``Z`` mapped back to model space: a split
``z_j <= θ`` of a fitted tree becomes one axis-aligned model-space split (or a chain of them for
a set of categories), rounding as the estimator compares (float32 or float64); shared by the
scikit-learn trees (:mod:`robustce.models.sklearn_import.estimators`) and the boosters
(:mod:`robustce.models.boosters`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.encoder import Encoder
from robustce.data.schema import FeatureKind
from robustce.errors import UnsupportedModelError
from robustce.models.sklearn_import.preprocessing import _Basis
from robustce.models.trees import TreeView, float32_threshold


class _SplitMap:
    """Maps a split ``z_j <= θ`` of the fitted tree to model space as ``(columns, t, hit_left)``:
    the row goes to the *hit* child (left iff ``hit_left``) iff ``x_k > t`` for some ``k`` in
    ``columns``, else to the other child. One column is an axis-aligned split (``hit_left``
    when the column's coefficient is negative); several one-hot columns are a set of
    categories, tested as a chain of nodes (the tree becomes a DAG with the same leaves)."""

    def __init__(self, A: np.ndarray, c: np.ndarray, encoder: Encoder, basis: _Basis, label: str,
                 transform: Any = None, base: pd.DataFrame | None = None):
        self.A, self.c, self.encoder, self.basis, self.label = A, c, encoder, basis, label
        self.owner = encoder.feature_of_column_
        self.transform, self.base = transform, base
        self.cache: dict[tuple[int, float, bool], tuple[list[int], float, bool]] = {}

    def get(self, j: int, theta: float, float32: bool) -> tuple[list[int], float, bool]:
        key = (j, theta, float32)
        if key not in self.cache:
            eff = float(float32_threshold(np.array([theta]))[0]) if float32 else theta
            # the smallest value the split sends right: the next float32 when it compares float32
            above = (0.0, float(np.nextafter(np.float32(eff), np.float32(np.inf)))) if float32 else (0.0,)
            self.cache[key] = self(j, eff, above)
        return self.cache[key]

    def prepare(self, js: np.ndarray, thetas: np.ndarray, float32: bool) -> None:
        """Splits on an integer feature: the fitted threshold can equal a grid value's
        transformed image up to rounding, so ask the pipeline's own transform (one batched
        call) which of the two grid values around it go left — with scikit-learn's own test
        (:func:`_goes_left`) — and put the model-space threshold halfway between them."""
        if self.transform is None:
            return
        todo = []
        for j, th in {(int(a), float(b)) for a, b in zip(js, thetas, strict=True)}:
            if (j, th, float32) in self.cache:
                continue
            nz = np.flatnonzero(self.A[j])
            if len(nz) != 1 or self.A[j, nz[0]] <= 0:
                continue
            block = self.encoder.blocks_[int(self.owner[nz[0]])]
            f = block.feature
            if f.kind is not FeatureKind.INTEGER or f.upper == f.lower:
                continue
            k, alpha = int(nz[0]), float(self.A[j, nz[0]])
            v = f.lower + (th - float(self.c[j])) / alpha * (f.upper - f.lower)
            n0 = float(np.floor(v))
            todo.append((j, th, k, f, n0))
        if not todo:
            return
        rows = []
        for _, _, _, f, n0 in todo:
            for n in (n0, n0 + 1.0):
                row = self.base.copy()
                row[f.name] = np.clip(n, f.lower, f.upper)
                rows.append(row)
        frame = pd.concat(rows, ignore_index=True)
        for _, _, _, f, _ in todo:
            frame[f.name] = frame[f.name].astype(self.base[f.name].dtype)
        Z = self.transform(frame)
        for i, (j, th, k, f, n0) in enumerate(todo):
            go = _goes_left(Z[2 * i:2 * i + 2, j], th, float32)
            n0c = np.clip(n0, f.lower, f.upper)
            cut = n0c + 1.5 if go.all() else (n0c + 0.5 if go[0] else n0c - 0.5)
            t = (cut - f.lower) / (f.upper - f.lower)
            self.cache[(j, th, float32)] = ([k], t, False)

    def __call__(self, j: int, theta: float, above: tuple[float, ...] = (0.0,)
                 ) -> tuple[list[int], float, bool]:
        a, c0 = self.A[j], float(self.c[j])
        nz = np.flatnonzero(a)
        if len(nz) == 0:  # a constant input: the split always goes one way
            return [0], (np.inf if c0 <= theta else -np.inf), False
        if len(nz) == 1:
            k, alpha = int(nz[0]), float(a[nz[0]])
            b = (theta - c0) / alpha
            if alpha > 0:
                return [k], _apart_from_above(theta, b, c0, alpha, above), False
            return [k], float(np.nextafter(b, -np.inf)), True  # z <= θ ⟺ x >= b
        feats = np.unique(self.owner[nz])
        block = self.encoder.blocks_[int(feats[0])]
        if len(feats) == 1 and block.feature.kind.has_levels:
            K = block.feature.n_levels
            z = np.array([a @ self._level_point(block, k) + c0 for k in range(K)])
            left = z <= theta
            if left.all() or not left.any():
                return [int(nz[0])], (np.inf if left.all() else -np.inf), False
            if block.encoding == "thermometer":
                m = int(np.argmin(left)) if left[0] else int(np.argmax(left))
                if left[0] and not left[m:].any():  # levels < m go left: t_m <= 0.5
                    return [block.start + m - 1], 0.5, False
                if not left[0] and left[m:].all():  # levels >= m go left: t_m > 0.5
                    return [block.start + m - 1], 0.5, True
            elif block.encoding == "onehot":
                right = np.flatnonzero(~left)
                lefts = np.flatnonzero(left)
                if len(right) <= len(lefts):
                    return [block.start + int(k) for k in right], 0.5, False
                return [block.start + int(k) for k in lefts], 0.5, True
        raise UnsupportedModelError(
            f"{self.label}: a split on input {j} mixes several model-space columns "
            f"({[self.encoder.columns_[i] for i in nz[:6]]}); not one axis-aligned split")

    def _level_point(self, block: Any, k: int) -> np.ndarray:
        x = np.zeros(self.basis.d)
        if block.encoding == "onehot":
            x[block.start + k] = 1.0
        elif block.encoding == "thermometer":
            x[block.start:block.start + k] = 1.0
        elif block.encoding == "binary":
            x[block.start] = float(k)
        return x


def _apart_from_above(theta: float, b: float, c0: float, alpha: float,
                      above: tuple[float, ...]) -> float:
    """The model-space threshold ``b = (θ − c0) / α`` (``α > 0``), lowered below the image of a
    value ``r > θ`` in ``above`` that the split sends right when the scaling rounds the two
    together: 0 above LightGBM's ``−1e-35`` (its threshold that puts zeros right of the
    negatives), the next float32 above a float32 comparison's threshold (XGBoost's ``s`` above
    ``s⁻``). Monotone rounding keeps every other value on its side; only values in ``(θ, r)``
    with the same image as ``r`` move right (model space cannot tell them from ``r``)."""
    for r in above:
        x_r = (r - c0) / alpha
        if r > theta and x_r <= b:
            b = float(np.nextafter(x_r, -np.inf))
    return b


def _goes_left(z: np.ndarray, theta: float, float32: bool) -> np.ndarray:
    """scikit-learn's split test on transformed values ``z`` (float64), bit for bit: its trees
    store ``X`` as float32 and compare that value, widened back to float64, with the float64
    threshold (``float32`` True); HistGradientBoosting compares float64 values. (Comparing the
    float32 array with the threshold directly would, under NumPy 2, round the threshold to
    float32 instead and misroute the values between the two.)"""
    z = np.asarray(z, dtype=np.float64)
    if float32:
        z = z.astype(np.float32).astype(np.float64)
    return z <= np.float64(theta)


def _mapped_tree(feature_in: np.ndarray, thr_raw: np.ndarray, left: np.ndarray,
                 right: np.ndarray, leaf: np.ndarray, value: np.ndarray, split: _SplitMap,
                 float32: bool) -> TreeView:
    """Rebuild a fitted tree over model space, node by node through ``split``."""
    feature = np.full(len(left), -1, dtype=np.int64).tolist()
    thr = np.full(len(left), np.nan).tolist()
    L = np.where(leaf, -1, left).tolist()
    R = np.where(leaf, -1, right).tolist()
    vals = list(value)
    internal = np.flatnonzero(~leaf)
    split.prepare(feature_in[internal], thr_raw[internal], float32)
    for i in internal:
        cols, t, hit_left = split.get(int(feature_in[i]), float(thr_raw[i]), float32)
        hit, miss = (L[i], R[i]) if hit_left else (R[i], L[i])
        node = int(i)
        for n, k in enumerate(cols):  # x_k <= t ? (next test | miss) : hit
            last = n == len(cols) - 1
            nxt = miss if last else len(feature)
            feature[node], thr[node], L[node], R[node] = k, t, nxt, hit
            if not last:
                feature.append(-1)
                thr.append(np.nan)
                L.append(-1)
                R.append(-1)
                vals.append(value[i])
                node = nxt
    return TreeView(np.array(feature, dtype=np.int64), np.array(thr), np.array(L, dtype=np.int64),
                    np.array(R, dtype=np.int64), np.array(vals), split.basis.d)
