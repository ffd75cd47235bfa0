"""MILP encoding of "every ensemble of the (δ, ε)-set predicts ``target`` at ``x``" for a tree
ensemble (the robust nearest CE of :class:`~robustce.methods.EnsembleRobust`; the set and the
exact test are in :mod:`robustce.robustness.ensemble`).

With ``x`` fixed, a node on column ``j`` with threshold θ can send ``x`` left iff
``x_j <= θ + ε`` and right iff ``x_j > θ − ε``. Per split the encoding has the two literals of
the :class:`~robustce.solvers.tree_encoding.TreeEnsemble` built with ``epsilon``:
``a = [x_j <= θ − ε]`` (its ``split_left``) and ``b = [x_j <= θ + ε]`` (its ``split_right``),
tied to ``x`` exactly as the plain tree MILP ties its splits. Then, per tree:

* **reach** ``r_n ∈ [0, 1]``: ``r_root = 1``, ``r_left >= r_n + b_n − 1``,
  ``r_right >= r_n − a_n`` — with integral literals the least ``r`` is 1 exactly on the nodes
  some ensemble of the ε-set routes ``x`` to;
* **worst leaf** ``w_k`` per rival class ``k``: ``w_k <= s_l + (S − s_l)(1 − r_l)`` for every
  leaf ``l`` (``s_l = v_l[t] − v_l[k]``, ``S`` the tree's largest ``s``), so ``w_k`` is at
  most the least ``s`` over the reachable leaves;
* **vote**: ``Σ_trees w_k >= margin_k`` for each rival, ``margin_k`` including the δ-shift
  ``δ·Σ_trees (m_t + m_k)`` the caller passes.

Every feasible ``x`` is therefore (δ, ε)-robust, and every robust ``x`` (with its true reach)
is feasible: the encoding is exact, so the MILP's optimum is the nearest (δ, ε)-robust CE.
Literals and reach values that the domain's box already decides are constants (no variable);
a split's literal on a 0/1 column is the column itself.
"""

from __future__ import annotations

import numpy as np

from robustce.errors import ValidationError
from robustce.solvers.encodings import InputDomain
from robustce.solvers.milp import MILP
from robustce.solvers.tree_encoding import TreeEncoding, TreeEnsemble, _link_splits

__all__ = ["encode_robust_ensemble"]

_NONE = -1  # an expression without a variable: a constant


def encode_robust_ensemble(milp: MILP, ensemble: TreeEnsemble, domain: InputDomain,
                           target: int, margin: np.ndarray) -> TreeEncoding:
    """Add the robust-prediction constraint (module docstring) over ``domain``'s variables.
    ``ensemble``: built with ``epsilon`` and ``forest=True`` (summed votes); ``margin``: per
    rival class (class order, the target left out) the least summed-vote margin of the worst
    reachable leaves. Returns the split literals for decoding and distance tightening
    (:class:`~robustce.solvers.tree_encoding.TreeEncoding`); ``infeasible`` when the box
    already rules every point out."""
    if not ensemble.forest:
        raise ValidationError("the robust encoding takes summed votes (forest=True)")
    if not 0 <= target < ensemble.n_classes:
        raise ValidationError(f"target class must be in [0, {ensemble.n_classes}), got {target}")
    rivals = [c for c in range(ensemble.n_classes) if c != target]
    margin = np.broadcast_to(np.asarray(margin, dtype=np.float64), (len(rivals),))
    lo, hi = domain.lower, domain.upper
    # --- literals [x_col <= left_max] as c0 + c1·var (var −1: constant) -------------------
    n_split = len(ensemble.split_col)
    col = ensemble.split_col
    lm, rm = ensemble.split_left_max, ensemble.split_right_min
    lit_var = np.full(n_split, _NONE, dtype=np.int64)
    lit_c0 = np.zeros(n_split)
    lit_c1 = np.zeros(n_split)
    always = hi[col] <= lm
    never = ~always & (lo[col] >= rm)
    lit_c0[always] = 1.0
    free = ~always & ~never
    zero_one = free & (ensemble.split_kind == "binary")
    # a 0/1 column's literal [x <= 0] is 1 − x
    lit_var[zero_one] = domain.index[col[zero_one]]
    lit_c0[zero_one], lit_c1[zero_one] = 1.0, -1.0
    ysid = np.flatnonzero(free & ~zero_one)
    yvar = milp.add_vars(len(ysid), 0.0, 1.0, "B")
    lit_var[ysid], lit_c1[ysid] = yvar, 1.0
    _link_splits(milp, ensemble, domain, ysid, yvar)

    # --- reach, top-down --------------------------------------------------------------------
    n = len(ensemble.feature)
    r_var = np.full(n, _NONE, dtype=np.int64)
    r_c0 = np.zeros(n)
    r_c1 = np.zeros(n)
    r_c0[ensemble.roots] = 1.0
    rows_i: list[np.ndarray] = []
    rows_j: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    rows_lb: list[np.ndarray] = []
    n_rows = 0
    n_nodes = 0
    nodes = ensemble.roots
    while nodes.size:
        inner = nodes[~ensemble.is_leaf[nodes]]
        if not inner.size:
            break
        kids_all = []
        # left: [x <= θ + ε] (split_right's literal); right: 1 − [x <= θ − ε]
        for kids, sid, flip in ((ensemble.left[inner], ensemble.split_right[inner], False),
                                (ensemble.right[inner], ensemble.split_left[inner], True)):
            g_var, g_c0, g_c1 = lit_var[sid], lit_c0[sid], lit_c1[sid]
            if flip:
                g_c0, g_c1 = 1.0 - g_c0, -g_c1
            p_var, p_c0, p_c1 = r_var[inner], r_c0[inner], r_c1[inner]
            p_const, g_const = p_var == _NONE, g_var == _NONE
            # both constant: the product of 0/1 constants
            both = p_const & g_const
            r_c0[kids[both]] = np.minimum(p_c0[both], g_c0[both])
            # one side the constant 1: the child is the other expression; 0: the constant 0
            pc = p_const & ~g_const
            one = pc & (p_c0 > 0.5)
            r_var[kids[one]], r_c0[kids[one]], r_c1[kids[one]] = g_var[one], g_c0[one], g_c1[one]
            gc = g_const & ~p_const
            one = gc & (g_c0 > 0.5)
            r_var[kids[one]], r_c0[kids[one]], r_c1[kids[one]] = p_var[one], p_c0[one], p_c1[one]
            # both variable: a new r >= parent + literal − 1
            new = ~p_const & ~g_const
            k = int(new.sum())
            if k:
                rv = milp.add_vars(k, 0.0, 1.0)
                n_nodes += k
                r_var[kids[new]], r_c1[kids[new]] = rv, 1.0
                rr = np.arange(n_rows, n_rows + k)
                rows_i += [rr, rr, rr]
                rows_j += [rv, p_var[new], g_var[new]]
                rows_v += [np.ones(k), -p_c1[new], -g_c1[new]]
                rows_lb.append(p_c0[new] + g_c0[new] - 1.0)
                n_rows += k
            live = ~(p_const & (p_c0 < 0.5)) & ~(g_const & (g_c0 < 0.5))
            kids_all.append(kids[live])
        nodes = np.concatenate(kids_all)
    if n_rows:
        milp.add_constrs_coo(np.concatenate(rows_i), np.concatenate(rows_j),
                             np.concatenate(rows_v), n_rows, np.concatenate(rows_lb), np.inf)

    # --- worst leaf per tree and rival, and the vote rows -------------------------------------
    leaves = np.flatnonzero(ensemble.is_leaf)
    reachable = leaves[(r_var[leaves] != _NONE) | (r_c0[leaves] > 0.5)]
    tree = np.searchsorted(ensemble.roots, reachable, side="right") - 1
    n_trees = len(ensemble.roots)
    votes = ensemble.value[:, [target]] - ensemble.value[:, rivals]  # (n, rivals)
    const = np.zeros(len(rivals))
    w_i: list[np.ndarray] = []
    w_j: list[np.ndarray] = []
    w_v: list[np.ndarray] = []
    w_ub: list[np.ndarray] = []
    vote_cols: list[np.ndarray] = []
    vote_rows_of: list[np.ndarray] = []
    n_w = 0
    for kk in range(len(rivals)):
        s = votes[reachable, kk]
        big = np.full(n_trees, -np.inf)
        small = np.full(n_trees, np.inf)
        np.maximum.at(big, tree, s)
        np.minimum.at(small, tree, s)
        certain = r_var[reachable] == _NONE  # reached for sure (constant 1)
        sure = np.full(n_trees, np.inf)
        np.minimum.at(sure, tree[certain], s[certain])
        hi_w = np.minimum(big, sure)  # w is at most the least certainly reached leaf's s
        varying = small < hi_w  # trees whose worst leaf depends on x
        const[kk] += hi_w[~varying & np.isfinite(hi_w)].sum()
        trees_v = np.flatnonzero(varying)
        if not trees_v.size:
            continue
        wv = milp.add_vars(len(trees_v), small[trees_v], hi_w[trees_v])
        n_nodes += len(trees_v)
        w_of = np.full(n_trees, _NONE, dtype=np.int64)
        w_of[trees_v] = wv
        vote_cols.append(wv)
        vote_rows_of.append(np.full(len(wv), kk))
        # w + (S − s)·r_l <= S for leaves that may or may not be reached (constant-1 leaves
        # are in the bound already)
        pick = np.flatnonzero(varying[tree] & ~certain)
        pick = pick[s[pick] < hi_w[tree[pick]]]  # leaves at or above the bound cannot bind
        if pick.size:
            lf, t_ = reachable[pick], tree[pick]
            slack = hi_w[t_] - s[pick]
            m = len(pick)
            rr = np.arange(n_w, n_w + m)
            w_i += [rr, rr]
            w_j += [w_of[t_], r_var[lf]]
            w_v += [np.ones(m), slack * r_c1[lf]]
            w_ub.append(hi_w[t_] - slack * r_c0[lf])
            n_w += m
    if n_w:
        milp.add_constrs_coo(np.concatenate(w_i), np.concatenate(w_j), np.concatenate(w_v),
                             n_w, -np.inf, np.concatenate(w_ub))
    if np.any(~np.isfinite(const)):
        return TreeEncoding.empty()
    vote_rows = np.zeros(0, dtype=np.int64)
    if vote_cols:
        vc = np.concatenate(vote_cols)
        vr = np.concatenate(vote_rows_of)
        vote_rows = milp.add_constrs_coo(vr, vc, np.ones(len(vc)), len(rivals),
                                         margin - const, np.inf)
    elif np.any(const < margin):
        return TreeEncoding.empty()
    split_var = np.full(n_split, -1, dtype=np.int64)
    split_var[ysid] = yvar
    used = np.flatnonzero(free)
    return TreeEncoding(col[used], lm[used], rm[used], split_var[used], vote_rows, n_nodes)

