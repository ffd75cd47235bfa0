"""Characteristic formulae of decision trees, soft-voting forests and additive (boosted) tree
ensembles: path conditions of the leaves reachable in a box, found for all trees at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import z3

from robustce.errors import SolverError, ValidationError
from robustce.models.trees import TreeStack
from robustce.solvers.smt.domain import SMTInput
from robustce.solvers.smt.terms import _and2, _implies_eq, _or, _rational, _vote

#: the stacks of recently seen tree lists, keyed by the trees' ids; each entry keeps its trees
#: alive (so an id is not reused while its entry lives)
_STACKS: dict[tuple[int, ...], tuple[Sequence[Any], TreeStack]] = {}


def _tree_stack(trees: Sequence[Any]) -> TreeStack:
    """The (cached) :class:`~robustce.models.trees.TreeStack` of ``trees``: a solver build
    reuses the arrays of the build before instead of concatenating a forest's nodes again."""
    key = tuple(id(t) for t in trees)
    hit = _STACKS.get(key)
    if hit is None:
        if len(_STACKS) >= 8:
            _STACKS.pop(next(iter(_STACKS)))
        hit = _STACKS[key] = (tuple(trees), TreeStack.of(trees))
    return hit[1]


def _reachable(stack: TreeStack, lo: np.ndarray, hi: np.ndarray,
               prune: Callable[[np.ndarray, np.ndarray], Any] | None,
               margin: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Breadth-first over all trees at once, one level per numpy pass: the nodes reachable in
    the box ``[lo, hi]`` as entries (entry ``k < n_trees`` is tree ``k``'s root). Returns the
    node of every entry and, per entry, the entry of its only child when the box decides the
    test (``forced``) or of its left / right child when it does not (-1: none, or pruned).
    Without ``prune`` a child keeps its parent's box; with it the child's box is narrowed by
    the test and ``prune(lo, hi)`` (one bool per box row) may drop it. ``margin`` (per stack
    node, :meth:`SMTInput.margins`): a box decides a test only when it clears the threshold
    by it (``hi <= t − m`` / ``lo >= t + m``), or when it fixes the column (an immutable
    value is routed as the model routes it)."""
    node = stack.roots.copy()
    d = len(lo)
    LO = np.broadcast_to(np.asarray(lo, np.float64), (len(node), d)).copy()
    HI = np.broadcast_to(np.asarray(hi, np.float64), (len(node), d)).copy()
    ids = np.arange(len(node))
    nodes = [node]
    parents: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (parent ids, child ids, which)
    n_entries = len(node)
    while len(node):
        inner = stack.left[node] >= 0
        node, LO, HI, ids = node[inner], LO[inner], HI[inner], ids[inner]
        if not len(node):
            break
        rows = np.arange(len(node))
        f, t = stack.feature[node], stack.threshold[node]
        m = margin[node] if margin is not None else np.zeros(len(node))
        a, b = LO[rows, f], HI[rows, f]
        fixed = a == b
        lm = t - m
        rm = np.where(m > 0, t + m, np.nextafter(t, np.inf))
        go_left = (b <= lm) | (fixed & (b <= t))
        go_right = ~go_left & ((a >= rm) | (fixed & (a > t)))
        split = ~(go_left | go_right)
        new_node = [np.where(go_left, stack.left[node], stack.right[node])[~split]]
        new_lo, new_hi = [LO[~split]], [HI[~split]]
        new_parent, which = [ids[~split]], [np.zeros(int((~split).sum()), dtype=np.int8)]
        s = np.flatnonzero(split)
        for side, child in ((1, stack.left), (2, stack.right)):
            clo, chi = LO[s], HI[s]
            if prune is not None:
                clo, chi = clo.copy(), chi.copy()
                if side == 1:
                    chi[np.arange(len(s)), f[s]] = lm[s]
                else:
                    clo[np.arange(len(s)), f[s]] = rm[s]
                keep = ~np.asarray(prune(clo, chi), dtype=bool) if len(s) else np.zeros(0, bool)
            else:
                keep = np.ones(len(s), dtype=bool)
            new_node.append(child[node[s[keep]]])
            new_lo.append(clo[keep])
            new_hi.append(chi[keep])
            new_parent.append(ids[s[keep]])
            which.append(np.full(int(keep.sum()), side, dtype=np.int8))
        node = np.concatenate(new_node)
        LO, HI = np.concatenate(new_lo), np.concatenate(new_hi)
        ids = np.arange(n_entries, n_entries + len(node))
        n_entries += len(node)
        nodes.append(node)
        parents.append((np.concatenate(new_parent), ids, np.concatenate(which)))
    forced = np.full(n_entries, -1, dtype=np.int64)
    lchild, rchild = forced.copy(), forced.copy()
    for par, child, which in parents:
        for arr, w in ((forced, 0), (lchild, 1), (rchild, 2)):
            sel = which == w
            arr[par[sel]] = child[sel]
    return np.concatenate(nodes), forced, lchild, rchild


def _leaf_paths_all(trees: Sequence[Any], inp: SMTInput, lo: np.ndarray, hi: np.ndarray,
                    prune: Callable[[np.ndarray, np.ndarray], Any] | None = None
                    ) -> list[list[tuple[int, z3.BoolRef | bool]]]:
    """Per tree, the leaves reachable inside the box ``[lo, hi]`` with their path conditions;
    tests the box decides are left out (partial evaluation of the characteristic formula).
    ``prune(lo, hi)`` may drop a subtree given the column ranges its path allows (e.g. when
    every point there is provably farther than the distance bound; it receives a stack of
    boxes and returns one bool per row). The reachable nodes are found for all trees at once
    (:func:`_reachable`); the conditions are then built depth-first, right branch first, and
    an input-domain test that is never true drops its branch."""
    stack = _tree_stack(trees)
    inner = stack.left >= 0
    margin = np.zeros(len(stack.feature))
    margin[inner] = inp.margins(stack.feature[inner], stack.threshold[inner])
    node, forced, lchild, rchild = _reachable(stack, lo, hi, prune, margin)
    feat, thr, left = stack.feature, stack.threshold, stack.left
    out: list[list[tuple[int, z3.BoolRef | bool]]] = []
    for k in range(len(stack.roots)):
        base = int(stack.roots[k])
        paths: list[tuple[int, z3.BoolRef | bool]] = []
        todo: list[tuple[int, Any]] = [(k, True)]
        while todo:
            e, cond = todo.pop()
            n = int(node[e])
            if left[n] < 0:
                paths.append((n - base, cond))
                continue
            if forced[e] >= 0:
                todo.append((int(forced[e]), cond))
                continue
            f, t = int(feat[n]), float(thr[n])
            for child, pred in ((int(lchild[e]), inp.le(f, t)), (int(rchild[e]), inp.gt(f, t))):
                if pred is False or child < 0:
                    continue
                todo.append((child, cond if pred is True else (pred if cond is True
                                                               else _and2(cond, pred))))
        out.append(paths)
    return out


def tree_formula(tree: Any, inp: SMTInput, target: int,
                 box: tuple[np.ndarray, np.ndarray] | None = None,
                 prune: Callable[[np.ndarray, np.ndarray], bool] | None = None) -> z3.BoolRef:
    """φ_f(x, target) of one decision tree (:class:`~robustce.models.TreeView`): the
    disjunction of the path conditions of the leaves whose argmax class is ``target``."""
    lo, hi = box if box is not None else (np.zeros(tree.n_features), np.ones(tree.n_features))
    leaf_class = np.argmax(tree.value, axis=1)
    conds = [c for leaf, c in _leaf_paths_all([tree], inp, lo, hi, prune)[0]
             if leaf_class[leaf] == target]
    if any(c is True for c in conds):
        return z3.BoolVal(True)
    return _or(conds) if conds else z3.BoolVal(False)


# Building the tree formulae term by term through z3's Python API is most of a forest's solver
# build time (adult, 100 trees: ≈ 60 % of MACE's time per query). Writing them as SMT-LIB text
# (a define-fun per path node) and parsing once built them 2.3× faster, but z3 then solved them
# 2.8× slower on 20 adult queries (the parser keeps a written negative number as a unary-minus
# term and an equality in its written orientation, where the API builds numerals and orders
# the arguments), so the API build stays.
def forest_formula(trees: Sequence[Any], inp: SMTInput, target: int,
                   box: tuple[np.ndarray, np.ndarray] | None = None, tau: float = 0.0,
                   prefix: str = "v",
                   prune: Callable[[np.ndarray, np.ndarray], bool] | None = None
                   ) -> list[z3.BoolRef]:
    """φ_f(x, target) of a soft-voting forest (scikit-learn's mean of leaf distributions):
    per tree and rival class ``c`` a real ``v = value_l[target] - value_l[c]`` of the reached
    leaf ``l``; the summed votes must be > ``tau`` against rivals listed before ``target``
    and >= ``tau`` against those after it (``np.argmax`` keeps the first maximum)."""
    if len(trees) == 0:
        raise ValidationError("a forest needs at least one tree")
    n_features = trees[0].n_features
    lo, hi = box if box is not None else (np.zeros(n_features), np.ones(n_features))
    n_classes = trees[0].n_classes
    rivals = [c for c in range(n_classes) if c != target]
    cons: list[z3.BoolRef] = []
    sums: dict[int, list[z3.ArithRef]] = {c: [] for c in rivals}
    const: dict[int, Fraction] = dict.fromkeys(rivals, Fraction(0))
    all_paths = _leaf_paths_all(trees, inp, lo, hi, prune)
    for k, (tree, paths) in enumerate(zip(trees, all_paths, strict=True)):
        value = tree.value
        if not paths:  # no leaf of this tree is within reach: nothing is
            return [z3.BoolVal(False)]
        if len(paths) == 1 and paths[0][1] is True:  # decided by the box
            leaf = paths[0][0]
            for c in rivals:
                const[c] += Fraction(float(value[leaf, target])) - Fraction(float(value[leaf, c]))
            continue
        conds = [c for _, c in paths]
        if any(c is True for c in conds):  # cannot happen with more than one path
            raise SolverError("inconsistent tree paths")
        cons.append(_or(conds))  # some leaf is reached (excludes points between floats)
        leaves = np.array([leaf for leaf, _ in paths])
        for c in rivals:
            a, b = value[leaves, target], value[leaves, c]
            if np.all(a - b == a[0] - b[0]) and np.all(a == a[0]):  # one vote everywhere
                const[c] += Fraction(float(a[0])) - Fraction(float(b[0]))
                continue
            var = z3.Real(f"{prefix}_{inp.prefix}_{k}_{c}")
            cons += [_implies_eq(cond, var, _vote(float(ai), float(bi)))
                     for ai, bi, cond in zip(a, b, conds, strict=True)]
            sums[c].append(var)
    for c in rivals:
        total = z3.Sum([*sums[c], z3.RealVal(str(const[c] - Fraction(float(tau))))])
        cons.append(total > 0 if c < target else total >= 0)
    return cons


def additive_formula(ensemble: Any, inp: SMTInput, target: int,
                     box: tuple[np.ndarray, np.ndarray] | None = None, tau: float = 0.0,
                     prefix: str = "g",
                     prune: Callable[[np.ndarray, np.ndarray], bool] | None = None
                     ) -> list[z3.BoolRef]:
    """φ_f(x, target) of an additive tree ensemble (gradient boosting,
    :class:`~robustce.models.boosting.AdditiveTrees`): per tree a real ``v`` equal to the leaf
    value of the reached leaf, logit ``z_k = b_k + Σ v``. Binary (one logit): class 1 iff
    ``z > tau``, class 0 iff ``z <= -tau``; K logits: ``z_t − z_c`` > ``tau`` against rivals
    listed before ``target`` and >= ``tau`` after it (``np.argmax`` keeps the first maximum)."""
    trees = list(ensemble.trees)
    n_features = trees[0].n_features
    lo, hi = box if box is not None else (np.zeros(n_features), np.ones(n_features))
    n_logits = ensemble.n_logits
    cons: list[z3.BoolRef] = []
    terms: list[list[Any]] = [[] for _ in range(n_logits)]
    const = [Fraction(float(b)) for b in ensemble.baseline]
    all_paths = _leaf_paths_all(trees, inp, lo, hi, prune)
    for m, (tree, k, paths) in enumerate(zip(trees, ensemble.output, all_paths, strict=True)):
        if not paths:
            return [z3.BoolVal(False)]
        vals = tree.value[[leaf for leaf, _ in paths], 0]
        if len(paths) == 1 or np.all(vals == vals[0]):
            if len(paths) > 1:
                cons.append(_or([c for _, c in paths]))
            const[int(k)] += Fraction(float(vals[0]))
            continue
        var = z3.Real(f"{prefix}_{inp.prefix}_{m}")
        conds = [c for _, c in paths]
        cons.append(_or(conds))
        cons += [_implies_eq(cond, var, _rational(float(v)))
                 for v, cond in zip(vals, conds, strict=True)]
        terms[int(k)].append(var)
    z = [z3.Sum([*terms[k], z3.RealVal(str(const[k]))]) for k in range(n_logits)]
    t = z3.RealVal(str(Fraction(float(tau))))
    if n_logits == 1:
        cons.append(z[0] > t if target == 1 else z[0] <= -t)
        return cons
    for c in range(n_logits):
        if c != target:
            cons.append(z[target] - z[c] > t if c < target else z[target] - z[c] >= t)
    return cons


