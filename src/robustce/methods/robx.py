"""``RobX`` (Dutta, Long, Mishra, Tilli & Magazzeni, ICML 2022): counterfactuals that are
*stable* under the model's local variability; with the nearest-neighbour base CE this is
RobXNN, a baseline of PROPLACE's Table 1.

Counterfactual stability of a point x′ for target class t (model space, K samples, variance σ²):

    R_{K,σ²}(x′) = (1/K) Σ_k p_t(x′_k) − sqrt((1/K) Σ_k (p_t(x′_k) − mean)²),   x′_k ~ N(x′, σ² I),

the mean minus the standard deviation of the model's probability of t around x′ — high when the
model is confident there *and* stays so nearby. RobX, per query x:

1. the base CE x_b (default :class:`~robustce.methods.NearestNeighbour`: RobXNN);
2. the nearest *stable* training point x_s — the model puts it in class t and R(x_s) ≥ τ —
   reachable from x (same immutables, increase/decrease-only respected: the search of
   :class:`NearestNeighbour` over the stable points only);
3. a line search from x_b towards x_s: the points (1 − a)·x_b + a·x_s, a = 0, step, 2·step, …, 1
   (projected to valid encodings); the first one that the model puts in class t with R ≥ τ is
   the CE (a = 1 is x_s itself, so one always exists when x_s does). With ``n_neighbours`` > 1
   the ``n_neighbours`` nearest stable points are each tried and the CE closest to x is kept
   (as in PROPLACE's RobXNN runs).

Batch first: one set of K Gaussian offsets (drawn from ``random_state``; common random numbers
for every point, so stabilities are comparable and reproducible) is shared by all points; the
stability of a training candidate is computed only when the neighbour search reaches it (nearest
first, batched per search round, cached per class — on GMC's ~56 000 class-1 rows a handful of
rounds instead of the whole pool), and the line-search points of all queries are evaluated in one
chunked, vectorised pass (queries × steps × K rows).

Facts from the authors' code as used in PROPLACE's runs (``junqi-jiang/proplace``,
``experiments/exputils.py``): σ = 0.1 (variance 0.01), K = 1000, τ = 0.5, step 0.05.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.validation import check_choice, check_integer, check_number

__all__ = ["RobX", "counterfactual_stability"]

BASES = ("nearest_neighbour", "wachter")
MAX_SAMPLES = 100_000
_MAX_ROWS = 2_000_000  # rows per forward pass (points × samples)


def counterfactual_stability(model: Any, X: np.ndarray, target: Any, offsets: np.ndarray
                             ) -> np.ndarray:
    """R(x) = mean − std of ``model``'s probability of ``target`` over ``X[i] + offsets[k]``
    (model space; ``offsets`` of shape (K, d), e.g. N(0, σ²I) draws). ``target``: one class or
    one per row. Vectorised over rows × samples, in chunks."""
    X = np.asarray(X, dtype=np.float64)
    n, K = len(X), len(offsets)
    t = np.broadcast_to(np.asarray(target, dtype=np.int64), (n,))
    out = np.empty(n)
    step = max(1, _MAX_ROWS // max(K, 1))
    for s in range(0, n, step):
        blk = X[s:s + step]
        Z = (blk[:, None, :] + offsets[None, :, :]).reshape(-1, X.shape[1])
        p = model.predict_proba(Z).reshape(len(blk), K, -1)
        pt = np.take_along_axis(p, t[s:s + step][:, None, None], axis=2)[:, :, 0]
        out[s:s + step] = pt.mean(axis=1) - pt.std(axis=1)
    return out


class RobX(NearestNeighbour):
    """Stable counterfactuals by RobX (Dutta et al. 2022); the default base gives RobXNN.

    Parameters
    ----------
    model, data : the classifier (anything with ``predict_proba``) and its training
        :class:`~robustce.data.Dataset` (the stable candidates; required).
    tau : τ, the stability threshold (in (0, 1)).
    variance : σ², the variance of the Gaussian samples (model space; > 0).
    n_samples : K, the samples per stability estimate.
    base : the base CE — "nearest_neighbour" (RobXNN) or "wachter" (needs a differentiable
        model); a query without a base CE starts its line search at the stable point.
    step : the line-search step of a, in (0, 1].
    n_neighbours : stable training points tried per query (the CE closest to the query wins).
    norm : "l1", "l2" or "linf" — the distance of the neighbour searches and the certificate.
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`
        (``random_state`` draws the Gaussian offsets).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : ‖x′ − x‖ of the CE (``norm``, model space).
    stability : R_{K,σ²}(x′) of the CE (≥ τ), with the offsets of this call.
    tau : τ.
    a : the line-search position of the CE (0: the base CE itself; 1: the stable point).
    n_candidates : training points of the target class with the query's immutables (stable
        or not: stability is only computed for the ones the search reaches).
    training_index : index label in ``data.frame`` of the stable point used.

    Statuses: ``found``; ``no_robust_point`` — no reachable training point of the target class
    has stability ≥ τ.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.RobX(model, train, random_state=0).explain(rejected)
    >>> res.status.tolist()
    ['no_robust_point', 'found', 'found']
    """

    name: ClassVar[str] = "robx"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "stability", "tau", "a", "n_candidates", "training_index")

    def __init__(self, model: Any, data: Any = None, *, tau: float = 0.5, variance: float = 0.01,
                 n_samples: int = 1000, base: str = "nearest_neighbour", step: float = 0.05,
                 **kwargs: Any):
        self.tau = tau
        self.variance = variance
        self.n_samples = n_samples
        self.base = base
        self.step = step
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        check_number(self.tau, "tau", low=0, high=1, low_open=True, high_open=True)
        check_number(self.variance, "variance", low=0, high=1e6, low_open=True)
        check_integer(self.n_samples, "n_samples", low=2, high=MAX_SAMPLES)
        check_choice(self.base, "base", BASES)
        check_number(self.step, "step", low=0, high=1, low_open=True)
        if self.base == "wachter" and not self.model.differentiable:
            raise ValidationError("base='wachter' needs a differentiable model; use "
                                  "base='nearest_neighbour'")
        self.offsets_ = np.sqrt(self.variance) * self._rng().standard_normal(
            (self.n_samples, self.encoder.n_features_out_))
        self._base_explainer: Any = None

    def stability(self, X: np.ndarray, target: Any) -> np.ndarray:
        """R_{K,σ²} of each row of ``X`` (model space) for ``target`` (one class or one per
        row), with this explainer's offsets."""
        return counterfactual_stability(self.model, X, target, self.offsets_)

    def _admissible(self, idx: Any, nbr: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """Only stable candidates (R ≥ τ) count. R is computed lazily — for the neighbours the
        search actually visits, nearest first, each candidate once (cached per class) — so a
        large training pool costs the few candidates near the queries, not the whole class."""
        if not ok.any():
            return ok
        stab = idx.scratch.get("stability")
        if stab is None:
            stab = idx.scratch["stability"] = np.full(len(idx.X), np.nan)
        visit = np.unique(nbr[ok])
        new = visit[np.isnan(stab[visit])]
        if len(new):
            stab[new] = self.stability(idx.X[new], idx.target_class)
        return ok & (stab[nbr] >= self.tau)

    def _base_ces(self, X: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The base CE per query (NaN rows where the base found none)."""
        from robustce.methods.wachter import Wachter

        if self._base_explainer is None:  # built once: its KD-trees are reused across calls
            cls = NearestNeighbour if self.base == "nearest_neighbour" else Wachter
            kwargs = {"norm": self.norm} if cls is NearestNeighbour else {}
            self._base_explainer = cls(self.model, self.data, time_limit=self.time_limit, **kwargs)
        ex = self._base_explainer
        res = ex._revalidate(X, targets, ex._explain_batch(X, targets))
        out = np.full(X.shape, np.nan)
        for i, r in enumerate(res):
            if r.status == "found" and r.cfs is not None and len(r.cfs):
                out[i] = r.cfs[0]
        return out

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        stable = super()._explain_batch(X, targets)  # nearest stable, reachable training points
        base = self._base_ces(X, targets)
        a_grid = np.unique(np.append(np.arange(0.0, 1.0, self.step), 1.0))
        results: list[QueryResult] = []
        todo = [i for i, r in enumerate(stable) if r.status == "found"]
        best: dict[int, tuple[float, np.ndarray, float, float]] = {}
        if todo:
            # every (query, stable point, a) line point at once
            owners, pts, a_of = [], [], []
            for i in todo:
                b = base[i] if np.isfinite(base[i]).all() else stable[i].cfs[0]
                for s in stable[i].cfs:
                    owners.append(np.full(len(a_grid), i))
                    pts.append((1.0 - a_grid)[:, None] * b[None] + a_grid[:, None] * s[None])
                    a_of.append(a_grid)
            owner = np.concatenate(owners)
            P = self.encoder.project(np.vstack(pts), *self.encoder.domain(X[owner]))
            A = np.concatenate(a_of)
            tgt = targets[owner]
            ok = (self.model.predict(P) == tgt) & self.actionable(X[owner], P)
            R = np.full(len(P), -np.inf)
            R[ok] = self.stability(P[ok], tgt[ok])
            ok &= R >= self.tau
            dist = self.distance_.rowwise(P, X[owner])
            # per line (one stable point), the first a that passes; per query, the closest CE
            n_lines = len(P) // len(a_grid)
            ok_l = ok.reshape(n_lines, len(a_grid))
            first = np.argmax(ok_l, axis=1)
            for line in np.flatnonzero(ok_l.any(axis=1)):
                j = line * len(a_grid) + first[line]
                i = int(owner[j])
                if i not in best or dist[j] < best[i][0]:
                    best[i] = (float(dist[j]), P[j], float(R[j]), float(A[j]))
        for i, r in enumerate(stable):
            cert = {"distance": np.nan, "stability": np.nan, "tau": float(self.tau), "a": np.nan,
                    "n_candidates": (r.certificate or {}).get("n_candidates", 0),
                    "training_index": (r.certificate or {}).get("training_index")}
            if i in best:
                d, cf, rr, a = best[i]
                cert.update({"distance": d, "stability": rr, "a": a})
                results.append(QueryResult("found", cf[None], cert))
            elif r.status == "found":  # cannot happen: a = 1 is the stable point itself
                results.append(QueryResult("error", None, cert, message=(
                    "no point of the line search passed, not even the stable training point")))
            else:
                n = cert["n_candidates"]
                results.append(QueryResult("no_robust_point", None, cert, message=(
                    f"none of the {n} training points of the target class with the query's "
                    f"immutable values is reachable (increase/decrease-only respected) and has "
                    f"stability ≥ τ = {self.tau:g}")))
        return results
