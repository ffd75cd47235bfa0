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
