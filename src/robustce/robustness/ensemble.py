"""(δ, ε)-robustness of counterfactuals for tree ensembles: an exact test with a witness.

A tree model — a decision tree, a random forest / extra trees, a boosted ensemble (scikit-learn
GradientBoosting / HistGradientBoosting, XGBoost, LightGBM) — is retrained and its leaves and
splits move. :class:`EnsembleShift` is the set of models around it that a CE must survive:

    every ensemble whose leaf values each move by at most δ and whose split thresholds each
    move by at most ε (``ε_j`` for a split on model-space column ``j``; one number or one
    per column), with the trees' structure (features split on, children) unchanged.

Leaf values are what the model adds up: a boosted tree's leaf value (logit units; the baseline
does not move), every class entry of a forest's or a single tree's leaf distribution
(probability units). A CE ``x`` is **(δ, ε)-robust** for class ``t`` when every ensemble of
the set predicts ``t`` at ``x``.

**Deciding it exactly.** With ``x`` fixed, each node's threshold ``θ' ∈ [θ − ε, θ + ε]`` is
chosen independently, so at a node on feature ``j`` the ensemble can send ``x`` left iff
``x_j − θ <= ε_j`` and right iff ``θ − x_j < ε_j`` (both when ``x_j`` is within ε of θ). The
leaves ``x`` can reach in each tree are found top-down; every tree's leaf is chosen on its
own. Per rival class ``k``, the worst summed vote margin is

    w_k(x) = Σ_trees  min_{leaves l reachable from x}  (v_l[t] − v_l[k]) − δ·(m_t + m_k),

``m_c`` = 1 when the tree's leaves hold a value for class ``c`` (a forest's every class; a
boosted tree only its own logit; a binary booster's trees the logit ``z`` of class 1, whose
rival column is the constant 0). The CE is robust iff every ``w_k`` is positive (ties go to
the class listed first, as ``argmax``; a positive ``w`` beats both). The minimum is attained,
so the test is exact: when some ``w_k <= tol`` the **witness** — the ensemble that routes
``x`` to each tree's worst leaf (the thresholds on its path moved to ``x_j`` or just below)
and moves the leaf values by δ against ``t`` and towards ``k`` — is built, predicted at
``x`` by its own trees, and the CE is ``not_robust`` only when the witness predicts another
class (``inconclusive`` if a tie within ``tol`` leaves the class unchanged).

**The float boundary.** The set is the user's own model with its *stored* thresholds moved,
compared as its library compares: scikit-learn ``float32(x) <= t`` (``t`` a float64 midpoint of
two float32 values), XGBoost ``float32(x) < s`` (``s`` float32), LightGBM ``x <= t`` (double).
The tree view's threshold reproduces that routing exactly at ε = 0 (about half a float32 step
above scikit-learn's ``t``), but a point placed exactly on the real-valued boundary ``θ ± ε``
can be rounded to the other side by the library (issue 47: a third of the certified CEs on
scikit-learn trees and forests were). So for ε > 0 each boundary is widened by the margin
``m`` = :data:`~robustce.models.trees.EPSILON_FLOAT_STEPS` = 4 float32 steps of
``max(|θ| + ε, native_j)`` (:func:`~robustce.models.trees.epsilon_split_bounds`; about 4.8e-7
when that is about 1), where ``native_j`` (:func:`~robustce.models.trees.native_float_scale`)
is a scaled continuous column's raw magnitude over its range, so that a pipeline whose
estimator reads the raw (or standardised) value, rounded to float32 in its own units, is
covered too: a point is surely left only at ``x_j <= θ − ε − m`` and surely right only at
``x_j > θ + ε + m``, in this test and in :class:`~robustce.methods.EnsembleRobust`'s MILP, so a
certified CE clears every corner of the user's own model by at least a float step. The
witness is built on the real-valued boundary (no margin); a point inside the margin whose
witness does not flip is ``inconclusive``. A bare tree view (no encoder) uses ``|θ| + ε``.

Margins here are **summed votes** (a forest's sum of leaf distributions, a booster's logits),
as :class:`~robustce.methods.MILPNearest` reports them for tree models: ``lower`` is
``min_k w_k``. The test costs one pass over the nodes per batch of CEs (no solver): well under
a millisecond per CE for a 100-tree booster.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.boosting import AdditiveTrees
from robustce.models.network import resolve_targets
from robustce.models.trees import TreeStack, TreeView, epsilon_split_bounds, native_float_scale
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.solvers.tree_encoding import tree_parts
from robustce.validation import check_number

__all__ = ["EnsembleCertifier", "EnsembleShift", "VoteEnsemble", "ensemble_worst_case"]

#: rows per block of the reachability pass (rows × leaves booleans and floats per block)
_BLOCK_CELLS = 2_000_000


def _epsilon_array(value: Any) -> np.ndarray | None:
    """``value`` as a float array if it is a real number or a (nested) sequence / array of real
    numbers (no bools, no strings, no other objects); ``None`` otherwise."""
    try:
        if isinstance(value, np.ndarray):
            ok = value.dtype.kind in "iuf"
        elif isinstance(value, list | tuple):
            flat = np.asarray(value, dtype=object).reshape(-1)
            ok = all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)
                     for v in flat)
        else:
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
        return np.asarray(value, dtype=np.float64) if ok else None
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class EnsembleShift:
    """The set of tree ensembles around a fitted one (module docstring): leaf values move by
    at most ``delta``, split thresholds by at most ``epsilon`` (model space: one number for
    every column, or one per column).

    Parameters
    ----------
    delta : δ ≥ 0, the largest move of a leaf value.
    epsilon : ε ≥ 0, the largest move of a split threshold in model space (a number or one per
        column).

    Examples
    --------
    >>> shift = rc.robustness.EnsembleShift(delta=0.01, epsilon=0.02)
    >>> shift.params()
    {'delta': 0.01, 'epsilon': 0.02}
    >>> shift.epsilons(3)  # one ε per model-space column
    array([0.02, 0.02, 0.02])
    >>> rc.robustness.EnsembleShift.of(0.05)  # a number is δ alone
    EnsembleShift(delta=0.05, epsilon=0.0)
    """

    delta: float = 0.0
    epsilon: Any = 0.0

    def __post_init__(self) -> None:
        check_number(self.delta, "delta", low=0)
        eps = _epsilon_array(self.epsilon)
        if eps is None or eps.ndim > 1 or eps.size == 0 or not np.all(np.isfinite(eps)) \
                or np.any(eps < 0):
            raise ValidationError(f"epsilon must be a finite number >= 0 or one such number per "
                                  f"model-space column, got {self.epsilon!r}")
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "epsilon", float(eps) if eps.ndim == 0 else eps.copy())

    @classmethod
    def of(cls, shift: Any) -> EnsembleShift:
        """An :class:`EnsembleShift`, or a number δ (ε = 0)."""
        if isinstance(shift, EnsembleShift):
            return shift
        try:
            return cls(delta=shift)
        except ValidationError as exc:
            raise ValidationError(f"shift must be an EnsembleShift or a number δ >= 0: "
                                  f"{exc}") from None

    def epsilons(self, d: int) -> np.ndarray:
        """ε per model-space column, shape (d,)."""
        eps = np.asarray(self.epsilon, dtype=np.float64)
        if eps.ndim == 0:
            return np.full(d, float(eps))
        if eps.shape != (d,):
            raise ValidationError(f"epsilon has {eps.size} entries for {d} model-space columns")
        return eps

    def params(self) -> dict[str, Any]:
        eps = self.epsilon
        return {"delta": self.delta,
                "epsilon": eps if isinstance(eps, float) else [float(e) for e in eps]}


class VoteEnsemble:
    """A tree model in vote form for the (δ, ε) test: all trees' nodes in one index space
    (:class:`~robustce.models.trees.TreeStack`), per node the summed-vote scores
    ``value (n_nodes, n_classes)`` whose argmax, summed over trees, is the prediction, and
    per tree the classes whose entry is a leaf value that moves (``movable``). Built once
    per model by :meth:`of`."""

    def __init__(self, kind: str, parts: Any):
        self.kind = kind
        # every node on one path (TreeView.unshared): the routing pass and the witness's
        # path walk assume trees, and an imported categorical split shares its child
        if kind == "boosted":
            parts = AdditiveTrees([t.unshared() for t in parts.trees], parts.output,
                                  parts.baseline)
        else:
            parts = [t.unshared() for t in parts]
        self.parts = parts
        if kind == "boosted":
            vote = parts.vote_trees()
            n_cls = vote[0].n_classes
            movable = np.zeros((len(vote), n_cls), dtype=bool)
            col = np.ones(len(vote), dtype=np.int64) if parts.n_logits == 1 else parts.output
            movable[np.arange(len(vote)), col] = True
        else:
            vote = list(parts)
            movable = np.ones((len(vote), vote[0].n_classes), dtype=bool)
        if any(np.isnan(t.threshold[t.left >= 0]).any() for t in vote):
            raise ValidationError("a split threshold of the tree model is NaN")
        self.n_classes = int(vote[0].n_classes)
        self.n_features = int(vote[0].n_features)
        #: per column, the magnitude the estimator's own inputs are rounded at (model-space
        #: units; :func:`~robustce.models.trees.native_float_scale`), set by :meth:`of`
        self.native = np.zeros(self.n_features)
        self.movable = movable
        stack = TreeStack.of(vote)
        self.stack = stack
        self.value = np.concatenate([np.asarray(t.value, dtype=np.float64) for t in vote])
        n = len(stack.feature)
        self.tree_of = np.repeat(np.arange(len(vote)), [t.n_nodes for t in vote])
        self.parent = np.full(n, -1, dtype=np.int64)
        internal = np.flatnonzero(~stack.is_leaf)
        self.parent[stack.left[internal]] = internal
        self.parent[stack.right[internal]] = internal
        # internal nodes level by level (parents before children), for the top-down pass
        self.levels: list[np.ndarray] = []
        nodes = stack.roots
        while nodes.size:
            inner = nodes[~stack.is_leaf[nodes]]
            if inner.size:
                self.levels.append(inner)
            nodes = np.concatenate([stack.left[inner], stack.right[inner]])
        self.leaves = np.flatnonzero(stack.is_leaf)  # grouped by tree (global ids)
        self.leaf_starts = np.searchsorted(self.tree_of[self.leaves], np.arange(len(vote)))

    @classmethod
    def of(cls, model: Any) -> VoteEnsemble:
        """The vote form of a tree model: a fitted robustce model of kind ``tree`` /
        ``forest`` / ``boosted`` (``model.trees()`` / ``model.additive_trees()``), an
        :class:`~robustce.models.boosting.AdditiveTrees`, a
        :class:`~robustce.models.trees.TreeView` or a list of them (a soft-voting forest)."""
        if isinstance(model, VoteEnsemble):
            return model
        if isinstance(model, AdditiveTrees):
            return cls("boosted", model)
        if isinstance(model, TreeView):
            return cls("tree", [model])
        if isinstance(model, list | tuple) and model and all(isinstance(t, TreeView) for t in model):
            return cls("forest" if len(model) > 1 else "tree", list(model))
        parts = tree_parts(model)
        if parts is None:
            raise UnsupportedModelError(
                f"the (δ, ε) test takes a tree model (a decision tree, forest or boosted "
                f"ensemble), got {type(model).__name__}")
        kind, p = parts
        ens = cls(kind, p if kind == "boosted" else list(p))
        ens.native = native_float_scale(getattr(model, "encoder", None), ens.n_features)
        return ens

    @property
    def n_trees(self) -> int:
        return len(self.stack.roots)

    def forward(self, X: np.ndarray) -> np.ndarray:
        """Summed-vote scores (n, n_classes) of the unshifted model (:func:`predicted_votes`):
        what the margin loop reads a CE's margin from."""
        return predicted_votes(self.parts, np.atleast_2d(np.asarray(X, dtype=np.float64)))

    def rival_shift(self, target: int, delta: float) -> np.ndarray:
        """Per rival class (class order, the target left out), how much moving every leaf
        value by δ can lower the target's summed-vote margin: ``δ·Σ_trees (m_t + m_k)``."""
        m = self.movable.sum(axis=0).astype(np.float64)
        return np.array([delta * (m[target] + m[k]) for k in range(self.n_classes)
                         if k != target])

    # --- routing ---------------------------------------------------------------------------
    def reach(self, X: np.ndarray, eps: np.ndarray, *, float_margin: bool = True) -> np.ndarray:
        """(n, n_nodes) bool: the nodes some ensemble of the ε-set routes each row to. A node
        on column ``j`` with threshold θ can send ``x`` left iff ``x_j <= hi`` and right iff
        ``x_j > lo``, ``(lo, hi)`` its ε boundary (:func:`epsilon_split_bounds`: ``θ ∓ ε`` and
        the float margin — within it both sides count, as the user's model may route either
        way). ``float_margin=False``: the real-valued boundary ``θ ∓ ε`` alone (the witness's
        routes: θ' = x_j for left, the float below ``x_j`` for right)."""
        s = self.stack
        R = np.zeros((len(X), len(s.feature)), dtype=bool)
        R[:, s.roots] = True
        for nodes in self.levels:
            f, t = s.feature[nodes], s.threshold[nodes]
            e = eps[f]
            lo, hi = (epsilon_split_bounds(t, e, self.native[f]) if float_margin
                      else (t - e, t + e))
            here = R[:, nodes]
            R[:, s.left[nodes]] = here & (X[:, f] <= hi)
            R[:, s.right[nodes]] = here & (X[:, f] > lo)
        return R

    def scores(self, target: int, rival: int, delta: float) -> np.ndarray:
        """Per leaf, its worst contribution to the margin of ``target`` over ``rival``:
        ``v[t] − v[k] − δ·(m_t + m_k)``."""
        L = self.leaves
        m = self.movable[self.tree_of[L]]
        return (self.value[L, target] - self.value[L, rival]
                - delta * (m[:, target].astype(float) + m[:, rival]))

    def worst(self, X: np.ndarray, targets: np.ndarray, shift: EnsembleShift
              ) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the worst summed-vote margin over the set, ``min_k w_k`` (module
        docstring), and the rival ``k`` attaining it."""
        X = np.asarray(X, dtype=np.float64)
        eps = shift.epsilons(self.n_features)
        n = len(X)
        worst = np.full(n, np.inf)
        rival = np.full(n, -1, dtype=np.int64)
        block = max(1, _BLOCK_CELLS // max(len(self.stack.feature), 1))
        for a in range(0, n, block):
            rows = np.arange(a, min(n, a + block))
            R = self.reach(X[rows], eps)[:, self.leaves]
            for t in np.unique(targets[rows]):
                sel = np.flatnonzero(targets[rows] == t)
                for k in range(self.n_classes):
                    if k == t:
                        continue
                    s = np.where(R[sel], self.scores(int(t), k, shift.delta)[None, :], np.inf)
                    w = np.minimum.reduceat(s, self.leaf_starts, axis=1).sum(axis=1)
                    better = w < worst[rows[sel]]
                    worst[rows[sel[better]]] = w[better]
                    rival[rows[sel[better]]] = k
        return worst, rival

    # --- the witness -----------------------------------------------------------------------
    def witness(self, x: np.ndarray, target: int, rival: int, shift: EnsembleShift) -> Any:
        """The member of the set that does worst for ``target`` against ``rival`` at ``x``:
        each tree routes ``x`` to its leaf of least score (thresholds on the path moved to
        ``x_j`` or the float below it where the tree would go the other way), leaf values
        moved by δ against ``target`` and towards ``rival``. The same type as the model:
        an :class:`~robustce.models.boosting.AdditiveTrees` or a list of
        :class:`~robustce.models.trees.TreeView`."""
        s = self.stack
        eps = shift.epsilons(self.n_features)
        R = self.reach(x[None], eps, float_margin=False)[0]
        sc = np.where(R[self.leaves], self.scores(target, rival, shift.delta), np.inf)
        thr = s.threshold.copy()
        ends = np.r_[self.leaf_starts[1:], len(self.leaves)]
        for a, b in zip(self.leaf_starts, ends, strict=True):
            node = int(self.leaves[a + int(np.argmin(sc[a:b]))])
            while self.parent[node] >= 0:
                p = int(self.parent[node])
                xf = x[s.feature[p]]
                if s.left[p] == node and not xf <= thr[p]:
                    thr[p] = xf
                elif s.right[p] == node and not xf > thr[p]:
                    thr[p] = np.nextafter(xf, -np.inf)
                node = p
        trees = self.parts.trees if self.kind == "boosted" else self.parts
        out = []
        for m, tree in enumerate(trees):
            lo = int(s.roots[m])
            value = np.array(tree.value, dtype=np.float64, copy=True)
            if self.kind == "boosted":
                col = 1 if self.parts.n_logits == 1 else int(self.parts.output[m])
                value[:, 0] += shift.delta * ((col == rival) - (col == target))
            else:
                value[:, target] -= shift.delta
                value[:, rival] += shift.delta
            t = thr[lo:lo + tree.n_nodes].copy()
            out.append(TreeView(tree.feature, t, tree.left, tree.right, value, tree.n_features))
        if self.kind == "boosted":
            return AdditiveTrees(out, self.parts.output, self.parts.baseline)
        return out


def predicted_votes(model: Any, X: np.ndarray) -> np.ndarray:
    """Summed-vote scores of a tree model in the form :meth:`VoteEnsemble.witness` returns
    (shape (n, n_classes)); argmax (first maximum) is the prediction. A boosted model's
    binary logit ``z`` is the scores ``[0, z]``."""
    if isinstance(model, AdditiveTrees):
        z = model.logits(X)
        return np.hstack([np.zeros_like(z), z]) if z.shape[1] == 1 else z
    trees = [model] if isinstance(model, TreeView) else list(model)
    return sum(t.predict_proba(X) for t in trees)


def _vote_margin(votes: np.ndarray, target: int) -> float:
    others = np.delete(votes, target)
    return float(votes[target] - others.max())


def ensemble_worst_case(model: Any, X: np.ndarray, shift: EnsembleShift | float,
                        target_class: Any = None) -> np.ndarray:
    """The worst summed-vote margin of each row of ``X`` (model space) for its target class
    (one, one per row, or None: the predicted class) over the (δ, ε)-set of ``model``
    (``min_k w_k`` of the module docstring); positive iff the row is (δ, ε)-robust (up to
    ties at 0). Rows must be finite.

    Parameters
    ----------
    model : a tree model (``trees()`` or ``additive_trees()``).
    X : rows in model space, shape (n, d).
    shift : the (δ, ε)-set, an :class:`EnsembleShift` or δ alone.
    target_class : see above.

    Returns
    -------
    numpy.ndarray
        The worst margin per row.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> enc = rc.data.Encoder(train.schema).fit(train.frame)
    >>> forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    >>> model = rc.models.wrap(forest.fit(enc.transform(train.frame), train.y), enc)
    >>> X = enc.transform(test.frame.head(4))
    >>> nominal = rc.robustness.ensemble_worst_case(model, X, 0.0)  # δ = ε = 0: the margin itself
    >>> worst = rc.robustness.ensemble_worst_case(model, X, rc.robustness.EnsembleShift(0.05, 0.01))
    >>> nominal.round(3), worst.round(3)  # > 0: (δ, ε)-robust for the predicted class
    (array([0.948, 1.505, 1.656, 0.736]), array([ 0.448,  1.005, -2.267, -2.166]))
    """
    ens = VoteEnsemble.of(model)
    shift = EnsembleShift.of(shift)
    X = _rows(X, ens.n_features)
    if not np.isfinite(X).all():
        raise ValidationError("X has NaN or infinite entries")
    t = _targets(target_class, len(X), ens.n_classes,
                 lambda: np.argmax(predicted_votes(ens.parts, X), axis=1))
    return ens.worst(X, t, shift)[0]


def _rows(X: Any, d: int) -> np.ndarray:
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"X must be numeric: {exc}") from None
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != d:
        raise ValidationError(f"X must have shape (n, {d}), got {np.shape(X)}")
    return X


def _targets(targets: Any, n: int, n_classes: int, predicted: Any) -> np.ndarray:
    """One target class per row (:func:`~robustce.models.network.resolve_targets`), the
    predicted class where ``targets`` is None, each in ``[0, n_classes)``."""
    t = np.asarray(predicted(), dtype=np.int64) if targets is None else resolve_targets(targets, n)
    if np.any(t < 0) or np.any(t >= n_classes):
        raise ValidationError(f"target_class must lie in [0, {n_classes})")
    return t


class EnsembleCertifier(Certifier):
    """The exact (δ, ε)-test for tree ensembles (module docstring) as a
    :class:`~robustce.robustness.Certifier`: ``robust`` is a proof over the whole set;
    ``not_robust`` comes with its witness ensemble (``evidence``), checked by predicting
    with it. ``lower`` / ``upper``: the worst summed-vote margin (attained by the witness);
    column ``rival``: the class the worst member predicts or comes closest to.

    ``tol``: a worst margin within ``tol`` of 0 is not called robust (default 1e-6 for
    boosted models — their libraries sum leaf values in float32 — else 1e-9).

    Parameters
    ----------
    shift : the (δ, ε)-set (an :class:`EnsembleShift`, or δ with ``epsilon``).
    epsilon : ε when ``shift`` is a number.
    tol : see above (None: the default for the model).

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> enc = rc.data.Encoder(train.schema).fit(train.frame)
    >>> forest = RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0)
    >>> model = rc.models.wrap(forest.fit(enc.transform(train.frame), train.y), enc)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.EnsembleRobust(model, train, delta=0.01, epsilon=0.01).explain(rejected)
    >>> certifier = rc.robustness.EnsembleCertifier(0.01, epsilon=0.01)
    >>> [s.value for s in certifier.certify(model, res.counterfactuals_encoded, 1).status]
    ['robust', 'robust', 'robust']
    """

    name: ClassVar[str] = "ensemble_delta_epsilon"

    def __init__(self, shift: EnsembleShift | float = 0.0, *, epsilon: Any = None,
                 tol: float | None = None):
        if epsilon is not None:
            shift = EnsembleShift(delta=float(EnsembleShift.of(shift).delta), epsilon=epsilon)
        self.shift = EnsembleShift.of(shift)
        check_number(tol, "tol", low=0, allow_none=True)
        self.tol = tol
        self._cache: tuple[Any, VoteEnsemble] | None = None

    def params(self) -> dict[str, Any]:
        return {**self.shift.params(), "tol": self.tol}

    def _ensemble(self, model: Any) -> VoteEnsemble:
        if self._cache is not None and self._cache[0] is model:
            return self._cache[1]
        ens = VoteEnsemble.of(model)
        self._cache = (model, ens)
        return ens

    def certify(self, network: Any, X: np.ndarray, targets: Any, *,
                time_limit: float | None = None) -> Certificates:
        """Test every row of ``X`` (model space) for its target class; ``network``: the tree
        model (see :meth:`VoteEnsemble.of`). ``time_limit`` is accepted for the protocol
        (the test is a single pass)."""
        t0 = time.perf_counter()
        ens = self._ensemble(network)
        X = _rows(X, ens.n_features)
        n = len(X)
        t = _targets(targets, n, ens.n_classes,
                     lambda: np.argmax(predicted_votes(ens.parts, X), axis=1))
        tol = self.tol if self.tol is not None else (1e-6 if ens.kind == "boosted" else 1e-9)
        bad = ~np.isfinite(X).all(axis=1)
        worst, rival = np.full(n, np.nan), np.full(n, -1, dtype=np.int64)
        ok = np.flatnonzero(~bad)
        if ok.size:
            worst[ok], rival[ok] = ens.worst(X[ok], t[ok], self.shift)
        status = np.empty(n, dtype=object)
        evidence: list[Any] = [None] * n
        upper = worst.copy()
        status[bad] = CertStatus.ERROR
        status[~bad] = CertStatus.ROBUST
        for i in np.flatnonzero(~bad & ~(worst > tol)):
            w = ens.witness(X[i], int(t[i]), int(rival[i]), self.shift)
            votes = predicted_votes(w, X[i][None])[0]
            upper[i] = _vote_margin(votes, int(t[i]))
            if int(np.argmax(votes)) != t[i]:
                status[i], evidence[i] = CertStatus.NOT_ROBUST, w
            else:
                status[i] = CertStatus.INCONCLUSIVE
        per_row = (time.perf_counter() - t0) / max(n, 1)
        return Certificates(status, worst, upper, evidence, np.full(n, per_row), t, self.name,
                            params=self.params(), columns={"rival": rival})
