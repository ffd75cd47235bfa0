"""``PlausibleFeatureTweaking`` (PFT): Tolomei et al.'s feature tweaking (KDD 2017) for trees,
forests and boosted trees, with the candidates projected onto plausible values before the
nearest valid one is chosen — the PFT baseline of MACE (Karimi et al. 2020, §5).

For a query x̂ with target class t:

1. **Paths.** Every root-to-leaf path of every tree whose leaf predicts t (argmax of the leaf's
   class distribution; in a boosted model — :class:`~robustce.models.boosting.AdditiveTrees` —
   a leaf that moves the score towards t: a positive value added to t's logit, or a negative
   one added to a rival's, the binary logit counting as class 1's) is a box ``lo < x <= hi``
   in model space (our trees go left iff ``x[f] <= threshold``). The boxes are found once per
   explainer and target (level by level over each tree) and cached.
2. **Tweak (FT).** The candidate of a box is x̂ with each *violated* condition fixed, by ε as
   in FT: ``x_f > hi_f`` → ``hi_f − ε``; ``x_f <= lo_f`` → ``lo_f + ε`` (a box narrower than
   2ε gets its midpoint; on a continuous column ε is at least the threshold's
   :class:`~robustce.models.trees.SplitMargins`, so the decoded raw row stays in the box).
   Conditions x̂ already satisfies are left alone. For features spread over several columns
   (one-hot categorical, thermometer ordinal) the tweak is made on the feature, not column by
   column: the candidate takes the level nearest to x̂'s (|Δ level| for ordinals; x̂'s own
   category, else the first allowed one, for categoricals) among the levels whose encoding
   satisfies the box's conditions on that block (x̂'s level if none does).
3. **Projection (the "P").** Each candidate is mapped to a plausible encoded row: the
   actionability (the schema's, with the ``actionability`` overrides) resets immutable features
   to x̂ and features moved the forbidden way (increase- / decrease-only) to x̂; then
   :meth:`Encoder.project` clips to the range, rounds integers (and integer-coded ordinals) to
   their grid and binaries to {0, 1}. With ``ε`` below half a grid step and sklearn's midpoint
   thresholds, rounding keeps the side of the threshold, so the projection alone rarely undoes a
   tweak; actionability and the other trees of a forest are what make candidates fail.
4. **Selection.** The distinct projected candidates are classified in one batched
   ``model.predict`` (the whole model: a candidate satisfies one tree's path, the forest votes);
   among those in class t the nearest under MACE's distance
   (:func:`~robustce.methods.minimum_observable.mace_distance`) is returned.

PFT is a heuristic: a query can have no valid candidate (status ``not_found``; MACE's Table 2
reports coverage well below 100 % on adult). Its distance is never below MACE's optimum.

ε is on the [0, 1] model scale (default ``1e-3``: 0.1 % of a numeric feature's range; the MACE
paper does not state FT's ε, Tolomei et al. tune it). Smaller ε puts continuous candidates
closer to the thresholds; it must stay below half a grid step of the integer features for the
rounding argument above (adult's capital gain/loss have steps of ~1e-5, where rounding can
move a candidate by one unit across a threshold — the forward pass then rejects it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from robustce.data.schema import Actionability
from robustce.errors import UnsupportedModelError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.minimum_observable import check_actionability, mace_distance, normalise_norm
from robustce.models.base import model_name
from robustce.models.trees import SplitMargins, TreeView
from robustce.solvers.tree_encoding import tree_parts
from robustce.validation import check_number

__all__ = ["PlausibleFeatureTweaking", "leaf_boxes", "tweak_candidates"]

#: candidate rows built per chunk (bounds memory for large forests)
_CHUNK = 20_000


def leaf_boxes(tree: TreeView, target: int, hit: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, each of shape ``(n_leaves, n_features)``: the boxes ``lo < x <= hi`` of
    the leaves of ``tree`` whose class distribution has its argmax at ``target`` (or, given
    ``hit``, a bool per node, the leaves it marks) (``-inf`` / ``+inf`` where a path does not
    test a feature). Vectorised level by level."""
    d = tree.n_features
    nodes = np.array([0], dtype=np.int64)
    lo = np.full((1, d), -np.inf)
    hi = np.full((1, d), np.inf)
    out_lo, out_hi = [], []
    while len(nodes):
        leaf = tree.is_leaf[nodes]
        if leaf.any():
            ok = leaf & (np.argmax(tree.value[nodes], axis=1) == target if hit is None
                         else hit[nodes])
            out_lo.append(lo[ok])
            out_hi.append(hi[ok])
        inner = ~leaf
        nodes, lo, hi = nodes[inner], lo[inner], hi[inner]
        if not len(nodes):
            break
        f, t = tree.feature[nodes], tree.threshold[nodes]
        rows = np.arange(len(nodes))
        lo_l, hi_l = lo.copy(), hi.copy()  # left child: x[f] <= t
        hi_l[rows, f] = np.minimum(hi_l[rows, f], t)
        lo_r, hi_r = lo, hi  # right child: x[f] > t
        lo_r[rows, f] = np.maximum(lo_r[rows, f], t)
        nodes = np.concatenate([tree.left[nodes], tree.right[nodes]])
        lo = np.vstack([lo_l, lo_r])
        hi = np.vstack([hi_l, hi_r])
    if not out_lo:
        return np.empty((0, d)), np.empty((0, d))
    return np.vstack(out_lo), np.vstack(out_hi)


def tweak_candidates(encoder: Any, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     epsilon: float, acts: Mapping[str, str] | None = None) -> np.ndarray:
    """The projected FT candidate of every box ``lo < x <= hi`` (steps 2 and 3 of the module
    docstring), shape ``(len(lo), d)``; every row is a valid encoding reachable from ``x``."""
    acts = acts or {}
    with np.errstate(invalid="ignore"):
        mid = (lo + hi) / 2.0
    # a continuous column clears its threshold by at least the split margin (so the raw row,
    # decoded, stays in the box: features whose values are large against their range)
    margins = SplitMargins.of(encoder)
    cols = np.arange(encoder.n_features_out_)[None, :]
    eps_hi = np.maximum(epsilon, margins(cols, hi))
    eps_lo = np.maximum(epsilon, margins(cols, lo))
    down = np.where(hi - eps_hi > lo, hi - eps_hi, mid)
    up = np.where(lo + eps_lo <= hi, lo + eps_lo, mid)
    C = np.where(x[None, :] > hi, down, np.where(x[None, :] <= lo, up, x[None, :]))
    for b in encoder.blocks_:
        s = b.slice
        if b.encoding in ("onehot", "thermometer"):
            E = b.level_codes()  # (k, w)
            allowed = np.all((E[None] > lo[:, None, s]) & (E[None] <= hi[:, None, s]), axis=2)
            own = int(np.argmax(np.all(E == x[None, s], axis=1)))
            levels = np.arange(len(E))
            cost = (np.abs(levels - own) if b.encoding == "thermometer"
                    else (levels != own).astype(float))
            score = np.where(allowed, cost[None, :], np.inf)
            choice = np.where(allowed.any(axis=1), np.argmin(score, axis=1), own)
            C[:, s] = E[choice]
        act = Actionability(acts.get(b.name, b.actionability))
        if act is Actionability.FREE:
            continue
        diff = C[:, s] - x[None, s]
        if act is Actionability.IMMUTABLE:
            reset = np.ones(len(C), dtype=bool)
        elif act is Actionability.INCREASE:
            reset = np.any(diff < 0, axis=1)
        else:
            reset = np.any(diff > 0, axis=1)
        C[reset, s] = x[s]
    C = encoder.project(C, *encoder.domain(np.broadcast_to(x, C.shape)))
    # rounding cannot cross x̂'s own grid value, so the monotone resets above still hold;
    # clipping and immutables are exact as x̂ is itself a valid encoding
    return C


def _distinct(C: np.ndarray) -> np.ndarray:
    """The distinct rows of ``C`` in first-seen order (hashing, not ``np.unique``'s sort)."""
    if len(C) < 2:
        return C
    return C[~pd.DataFrame(C).duplicated().to_numpy()]


class PlausibleFeatureTweaking(Explainer):
    """Plausible Feature Tweaking (PFT): FT candidates from every target-class leaf of every
    tree, projected onto plausible values, the nearest valid one under MACE's distance.

    Parameters
    ----------
    model : a decision tree, a random forest (``kind`` "tree" or "forest", with ``trees()``) or
        a boosted model (``kind`` "boosted": scikit-learn GradientBoosting /
        HistGradientBoosting, XGBoost, LightGBM, with ``additive_trees()``); others raise
        :class:`~robustce.errors.UnsupportedModelError`.
    data : not used (accepted for a uniform signature).
    norm : "l1" (default), "l0", "linf" or a mapping ``{"l0": α, "l1": β, "linf": γ}`` summing
        to 1 — :func:`~robustce.methods.minimum_observable.mace_distance`.
    actionability : optional ``{feature: "immutable" | "increase" | "decrease" | "free"}``
        overriding the schema's actionability.
    epsilon : FT's tweak ε on the [0, 1] model scale, in (0, 0.5] (default 1e-3).
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer` (deterministic).

    Notes
    -----
    Certificate columns: ``distance`` (MACE distance of the CE, NaN if none),
    ``n_candidates`` (distinct projected candidates the model puts in the target class),
    ``n_paths`` (target-class leaves over all trees, i.e. raw candidates).

    Statuses: ``found``; ``not_found`` — no projected candidate is in the target class.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> enc = rc.data.Encoder(train.schema).fit(train.frame)
    >>> forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    >>> model = rc.models.wrap(forest.fit(enc.transform(train.frame), train.y), enc)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.PlausibleFeatureTweaking(model, train).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "pft"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("distance", "n_candidates", "n_paths")

    def __init__(self, model: Any, data: Any = None, *, norm: str | Mapping[str, float] = "l1",
                 actionability: Mapping[str, str] | None = None, epsilon: float = 1e-3,
                 **kwargs: Any):
        self.norm = norm
        self.actionability = actionability
        self.epsilon = epsilon
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        self._norm = normalise_norm(self.norm)
        self._acts = check_actionability(self.encoder, self.actionability)
        self._eps = float(check_number(self.epsilon, "epsilon", low=0, low_open=True, high=0.5))
        parts = tree_parts(self.model)
        if parts is None:
            raise UnsupportedModelError("PlausibleFeatureTweaking needs a decision tree, random "
                                        f"forest or boosted trees, got {model_name(self.model)}")
        self._additive = parts[1] if parts[0] == "boosted" else None
        self._trees = parts[1].trees if parts[0] == "boosted" else parts[1]
        self._boxes: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def boxes(self, target: int) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` of every target-class leaf over all trees; cached per target."""
        t = int(target)
        if t not in self._boxes:
            ens = self._additive
            if ens is None:
                parts = [leaf_boxes(tree, t) for tree in self._trees]
            else:  # boosted: the leaves that move the summed score towards t
                binary = ens.n_logits == 1
                parts = []
                for tree, k in zip(ens.trees, ens.output, strict=True):
                    v = tree.value[:, 0]
                    ours = (t == 1) if binary else (int(k) == t)
                    parts.append(leaf_boxes(tree, t, hit=(v > 0) if ours else (v < 0)))
            self._boxes[t] = (np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts]))
        return self._boxes[t]

    def candidates(self, x: np.ndarray, target: int) -> np.ndarray:
        """Distinct projected FT candidates of query ``x`` (valid or not)."""
        lo, hi = self.boxes(target)
        chunks = [_distinct(tweak_candidates(self.encoder, x, lo[i:i + _CHUNK],
                                             hi[i:i + _CHUNK], self._eps, self._acts))
                  for i in range(0, len(lo), _CHUNK)]
        if not chunks:
            return np.empty((0, len(x)))
        return chunks[0] if len(chunks) == 1 else _distinct(np.vstack(chunks))

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        n_paths = len(self.boxes(target)[0])
        C = self.candidates(x, target)
        if len(C):
            C = C[self.model.predict(C) == target]
        cert: dict[str, Any] = {"distance": math.nan, "n_candidates": len(C), "n_paths": n_paths}
        if not len(C):
            return QueryResult("not_found", None, cert,
                               message="no projected feature-tweaking candidate is in the "
                                       "target class")
        d = mace_distance(self.encoder, x, C, self._norm)
        i = int(np.argmin(d))
        cert["distance"] = float(d[i])
        return QueryResult("found", C[i][None], cert)
