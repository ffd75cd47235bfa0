"""``RobustNearestNeighbour``: the nearest training point that is *provably* Δ-robust
(PROPLACE, Jiang et al. 2024, Definition 9 with k = 1; the vertices of PROPLACE's region).

For a query x with target class t the answer is

    x' = argmin_{z ∈ D_t^Δ(x)} ‖z − x‖_p,

where D_t^Δ(x) holds the training points z that the model puts in class t, that are reachable
from x (same immutable values, increase/decrease-only respected — exactly as
:class:`~robustce.methods.NearestNeighbour`) and that pass the exact Δ-test
(by default :class:`robustce.robustness.ExactDeltaCertifier`, the exact MILP test; any
:class:`~robustce.robustness.Certifier` can be given): their worst-case target margin over
every network in Δ is proven ≥ ``tol``.

How it stays fast: the candidate pool of a target class is certified **once** per
(model, shift, target) — one batched exact test over all candidates (interval bounds and a
weight attack decide most rows at once; the rest get one small MILP each) — and cached on the
explainer; one KD-tree is built over the certified points only, and all queries go to it in one
call (the search itself is :class:`NearestNeighbour`'s). The returned points are re-certified
(default: the exact test again, computing their exact worst-case margin by a full MILP).

:meth:`RobustNearestNeighbour.k_robust_neighbours` returns the k nearest certified points per
query: S_{k,Δ} of Definition 9 (the hull vertices of :class:`~robustce.methods.PROPLACE`).

**Boosters, forests and trees.** Δ is a box around a network's weights; a gradient-boosted
model has no weights to move, and what its user fears is the next retrain. So on a model
without a ReLU-network view the method needs an explicit ``certifier`` and says so with an
:class:`~robustce.errors.UnsupportedModelError` otherwise (rather than silently testing
something else). The one robustce provides for any model is
:class:`~robustce.robustness.FamilyCertifier`: a candidate enters the pool when every model of
a retrained family (:func:`~robustce.models.proplace_family`, :func:`seed_family` with the
user's ``XGBClassifier`` / ``LGBMClassifier`` or pipeline) and the model itself put it in the
target class — "robust" then means *valid under each of these retrains*, an exact statement
about that finite set; measure ``vr`` on an independent family to estimate the next retrain.
A certifier for tree ensembles that reads the model itself (as ``certify(model, X, t)``)
plugs in the same way.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.errors import UnsupportedModelError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.models.base import model_name
from robustce.robustness.certifier import Certifier, CertStatus
from robustce.robustness.exact import ExactDeltaCertifier
from robustce.robustness.shift import ParameterShift
from robustce.solvers.milp import check_solver
from robustce.validation import check_number

__all__ = ["PoolInfo", "RobustNearestNeighbour"]


@dataclass
class PoolInfo:
    """How the certified pool of one target class was obtained."""

    target_class: int
    n_candidates: int      # distinct training points the model puts in the class
    n_certified: int       # of them proven Δ-robust (margin ≥ tol): the pool
    n_not_robust: int      # proven not Δ-robust
    n_undecided: int       # timeout / error: neither in the pool nor excluded by proof
    time: float            # seconds for the batched certification
    decided_by: dict[str, int]
    n_borderline: int = 0  # worst case within tolerance of 0 (inconclusive, or robust with a
    #                        margin below tol): left out, and no time limit would decide them


class RobustNearestNeighbour(NearestNeighbour):
    """Nearest training point in the target class that is proven Δ-robust (Definition 9).

    Parameters
    ----------
    model, data : the classifier and its training :class:`~robustce.data.Dataset`, whose
        rows are the candidates. The default certifier needs a ReLU network
        (``model.network()``); a model without one — trees, forests, boosters — needs a
        ``certifier`` that reads the model itself, e.g.
        :class:`~robustce.robustness.FamilyCertifier` over a retrained family (a point is
        kept when every retrained model puts it in the target class); without one it raises
        :class:`~robustce.errors.UnsupportedModelError` saying so.
    shift : :class:`~robustce.robustness.ParameterShift` or a number δ (p = ∞ box).
    target_class : int or None — desired class (binary default: the other class).
    n_neighbours : int — CEs returned per query (nearest first).
    norm : "l1", "l2" or "linf" — distance in model space.
    tol : a candidate enters the pool only if its certified worst-case margin is ≥ ``tol``
        (> 0; guards against solver tolerances).
    certify_time_limit : seconds of MILP time per candidate in the pool certification; a
        candidate whose test times out is left out of the pool (never assumed robust).
    certifier : the robustness test (a :class:`~robustce.robustness.Certifier`); default None:
        :class:`~robustce.robustness.ExactDeltaCertifier` at ``shift`` with ``tol``. A point
        enters the pool only if the certifier says ``robust`` and its ``lower`` bound is ≥ ``tol``.
    solver : "highs" (default) or "gurobi".
    time_limit, random_state, n_jobs, constraints : see :class:`~robustce.methods.base.Explainer`.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : ‖x' − x‖_p of the rank-0 CE.
    worst_case_margin : worst-case target margin of the rank-0 CE over Δ from its
        re-certification (default certifier: the exact value, by a full MILP).
    delta : δ of the shift set (NaN for a model without a network: the certifier's set is
        not a Δ box).
    n_candidates : certified pool points with the query's immutable values.
    training_index : index label in ``data.frame`` of the rank-0 CE.

    Statuses: ``found``; ``no_robust_point`` — no reachable training point of the target class is
    proven Δ-robust (Proposition 1's condition fails for this query); ``timeout`` — none is proven
    robust but some candidates' tests were undecided, so a robust one may exist; ``error``.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.RobustNearestNeighbour(model, train, shift=0.02).explain(rejected)
    >>> res.status.tolist()
    ['no_robust_point', 'no_robust_point', 'found']
    """

    name: ClassVar[str] = "robust_nearest_neighbour"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "worst_case_margin", "delta", "n_candidates", "training_index")

    def __init__(self, model: Any, data: Any = None, *, shift: ParameterShift | float = 0.05,
                 tol: float = 1e-6, certify_time_limit: float = 10.0, solver: str = "highs",
                 certifier: Certifier | None = None, **kwargs: Any):
        self.shift = shift
        self.tol = tol
        self.certify_time_limit = certify_time_limit
        self.solver = solver
        self.certifier = certifier
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        # the search reads the resolved ParameterShift; get_params then returns it (round-trips)
        self.shift = ParameterShift.of(self.shift)
        check_number(self.tol, "tol", low=0, low_open=True)
        check_number(self.certify_time_limit, "certify_time_limit", low=0, low_open=True)
        self.solver_ = check_solver(self.solver)
        if self.certifier is not None and not callable(getattr(self.certifier, "certify", None)):
            raise ValidationError(f"certifier must have a certify method, got "
                                  f"{type(self.certifier).__name__}")
        try:
            self._network = self.model.network()
        except UnsupportedModelError:
            if self.certifier is None:
                raise UnsupportedModelError(
                    f"RobustNearestNeighbour's default test is the exact Δ-test over a ReLU "
                    f"network's weights, and {model_name(self.model)} "
                    f"(kind {getattr(self.model, 'kind', None)!r}) has no network view. For "
                    "tree ensembles and boosters pass certifier=: "
                    "rc.robustness.FamilyCertifier(family) keeps the training points that "
                    "every model of a retrained ModelFamily (rc.models.proplace_family or "
                    "seed_family with your estimator) puts in the target class") from None
            self._network = self.model  # the certifier reads the model itself
        self.pool_info: dict[int, PoolInfo] = {}
        self._exact_margin: dict[int, dict[int, float]] = {}

    # --- the certified pool -------------------------------------------------------------------
    def _certifier(self, exact_value: bool = False) -> Any:
        """The given certifier, or the exact Δ-test (``exact_value``: also the exact worst case
        of the rows it proves robust)."""
        if self.certifier is not None:
            return self.certifier
        return ExactDeltaCertifier(self.shift, solver=self.solver_, time_limit=self.certify_time_limit,
                                   tol=self.tol, exact_value=exact_value)

    def _filter_candidates(self, target_class: int, cand: np.ndarray, source: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """One batched exact Δ-test over all candidates of the class; keep the proven ones."""
        t0 = time.perf_counter()
        if len(cand) == 0:
            self.pool_info[target_class] = PoolInfo(target_class, 0, 0, 0, 0, 0.0, {})
            return cand, source
        res = self._certifier().certify(self._network, cand, target_class)
        keep = res.robust & (res.lower >= self.tol)
        not_rob = res.not_robust
        how = res.columns.get("decided_by", np.full(len(cand), "", dtype=object))
        decided = {k: int((how[keep] == k).sum()) for k in ("interval", "milp")}
        # a worst case within tolerance of 0 (inconclusive, or robust with a margin below tol)
        # is left out like a non-robust point; only a test that ran out of time or failed is
        # undecided (and turns "no robust point" into a timeout)
        borderline = (res.status == CertStatus.INCONCLUSIVE) | (res.robust & ~keep)
        self.pool_info[target_class] = PoolInfo(
            target_class, len(cand), int(keep.sum()), int(not_rob.sum()),
            int((~keep & ~not_rob & ~borderline).sum()), time.perf_counter() - t0, decided,
            int(borderline.sum()))
        return cand[keep], source[keep]

    def certify_pool(self, target_class: int) -> PoolInfo:
        """Certify (once, then cached) the candidate pool of ``target_class``."""
        self.index(int(target_class))
        return self.pool_info[int(target_class)]

    # --- neighbours ---------------------------------------------------------------------------
    def _targets(self, X: np.ndarray, target_class: int | None) -> np.ndarray:
        if target_class is not None:
            return self.targets_for(np.zeros(len(X), dtype=np.int64), target_class)
        return self.targets_for(self.model.predict(X))

    def k_robust_neighbours(self, X: Any, k: int, target_class: int | None = None
                            ) -> list[np.ndarray]:
        """S_{k,Δ} per query: the (at most) ``k`` nearest reachable, certified points, nearest
        first, as a list of ``(k_i, d)`` model-space arrays (``k_i < k`` when fewer exist).

        ``X``: queries (DataFrame, Dataset or model-space array). ``target_class``: default the
        explainer's (binary: the other class than the model predicts).
        """
        if int(k) < 1:
            raise ValidationError(f"k must be a positive integer, got {k}")
        _, X = self._prepare_queries(X)
        targets = self._targets(X, self.target_class if target_class is None else target_class)
        out: list[np.ndarray] = [np.zeros((0, X.shape[1]))] * len(X)
        for t in np.unique(targets):
            rows = np.flatnonzero(targets == t)
            idx = self.index(int(t))
            # more than the pool holds cannot be returned: k beyond it is capped (no huge arrays)
            pos = self._search(idx, X[rows], self._query_groups(idx, X[rows]),
                               n=max(1, min(int(k), len(idx.X))))
            for j, r in enumerate(rows):
                p = pos[j][pos[j] >= 0]
                out[r] = idx.X[p]
        return out

    # --- explain ---------------------------------------------------------------------------------
    def _recertify(self, t: int, positions: np.ndarray) -> dict[int, float]:
        """Re-certified worst-case margin of pool points (cached); NaN if not proven."""
        cache = self._exact_margin.setdefault(t, {})
        todo = np.array([p for p in np.unique(positions) if p not in cache], dtype=np.int64)
        if todo.size:
            idx = self.index(t)
            res = self._certifier(exact_value=True).certify(self._network, idx.X[todo], t)
            for p, ok, lo in zip(todo, res.robust, res.lower, strict=True):
                cache[int(p)] = float(lo) if ok else math.nan
        return cache

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        self._check_model_space(X)
        results: list[QueryResult | None] = [None] * len(X)
        for t in np.unique(targets):
            t = int(t)
            rows = np.flatnonzero(targets == t)
            idx = self.index(t)
            info = self.pool_info[t]
            groups = self._query_groups(idx, X[rows])
            pos = self._search(idx, X[rows], groups)
            count = (pos >= 0).sum(axis=1)
            margins = self._recertify(t, pos[count > 0, 0])
            n_cand = (np.where(groups >= 0, idx.group_size[np.maximum(groups, 0)], 0)
                      if len(idx.group_size) else np.zeros(len(rows), dtype=np.int64))
            for j, r in enumerate(rows):
                cert = {"distance": math.nan, "worst_case_margin": math.nan,
                        "delta": self._delta(), "n_candidates": int(n_cand[j]),
                        "training_index": None}
                if not count[j]:
                    results[r] = self._none_robust(cert, info)
                    continue
                p0 = int(pos[j, 0])
                if math.isnan(margins[p0]):  # pragma: no cover - the pool is certified
                    results[r] = QueryResult("error", None, cert, message=(
                        "the nearest certified point failed its re-certification"))
                    continue
                cfs = idx.X[pos[j, :count[j]]]
                label = self._labels[idx.source[p0]]
                cert.update(distance=float(self.distance_.rowwise(cfs[:1], X[r][None])[0]),
                            worst_case_margin=margins[p0],
                            training_index=label.item() if hasattr(label, "item") else label)
                results[r] = QueryResult("found", cfs, cert)
        return results

    def _delta(self) -> float:
        """δ of the shift set; NaN when the model has no network (the certifier's set is not
        a Δ box: its own ``params`` say what it is)."""
        return self.shift.delta if self._network is not self.model else math.nan

    @staticmethod
    def _none_robust(cert: dict[str, Any], info: PoolInfo) -> QueryResult:
        if info.n_undecided:
            return QueryResult("timeout", None, cert, message=(
                f"no reachable training point is proven Δ-robust, but {info.n_undecided} "
                "candidate test(s) were undecided (raise certify_time_limit)"))
        below = (f"; {info.n_borderline} more have a worst case within tolerance of 0 and "
                 "are left out" if info.n_borderline else "")
        return QueryResult("no_robust_point", None, cert, message=(
            f"no reachable training point of the target class is Δ-robust "
            f"({info.n_certified} of {info.n_candidates} candidates are, none reachable{below})"))
