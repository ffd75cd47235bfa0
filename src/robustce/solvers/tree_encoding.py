"""MILP encoding of decision trees and soft-voting forests (scikit-learn's semantics) over the
structured input domain of :func:`robustce.solvers.encodings.encode_input_domain`.

**Splits.** A node of a :class:`~robustce.models.TreeView` sends ``x`` left iff
``x[f] <= t`` (``t`` already adjusted so that this float64 test reproduces scikit-learn's
float32 routing). Per column kind of the domain, the test becomes two exact bounds — the
largest model-space value that goes left (``left_max``) and the smallest that goes right
(``right_min``), with no value of the column's domain between them:

* continuous: ``left_max = t``, ``right_min = nextafter(t, +inf)``; with ``margins``
  (MACE passes the encoder's :class:`~robustce.models.trees.SplitMargins`) ``left_max = t − m``,
  ``right_min = t + m``, so that a CE's raw row, decoded and scored again, stays on its side.
  A node whose box reaches into the margin zone of a side it cannot clear gets that side as
  an excluded (dead) child, so the encoding routes away from it; a column the box fixes — an
  immutable value — is routed exactly;
* integer grid ``k / s``: ``left_max = k_max / s`` with ``k_max`` the largest grid step whose
  float64 value is ``<= t``, ``right_min = (k_max + 1) / s``;
* 0/1 columns (binary, one-hot, thermometer): ``left_max = 0``, ``right_min = 1``.

With ``epsilon`` (the robust ensemble CE, :mod:`robustce.solvers.robust_trees`) a node has two
literals, the exact splits at ``t − ε`` (its ``split_left``: surely left) and ``t + ε`` (its
``split_right``: surely right unless it holds), each widened by a few float32 steps
(:func:`~robustce.models.trees.epsilon_split_bounds`: the user's library compares the
threshold it stores, in float32 for scikit-learn and XGBoost); without, both are the one split
above.

Every split ``(column, left_max)`` met in any tree gets one binary ``y`` (1 = left), shared by
all trees; a 0/1 column is its own literal (left = ``1 − x``). ``y`` is tied to the input by
big-M rows from the box (grid columns through their integer step variable, so the link is
exact): ``x <= left_max + (hi − left_max)(1 − y)`` and ``x >= right_min − (right_min − lo) y``,
and the splits of one column are ordered (``y_i <= y_{i+1}`` along increasing thresholds).

**Trees** (the flow formulation): per tree, a continuous ``q_n ∈ [0, 1]`` for the nodes the
encoding needs, ``q_root = 1``, ``q_n = q_left + q_right``, ``q_left <= y`` and
``q_right <= 1 − y``; with integral ``y`` exactly one leaf carries the flow, and the leaves'
``q`` need no binaries (Mišić 2020, "Optimization of tree ensembles"; the per-leaf
formulation of Cui et al. 2015 has the same feasible set).

**Partial evaluation** (as the SMT formulae of :mod:`robustce.solvers.smt` do): only nodes
whose box meets the input box are encoded; a ``prune(lo, hi)`` test (vectorised over boxes)
drops subtrees in which every point is provably farther than an incumbent; a subtree whose
remaining leaves all cast the same vote becomes one leaf. A single tree keeps only its leaves
of the target class (``argmax`` of the leaf distribution, as ``predict``).

**Vote** (a forest, scikit-learn's ``predict``: the mean of the leaf distributions, then
``argmax``, whose first maximum wins): for each rival class ``c``,
``Σ_trees Σ_leaves q_l (value_l[target] − value_l[c]) >= margin`` on the sum over trees, with
``margin_strict`` against rivals listed before the target (they win ties) and ``margin_weak``
after it.

**Decoding.** :meth:`TreeEncoding.decode` reads the split literals of a solution and moves each
continuous column into the interval they leave (``[max right_min, min left_max]``; solver
tolerances can leave it a few ulps outside), so the returned point is routed exactly as the
MILP routed it; grid and 0/1 columns are exact once rounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.trees import SplitMargins, TreeStack, epsilon_split_bounds, native_float_scale
from robustce.solvers.encodings import DistanceObjective, InputDomain, column_kinds
from robustce.solvers.milp import MILP, SolveStatus

__all__ = ["TREE_KINDS", "TreeEncoding", "TreeEnsemble", "distance_pruner", "encode_tree_ensemble",
           "ensemble_of", "grid_kmax", "pull_towards_query", "single_feature_moves", "solve_tree_stage",
           "tree_parts"]

#: model kinds (``model.kind``) whose decision :class:`TreeEnsemble` encodes exactly
TREE_KINDS = ("tree", "forest", "boosted")

# node states of the partial evaluation (bottom-up)
_EMPTY, _DC, _DEAD, _UNI, _MIXED = 0, 1, 2, 3, 4


def grid_kmax(steps: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per entry, the largest ``k`` in ``[0, steps]`` whose float64 value ``k / steps`` is
    ``<= t`` (−1 if none): the last grid step a split ``x <= t`` sends left."""
    s = np.asarray(steps, dtype=np.int64)
    t = np.asarray(t, dtype=np.float64)
    sf = s.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        k = np.floor(np.where(np.isfinite(t), t * sf, np.where(t > 0, sf + 1, -1.0)))
    k = np.clip(k, -1, sf).astype(np.int64)
    for _ in range(2):  # float rounding of t * steps: at most one step off either way
        up = (k + 1 <= s) & (np.divide(k + 1, np.maximum(s, 1)) <= t)
        k = np.where(up, k + 1, k)
        down = (k >= 0) & (np.divide(k, np.maximum(s, 1)) > t)
        k = np.where(down, k - 1, k)
    return np.where(s == 0, np.where(t >= 0.0, 0, -1), k)


class TreeEnsemble:
    """Trees (:class:`~robustce.models.TreeView`) with their splits resolved against the
    column kinds of an input domain (``column_kind`` / ``grid_steps`` of an
    :class:`InputDomain`); built once per model. ``forest``: soft vote (False: one tree,
    argmax of its leaf). The nodes of all trees are stored in one set of arrays (global node
    ids, ``roots`` per tree) so that a query is evaluated level by level for all trees at
    once."""

    def __init__(self, trees: Sequence, column_kind: np.ndarray, grid_steps: np.ndarray,
                 forest: bool = True, margins: SplitMargins | None = None,
                 epsilon: np.ndarray | None = None, native: np.ndarray | None = None):
        if len(trees) == 0:
            raise ValidationError("a tree ensemble needs at least one tree")
        if not forest and len(trees) != 1:
            raise ValidationError("forest=False takes exactly one tree")
        self.forest = forest
        self.n_classes = int(trees[0].n_classes)
        kind = np.asarray(column_kind)
        steps = np.asarray(grid_steps, dtype=np.int64)
        stack = TreeStack.of(trees)
        self.roots, self.feature = stack.roots, stack.feature
        self.left, self.right, self.is_leaf = stack.left, stack.right, stack.is_leaf
        self.value = np.concatenate([np.asarray(t.value, dtype=np.float64) for t in trees])
        internal = ~self.is_leaf
        f = self.feature[internal]
        thr = stack.threshold[internal]
        self.threshold = stack.threshold
        if epsilon is None:
            # one literal per node: left iff x <= left_max, right iff x >= right_min
            left_max = thr.copy()
            right_min = np.nextafter(thr, np.inf)
            if margins is not None:  # continuous columns clear the threshold by its margin
                real = kind[f] == "continuous"
                m = margins(f[real], thr[real])
                left_max[real] = thr[real] - m
                right_min[real] = np.maximum(right_min[real], thr[real] + m)
            self._exact_split(kind, steps, f, thr, left_max, right_min)
            split_l, split_r = self._index_splits(f, [left_max], [right_min], kind)
        else:
            # ε (robust CEs): the node routes a point left only if x <= t − ε and right only
            # if x > t + ε, so that every threshold in [t − ε, t + ε] routes it alike — two
            # literals, exact splits at t − ε (− margin) and t + ε (+ margin); a point within
            # ε of the split cannot pass the node (only nodes it passes constrain it). The
            # bounds clear the model's own float comparison (epsilon_split_bounds)
            eps = np.asarray(epsilon, np.float64)[f]
            s_lo, s_hi = epsilon_split_bounds(thr, eps, 0.0 if native is None else native[f])
            if margins is not None:
                real = kind[f] == "continuous"
                m = margins(f[real], thr[real])
                s_lo[real] = s_lo[real] - m
                s_hi[real] = np.where(m > 0, np.nextafter(s_hi[real] + m, -np.inf), s_hi[real])
            bounds = []
            for s_ in (s_lo, s_hi):
                lm, rm = s_.copy(), np.nextafter(s_, np.inf)
                self._exact_split(kind, steps, f, s_, lm, rm)
                bounds.append((lm, rm))
            split_l, split_r = self._index_splits(
                f, [bounds[0][0], bounds[1][0]], [bounds[0][1], bounds[1][1]], kind)
        #: per node, the split whose literal sends it left / right (−1 at leaves); the same
        #: split without ε
        self.split_left = np.full(len(self.feature), -1, dtype=np.int64)
        self.split_right = np.full(len(self.feature), -1, dtype=np.int64)
        self.split_left[internal] = split_l
        self.split_right[internal] = split_r
        self._votes: dict[int, np.ndarray] = {}

    @staticmethod
    def _exact_split(kind: np.ndarray, steps: np.ndarray, f: np.ndarray, s: np.ndarray,
                     left_max: np.ndarray, right_min: np.ndarray) -> None:
        """Fill in the grid and 0/1 columns' bounds of the splits ``x <= s`` (in place): the
        last grid value / 0 that goes left, the first that goes right."""
        grid = kind[f] == "grid"
        k = grid_kmax(steps[f[grid]], s[grid])
        st = steps[f[grid]].astype(np.float64)
        left_max[grid] = np.where(k >= 0, k / np.maximum(st, 1), -np.inf)
        right_min[grid] = np.where(k < steps[f[grid]], (k + 1) / np.maximum(st, 1), np.inf)
        zero_one = kind[f] == "binary"
        left_max[zero_one] = np.where(s[zero_one] >= 0.0, 0.0, -np.inf)
        right_min[zero_one] = np.where(s[zero_one] < 1.0, 1.0, np.inf)

    def _index_splits(self, f: np.ndarray, left_max: list[np.ndarray],
                      right_min: list[np.ndarray], kind: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """One split per distinct ``(column, left_max)`` over the given literal sets (one
        set: a node's left and right literals are one split; two: left from the first,
        right from the second). Sets ``split_col`` / ``split_left_max`` /
        ``split_right_min`` / ``split_kind``; returns each node's left and right split."""
        n = len(f)
        keys = np.concatenate([np.stack([f.astype(np.float64), lm], axis=1) for lm in left_max])
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        rm = np.concatenate(right_min)
        self.split_col = uniq[:, 0].astype(np.int64)
        self.split_left_max = uniq[:, 1]
        first = np.zeros(len(uniq), dtype=np.int64)
        first[inverse[::-1]] = np.arange(len(inverse))[::-1]
        self.split_right_min = rm[first]
        self.split_kind = kind[self.split_col]
        return inverse[:n], inverse[n:] if len(left_max) > 1 else inverse[:n]

    @property
    def n_trees(self) -> int:
        return len(self.roots)

    def votes(self, target: int) -> np.ndarray:
        """Per node, ``value[target] − value[c]`` for the rivals ``c`` (forest), or
        ``[argmax == target]`` (one tree); cached per target."""
        out = self._votes.get(target)
        if out is None:
            rivals = [c for c in range(self.n_classes) if c != target]
            if self.forest:
                out = self.value[:, [target]] - self.value[:, rivals]
            else:
                out = (np.argmax(self.value, axis=1) == target).astype(np.float64)[:, None]
            self._votes[target] = out
        return out

    # --- partial evaluation -----------------------------------------------------------------
    def _reach(self, lo: np.ndarray, hi: np.ndarray,
               prune: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
               ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
        """Nodes whose box meets ``[lo, hi]`` (``visited``), those dropped by ``prune``, the
        internal nodes expanded, level by level (for the bottom-up pass), and the
        ``excluded`` children: those whose side the box reaches only inside the split's
        margin zone (``t − m < x <= t`` or ``t < x < t + m``) — no CE may lie there, so the
        encoding must route away from them (:meth:`_states` makes them dead)."""
        n = len(self.feature)
        visited = np.zeros(n, dtype=bool)
        pruned = np.zeros(n, dtype=bool)
        excluded = np.zeros(n, dtype=bool)
        visited[self.roots] = True
        levels: list[np.ndarray] = []
        nodes = self.roots.copy()
        blo = np.repeat(lo[None, :], len(nodes), axis=0)
        bhi = np.repeat(hi[None, :], len(nodes), axis=0)
        lm_all, rm_all = self.split_left_max, self.split_right_min
        while nodes.size:
            inner = ~self.is_leaf[nodes]
            nodes, blo, bhi = nodes[inner], blo[inner], bhi[inner]
            if not nodes.size:
                break
            levels.append(nodes)
            f = self.feature[nodes]
            lm, rm = lm_all[self.split_left[nodes]], rm_all[self.split_right[nodes]]
            r = np.arange(len(nodes))
            # a column the box fixes (an immutable value) is routed as the model routes it,
            # margin or not: that raw value is the query's own
            t, a, b = self.threshold[nodes], blo[r, f], bhi[r, f]
            fixed = a == b
            go_l, go_r = (a <= lm) | (fixed & (a <= t)), (b >= rm) | (fixed & (b > t))
            # sides the box reaches only inside the margin zone: excluded
            ex = np.concatenate([self.left[nodes[(a <= t) & ~go_l]],
                                 self.right[nodes[(b > t) & ~go_r]]])
            visited[ex] = excluded[ex] = pruned[ex] = True
            rl, rr = np.flatnonzero(go_l), np.flatnonzero(go_r)
            llo, lhi = blo[rl], bhi[rl]
            lhi[np.arange(len(rl)), f[rl]] = np.where(
                fixed[rl], lhi[np.arange(len(rl)), f[rl]],
                np.minimum(lhi[np.arange(len(rl)), f[rl]], lm[rl]))
            rlo, rhi = blo[rr], bhi[rr]
            rlo[np.arange(len(rr)), f[rr]] = np.where(
                fixed[rr], rlo[np.arange(len(rr)), f[rr]],
                np.maximum(rlo[np.arange(len(rr)), f[rr]], rm[rr]))
            kids = np.concatenate([self.left[nodes[rl]], self.right[nodes[rr]]])
            klo, khi = np.concatenate([llo, rlo]), np.concatenate([lhi, rhi])
            visited[kids] = True
            if prune is not None and kids.size:
                drop = np.asarray(prune(klo, khi), dtype=bool).reshape(-1)
                pruned[kids[drop]] = True
                keep = ~drop
                kids, klo, khi = kids[keep], klo[keep], khi[keep]
            nodes, blo, bhi = kids, klo, khi
        return visited, pruned, levels, excluded

    def _states(self, vote: np.ndarray, visited: np.ndarray, pruned: np.ndarray,
                levels: list[np.ndarray], excluded: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """Bottom-up: per node EMPTY (outside the box), DC (every point farther than the
        incumbent: don't care), DEAD (a single tree's non-target leaves only, or a side the
        box reaches only inside a split's margin zone: ``excluded``), UNI (one vote for every
        point that matters) or MIXED, and the vote of UNI nodes."""
        state = np.zeros(len(self.feature), dtype=np.int8)
        v = vote.copy()
        leaf = self.is_leaf & visited & ~pruned
        if self.forest:
            state[leaf] = _UNI
        else:
            state[leaf] = np.where(vote[leaf, 0] > 0.5, _UNI, _DEAD)
        state[pruned] = _DC
        if excluded is not None:
            state[excluded] = _DEAD  # inside a margin zone: routed away from, never a CE
        for nodes in reversed(levels):
            a, b = self.left[nodes], self.right[nodes]
            sa, sb = state[a], state[b]
            dead_a, dead_b = sa == _DEAD, sb == _DEAD
            # a DEAD child counts as live here (it must be routed away from)
            ca, cb = (sa >= _UNI) | dead_a, (sb >= _UNI) | dead_b
            out = np.where(ca & ~cb, sa, np.where(cb & ~ca, sb, np.where(
                (sa == _DC) | (sb == _DC), _DC, _EMPTY))).astype(np.int8)
            both = ca & cb
            out[both] = _MIXED
            out[both & (sa == _UNI) & (sb == _UNI) & np.all(v[a] == v[b], axis=1)] = _UNI
            out[both & dead_a & dead_b] = _DEAD
            state[nodes] = out
            take_a = (out == _UNI) & (sa == _UNI)
            take_b = (out == _UNI) & ~take_a
            v[nodes[take_a]] = v[a[take_a]]
            v[nodes[take_b]] = v[b[take_b]]
        return state, v


def tree_parts(model: Any) -> tuple[str, Any] | None:
    """``(kind, parts)`` of a tree model: a decision tree's or a forest's
    :class:`~robustce.models.TreeView` list (``model.trees()``), a boosted model's
    :class:`~robustce.models.boosting.AdditiveTrees` (``model.additive_trees()``); None for
    any other model."""
    kind = getattr(model, "kind", None)
    if kind in ("tree", "forest") and hasattr(model, "trees"):
        return kind, model.trees()
    if kind == "boosted" and hasattr(model, "additive_trees"):
        return kind, model.additive_trees()
    return None


def ensemble_of(kind: str, parts: Any, encoder: Any, *, epsilon: np.ndarray | None = None
                ) -> TreeEnsemble:
    """The one :class:`TreeEnsemble` of a tree model (``kind``, ``parts`` as
    :func:`tree_parts` returns them) over ``encoder``'s model space, with the encoder's
    :class:`~robustce.models.trees.SplitMargins` (a CE's raw row, decoded and scored again,
    stays in its leaves). A boosted model enters as its vote trees
    (:meth:`~robustce.models.boosting.AdditiveTrees.vote_trees`: the summed per-class scores'
    argmax is its decision), so one soft-vote encoding covers forests and boosters alike.
    Shared by MACE's MILP backend and :class:`~robustce.methods.MILPNearest`. ``epsilon``
    (per model-space column; the robust ensemble CE): each split gets two literals, at
    θ − ε and θ + ε (:mod:`robustce.solvers.robust_trees`), and a single tree is encoded by
    its summed vote. Shared subtrees (an imported categorical split over a level set) are
    unfolded first (:meth:`TreeView.unshared <robustce.models.trees.TreeView.unshared>`): a
    node gets one flow / reach variable."""
    if kind not in TREE_KINDS:
        raise ValidationError(f"kind must be one of {TREE_KINDS}, got {kind!r}")
    column_kind, grid_steps = column_kinds(encoder)
    trees = parts.vote_trees() if kind == "boosted" else parts
    # the flow and reach encodings give a node one variable: trees, no shared subtrees
    trees = [t.unshared() for t in trees]
    native = None if epsilon is None else native_float_scale(encoder, len(column_kind))
    return TreeEnsemble(trees, column_kind, grid_steps,
                        forest=kind != "tree" or epsilon is not None,
                        margins=SplitMargins.of(encoder), epsilon=epsilon, native=native)


def single_feature_moves(ensemble: TreeEnsemble, encoder: Any, query: np.ndarray,
                         lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The points of the box ``[lower, upper]`` that differ from ``query`` in exactly one raw
    feature, at the places where the ensemble's routing can change: a one-column feature
    (scaled, integer) at each of its splits' exact bounds (``left_max``: the last value that
    goes left, ``right_min``: the first that goes right; between two consecutive bounds every
    tree routes alike, so no other value of the column changes the vote), a 0/1 column
    flipped, a one-hot or thermometer block at each of its other levels. Candidates for an
    incumbent (the caller checks their class): a CE that changes one feature is common, and
    its cost is the least of these that is valid.

    Parameters
    ----------
    ensemble : the tree ensemble over ``encoder``'s model space.
    encoder : the fitted :class:`~robustce.data.Encoder`.
    query : the query ``q`` (d,), model space.
    lower, upper : the actionable box (d,).

    Returns
    -------
    (n, d) array of the moved points (possibly empty).
    """
    q = np.asarray(query, dtype=np.float64)
    parts = []
    for b in encoder.blocks_:
        s = b.slice
        if b.width == 1 and b.encoding != "binary":
            j = b.start
            on = ensemble.split_col == j
            vals = np.concatenate([ensemble.split_left_max[on], ensemble.split_right_min[on]])
            vals = np.unique(vals[np.isfinite(vals)])
        elif b.width == 1:
            vals = np.array([1.0 - q[b.start]])
        else:
            codes = np.asarray(b.level_codes(), dtype=np.float64)
            P = np.repeat(q[None], len(codes), axis=0)
            P[:, s] = codes
            parts.append(P)
            continue
        P = np.repeat(q[None], len(vals), axis=0)
        P[:, b.start] = vals
        parts.append(P)
    if not parts:
        return np.zeros((0, len(q)))
    P = np.vstack(parts)
    keep = np.all((P >= lower) & (P <= upper), axis=1) & np.any(P != q, axis=1)
    return P[keep]


def pull_towards_query(ensemble: TreeEnsemble, encoder: Any, query: np.ndarray, X: np.ndarray,
                       lower: np.ndarray, upper: np.ndarray,
                       valid: Callable[[np.ndarray], np.ndarray],
                       cost: Callable[[np.ndarray], np.ndarray], max_steps: int = 16
                       ) -> np.ndarray:
    """Improve valid points by coordinate descent towards the query: from each row of ``X``,
    the :func:`single_feature_moves` that bring every column at least as close to ``query``
    (``|p − q| <= |x − q|``), the valid one of least cost replaces the point while it is
    cheaper; at most ``max_steps`` rounds, all rows at once. Feature tweaking's candidates
    overshoot on the features they move; this takes the excess back.

    Parameters
    ----------
    ensemble, encoder, lower, upper : as :func:`single_feature_moves`.
    query : the query ``q`` (d,).
    X : (n, d) valid points to improve.
    valid : bool per row of an (m, d) array (the model's class and any constraints).
    cost : the objective of each row of an (m, d) array.
    max_steps : rounds at most.

    Returns
    -------
    (n, d) array: each row no costlier than its start, and valid if its start is.
    """
    q = np.asarray(query, dtype=np.float64)
    X = np.array(X, dtype=np.float64, copy=True)
    c = cost(X) if len(X) else np.zeros(0)
    active = np.ones(len(X), dtype=bool)
    for _ in range(max_steps):
        rows = np.flatnonzero(active)
        if not rows.size:
            break
        moves = [single_feature_moves(ensemble, encoder, X[i], lower, upper) for i in rows]
        owner = np.repeat(rows, [len(m) for m in moves])
        P = np.vstack(moves) if moves else np.zeros((0, len(q)))
        closer = np.all(np.abs(P - q) <= np.abs(X[owner] - q), axis=1)
        P, owner = P[closer], owner[closer]
        ok = valid(P) if len(P) else np.zeros(0, dtype=bool)
        P, owner = P[ok], owner[ok]
        cp = cost(P) if len(P) else np.zeros(0)
        better = cp < c[owner]
        P, owner, cp = P[better], owner[better], cp[better]
        active[:] = False
        if not len(P):
            break
        order = np.lexsort((cp, owner))
        first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
        X[owner[first]] = P[first]
        c[owner[first]] = cp[first]
        active[owner[first]] = True
    return X


def distance_pruner(query: np.ndarray, weights: np.ndarray, feature_of_column: np.ndarray,
                    n_features: int, norm: Mapping[str, float], limit: float,
                    scale: float = 1.0) -> Callable[[np.ndarray, np.ndarray], Any]:
    """``prune(lo, hi)`` for :func:`encode_tree_ensemble`: True when every point whose
    columns lie in ``[lo, hi]`` is farther than ``limit`` from ``query`` under the raw-space
    distance ``scale · Σ_k norm[k] · dist_k`` (``k`` in l1 / linf / l0; per raw feature, the
    sum of ``weights[j] |x_j − q_j|`` over its columns). The bound is the distance of the
    box's nearest corner: each column's weighted gap to the query bounds its feature's
    distance from below. ``lo``, ``hi``: one box (1-D, returns a bool) or a stack (2-D, one
    bool per row)."""
    x = np.asarray(query, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    owner = np.zeros((len(w), int(n_features)))
    owner[np.arange(len(w)), np.asarray(feature_of_column)] = 1.0
    a1, ainf, a0 = (float(norm.get(k, 0.0)) for k in ("l1", "linf", "l0"))

    def prune(lo: np.ndarray, hi: np.ndarray) -> Any:
        gap = w * np.maximum(0.0, np.maximum(lo - x, x - hi))
        per = np.atleast_2d(gap) @ owner  # per raw feature
        lb = (a1 * per.sum(axis=1) + ainf * per.max(axis=1)
              + a0 * np.count_nonzero(per, axis=1)) * scale
        out = lb > limit
        return bool(out[0]) if np.ndim(lo) == 1 else out

    return prune


@dataclass
class TreeEncoding:
    """What :func:`encode_tree_ensemble` added: the split literals used (column, bounds, the
    binary ``y`` or −1 for a 0/1 column) and the vote rows (one per rival class; empty for a
    single tree). ``n_nodes``: the node variables; ``infeasible``: some tree has no leaf of
    interest inside the box (no CE there at all)."""

    split_col: np.ndarray
    split_left_max: np.ndarray
    split_right_min: np.ndarray
    split_var: np.ndarray
    vote_rows: np.ndarray
    n_nodes: int
    infeasible: bool = False

    @classmethod
    def empty(cls) -> TreeEncoding:
        """No split, no vote row: the box rules every point out (``infeasible``)."""
        none = np.zeros(0, dtype=np.int64)
        return cls(none, np.zeros(0), np.zeros(0), none, none, 0, infeasible=True)

    @property
    def n_binaries(self) -> int:
        return int((self.split_var >= 0).sum())

    def intervals(self, values: np.ndarray, domain: InputDomain) -> tuple[np.ndarray, np.ndarray]:
        """Per column, the range ``[a, b]`` that the split literals of a solution ``values``
        leave inside the domain's box (``b = min left_max`` over the splits it goes left at,
        ``a = max right_min`` over the others)."""
        lo, hi = domain.lower.copy(), domain.upper.copy()
        is_y = self.split_var >= 0
        y = np.round(values[self.split_var[is_y]]) > 0.5
        col, lm, rm = self.split_col[is_y], self.split_left_max[is_y], self.split_right_min[is_y]
        np.minimum.at(hi, col[y], lm[y])
        np.maximum.at(lo, col[~y], rm[~y])
        return lo, hi

    def decode(self, values: np.ndarray, domain: InputDomain, query: np.ndarray) -> np.ndarray:
        """The model-space point of a solution ``values``: 0/1 columns rounded; every other
        column the point nearest to the query in the range its split literals leave
        (:meth:`intervals`), so the point is routed exactly as the MILP routed it, and is no
        farther from the query than the MILP's ``x`` in any column. The ranges' ends are
        thresholds' exact bounds (grid points for grid columns)."""
        x = np.clip(values[domain.index], domain.lower, domain.upper)
        bin_ = domain.column_kind == "binary"
        x[bin_] = np.round(x[bin_])
        a, b = self.intervals(values, domain)
        other = ~bin_ & (a <= b)
        x[other] = np.clip(query[other], a[other], b[other])
        return x

    def tighten(self, milp: MILP, distance: DistanceObjective, query: np.ndarray) -> None:
        """Rows that give the distance variables of an encoded distance
        (:func:`robustce.solvers.encodings.encode_distance`) the displacement the split
        literals imply. Per column with splits, sorted, those at or above the query
        (``q <= l_i``) and those below (``r_i <= q``):

            e_j >= Σ_{above} (1 − y_i)(r_i − r_{i−1}) + Σ_{below} y_i (l_{i+1} − l_i)

        with ``r_{i−1} = q`` for the first split above and ``l_{i+1} = q`` for the last one
        below — for integral, ordered ``y`` exactly the distance from ``q`` to the range
        the literals leave; in the LP relaxation the expected displacement of the fractional
        routing. ``l0``: the changed indicator is 1 once the first split above is passed to
        the right or the last one below to the left."""
        is_y = self.split_var >= 0
        if not is_y.any():
            return
        col = self.split_col[is_y]
        lm, rm, yv = self.split_left_max[is_y], self.split_right_min[is_y], self.split_var[is_y]
        order = np.lexsort((lm, col))
        col, lm, rm, yv = col[order], lm[order], rm[order], yv[order]
        q = query[col]
        above = q <= lm
        first = np.r_[True, col[1:] != col[:-1]]
        # above: the first above in its column (previous split is below or another column)
        a_first = above & (first | ~np.r_[False, above[:-1]])
        last = np.r_[col[1:] != col[:-1], True]
        # below: the last below in its column (next split is above or another column)
        b_last = ~above & (last | np.r_[above[1:], False])
        da = np.where(a_first, rm - q, rm - np.r_[0.0, rm[:-1]])
        db = np.where(b_last, q - lm, np.r_[lm[1:], 0.0] - lm)
        if distance.abs_vars is not None:
            e = distance.abs_vars[col]
            ok = e >= 0
            if ok.any():
                cols_u, group = np.unique(col[ok], return_inverse=True)
                n = len(cols_u)
                coef = np.where(above[ok], da[ok], -db[ok])
                rhs = np.zeros(n)
                np.add.at(rhs, group, np.where(above[ok], da[ok], 0.0))
                # e_j + Σ_above da_i y_i − Σ_below db_i y_i >= Σ_above da_i
                g = np.arange(n)
                milp.add_constrs_coo(np.concatenate([g, group]),
                                     np.concatenate([distance.abs_vars[cols_u], yv[ok]]),
                                     np.concatenate([np.ones(n), coef]), n, rhs, np.inf)
        if distance.changed_vars is not None:
            c = distance.changed_vars[col]
            for mask, sign, rhs in ((a_first & (c >= 0), 1.0, 1.0), (b_last & (c >= 0), -1.0, 0.0)):
                k = int(mask.sum())
                if k:
                    r = np.arange(k)
                    # above: c + y >= 1 (c >= 1 − y) ; below: c − y >= 0
                    milp.add_constrs_coo(np.concatenate([r, r]), np.concatenate([c[mask], yv[mask]]),
                                         np.concatenate([np.ones(k), np.full(k, sign)]), k,
                                         np.full(k, rhs), np.inf)


def encode_tree_ensemble(milp: MILP, ensemble: TreeEnsemble, domain: InputDomain, target: int,
                         *, margin_strict: float = 0.0, margin_weak: float = 0.0,
                         prune: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
                         ) -> TreeEncoding:
    """Add to ``milp`` the constraint "``ensemble`` predicts ``target`` at the input variables
    of ``domain``" (module docstring), partially evaluated over the domain's box.

    ``prune(lo, hi)`` ((n, d) arrays of column ranges → bool per row): True drops every point
    of that box — only sound for boxes all of whose points the caller does not need (e.g.
    farther than an incumbent the solve is cut off at). ``margin_strict`` / ``margin_weak``:
    the summed vote of the target must beat rivals before / after it by at least these.
    """
    if not 0 <= target < ensemble.n_classes:
        raise ValidationError(f"target class must be in [0, {ensemble.n_classes}), got {target}")
    lo, hi = domain.lower, domain.upper
    votes = ensemble.votes(int(target))
    n_rivals = votes.shape[1]
    const = np.zeros(n_rivals)
    # rows collected as COO; node variables get real indices at once, split literals a
    # placeholder (−1 − split id) resolved when the split variables are created
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    rlb: list[np.ndarray] = []
    rub: list[np.ndarray] = []
    n_rows = 0
    vote_cols: list[np.ndarray] = []
    vote_vals: list[np.ndarray] = []

    def add(r_cols: list[np.ndarray], r_vals: list[np.ndarray], lb: np.ndarray, ub: np.ndarray
            ) -> None:
        nonlocal n_rows
        k = len(lb)
        rr = np.arange(n_rows, n_rows + k)
        for c, v in zip(r_cols, r_vals, strict=True):
            rows.append(rr)
            cols.append(c)
            vals.append(np.broadcast_to(np.asarray(v, dtype=np.float64), (k,)))
        rlb.append(lb)
        rub.append(ub)
        n_rows += k

    def condition(q: np.ndarray, sid: np.ndarray, go_left: bool) -> None:
        """Rows q <= literal(split, side): a y literal is y (left) / 1 − y (right), a 0/1
        column's is 1 − x (left) / x (right)."""
        is_bin = ensemble.split_kind[sid] == "binary"
        lit = np.where(is_bin, domain.index[ensemble.split_col[sid]], -1 - sid)
        # left: q - y <= 0 | q + x <= 1 ; right: q + y <= 1 | q - x <= 0
        sign = np.where(is_bin, 1.0, -1.0) * (1.0 if go_left else -1.0)
        ub = np.where(sign > 0, 1.0, 0.0)
        add([q, lit], [np.ones(len(q)), sign], np.full(len(q), -np.inf), ub)

    visited, pruned, levels, excluded = ensemble._reach(lo, hi, prune)
    state, v = ensemble._states(votes, visited, pruned, levels, excluded)
    roots = ensemble.roots
    if np.any(state[roots] < _UNI):  # some tree has no leaf of interest in the box
        return TreeEncoding.empty()
    uni_root = roots[state[roots] == _UNI]
    const += v[uni_root].sum(axis=0)
    qvar = np.full(len(ensemble.feature), -1, dtype=np.int64)
    frontier = roots[state[roots] == _MIXED]
    qvar[frontier] = milp.add_vars(len(frontier), 1.0, 1.0)  # the root carries the flow
    n_nodes = len(frontier)
    while frontier.size:
        a, b = ensemble.left[frontier], ensemble.right[frontier]
        sa, sb = state[a], state[b]
        la, lb = sa >= _UNI, sb >= _UNI
        sid_l, sid_r = ensemble.split_left[frontier], ensemble.split_right[frontier]
        both = la & lb
        if both.any():
            k = int(both.sum())
            new = milp.add_vars(2 * k, 0.0, 1.0)
            n_nodes += 2 * k
            qa, qb = new[:k], new[k:]
            qvar[a[both]], qvar[b[both]] = qa, qb
            # q_node = q_left + q_right
            add([qvar[frontier[both]], qa, qb], [1.0, -1.0, -1.0], np.zeros(k), np.zeros(k))
            condition(qa, sid_l[both], True)
            condition(qb, sid_r[both], False)
        for live, kid, other_state, go_left in ((la & ~lb, a, sb, True),
                                                (lb & ~la, b, sa, False)):
            if not live.any():
                continue
            qvar[kid[live]] = qvar[frontier[live]]  # the same flow
            forbid = live & (other_state != _EMPTY)  # the other side must be excluded
            if forbid.any():
                sid = sid_l if go_left else sid_r
                condition(qvar[frontier[forbid]], sid[forbid], go_left)
        kids = np.concatenate([a[la], b[lb]])
        uni = kids[state[kids] == _UNI]
        if ensemble.forest and uni.size:
            vote_cols.append(qvar[uni])
            vote_vals.append(v[uni])
        frontier = kids[state[kids] == _MIXED]
    # split variables and their links to the input
    used = np.unique(np.concatenate(cols)) if cols else np.zeros(0, dtype=np.int64)
    used = -1 - used[used < 0]
    split_var = np.full(len(used), -1, dtype=np.int64)
    is_bin = ensemble.split_kind[used] == "binary"
    ysid = used[~is_bin]
    yvar = milp.add_vars(len(ysid), 0.0, 1.0, "B")
    split_var[~is_bin] = yvar
    lookup = np.full(len(ensemble.split_col), -1, dtype=np.int64)
    lookup[ysid] = yvar
    cc = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    cc = np.where(cc < 0, lookup[np.maximum(-1 - cc, 0)], cc)
    if n_rows:
        milp.add_constrs_coo(np.concatenate(rows), cc, np.concatenate(vals), n_rows,
                             np.concatenate(rlb), np.concatenate(rub))
    _link_splits(milp, ensemble, domain, ysid, yvar)
    vote_rows = np.zeros(0, dtype=np.int64)
    if ensemble.forest:
        vc = np.concatenate(vote_cols) if vote_cols else np.zeros(0, dtype=np.int64)
        vv = np.concatenate(vote_vals) if vote_vals else np.zeros((0, n_rivals))
        rivals = [c for c in range(ensemble.n_classes) if c != target]
        margin = np.array([margin_strict if c < target else margin_weak for c in rivals])
        r = np.repeat(np.arange(n_rivals)[None, :], len(vc), axis=0).ravel()
        vote_rows = milp.add_constrs_coo(r, np.repeat(vc, n_rivals), vv.ravel(), n_rivals,
                                         margin - const, np.inf)
    return TreeEncoding(ensemble.split_col[used], ensemble.split_left_max[used],
                        ensemble.split_right_min[used], split_var, vote_rows, n_nodes)


def solve_tree_stage(milp: MILP, trees: TreeEncoding, objective: DistanceObjective,
                     domain: InputDomain, query: np.ndarray, encoder: Any, *, floor: float,
                     cutoff: float | None, time_left: float
                     ) -> tuple[bool, Any, np.ndarray | None]:
    """Solve one nearest-CE stage over an encoded ensemble (MILPNearest's and MACE's tree
    MILPs): ``objective`` minimised, with the row ``objective >= floor`` when ``floor > 0``
    (a bound proven by earlier stages; it lifts the LP bound at once), cut off at ``cutoff``.

    Returns ``(cut, result, cf)``: ``cut`` — proven that no point's objective is below the
    cutoff (a cut-off, or infeasibility under one); else the solver's result and the decoded
    point projected into the domain (None when the solver has no solution)."""
    objective.set_as_objective(milp)
    if floor > 0:
        milp.add_constrs_coo(np.zeros(len(objective.cols), dtype=np.int64), objective.cols,
                             objective.coefs, 1, floor - objective.constant, np.inf)
    res = milp.solve(time_limit=max(time_left, 1e-3), cutoff=cutoff)
    if res.status is SolveStatus.CUTOFF or (res.status is SolveStatus.INFEASIBLE
                                             and cutoff is not None):
        return True, res, None
    cf = None
    if res.has_solution:
        cf = encoder.project(trees.decode(res.values, domain, query)[None], domain.lower,
                             domain.upper)[0]
    return False, res, cf


def _link_splits(milp: MILP, ensemble: TreeEnsemble, domain: InputDomain, sid: np.ndarray,
                 yvar: np.ndarray) -> None:
    """Tie the split binaries ``y`` (1 = left) of each column to it: with the column's splits
    sorted, ``l_1 < … < l_m`` (left_max) and ``r_1 < … < r_m`` (right_min), the splits
    ordered (``y_i <= y_{i+1}``) and, in the incremental form,

        x >= lo + Σ_i (1 − y_i)(r_i − r_{i−1})     (r_0 = lo)
        x <= l_1 + Σ_i (1 − y_i)(l_{i+1} − l_i)    (l_{m+1} = hi)

    — for ``y`` = (0, …, 0, 1, …, 1) with k zeros, ``r_k <= x <= l_{k+1}``. Two rows per
    column; their LP relaxation moves x by the fractional routing's expected displacement
    (per-split big-M rows would let it stay near the query)."""
    if not sid.size:
        return
    col = ensemble.split_col[sid]
    order = np.lexsort((ensemble.split_left_max[sid], col))
    sid, yvar, col = sid[order], yvar[order], col[order]
    lo, hi = domain.lower[col], domain.upper[col]
    var = domain.index[col]
    lm, rm = ensemble.split_left_max[sid], ensemble.split_right_min[sid]
    first = np.r_[True, col[1:] != col[:-1]]
    last = np.r_[col[1:] != col[:-1], True]
    group = np.cumsum(first) - 1
    n_groups = int(group[-1]) + 1
    # r_i - r_{i-1} (r_0 = lo) and l_{i+1} - l_i (l_{m+1} = hi)
    dr = rm - np.where(first, lo, np.r_[0.0, rm[:-1]])
    dl = np.where(last, hi, np.r_[lm[1:], 0.0]) - lm
    head = np.flatnonzero(first)
    tail = np.flatnonzero(last)
    g = np.arange(n_groups)
    # x + Σ dr_i y_i >= r_m ;  x + Σ dl_i y_i <= hi
    milp.add_constrs_coo(np.concatenate([g, group]), np.concatenate([var[head], yvar]),
                         np.concatenate([np.ones(n_groups), dr]), n_groups, rm[tail], np.inf)
    milp.add_constrs_coo(np.concatenate([g, group]), np.concatenate([var[head], yvar]),
                         np.concatenate([np.ones(n_groups), dl]), n_groups, -np.inf, hi[tail])
    nxt = np.flatnonzero(~last)
    if nxt.size:
        m = len(nxt)
        rr = np.arange(m)
        # y_i - y_{i+1} <= 0
        milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([yvar[nxt], yvar[nxt + 1]]),
                             np.concatenate([np.ones(m), -np.ones(m)]), m, -np.inf, 0.0)
