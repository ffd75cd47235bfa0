"""``AdditiveTrees``: a gradient-boosted ensemble as plain arrays in model space.

Boosted classifiers (scikit-learn's ``GradientBoostingClassifier`` and
``HistGradientBoostingClassifier``) add up regression trees: logit ``k`` is

    z_k(x) = b_k + Σ_{trees m with output k} v_m(leaf_m(x)),

with ``b`` the baseline (the initial raw prediction) and ``v_m`` the leaf values (learning rate
already applied). Binary models have one logit (class 1 iff ``z > 0``), K-class models K logits
(argmax). Each tree is a :class:`~robustce.models.trees.TreeView` whose ``value`` column 0 holds
the leaf values; per tree, the set of inputs reaching a leaf is a box (its path conditions), so
an SMT or MILP encoding is the sum of one leaf value per tree against the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from robustce.errors import ValidationError
from robustce.models.trees import TreeView

__all__ = ["AdditiveTrees"]

#: (trees × rows) node indices held at once when all trees are routed together
_STACK_ELEMENTS = 200_000


class _Stacked(NamedTuple):
    """Every tree's arrays padded into one flat table (tree ``i``'s node ``j`` at
    ``i * width + j``); leaves route to themselves (threshold +inf, both children the leaf),
    so ``depth`` rounds of one vectorised step bring every row of every tree to its leaf."""

    feature: np.ndarray  # flat (n_trees * width,) int64
    threshold: np.ndarray
    children: np.ndarray  # flat node f's left child at 2f, right child at 2f + 1 (flat)
    value: np.ndarray
    roots: np.ndarray  # (n_trees, 1): each tree's root, flat
    depth: int


def _levels(tree: TreeView) -> int:
    """Longest root-to-leaf path, level by level (a DAG's shared nodes counted once)."""
    leaf = tree.is_leaf
    nodes, depth = np.array([0]), 0
    while True:
        inner = nodes[~leaf[nodes]]
        if not len(inner):
            return depth
        nodes = np.unique(np.concatenate([tree.left[inner], tree.right[inner]]))
        depth += 1


@dataclass(frozen=True, eq=False)
class AdditiveTrees:
    """Sum of regression trees plus a baseline, per logit.

    Parameters
    ----------
    trees : the regression trees (:class:`TreeView`, one output value per leaf), all over the
        same model-space inputs.
    output : ``(n_trees,)`` ints: the logit each tree adds to.
    baseline : ``(n_logits,)`` the constant each logit starts from.

    Examples
    --------
    A boosted model's view over model space gives the booster's own scores:

    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> gb = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0)
    >>> model = rc.models.from_sklearn(gb.fit(data.frame, data.y), data)
    >>> ensemble = model.additive_trees()
    >>> len(ensemble.trees), ensemble.n_logits
    (3, 1)
    >>> z = ensemble.logits(model.encode(data.frame))[:, 0]
    >>> bool(np.allclose(z, gb.decision_function(data.frame)))
    True
    """

    trees: Sequence[TreeView]
    output: np.ndarray  # (n_trees,) int: the logit each tree adds to
    baseline: np.ndarray  # (n_logits,)
    _stacked: _Stacked | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.trees) == 0:
            raise ValidationError("an additive ensemble needs at least one tree")
        out = np.asarray(self.output, dtype=np.int64)
        base = np.atleast_1d(np.asarray(self.baseline, dtype=np.float64))
        if out.shape != (len(self.trees),):
            raise ValidationError(f"output needs one logit index per tree ({len(self.trees)})")
        if np.any(out < 0) or np.any(out >= len(base)):
            raise ValidationError(f"output indices must lie in [0, {len(base)})")
        widths = {t.n_features for t in self.trees}
        if len(widths) != 1:
            raise ValidationError(f"the trees take different numbers of inputs: {sorted(widths)}")
        object.__setattr__(self, "output", out)
        object.__setattr__(self, "baseline", base)

    @property
    def n_features(self) -> int:
        return self.trees[0].n_features

    @property
    def n_logits(self) -> int:
        return len(self.baseline)

    def logits(self, X: np.ndarray) -> np.ndarray:
        """Raw scores, shape (n, n_logits): the baseline plus every tree's leaf value, added
        tree by tree in order (the same floats as routing each tree with
        :meth:`TreeView.apply`). All trees are routed together, in chunks of rows."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValidationError(f"inputs must have shape (n, {self.n_features}), got {np.shape(X)}")
        st = self._stack()
        z = np.empty((len(X), self.n_logits))
        step = max(64, _STACK_ELEMENTS // len(self.trees))
        for s in range(0, len(X), step):
            z[s:s + step] = self._chunk_logits(np.ascontiguousarray(X[s:s + step]), st)
        return z

    def _stack(self) -> _Stacked:
        if self._stacked is None:
            T = len(self.trees)
            width = max(t.n_nodes for t in self.trees)
            feature = np.zeros((T, width), dtype=np.int64)
            threshold = np.full((T, width), np.inf)
            left = np.tile(np.arange(width, dtype=np.int64), (T, 1))
            right = left.copy()
            value = np.zeros((T, width))
            for i, t in enumerate(self.trees):
                n, leaf = t.n_nodes, t.is_leaf
                feature[i, :n] = np.where(leaf, 0, t.feature)
                threshold[i, :n] = np.where(leaf, np.inf, t.threshold)
                left[i, :n] = np.where(leaf, np.arange(n), t.left)
                right[i, :n] = np.where(leaf, np.arange(n), t.right)
                value[i, :n] = t.value[:, 0]
            offset = (np.arange(T, dtype=np.int64) * width)[:, None]
            children = np.empty(2 * T * width, dtype=np.int64)
            children[0::2] = (left + offset).ravel()
            children[1::2] = (right + offset).ravel()
            object.__setattr__(self, "_stacked", _Stacked(
                feature.ravel(), threshold.ravel(), children, value.ravel(), offset,
                max(_levels(t) for t in self.trees)))
        assert self._stacked is not None
        return self._stacked

    def _chunk_logits(self, X: np.ndarray, st: _Stacked) -> np.ndarray:
        n, d = X.shape
        flat = X.ravel()
        row = (np.arange(n, dtype=np.int64) * d)[None, :]
        node = np.repeat(st.roots, n, axis=1)  # (n_trees, n)
        for _ in range(st.depth):  # right iff not x <= t (NaN goes right, as in apply)
            right = ~(flat[row + st.feature[node]] <= st.threshold[node])
            node = st.children[2 * node + right]
        v = st.value[node]
        z = np.tile(self.baseline, (n, 1))
        for i, k in enumerate(self.output):  # tree by tree: the per-tree sum's own order
            z[:, k] += v[i]
        return z

    def predict(self, X: np.ndarray) -> np.ndarray:
        z = self.logits(X)
        return (z[:, 0] > 0).astype(np.int64) if z.shape[1] == 1 else np.argmax(z, axis=1)

    def vote_trees(self) -> list[TreeView]:
        """The ensemble as trees whose leaves hold per-class scores, so that the argmax (first
        maximum) of their *sum* is :meth:`predict` — the form of a soft-voting forest that a
        tree encoding takes. Binary: the scores ``[0, z]`` (class 1 iff ``z > 0``); K logits:
        each tree adds its leaf value to its own class. The baseline of each logit is added
        to every node of the first tree that adds to it (of the first tree, for a logit
        without trees), so that it is counted exactly once."""
        n_cls = 2 if self.n_logits == 1 else self.n_logits
        column = (lambda k: 1) if self.n_logits == 1 else (lambda k: int(k))
        values = []
        for tree, k in zip(self.trees, self.output, strict=True):
            v = np.zeros((tree.n_nodes, n_cls))
            v[:, column(k)] = tree.value[:, 0]
            values.append(v)
        for k in range(self.n_logits):
            mine = np.flatnonzero(self.output == k)
            values[int(mine[0]) if len(mine) else 0][:, column(k)] += self.baseline[k]
        return [TreeView(t.feature, t.threshold, t.left, t.right, v, t.n_features)
                for t, v in zip(self.trees, values, strict=True)]
