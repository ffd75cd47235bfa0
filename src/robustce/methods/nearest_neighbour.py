"""``NearestNeighbour``: the closest training point the model assigns to the target class.

The baseline of PROPLACE, MACE and the diverse-CE papers: for a query x with target class t,

    x' = argmin_{z ∈ D_t(x)} ‖z − x‖_p,

where D_t(x) holds the training points z with model(z) = t that are *reachable* from x: equal
to x on every immutable column, and not lower (higher) on increase-only (decrease-only) columns.

How it stays fast (batch first):

* per target class, the candidates are encoded, classified and de-duplicated once, and one
  ``scipy.spatial.cKDTree`` is built over them (lazily, on the first query of that class);
* immutable columns are handled *inside* the tree: candidates are grouped by their immutable
  values (rounded to 1e-9) and the tree's coordinates are the mutable columns plus the group id
  times L, with L larger than any distance within the unit box. Every candidate of the query's
  own group is therefore nearer than any other candidate, and the first neighbours the tree
  returns are exactly the query's group, in order of distance;
* all queries of a class are sent to the tree in one call; increase/decrease-only constraints
  are checked on the returned neighbours with one vectorised mask, and only the queries that
  still lack ``n_neighbours`` reachable candidates are asked again with twice as many
  neighbours, until their group is exhausted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.spatial import cKDTree

from robustce.distance import Distance, check_norm
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import ACTION_TOL, Explainer
from robustce.validation import check_integer

__all__ = ["NearestNeighbour"]

NORMS = ("l1", "l2", "linf")
_KEY_DECIMALS = 9
_MAX_BLOCK = 1_000_000  # neighbours (rows × k) per tree query, to bound memory


def _unique_rows(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unique rows, index of each one's first occurrence, inverse) of a 2-D float array —
    by bytes (a void view), several times faster than ``np.unique(axis=0)``. ``-0.0`` is
    normalised to ``0.0`` first so equal numbers have equal bytes."""
    A = np.ascontiguousarray(A + 0.0)
    if A.shape[1] == 0:
        n = len(A)
        return A[:1], np.zeros(min(n, 1), dtype=np.int64), np.zeros(n, dtype=np.int64)
    view = A.view(np.dtype((np.void, A.itemsize * A.shape[1]))).ravel()
    _, first, inverse = np.unique(view, return_index=True, return_inverse=True)
    return A[first], first, inverse.reshape(-1)


@dataclass
class _ClassIndex:
    """The candidates of one target class and their tree."""

    X: np.ndarray            # (m, d) encoded candidates (unique rows)
    source: np.ndarray       # (m,) position of each candidate in the training data
    group: np.ndarray        # (m,) immutable-group id of each candidate
    keys: np.ndarray         # (G, n_immutable) rounded immutable values of each group
    group_size: np.ndarray   # (G,)
    tree: cKDTree | None
    target_class: int = -1
    scratch: dict[str, Any] = field(default_factory=dict)  # per-class cache of a subclass


class NearestNeighbour(Explainer):
    """Nearest training point in the target class (per the model), reachable from the query.

    Parameters
    ----------
    model, data : the classifier and its training :class:`~robustce.data.Dataset` (required;
        its rows are the candidate CEs).
    target_class : int or None — desired class (binary default: the other class).
    n_neighbours : int — how many CEs to return per query (the nearest ones, distinct rows).
    norm : "l1", "l2" or "linf" — distance in model space [0, 1]^d.
    time_limit, random_state, n_jobs, constraints : see :class:`~robustce.methods.base.Explainer`
        (the search is deterministic and vectorised; ``n_jobs`` is not used).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : ‖x' − x‖_p of the rank-0 CE (NaN if none).
    n_candidates : training points of the target class with the query's immutable values
        (the search space before increase/decrease-only filtering).
    training_index : index label in ``data.frame`` of the rank-0 CE.

    Statuses: ``found``; ``infeasible`` — no training point the model puts in the target class
    is reachable from the query (same immutables, monotone constraints respected).

    ``constraints`` (``docs/constraints.md``) are honoured by filtering: training points that
    break a relation leave the candidate pool (``n_candidates`` counts the rest); returned CEs
    that change more than ``max_changes`` features are removed afterwards, and the message
    says how many (a nearer-but-excluded neighbour is not replaced by the next one).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.NearestNeighbour(model, train).explain(rejected)
    >>> res.status.tolist()
    ['infeasible', 'found', 'found']
    """

    name: ClassVar[str] = "nearest_neighbour"
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("distance", "n_candidates", "training_index")

    def __init__(self, model: Any, data: Any = None, *, n_neighbours: int = 1, norm: str = "l1",
                 **kwargs: Any):
        self.n_neighbours = n_neighbours
        self.norm = norm
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("NearestNeighbour needs the training data (data=) to search")
        # more neighbours than training rows cannot exist (and would size arrays by it)
        check_integer(self.n_neighbours, "n_neighbours", low=1, high=max(len(self.data), 1))
        check_norm(self.norm, NORMS)
        #: the distance searched and reported (model space, the KD-tree's Minkowski p)
        self.distance_ = Distance(self.norm, space="model")
        self._X_train: np.ndarray | None = None
        self._pred_train: np.ndarray | None = None
        self._labels: np.ndarray | None = None
        self._indices: dict[int, _ClassIndex] = {}

    # --- index ----------------------------------------------------------------------------
    def _training(self) -> tuple[np.ndarray, np.ndarray]:
        if self._X_train is None:
            self._X_train = self.encoder.transform(self.data.frame)
            self._pred_train = self.model.predict(self._X_train)
            self._labels = self.data.frame.index.to_numpy()
        return self._X_train, self._pred_train

    def _mutable(self) -> np.ndarray:
        return ~self.action_masks()[0]

    def _scale(self) -> float:
        """L: the group-id coordinate's step; larger than any within-group distance for
        queries in [-1, 2]^d and candidates in [0, 1]^d (per coordinate ≤ 2). Queries beyond
        (applicants far outside the training range) are searched per group
        (:meth:`_search_group`)."""
        return 4.0 * (int(self._mutable().sum()) + 1)

    def index(self, target_class: int) -> _ClassIndex:
        """The candidates and KD-tree of ``target_class`` (built once, then cached)."""
        t = int(target_class)
        if t in self._indices:
            return self._indices[t]
        X, pred = self._training()
        rows = np.flatnonzero(pred == t)
        cand, first = (_unique_rows(X[rows])[:2] if len(rows) else
                       (np.zeros((0, X.shape[1])), np.zeros(0, dtype=np.int64)))
        source = rows[first]
        cand, source = self._filter_candidates(t, cand, source)
        c = getattr(self, "_constraints_obj", None)
        if c is not None and c.relations and len(cand):
            ok = ~c.violations(self.encoder.inverse_transform(cand)).to_numpy().any(axis=1)
            cand, source = cand[ok], source[ok]
        imm = self.action_masks()[0]
        if imm.any() and len(cand):
            keys, _, group = _unique_rows(np.round(cand[:, imm], _KEY_DECIMALS))
        else:
            keys = np.zeros((1 if len(cand) else 0, int(imm.sum())))
            group = np.zeros(len(cand), dtype=np.int64)
        tree = None
        if len(cand):
            coords = np.column_stack([cand[:, self._mutable()], self._scale() * group])
            tree = cKDTree(coords)
        idx = _ClassIndex(cand, source, group.astype(np.int64), keys,
                          np.bincount(group, minlength=len(keys)), tree, t)
        self._indices[t] = idx
        return idx

    def _filter_candidates(self, target_class: int, cand: np.ndarray, source: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Hook: restrict the candidates of a class before the tree is built (default: all)."""
        return cand, source

    def _query_groups(self, idx: _ClassIndex, X: np.ndarray) -> np.ndarray:
        """Group id of each query's immutable values among the candidates' groups (-1: none)."""
        imm = self.action_masks()[0]
        if len(idx.keys) == 0:
            return np.full(len(X), -1, dtype=np.int64)
        if not imm.any():
            return np.zeros(len(X), dtype=np.int64)
        q = np.round(X[:, imm], _KEY_DECIMALS)
        _, _, inv = _unique_rows(np.vstack([idx.keys, q]))
        to_group = np.full(inv.max() + 1, -1, dtype=np.int64)
        to_group[inv[: len(idx.keys)]] = np.arange(len(idx.keys))
        return to_group[inv[len(idx.keys):]]

    # --- search -----------------------------------------------------------------------------
    def _check_model_space(self, X: np.ndarray) -> None:
        """Encoded queries are finite (any value: an applicant beyond the training range
        encodes outside [0, 1]; far beyond it, :meth:`_search` searches per group)."""
        if not np.isfinite(X).all():
            raise ValidationError("queries must be finite model-space rows")

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        self._check_model_space(X)
        results: list[QueryResult | None] = [None] * len(X)
        for t in np.unique(targets):
            rows = np.flatnonzero(targets == t)
            idx = self.index(int(t))
            groups = self._query_groups(idx, X[rows])
            pos = self._search(idx, X[rows], groups)  # (q, n_neighbours), -1 = none
            if len(idx.X) == 0:  # the model puts no training point in this class
                for r in rows:
                    results[r] = self._infeasible(0)
                continue
            count = (pos >= 0).sum(axis=1)
            cfs = idx.X[np.maximum(pos, 0)]  # (q, n_neighbours, d)
            dist0 = self.distance_.rowwise(cfs[:, 0], X[rows])
            n_cand = np.where(groups >= 0, idx.group_size[np.maximum(groups, 0)], 0)
            labels = self._labels[idx.source[np.maximum(pos[:, 0], 0)]] if len(idx.X) else None
            for j, r in enumerate(rows):
                if count[j]:
                    label = labels[j]
                    cert = {"distance": float(dist0[j]), "n_candidates": int(n_cand[j]),
                            "training_index": label.item() if hasattr(label, "item") else label}
                    results[r] = QueryResult("found", cfs[j, :count[j]], cert)
                else:
                    results[r] = self._infeasible(int(n_cand[j]))
        return results

    def _search(self, idx: _ClassIndex, X: np.ndarray, groups: np.ndarray,
                n: int | None = None) -> np.ndarray:
        """Candidate positions per query, nearest first: shape (q, n), -1 padded
        (``n`` defaults to ``n_neighbours``)."""
        nb = self.n_neighbours if n is None else int(n)
        out = np.full((len(X), nb), -1, dtype=np.int64)
        todo = np.flatnonzero(groups >= 0)
        if len(todo) == 0:
            return out
        imm, inc, dec = self.action_masks()
        monotone = inc.any() or dec.any()
        mut = ~imm
        if imm.any():  # beyond [-1, 2] the group coordinate may not separate
            far = todo[((X[todo][:, mut] < -1.0) | (X[todo][:, mut] > 2.0)).any(axis=1)]
            for i in far:
                out[i] = self._search_group(idx, X[i], int(groups[i]), nb, monotone)
            todo = np.setdiff1d(todo, far)
        coords = np.column_stack([X[:, mut], self._scale() * groups])
        m = len(idx.X)
        if not (monotone or imm.any()) and \
                type(self)._admissible is NearestNeighbour._admissible:
            # every candidate is admissible and in the one group: the tree's k nearest
            k = min(m, nb)
            step = max(1, _MAX_BLOCK // k)
            for s in range(0, len(todo), step):
                chunk = todo[s:s + step]
                _, nbr = idx.tree.query(coords[chunk], k=k, p=self.distance_.minkowski_p)
                out[chunk, :k] = np.asarray(nbr).reshape(-1, k)
            return out
        k = min(m, nb * (4 if monotone else 1))
        while len(todo):
            k = min(k, m)
            step = max(1, _MAX_BLOCK // k)
            settled = np.zeros(len(todo), dtype=bool)
            for s in range(0, len(todo), step):
                chunk = todo[s:s + step]
                _, nbr = idx.tree.query(coords[chunk], k=k, p=self.distance_.minkowski_p)
                nbr = np.asarray(nbr).reshape(-1, k)
                valid = nbr < m  # m marks missing neighbours (never when k <= m)
                safe = np.where(valid, nbr, 0)
                same = valid & (idx.group[safe] == groups[chunk][:, None])
                ok = same & self._reachable(X[chunk], idx.X, safe) if monotone else same
                ok = self._admissible(idx, safe, ok)
                rank = np.cumsum(ok, axis=1)
                # settled: enough reachable candidates, or the query's group is exhausted
                # (same-group candidates come first, so any other one means none is left)
                done = (rank[:, -1] >= nb) | (~same).any(axis=1) | (k >= m)
                # the first nb reachable neighbours of each row, in tree (distance) order
                cols = np.argsort(~ok, axis=1, kind="stable")[:, :nb]
                picked = np.take_along_axis(safe, cols, axis=1)
                picked[np.arange(picked.shape[1])[None, :] >= np.minimum(rank[:, -1], nb)[:, None]] = -1
                if picked.shape[1] < nb:  # k < nb only when the class has fewer points
                    picked = np.pad(picked, ((0, 0), (0, nb - picked.shape[1])), constant_values=-1)
                out[chunk[done]] = picked[done]
                settled[s:s + step] = done
            todo = todo[~settled]
            k *= 2
        return out

    def _search_group(self, idx: _ClassIndex, x: np.ndarray, group: int, nb: int,
                      monotone: bool) -> np.ndarray:
        """:meth:`_search` for one query far outside the training range (an applicant beyond
        it): every candidate of its group, reachable and admissible, nearest first."""
        out = np.full(nb, -1, dtype=np.int64)
        pos = np.flatnonzero(idx.group == group)
        if pos.size == 0:
            return out
        ok = np.ones((1, pos.size), dtype=bool)
        if monotone:
            ok = self._reachable(x[None], idx.X, pos[None])
        pos = pos[self._admissible(idx, pos[None], ok)[0]]
        mut = self._mutable()
        dist = np.linalg.norm(idx.X[pos][:, mut] - x[mut], ord=self.distance_.minkowski_p, axis=1)
        keep = pos[np.argsort(dist, kind="stable")[:nb]]
        out[:len(keep)] = keep
        return out

    def _admissible(self, idx: _ClassIndex, nbr: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """Hook: narrow ``ok`` (q, k), the reachable candidates ``nbr`` returned by the tree, to
        those a subclass admits (default: all). Called only on neighbours the search visits, so
        an expensive test (RobX's stability) runs on the few nearest candidates, not the class."""
        return ok

    def _reachable(self, X: np.ndarray, cand: np.ndarray, nbr: np.ndarray) -> np.ndarray:
        """(q, k): candidate nbr[i, j] respects increase/decrease-only for query i."""
        _, inc, dec = self.action_masks()
        ok = np.ones(nbr.shape, dtype=bool)
        for mask, sign in ((inc, 1.0), (dec, -1.0)):
            if mask.any():
                diff = cand[:, mask][nbr] - X[:, None, mask]
                ok &= np.all(sign * diff >= -ACTION_TOL, axis=2)
        return ok

    @staticmethod
    def _infeasible(n_cand: int) -> QueryResult:
        why = ("no training point in the target class shares the query's immutable values"
               if n_cand == 0 else
               f"none of the {n_cand} training points in the target class with the query's "
               "immutable values respects the increase/decrease-only features")
        return QueryResult("infeasible", certificate={"distance": np.nan, "n_candidates": n_cand,
                                                      "training_index": None}, message=why)
