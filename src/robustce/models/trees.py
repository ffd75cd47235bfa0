"""``TreeView``: a decision tree as plain arrays in model space (what MACE encodes).

Node ``i`` is a leaf iff ``left[i] == -1``. At an internal node a row goes left iff
``x[feature[i]] <= threshold[i]``; ``value[i]`` is the class distribution of the training rows
that reached node ``i`` (rows sum to 1). A forest predicts the mean of its trees' leaf
distributions, like scikit-learn's ``RandomForestClassifier.predict_proba``.

scikit-learn compares ``float32(x) <= t``. The thresholds here are shifted to the largest
float64 ``t'`` with ``x <= t' ⟺ float32(x) <= t`` for every float64 ``x``, so that the plain
real-valued comparison (the one an SMT or MILP encoding uses) reproduces scikit-learn's routing
exactly. The shift is below 3e-8 relative.

A threshold moved by ε (the (δ, ε)-sets of :mod:`robustce.robustness.ensemble`) is compared by
the user's own library as it stores it — scikit-learn ``float32(x) <= t``, XGBoost
``float32(x) < s`` with ``s`` float32, LightGBM ``x <= t`` in double — so the real-valued
boundary ``t ± ε`` of this view is off by up to half a float32 step of the input and of the
threshold. :func:`epsilon_split_bounds` widens it by :data:`EPSILON_FLOAT_STEPS` float32 steps.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import UnsupportedModelError, ValidationError

__all__ = [
    "SPLIT_MARGIN_ABS",
    "SPLIT_MARGIN_F32",
    "SplitMargins",
    "TreeStack",
    "EPSILON_FLOAT_STEPS",
    "TreeView",
    "epsilon_split_bounds",
    "float32_threshold",
    "native_float_scale",
    "forest_predict_proba",
    "split_margin",
]

#: margin on a split of a continuous feature, as a share of the feature's magnitude
#: ``max(|lower|, |upper|)``: 2^-40, 4096 float64 roundings — what decoding a model-space value
#: to raw (``lower + x·(upper − lower)``), re-encoding it, and a pipeline's own float64 scaling
#: (``(v − mean)/scale``, the fold of it) can move a value. scikit-learn's float32 rounding of
#: the *transformed* value needs no margin: thresholds reproduce it exactly
#: (:func:`float32_threshold`, and the import's threshold mapping)
SPLIT_MARGIN_ABS = 2.0 ** -40
#: plus, on a raw column stored as float32 (or narrower), this share of the raw threshold:
#: 2^-21, eight float32 roundings (2^-24) of the raw value the user receives
SPLIT_MARGIN_F32 = 2.0 ** -21


def split_margin(lower: np.ndarray, upper: np.ndarray, t: np.ndarray,
                 rel: np.ndarray | float = 0.0) -> np.ndarray:
    """The model-space margin by which a point must clear a split ``x <= t`` on a column
    whose raw values are ``lower + x·(upper − lower)`` so that the raw row, decoded and scored
    again (re-encoded, or by a pipeline's own scaler), is routed to the same side:
    ``rel·|raw threshold| + SPLIT_MARGIN_ABS·max(|lower|, |upper|)`` in raw units (``rel``:
    :data:`SPLIT_MARGIN_F32` for float32 raw columns, else 0), divided by the range. Arrays
    broadcast; 0 where the range is 0 or ``t`` is not finite."""
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    span = upper - lower
    with np.errstate(invalid="ignore", over="ignore"):
        raw = lower + np.where(np.isfinite(t), t, 0.0) * span
        m = rel * np.abs(raw) + SPLIT_MARGIN_ABS * np.maximum(np.abs(lower), np.abs(upper))
        out = np.where(span > 0, m / np.where(span > 0, span, 1.0), 0.0)
    return np.where(np.isfinite(t), out, 0.0)


@dataclass(frozen=True, eq=False)
class SplitMargins:
    """The split margins of an encoder's model-space columns (one place for every tree method
    and for the base class's repair): ``margins(cols, t)`` is :func:`split_margin` on each
    continuous column — scaled to its raw range and magnitude, and to float32 rounding where
    the raw column is float32 — and 0 on grid (integer), 0/1 and level columns, whose decoded
    values are exact."""

    lower: np.ndarray  # (d,) raw value at model-space 0
    upper: np.ndarray  # (d,) raw value at model-space 1
    rel: np.ndarray  # (d,) SPLIT_MARGIN_F32 on float32 raw columns, else 0
    continuous: np.ndarray  # (d,) bool: a scaled continuous feature with a range

    @classmethod
    def of(cls, encoder: Any) -> SplitMargins:
        """The margins of a fitted :class:`~robustce.data.Encoder`, computed once per fit
        (cached while its ``blocks_`` stay the same; the arrays are read-only)."""
        try:
            hit = _MARGINS.get(encoder)
        except TypeError:  # not weak-referenceable: compute every time
            hit = None
        if hit is not None and hit[0] is encoder.blocks_:
            return hit[1]
        margins = cls._compute(encoder)
        try:
            _MARGINS[encoder] = (encoder.blocks_, margins)
        except TypeError:
            pass
        return margins

    @classmethod
    def _compute(cls, encoder: Any) -> SplitMargins:
        import pandas as pd

        from robustce.data.schema import FeatureKind

        d = encoder.n_features_out_
        lower, upper, rel = np.zeros(d), np.ones(d), np.zeros(d)
        cont = np.zeros(d, dtype=bool)
        for b in encoder.blocks_:
            f = b.feature
            if b.encoding != "scaled":
                continue
            lower[b.start], upper[b.start] = f.lower, f.upper
            cont[b.start] = f.kind is FeatureKind.CONTINUOUS and f.upper > f.lower
            try:
                dt = pd.api.types.pandas_dtype(f.dtype) if f.dtype else None
            except TypeError:
                dt = None
            if isinstance(dt, np.dtype) and dt.kind == "f" and dt.itemsize <= 4:
                rel[b.start] = SPLIT_MARGIN_F32
        for a in (lower, upper, rel, cont):
            a.flags.writeable = False  # shared by every caller of the cached margins
        return cls(lower, upper, rel, cont)

    def __call__(self, cols: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Margin of each split ``x[cols] <= t`` (arrays broadcast together)."""
        cols = np.asarray(cols, dtype=np.int64)
        m = split_margin(self.lower[cols], self.upper[cols], t, self.rel[cols])
        return np.where(self.continuous[cols], m, 0.0)


#: encoder -> (its ``blocks_`` when computed, its margins): :meth:`SplitMargins.of`'s cache
_MARGINS: weakref.WeakKeyDictionary[Any, tuple[Any, SplitMargins]] = weakref.WeakKeyDictionary()


#: float32 steps (of the boundary's magnitude ``|t| + ε``) by which a (δ, ε)-robust point must
#: clear the ε boundary of a split: the view's threshold is up to half a step from the stored
#: one (:func:`float32_threshold`), the library rounds the input to float32 (half a step), and
#: XGBoost's strict ``<`` on float32 values costs one more; 4 covers them with room to spare
EPSILON_FLOAT_STEPS = 4


def epsilon_split_bounds(threshold: np.ndarray, epsilon: np.ndarray,
                         native: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The ε boundary of splits ``x <= t`` (arrays broadcast), as ``(lo, hi)``: every
    threshold within ε of the model's stored one, compared as its library compares, sends
    ``x`` left when ``x <= lo`` and right when ``x > hi``. ``lo = t − ε − m``,
    ``hi = t + ε + m`` with the margin ``m`` :data:`EPSILON_FLOAT_STEPS` float32 steps of
    ``max(|t| + ε, native)`` where ``ε > 0`` (at ``ε = 0`` the view's routing is the model's
    own: ``m = 0``). ``native``: per split, the magnitude in model-space units at which the
    estimator's own inputs are rounded — :func:`native_float_scale` of the column, for a
    pipeline whose estimator reads raw or standardised values. So a split can send ``x``
    left iff ``x <= hi`` and right iff ``x > lo`` (conservatively: within the margin both
    sides count as reachable).

    Examples
    --------
    >>> lo, hi = epsilon_split_bounds(np.array([0.5, 0.5]), np.array([0.0, 0.01]))
    >>> np.round(0.5 - lo, 9).tolist(), bool(hi[1] - 0.51 == 4 * np.spacing(np.float32(0.51)))
    ([0.0, 0.010000238], True)
    """
    t = np.asarray(threshold, dtype=np.float64)
    eps = np.asarray(epsilon, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        size = np.maximum(np.abs(t) + eps, np.asarray(native, dtype=np.float64)).astype(np.float32)
        step = np.spacing(np.abs(size)).astype(np.float64)
    m = np.where(eps > 0, EPSILON_FLOAT_STEPS * np.where(np.isfinite(step), step, 0.0), 0.0)
    return t - eps - m, t + eps + m


def native_float_scale(encoder: Any, d: int) -> np.ndarray:
    """Per model-space column, the magnitude (in model-space units) of the values the
    estimator itself reads on it, for :func:`epsilon_split_bounds`: a scaled continuous
    column's raw magnitude over its range, ``max(|lower|, |upper|) / (upper − lower)`` — a
    pipeline that passes the raw value (or a standardised one, no larger) rounds it to
    float32 steps of that size — and 0 elsewhere (grid, 0/1 and level columns are exact; a
    model fit on model space itself needs only ``|t| + ε``). Zeros without an encoder."""
    out = np.zeros(d)
    if encoder is None or not hasattr(encoder, "blocks_"):
        return out
    m = SplitMargins.of(encoder)
    if len(m.lower) != d:
        return out
    span = m.upper - m.lower
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.maximum(np.abs(m.lower), np.abs(m.upper)) / np.where(span > 0, span, 1.0)
    return np.where(m.continuous & np.isfinite(r), r, 0.0)


def float32_threshold(threshold: np.ndarray) -> np.ndarray:
    """Largest float64 ``t'`` with ``x <= t'`` ⟺ ``float32(x) <= t`` for all float64 ``x``."""
    t = np.asarray(threshold, dtype=np.float64)
    f = t.astype(np.float32)
    f = np.where(f.astype(np.float64) > t, np.nextafter(f, np.float32(-np.inf)), f)  # largest f32 <= t
    g = np.nextafter(f, np.float32(np.inf))  # next float32 above
    with np.errstate(over="ignore", invalid="ignore"):
        mid = (f.astype(np.float64) + g.astype(np.float64)) / 2.0  # exact in float64
    even = (f.view(np.uint32) & 1) == 0  # ties round to even: a tie goes to f iff f is even
    out = np.where(even, mid, np.nextafter(mid, -np.inf))
    return np.where(np.isfinite(t), out, t)


@dataclass(frozen=True, eq=False)
class TreeView:
    """Arrays of one binary decision tree over model-space inputs (one entry per node).

    Parameters
    ----------
    feature : ``(n_nodes,)`` int64, the input a node tests; -1 at leaves.
    threshold : ``(n_nodes,)`` float64: go left iff ``x[feature] <= threshold``; nan at leaves.
    left, right : ``(n_nodes,)`` int64 child indices; -1 at leaves.
    value : ``(n_nodes, n_classes)`` class distribution of each node.
    n_features : number of model-space inputs the tree takes.

    Examples
    --------
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = np.array([[0.1, 0.5], [0.4, 0.2], [0.6, 0.9], [0.9, 0.3]]), [0, 0, 1, 1]
    >>> tree = TreeView.from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y).tree_)
    >>> tree.n_nodes, tree.feature.tolist(), round(float(tree.threshold[0]), 3)
    (3, [0, -1, -1], 0.5)
    >>> tree.apply(np.array([[0.2, 0.0], [0.7, 0.0]])).tolist(), tree.predict(X).tolist()
    ([1, 2], [0, 0, 1, 1])
    """

    feature: np.ndarray  # (n_nodes,) int64, -1 at leaves
    threshold: np.ndarray  # (n_nodes,) float64, go left iff x[feature] <= threshold; nan at leaves
    left: np.ndarray  # (n_nodes,) int64 child index, -1 at leaves
    right: np.ndarray  # (n_nodes,) int64 child index, -1 at leaves
    value: np.ndarray  # (n_nodes, n_classes) class distribution
    n_features: int

    def __post_init__(self) -> None:
        n = len(self.feature)
        for name in ("threshold", "left", "right"):
            if len(getattr(self, name)) != n:
                raise ValidationError(
                    f"TreeView: {name} has {len(getattr(self, name))} entries, expected {n}")
        if self.value.ndim != 2 or self.value.shape[0] != n:
            raise ValidationError(f"TreeView: value must have shape ({n}, n_classes), got {self.value.shape}")
        internal = self.left >= 0
        if np.any((self.right >= 0) != internal):
            raise ValidationError("TreeView: a node has exactly one child")
        if np.any(self.feature[internal] < 0) or np.any(self.feature[internal] >= self.n_features):
            raise ValidationError("TreeView: an internal node tests a feature out of range")

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def n_classes(self) -> int:
        return self.value.shape[1]

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0

    @property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.is_leaf)

    def depth(self) -> int:
        """Length of the longest root-to-leaf path (a lone leaf has depth 0)."""
        return max((len(p) for _, p in self.paths()), default=0)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Leaf index reached by every row (vectorised level by level)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValidationError(f"inputs must have shape (n, {self.n_features}), got {np.shape(X)}")
        node = np.zeros(len(X), dtype=np.int64)
        rows = np.arange(len(X))
        active = ~self.is_leaf[node]
        while active.any():
            r, nd = rows[active], node[active]
            go_left = X[r, self.feature[nd]] <= self.threshold[nd]
            node[r] = np.where(go_left, self.left[nd], self.right[nd])
            active = ~self.is_leaf[node]
        return node

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Leaf class distribution of every row, shape (n, n_classes)."""
        return self.value[self.apply(X)]

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_proba(X), axis=1)

    def unshared(self, max_nodes: int = 1_000_000) -> TreeView:
        """The same tree with every node on exactly one path from the root: subtrees reached
        from several parents copied. An imported booster's categorical split over a set of
        one-hot levels is a chain of ``x_k <= 0.5`` tests whose every link shares the child
        the set goes to (:mod:`robustce.models.sklearn_import` builds it so), so its view
        is a DAG; tests that route top-down one node at a time need a tree. ``self`` when no
        node has two parents; :class:`UnsupportedModelError` past ``max_nodes`` nodes.

        Examples
        --------
        >>> shared = TreeView(np.array([0, 1, -1, -1]), np.array([0.5, 0.5, np.nan, np.nan]),
        ...                   np.array([1, 2, -1, -1]), np.array([3, 3, -1, -1]),
        ...                   np.array([[0.0], [0.0], [1.0], [2.0]]), 2)
        >>> tree = shared.unshared()
        >>> tree.n_nodes, tree.left.tolist(), tree.right.tolist()
        (5, [1, 2, -1, -1, -1], [4, 3, -1, -1, -1])
        >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        >>> tree.predict_proba(X).ravel().tolist() == shared.predict_proba(X).ravel().tolist()
        True
        """
        internal = self.left >= 0
        kids = np.r_[self.left[internal], self.right[internal]]
        if not kids.size or np.bincount(kids, minlength=self.n_nodes).max() <= 1:
            return self
        src: list[int] = []
        left: list[int] = []
        right: list[int] = []
        stack = [(0, -1, True)]  # (node, its copy's parent, as the left child)
        while stack:
            node, parent, is_left = stack.pop()
            new = len(src)
            if new >= max_nodes:
                raise UnsupportedModelError(
                    f"a tree's shared subtrees (categorical splits over level sets) unfold to "
                    f"more than {max_nodes} nodes")
            src.append(node)
            left.append(-1)
            right.append(-1)
            if parent >= 0:
                (left if is_left else right)[parent] = new
            if self.left[node] >= 0:
                stack.append((int(self.right[node]), new, False))
                stack.append((int(self.left[node]), new, True))
        idx = np.array(src, dtype=np.int64)
        return TreeView(self.feature[idx], self.threshold[idx], np.array(left, dtype=np.int64),
                        np.array(right, dtype=np.int64), self.value[idx], self.n_features)

    def paths(self) -> list[tuple[int, list[tuple[int, float, bool]]]]:
        """Every leaf with its path from the root: ``(leaf, [(feature, threshold, went_left)])``.

        ``went_left`` means the path satisfies ``x[feature] <= threshold``; otherwise it
        satisfies ``x[feature] > threshold``. (The characteristic formula of the tree is the
        disjunction over leaves of the conjunction of their path conditions.)
        """
        out: list[tuple[int, list[tuple[int, float, bool]]]] = []
        stack: list[tuple[int, list[tuple[int, float, bool]]]] = [(0, [])]
        while stack:
            node, path = stack.pop()
            if self.left[node] < 0:
                out.append((node, path))
                continue
            f, t = int(self.feature[node]), float(self.threshold[node])
            stack.append((int(self.right[node]), [*path, (f, t, False)]))
            stack.append((int(self.left[node]), [*path, (f, t, True)]))
        return sorted(out)

    @classmethod
    def from_sklearn(cls, tree: Any,
                     pullback: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> TreeView:
        """View of a fitted scikit-learn tree (``estimator.tree_``).

        ``pullback(feature, threshold)`` maps the thresholds of internal nodes to model space
        when the tree was fitted on transformed inputs (a scaler in a Pipeline); by default
        the tree saw model space and :func:`float32_threshold` is applied.
        """
        t = tree
        if t.n_outputs != 1:
            raise ValidationError("multi-output trees are not supported")
        left = np.asarray(t.children_left, dtype=np.int64)
        right = np.asarray(t.children_right, dtype=np.int64)
        leaf = left < 0
        feature = np.where(leaf, -1, np.asarray(t.feature, dtype=np.int64))
        raw = np.asarray(t.threshold, dtype=np.float64)
        thr = np.full(len(raw), np.nan)
        internal = ~leaf
        if pullback is None:
            thr[internal] = float32_threshold(raw[internal])
        elif internal.any():
            thr[internal] = pullback(feature[internal], raw[internal])
        value = np.asarray(t.value, dtype=np.float64)[:, 0, :]
        sums = value.sum(axis=1, keepdims=True)
        value = np.divide(value, sums, out=np.zeros_like(value), where=sums > 0)
        return cls(feature, thr, np.where(leaf, -1, left), np.where(leaf, -1, right), value,
                   int(t.n_features))


@dataclass(frozen=True)
class TreeStack:
    """The node arrays of several trees in one index space, so that a pass over a level of
    nodes covers all trees at once: tree ``k``'s node ``i`` is global node ``roots[k] + i``;
    ``left`` / ``right`` hold global child ids (-1 at leaves)."""

    roots: np.ndarray  # (n_trees,) int64
    feature: np.ndarray  # (n_nodes,) int64
    threshold: np.ndarray  # (n_nodes,) float64
    left: np.ndarray  # (n_nodes,) int64
    right: np.ndarray  # (n_nodes,) int64

    @classmethod
    def of(cls, trees: Sequence[TreeView]) -> TreeStack:
        sizes = np.array([t.n_nodes for t in trees], dtype=np.int64)
        roots = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)

        def children(kids: list[np.ndarray]) -> np.ndarray:
            return np.concatenate([np.where(k >= 0, k + o, -1)
                                   for k, o in zip(kids, roots, strict=True)]).astype(np.int64)

        return cls(roots, np.concatenate([t.feature for t in trees]).astype(np.int64),
                   np.concatenate([t.threshold for t in trees]).astype(np.float64),
                   children([t.left for t in trees]), children([t.right for t in trees]))

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0


def forest_predict_proba(trees: Sequence[TreeView], X: np.ndarray) -> np.ndarray:
    """Mean of the trees' leaf distributions (scikit-learn forests' ``predict_proba``).

    Parameters
    ----------
    trees : the forest's trees (at least one).
    X : ``(n, n_features)`` model-space rows.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> X = enc.transform(data.frame)
    >>> forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, data.y)
    >>> trees = rc.models.wrap(forest, enc).trees()
    >>> bool(np.allclose(forest_predict_proba(trees, X), forest.predict_proba(X)))
    True
    """
    if len(trees) == 0:
        raise ValidationError("a forest needs at least one tree")
    total = trees[0].predict_proba(X)
    for tree in trees[1:]:
        total = total + tree.predict_proba(X)
    return total / len(trees)
