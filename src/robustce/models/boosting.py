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
from dataclasses import dataclass

import numpy as np

from robustce.errors import ValidationError
from robustce.models.trees import TreeView

__all__ = ["AdditiveTrees"]


@dataclass(frozen=True, eq=False)
class AdditiveTrees:
    """Sum of regression trees plus a baseline, per logit."""

    trees: Sequence[TreeView]
    output: np.ndarray  # (n_trees,) int: the logit each tree adds to
    baseline: np.ndarray  # (n_logits,)

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
        """Raw scores, shape (n, n_logits): the baseline plus every tree's leaf value."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        z = np.tile(self.baseline, (len(X), 1))
        for tree, k in zip(self.trees, self.output, strict=True):
            z[:, k] += tree.value[tree.apply(X), 0]
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
