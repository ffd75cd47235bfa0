"""``DiverseRobust``: a small, diverse set of CEs that moves little when the input moves
(Leofante & Potyka, *Promoting Counterfactual Robustness through Diversity*, AAAI 2024, §5).

For a query x whose model class is l and target class t, with d the chosen norm:

1. **order** the training points the *model* assigns to t by d(x, ·) — one KD-tree per target
   class, built once (the :class:`~robustce.methods.NearestNeighbour` index: immutable values
   must equal x's, increase/decrease-only columns are respected);
2. **cut** (eq. 9): ``selection="number"`` keeps the α nearest; ``selection="distance"`` keeps
   every candidate within (1 + ε)·m, m = the nearest candidate's distance (eq. 8);
3. **diversity filter** (eq. 10), greedy in distance order, starting with the nearest candidate
   and stopping at ``n_counterfactuals``: ``filter="angle"`` keeps c only if, for every kept c′,
   |cos∠(c − x, c′ − x)| ≤ β (the authors' code: ``abs(inner(normalised directions)) > beta``
   rejects); ``filter="distance"`` keeps c only if d(c, c′) ≥ (1 + β)·m for every kept c′;
4. **binary line search** (Algorithm 1, eq. 11) from each survivor c towards x: keep a bracket
   [lo, hi] on the segment, lo = x, hi = c; test the midpoint, move hi there if the model gives
   it the target class, lo otherwise; stop when d(lo, hi) ≤ γ. The result is the last hi that
   passed the test, so it is *never* an invalid point, and the class changes between it and a
   point at most γ away on the segment. Mixed-type data: every midpoint is projected to a
   valid encoding (within the query's box, :meth:`~robustce.data.Encoder.domain`, so a value
   beyond the training range is kept) before it is tested, and the projection of hi is
   returned.
   ``minimise=False`` returns the survivors themselves.

Everything is batch-first: one KD-tree query per target class for all queries, the filter runs
n_counterfactuals vectorised rounds over all queries' candidates, and the line search makes one
forward pass per up to six halving steps (every midpoint those steps could test) for the
survivors of all queries together.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from robustce.distance import Distance, check_norm
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.nearest_neighbour import NORMS, NearestNeighbour
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["DiverseRobust"]

SELECTIONS = ("number", "distance")
FILTERS = ("angle", "distance")
_MAX_HALVINGS = 60  # 2^-60 of the unit box's diameter: far below any sensible γ
_TIE = 1e-12
_MAX_ELEMENTS = 20_000_000  # candidate coordinates held at once (160 MB of float64)
_TREE_DEPTH = 6  # line search: at most 6 halvings (63 midpoints per row) per forward pass


@lru_cache(maxsize=64)
def _pairs(m: int) -> tuple[np.ndarray, np.ndarray]:
    """The index pairs (i, j), i < j, of a set of m (``np.triu_indices(m, 1)``, cached)."""
    a, b = np.triu_indices(m, 1)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


class DiverseRobust(Explainer):
    """Up to ``n_counterfactuals`` diverse CEs per query, robust to small input changes.

    Parameters
    ----------
    model, data : the classifier and its training :class:`~robustce.data.Dataset` (required;
        its rows the model puts in the target class are the candidates).
    n_counterfactuals : int ≥ 1 — the most CEs returned per query (the paper: 5).
    selection : "number" (the α nearest candidates) or "distance" (all within (1 + ε)·m).
    alpha : int ≥ 1 — α of the number-based cut (the paper: 50 on diabetes/no2, 1000 else).
    epsilon : float ≥ 0 — ε of the distance-based cut.
    filter : "angle" or "distance" — the diversity criterion of step 3.
    beta : float in [0, 1] — β: the largest |cosine| between kept directions (angle), or the
        relative extra distance (1 + β)·m kept CEs keep from each other (distance).
    gamma : float > 0 — γ, the accuracy of the line search (in the chosen norm).
    norm : "l1", "l2" or "linf" — d, in model space [0, 1]^d (ordering, cut, filter, search).
    minimise : bool — run the line search of step 4 (False: return the training points).
    max_candidates : int or None — cap on the candidates a distance-based cut may keep.
    target_class, time_limit, random_state, n_jobs, constraints : see
        :class:`~robustce.methods.base.Explainer` (the method is deterministic and vectorised).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    n_candidates : |S₂|, the candidates left after the cut of step 2.
    n_kept : |S₃|, the candidates the diversity filter kept (= CEs returned).
    k_distance : (1/|S|) Σ_j d(x, x'_j) over the returned CEs (eq. 12).
    k_diversity : mean pairwise d(x'_j, x'_l) over the returned CEs (eq. 13); NaN if |S| < 2.

    Statuses: ``found``; ``infeasible`` — no training point the model puts in the target class
    is reachable from the query (same immutables, monotone constraints respected).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.DiverseRobust(model, train, n_counterfactuals=2).explain(rejected)
    >>> res.status.tolist()
    ['infeasible', 'found', 'found']
    """

    name: ClassVar[str] = "diverse_robust"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("n_candidates", "n_kept", "k_distance",
                                                      "k_diversity")

    def __init__(self, model: Any, data: Any = None, *, n_counterfactuals: int = 5,
                 selection: str = "number", alpha: int = 50, epsilon: float = 0.5,
                 filter: str = "angle", beta: float = 0.5, gamma: float = 0.1,  # noqa: A002
                 norm: str = "l1", minimise: bool = True, max_candidates: int | None = None,
                 **kwargs: Any):
        self.n_counterfactuals = n_counterfactuals
        self.selection = selection
        self.alpha = alpha
        self.epsilon = epsilon
        self.filter = filter
        self.beta = beta
        self.gamma = gamma
        self.norm = norm
        self.minimise = minimise
        self.max_candidates = max_candidates
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("DiverseRobust needs the training data (data=) for candidates")
        check_integer(self.n_counterfactuals, "n_counterfactuals", low=1)
        check_choice(self.selection, "selection", SELECTIONS)
        check_integer(self.alpha, "alpha", low=1)
        check_number(self.epsilon, "epsilon", low=0)
        check_choice(self.filter, "filter", FILTERS)
        check_number(self.beta, "beta", low=0, high=1)
        check_number(self.gamma, "gamma", low=0, low_open=True)
        check_norm(self.norm, NORMS)
        check_bool(self.minimise, "minimise")
        check_integer(self.max_candidates, "max_candidates", low=1, allow_none=True)
        #: d — ordering, cut, distance filter, line-search accuracy and the k-metrics
        self.distance_ = Distance(check_norm(self.norm, NORMS), space="model")
        # the neighbour index (one KD-tree per target class, immutables grouped) is shared
        pool = max(1, min(int(self.alpha), len(self.data or ())))  # α, at most the data size
        self._nn = NearestNeighbour(self.model, self.data, n_neighbours=pool,
                                    norm=self.distance_.norm, target_class=self.target_class,
                                    time_limit=self.time_limit)
        self._needs_projection = any(b.encoding != "scaled" or b.n_steps is not None
                                     for b in self.encoder.blocks_)

    # --- helpers ------------------------------------------------------------------------------
    def _dist(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return self.distance_(A, B)

    def index(self, target_class: int) -> Any:
        """The candidates and KD-tree of ``target_class`` (built once, then cached)."""
        return self._nn.index(target_class)

    # --- step 1 + 2: order and cut -------------------------------------------------------------
    def _candidates(self, idx: Any, X: np.ndarray, groups: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """(candidates (q, K, d), positions (q, K) -1 padded, distances (q, K) inf padded,
        kept mask (q, K)); the distances are None where nothing needs them (the number cut
        with the angle filter: the tree's order is the order)."""
        n_class = len(idx.X)
        if self.selection == "number":
            k = min(int(self.alpha), n_class)
        else:
            cap = n_class if self.max_candidates is None else min(int(self.max_candidates), n_class)
            k = min(max(4 * self.n_counterfactuals, 32), cap)
        while True:
            self._nn.n_neighbours = max(k, 1)
            pos = self._nn._search(idx, X, groups)
            ok = pos >= 0
            C = idx.X[np.maximum(pos, 0)]
            if self.selection == "number" and self.filter == "angle":
                return C, pos, None, ok
            dist = np.where(ok, self._dist(C, X[:, None, :]), np.inf)
            if self.selection == "number":
                return C, pos, dist, ok
            m = dist[:, :1]
            keep = ok & (dist <= (1.0 + self.epsilon) * m + _TIE)
            # a row may have more candidates within the radius if all k came back inside it
            more = keep[:, -1] & ok.all(axis=1)
            if not more.any() or k >= cap:
                return C, pos, dist, keep
            k = min(2 * k, cap)

    # --- step 3: greedy diversity filter ------------------------------------------------------
    def _diverse(self, C: np.ndarray, x: np.ndarray, dist: np.ndarray | None, keep: np.ndarray
                 ) -> np.ndarray:
        """Positions (q, n_counterfactuals) into the candidate axis, -1 padded.

        Greedy in distance order: round r keeps the first candidate not yet blocked, then
        blocks every candidate too similar to it — the same set as the sequential loop
        "keep c if it differs from every kept c′", in n_counterfactuals vectorised rounds."""
        q, K, _ = C.shape
        out = np.full((q, self.n_counterfactuals), -1, dtype=np.int64)
        if K == 0:
            return out
        rows = np.arange(q)
        free = keep.copy()  # not yet kept or blocked
        if self.filter == "angle":
            U = C - x[:, None, :]
            norms = np.sqrt(np.einsum("qkd,qkd->qk", U, U))[:, :, None]
            U = U / np.where(norms > 0, norms, 1.0)
        else:
            radius = (1.0 + self.beta) * dist[:, :1]
        for r in range(self.n_counterfactuals):
            cur = np.argmax(free, axis=1)  # the first free candidate (0 if none is)
            has = free[rows, cur]
            if not has.any():
                break
            out[:, r] = np.where(has, cur, -1)
            free[rows, cur] = False
            # a row with nothing free has nothing left to block
            if self.filter == "angle":
                cos = np.matmul(U, U[rows, cur][:, :, None])[:, :, 0]
                free &= np.abs(cos) <= self.beta
            else:
                free &= self._dist(C, C[rows, cur][:, None, :]) >= radius
        return out

    # --- step 4: binary line search (Algorithm 1), all survivors at once -----------------------
    def line_search(self, X: np.ndarray, C: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """For each row: the point on the segment from X[i] (not in ``targets[i]``) to C[i]
        (in it) found by Algorithm 1 with accuracy γ. Returns only points the model put in
        the target class (C[i] itself if no midpoint was).

        Every midpoint bisection can test within the next L halvings is a node of a binary
        tree of depth L over the current bracket, so one forward pass over the 2^L − 1 nodes
        of every active row replaces L sequential passes; the walk down the tree then takes
        exactly the sequential algorithm's steps (the same midpoints, bit for bit)."""
        lo = np.array(X, dtype=np.float64, copy=True)
        hi = np.array(C, dtype=np.float64, copy=True)
        best = hi.copy()
        # each query's own box: an out-of-range (immutable) value of the query is kept
        box_lo, box_hi = self.encoder.domain(lo)
        d = lo.shape[1]
        gap = self._dist(lo, hi)
        active = np.flatnonzero(gap > self.gamma)
        done = 0
        while len(active) and done < _MAX_HALVINGS:
            n = len(active)
            need = int(np.ceil(np.log2(gap[active].max() / self.gamma)))
            depth = max(1, min(need, _TREE_DEPTH, _MAX_HALVINGS - done))
            while depth > 1 and 5 * n * 2**depth * d > _MAX_ELEMENTS:  # midpoints + brackets
                depth -= 1
            # the tree's nodes, level by level (node j of level l at 2^l − 1 + j; its
            # children 2j: the bracket [lo, mid] (mid passed), 2j + 1: [mid, hi]), and the
            # brackets each step can leave (the children of level l at 2^(l+1) − 2 + j)
            mids = np.empty((n, 2**depth - 1, d))
            brackets = np.empty((2, n, 2**(depth + 1) - 2, d))
            a, b = lo[active][:, None, :], hi[active][:, None, :]
            for level in range(depth):
                w = 2**level
                mid = mids[:, w - 1:2 * w - 1]
                np.add(a, b, out=mid)
                mid *= 0.5  # = 0.5 * (a + b), as the sequential search computes it
                ca, cb = brackets[0, :, 2 * w - 2:4 * w - 2], brackets[1, :, 2 * w - 2:4 * w - 2]
                ca[:, 0::2], ca[:, 1::2] = a, mid
                cb[:, 0::2], cb[:, 1::2] = mid, b
                a, b = ca, cb
            gaps = self._dist(brackets[0], brackets[1])  # (n, 2^(depth+1) − 2)
            flat = mids.reshape(-1, d)
            if self._needs_projection:
                m = mids.shape[1]
                tests = self.encoder.project(flat, np.repeat(box_lo[active], m, axis=0),
                                             np.repeat(box_hi[active], m, axis=0))
            else:
                tests = flat
            passed = (self.model.predict(tests) == np.repeat(targets[active], mids.shape[1])
                      ).reshape(n, -1)
            tests = tests.reshape(mids.shape)
            # walk: the sequential steps as indices — per level the node tested, its verdict
            # and the bracket's size after the step; a row stops at the first size ≤ γ
            at = np.arange(n)
            node = np.zeros(n, dtype=np.int64)
            path = np.empty((n, depth), dtype=np.int64)
            verdict = np.empty((n, depth), dtype=bool)
            size = np.empty((n, depth))
            for level in range(depth):
                path[:, level] = k = 2**level - 1 + node
                verdict[:, level] = ok = passed[at, k]
                node = 2 * node + ~ok
                size[:, level] = gaps[at, 2**(level + 1) - 2 + node]
            small = size <= self.gamma
            alive = ~small.any(axis=1)
            last = np.where(alive, depth - 1, np.argmax(small, axis=1))  # the last step taken
            taken = np.arange(depth)[None, :] <= last[:, None]
            # the last passed / failed node on each row's path (column 0 if none: masked below)
            up = verdict & taken
            down = ~verdict & taken
            i_up = depth - 1 - np.argmax(up[:, ::-1], axis=1)
            i_down = depth - 1 - np.argmax(down[:, ::-1], axis=1)
            r_up, r_down = np.flatnonzero(up.any(axis=1)), np.flatnonzero(down.any(axis=1))
            k_up, k_down = path[r_up, i_up[r_up]], path[r_down, i_down[r_down]]
            hi[active[r_up]] = mids[r_up, k_up]
            best[active[r_up]] = tests[r_up, k_up]
            lo[active[r_down]] = mids[r_down, k_down]
            gap[active] = size[at, last]
            active = active[alive]
            done += depth
        return best

    # --- the batch ---------------------------------------------------------------------------
    def _chunks(self, targets: np.ndarray, d: int) -> list[tuple[int, np.ndarray]]:
        """(target class, query rows) blocks whose candidate arrays (rows × K × d floats) stay
        under ``_MAX_ELEMENTS`` (K = α, or the first KD-tree query of the distance cut)."""
        k = self.alpha if self.selection == "number" else max(4 * self.n_counterfactuals, 32)
        step = max(1, _MAX_ELEMENTS // max(1, k * d))
        out = []
        single = len(targets) and (targets == targets[0]).all()
        for t in (targets[:1] if single else np.unique(targets)):
            rows = np.arange(len(targets)) if single else np.flatnonzero(targets == t)
            out += [(int(t), rows[s:s + step]) for s in range(0, len(rows), step)]
        return out

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        results: list[QueryResult | None] = [None] * len(X)
        all_rows, all_sel, all_C = [], [], []
        cert: dict[int, dict[str, Any]] = {}
        for t, rows in self._chunks(targets, X.shape[1]):
            idx = self.index(int(t))
            groups = self._nn._query_groups(idx, X[rows])
            if len(idx.X) == 0:
                for r in rows:
                    results[r] = self._nn._infeasible(0)
                continue
            C, pos, dist, keep = self._candidates(idx, X[rows], groups)  # C: (q, K, d)
            sel = self._diverse(C, X[rows], dist, keep)  # (q, nc)
            n_cand = keep.sum(axis=1)
            for j, r in enumerate(rows):
                if n_cand[j] == 0:
                    size = int(idx.group_size[groups[j]]) if groups[j] >= 0 else 0
                    results[r] = self._nn._infeasible(size)
                    results[r].certificate = {"n_candidates": 0, "n_kept": 0,
                                              "k_distance": np.nan, "k_diversity": np.nan}
                else:
                    cert[int(r)] = {"n_candidates": int(n_cand[j])}
            picked = sel >= 0
            qi, slot = np.nonzero(picked)
            all_rows.append(rows[qi])
            all_sel.append(slot)
            all_C.append(C[qi, sel[qi, slot]])
        if not all_rows:
            return results  # type: ignore[return-value]
        owner = np.concatenate(all_rows)
        slot = np.concatenate(all_sel)
        S = np.vstack(all_C) if owner.size else np.zeros((0, X.shape[1]))
        if self.minimise and len(S):
            S = self.line_search(X[owner], S, targets[owner])
        # pack per query, in the filter's (distance) order; the k-metrics of all queries at once
        if len(all_rows) > 1:  # one chunk comes in (query, slot) order already
            order = np.lexsort((slot, owner))
            owner, S = owner[order], S[order]
        n = len(X)
        counts = np.bincount(owner, minlength=n)
        starts = np.cumsum(counts) - counts
        k_dist = np.bincount(owner, weights=self._dist(S, X[owner]), minlength=n) / \
            np.maximum(counts, 1)
        k_div = np.full(n, math.nan)
        multi = np.flatnonzero(counts >= 2)
        if len(multi):  # eq. 13: the mean over the |S|(|S| − 1)/2 pairs of each set
            a, b = _pairs(int(counts.max()))
            q, p = np.nonzero(b[None, :] < counts[multi][:, None])
            first = starts[multi][q]
            pair = self._dist(S[first + a[p]], S[first + b[p]])
            sums = np.bincount(q, weights=pair, minlength=len(multi))
            k_div[multi] = sums / (counts[multi] * (counts[multi] - 1) / 2)
        for r in range(n):
            if results[r] is not None:
                continue
            c = cert[r]
            c.update(n_kept=int(counts[r]), k_distance=float(k_dist[r]),
                     k_diversity=float(k_div[r]))
            results[r] = QueryResult("found", S[starts[r]:starts[r] + counts[r]], c)
        return results  # type: ignore[return-value]
