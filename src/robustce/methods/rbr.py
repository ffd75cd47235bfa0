"""``RBR``: robust Bayesian recourse (Nguyen, Bui & Nguyen, UAI 2022).

Bayesian recourse minimises the posterior odds of the unfavourable class,
P(Ŷ≠t | x') / P(Ŷ=t | x'), where each class-conditional density is a Gaussian mixture (a kernel
estimate) with one component N(x̂_i, σ²I) per nearby labelled point x̂_i. With N points in all
and N_y of class y the priors N_y/N cancel the mixture weights 1/N_y, so the odds are
Σ_{i∈neg} N(x'; x̂_i, σ²I) / Σ_{j∈pos} N(x'; x̂_j, σ²I). The robust version replaces every
component by the worst Gaussian of its ambiguity set

    B_ε(x̂) = { N(μ, Σ) : ‖μ − x̂‖² + ‖Σ^{1/2} − σI‖_F² ≤ ε²,  Σ ⪰ σ²I }

(a Gelbrich / type-2 Wasserstein ball; Σ ⪰ σ²I as in the authors' code, where standard
deviations only grow), with radius ε₋ = ``epsilon_minus`` for the unfavourable components
(largest likelihood: the *optimistic* likelihood) and ε₊ = ``epsilon_plus`` for the favourable
ones (smallest likelihood: the *pessimistic* likelihood). RBR minimises the resulting
worst-case log-odds

    F(x') = log Σ_{i∈neg} sup_{B_ε₋(x̂_i)} N(x'; μ, Σ) − log Σ_{j∈pos} inf_{B_ε₊(x̂_j)} N(x'; μ, Σ).

Each sup / inf depends on x' only through c = ‖x' − x̂‖₂ and is a two-dimensional problem (the
paper's decomposition; the reduction follows from the eigen-decomposition of Σ). With p the
number of mutable columns, −log N = (p/2)log 2π + Σ_k log s_k + ½ Σ_k (u_kᵀ(x'−μ))² / s_k²:

* optimistic: move the mean a toward x' and stretch the std along x' − x̂ to σ + b, with
  a² + b² ≤ ε², a, b ≥ 0: min  log(σ+b) + (c−a)² / (2(σ+b)²) + (p−1) log σ. For c ≤ ε the
  answer is a = c, b = 0 (value log σ·p); otherwise the optimum is on the circle a² + b² = ε².
* pessimistic: move the mean s away, stretch the std along the offset by b and the other p−1
  stds equally by f (equal is optimal by concavity of log), using the whole budget
  s² + b² + (p−1) f² = ε²: max  log(σ+b) + (c+s)² / (2(σ+b)²) + (p−1) log(σ+f).

Both are solved globally on their bounded domains by a grid search that zooms around the best
grid point (:func:`optimistic_nll`, :func:`pessimistic_nll`). During the search they are
tabulated once per explainer on a grid of c; by the envelope (Danskin) theorem the gradient of
the optimal value in x' is the partial derivative at the fixed optimiser, so the optimiser
is interpolated from the table and the value differentiated in torch with it held fixed. The
certificate's worst-case odds are solved directly at the returned CE.

The search (as the authors' code): the start point x_b is the closest point to x (L1) on the
segments from x to its ``n_neighbours`` nearest training points the model puts in the target
class (each first projected onto the feasible set) that the model puts in the target class
(line search with ``n_line`` steps, each segment point first projected to a valid encoding —
ours, for one-hot / thermometer / integer columns); the labelled points x̂ are ``n_samples`` points drawn
uniformly in the L2 ball of radius ``perturb_radius`` around x_b (mutable columns only,
clipped to [0, 1]) and labelled by the model; F is minimised by projected gradient descent
(step ``lr``, at most ``max_iter`` steps, stopping after 10 steps without improvement) over
the L1 ball around x of radius ‖x_b − x‖₁ + ``delta_plus`` intersected with the feasible set
(projection onto the L1 ball, then onto the box and actionability constraints — which never
increases any |x'_j − x_j|, so the result lies in both). The final point is projected to a
valid encoding and checked on the model.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from robustce.distance import Distance
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.feasible import FeasibleSet
from robustce.validation import check_integer, check_number

__all__ = ["RBR", "optimistic_nll", "pessimistic_nll", "worst_case_log_odds"]

_LOG_2PI = float(np.log(2.0 * np.pi))
_ZOOM_ROUNDS = 6
_GRID = 33


def _zoom_min(fun: Any, lo: np.ndarray, hi: np.ndarray, rounds: int = _ZOOM_ROUNDS,
              grid: int = _GRID) -> np.ndarray:
    """Per row, the argmin over a box (lo, hi of shape (n, k), k ≤ 2) of ``fun(points)``
    (points (n, g, k) → values (n, g)): a grid search that zooms around the best point."""
    lo, hi = lo.astype(np.float64).copy(), hi.astype(np.float64).copy()
    lo0, hi0 = lo.copy(), hi.copy()
    k = lo.shape[1]
    t = np.linspace(0.0, 1.0, grid)
    unit = np.stack(np.meshgrid(*([t] * k), indexing="ij"), axis=-1).reshape(-1, k)
    best = lo
    for _ in range(rounds):
        pts = lo[:, None, :] + unit[None, :, :] * (hi - lo)[:, None, :]
        vals = fun(pts)
        best = pts[np.arange(len(pts)), np.argmin(vals, axis=1)]
        half = (hi - lo) * 2.0 / (grid - 1)
        lo, hi = np.maximum(best - half, lo0), np.minimum(best + half, hi0)
    return best


def optimistic_nll(c: Any, sigma: float, eps: float, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """min over B_ε(x̂) of −log N(x'; μ, Σ) for points at distance ``c`` from x̂ in p
    dimensions. Returns (value, a, b): the mean moves a toward x', the std along x' − x̂ is
    σ + b."""
    c = np.atleast_1d(np.asarray(c, dtype=np.float64))
    a, b = np.minimum(c, eps), np.zeros_like(c)
    far = c > eps
    if far.any() and eps > 0:
        cf = c[far]

        def nll(theta: np.ndarray) -> np.ndarray:
            aa, bb = eps * np.cos(theta[..., 0]), eps * np.sin(theta[..., 0])
            return np.log(sigma + bb) + (cf[:, None] - aa) ** 2 / (2 * (sigma + bb) ** 2)

        th = _zoom_min(nll, np.zeros((len(cf), 1)), np.full((len(cf), 1), np.pi / 2))[:, 0]
        a[far], b[far] = eps * np.cos(th), eps * np.sin(th)
    d = sigma + b
    value = np.log(d) + (c - a) ** 2 / (2 * d**2) + (p - 1) * np.log(sigma) + 0.5 * p * _LOG_2PI
    return value, a, b


def _pessimistic_terms(c: np.ndarray, s: np.ndarray, b: np.ndarray, sigma: float, eps: float,
                       p: int) -> tuple[np.ndarray, np.ndarray]:
    f = np.sqrt(np.maximum(eps**2 - s**2 - b**2, 0.0) / max(p - 1, 1)) if p > 1 else np.zeros_like(s)
    d = sigma + b
    value = np.log(d) + (c + s) ** 2 / (2 * d**2) + (p - 1) * np.log(sigma + f)
    return value, f


def pessimistic_nll(c: Any, sigma: float, eps: float, p: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """max over B_ε(x̂) of −log N(x'; μ, Σ) for points at distance ``c`` from x̂ in p
    dimensions. Returns (value, s, b, f): the mean moves s away from x', the std along the
    offset is σ + b, the other p − 1 stds σ + f."""
    c = np.atleast_1d(np.asarray(c, dtype=np.float64))
    if eps == 0:
        s = b = np.zeros_like(c)
    else:
        def neg(rt: np.ndarray) -> np.ndarray:  # polar (r, θ): s = r cos θ, b = r sin θ
            r, th = rt[..., 0], rt[..., 1]
            return -_pessimistic_terms(c[:, None], r * np.cos(th), r * np.sin(th), sigma, eps, p)[0]

        lo = np.zeros((len(c), 2))
        hi = np.tile([eps, np.pi / 2], (len(c), 1))
        r, th = _zoom_min(neg, lo, hi).T
        s, b = r * np.cos(th), r * np.sin(th)
    value, f = _pessimistic_terms(c, s, b, sigma, eps, p)
    return value + 0.5 * p * _LOG_2PI, s, b, f


def _logsumexp(v: np.ndarray) -> float:
    if len(v) == 0:
        return -np.inf
    m = v.max()
    return float(m + np.log(np.exp(v - m).sum()))


def worst_case_log_odds(x: np.ndarray, neg: np.ndarray, pos: np.ndarray, sigma: float,
                        epsilon_minus: float, epsilon_plus: float, p: int | None = None) -> float:
    """F(x'): log Σ_neg (optimistic likelihood) − log Σ_pos (pessimistic likelihood) of the
    point ``x`` with unfavourable points ``neg`` and favourable points ``pos`` (rows), in p
    dimensions (default: len(x)). < 0: the favourable class has the larger posterior even
    under the worst distributions of the ambiguity sets."""
    p = len(x) if p is None else p
    c_neg = np.linalg.norm(neg - x, axis=1)
    c_pos = np.linalg.norm(pos - x, axis=1)
    num = _logsumexp(-optimistic_nll(c_neg, sigma, epsilon_minus, p)[0]) if len(neg) else -np.inf
    den = _logsumexp(-pessimistic_nll(c_pos, sigma, epsilon_plus, p)[0]) if len(pos) else -np.inf
    return num - den


class RBR(Explainer):
    """Robust Bayesian recourse (Nguyen, Bui & Nguyen, UAI 2022); see the module docstring.

    Parameters
    ----------
    model : any robustce model (RBR only needs its predictions).
    data : training Dataset (required): the neighbours that give the start point.
    epsilon_plus : float ≥ 0 — ε₊, Gelbrich radius of the favourable components (the
        authors' ε_pe; their default 1.5).
    epsilon_minus : float ≥ 0 — ε₋, Gelbrich radius of the unfavourable components (ε_op; 1.5).
    sigma : float > 0 — σ, the components' nominal standard deviation (the authors: 1.0).
    n_neighbours : int — training points of the target class tried for the start point (1000).
    n_line : int — line-search steps per neighbour (100).
    n_samples : int — labelled points drawn around the start point (200).
    perturb_radius : float > 0 — radius of that ball (0.2).
    delta_plus : float ≥ 0 — the L1 budget beyond the start point's distance (0.2).
    max_iter : int — projected-gradient steps (500).
    lr : float > 0 — step size (the authors: 1/√1000).
    target_class, time_limit, random_state, n_jobs, constraints : see
        :class:`~robustce.methods.base.Explainer` (the time limit applies to the batch;
        ``n_jobs`` is not used).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : L1 distance of the CE to the query (model space).
    worst_case_log_odds : F(x') at the CE, solved directly (< 0: the favourable class wins
        under every distribution of the ambiguity sets).
    nominal_log_odds : the same with ε₊ = ε₋ = 0 (the Bayesian recourse objective).
    n_pos, n_neg : labelled points of each side around the start point.
    radius : the L1 budget ‖x_b − x‖₁ + delta_plus.
    n_iter : gradient steps spent.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.RBR(model, train, random_state=0).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "rbr"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "worst_case_log_odds", "nominal_log_odds", "n_pos", "n_neg", "radius", "n_iter")

    def __init__(
        self,
        model: Any,
        data: Any = None,
        *,
        epsilon_plus: float = 1.5,
        epsilon_minus: float = 1.5,
        sigma: float = 1.0,
        n_neighbours: int = 1000,
        n_line: int = 100,
        n_samples: int = 200,
        perturb_radius: float = 0.2,
        delta_plus: float = 0.2,
        max_iter: int = 500,
        lr: float = 0.0316,
        **kwargs: Any,
    ):
        self.epsilon_plus = epsilon_plus
        self.epsilon_minus = epsilon_minus
        self.sigma = sigma
        self.n_neighbours = n_neighbours
        self.n_line = n_line
        self.n_samples = n_samples
        self.perturb_radius = perturb_radius
        self.delta_plus = delta_plus
        self.max_iter = max_iter
        self.lr = lr
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("RBR needs the training data (data=): its neighbours give the "
                                  "start point")
        for label in ("epsilon_plus", "epsilon_minus", "delta_plus"):
            check_number(getattr(self, label), label, low=0)
        for label in ("sigma", "perturb_radius", "lr"):
            check_number(getattr(self, label), label, low=0, low_open=True)
        check_integer(self.n_neighbours, "n_neighbours", low=1, high=1_000_000)
        check_integer(self.n_line, "n_line", low=2, high=100_000)
        check_integer(self.n_samples, "n_samples", low=2, high=1_000_000)
        check_integer(self.max_iter, "max_iter", low=1, high=1_000_000)
        self.distance_ = Distance("l1")
        self.feasible_ = FeasibleSet(self.encoder)
        X = self.encoder.transform(self.data.frame)
        self.train_ = X
        self.train_pred_ = self.model.predict(X) if len(X) else np.zeros(0, dtype=np.int64)
        self._index: dict[int, Any] = {}
        self._table: tuple[float, np.ndarray] | None = None

    # --- the inner problems, tabulated in c ---------------------------------------------------
    def _tables(self) -> tuple[float, np.ndarray]:
        """The inner optimisers tabulated on an even grid c ∈ [0, √d + 1]: (step, rows) with
        rows = (a, 1/(σ+b), log(σ+b) of the optimistic problem; s, 1/(σ+b),
        log(σ+b) + (p−1)·log(σ+f) of the pessimistic one), each of shape (grid,)."""
        if self._table is None:
            p = max(int(self.feasible_.free.sum()), 1)
            c = np.linspace(0.0, np.sqrt(self.encoder.n_features_out_) + 1.0, 1025)
            _, a, b_op = optimistic_nll(c, self.sigma, self.epsilon_minus, p)
            _, s, b_pe, f = pessimistic_nll(c, self.sigma, self.epsilon_plus, p)
            sg = self.sigma
            rows = np.stack([a, 1.0 / (sg + b_op), np.log(sg + b_op),
                             s, 1.0 / (sg + b_pe), np.log(sg + b_pe) + (p - 1) * np.log(sg + f)])
            self._table = (float(c[1] - c[0]), rows)
        return self._table

    # --- start point and samples ---------------------------------------------------------------
    def _pool(self, target: int) -> tuple[np.ndarray, Any]:
        if target not in self._index:
            from sklearn.neighbors import NearestNeighbors

            pts = self.train_[self.train_pred_ == target]
            nn = NearestNeighbors(p=1).fit(pts) if len(pts) else None
            self._index[target] = (pts, nn)
        return self._index[target]

    def _boundary(self, x: np.ndarray, target: int) -> np.ndarray | None:
        """The closest valid point (L1) on the segments from x to its nearest target-class
        training points (each projected onto the feasible set), every segment point first
        projected to a valid encoding (``encoder.project``: one-hot argmax, thermometers,
        integer grid) — as the final CE will be — so x_b is a point of the data domain in the
        target class. (Unprojected, a segment point mixes two categories; on german credit
        only 10 % of such start points stayed in the target class after projection.)"""
        pts, nn = self._pool(target)
        if nn is None:
            return None
        k, d = min(self.n_neighbours, len(pts)), len(x)
        idx = nn.kneighbors(x[None, :], n_neighbors=k, return_distance=False)[0]
        cand = self.feasible_.project_np(pts[idx], np.broadcast_to(x, (k, d)))
        lam = np.linspace(0.0, 1.0, self.n_line)
        seg = x[None, None, :] + lam[None, :, None] * (cand - x)[:, None, :]  # (k, L, d)
        seg = self.encoder.project(seg.reshape(-1, d), *self.encoder.domain(x)).reshape(seg.shape)
        ok = (self.model.predict(seg.reshape(-1, d)) == target).reshape(k, -1)
        if not ok.any():
            return None
        first = np.argmax(ok, axis=1)
        pts_b = seg[np.arange(k), first][ok.any(axis=1)]
        return pts_b[np.argmin(np.abs(pts_b - x).sum(axis=1))]

    def _samples(self, xb: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """n_samples points uniform in the L2 ball of radius perturb_radius around xb on the
        mutable columns, clipped to [0, 1]."""
        free = self.feasible_.free
        q = int(free.sum())
        v = rng.normal(size=(self.n_samples, q))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        v *= self.perturb_radius * rng.random(self.n_samples)[:, None] ** (1.0 / q)
        out = np.repeat(xb[None, :], self.n_samples, axis=0)
        lo, hi = self.encoder.domain(xb)
        out[:, free] = np.clip(out[:, free] + v, lo[free], hi[free])
        return out

    # --- search ---------------------------------------------------------------------------------
    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        n, d = X.shape
        nan_cert = {"distance": np.nan, "worst_case_log_odds": np.nan, "nominal_log_odds": np.nan,
                    "n_pos": 0, "n_neg": 0, "radius": np.nan, "n_iter": 0}
        if not self.feasible_.free.any():
            return [QueryResult("infeasible", None, dict(nan_cert),
                                message="every feature is immutable: no counterfactual exists")
                    for _ in range(n)]
        rng = self._rng()
        results: list[QueryResult | None] = [None] * n
        starts, samples, labels, radius = np.zeros((n, d)), [], [], np.zeros(n)
        live = []
        for i in range(n):
            xb = self._boundary(X[i], int(targets[i]))
            if xb is None:
                results[i] = QueryResult("not_found", None, dict(nan_cert), message=(
                    "no valid point on the segments to the nearest target-class training points "
                    "(no start point)"))
                continue
            S = self._samples(xb, rng)
            starts[i], radius[i] = xb, np.abs(xb - X[i]).sum() + self.delta_plus
            samples.append(S)
            labels.append(self.model.predict(S) == targets[i])
            live.append(i)
        if live:
            import torch

            idx = np.array(live)
            threads = torch.get_num_threads()
            torch.set_num_threads(1)  # small tensors: thread hand-offs cost more than they save
            try:
                cf, n_iter, timed_out = self._descend(X[idx], starts[idx], np.stack(samples),
                                                      np.stack(labels), radius[idx])
            finally:
                torch.set_num_threads(threads)
            cf = self.encoder.project(cf, *self.encoder.domain(X[idx]))
            valid = (self.model.predict(cf) == targets[idx]) & self.actionable(X[idx], cf)
            p = int(self.feasible_.free.sum())
            for j, i in enumerate(idx):
                S, pos = samples[j], labels[j]
                cert = {"n_pos": int(pos.sum()), "n_neg": int((~pos).sum()),
                        "radius": float(radius[i]), "n_iter": int(n_iter[j]),
                        "distance": float(np.abs(cf[j] - X[i]).sum()),
                        "worst_case_log_odds": worst_case_log_odds(
                            cf[j], S[~pos], S[pos], self.sigma, self.epsilon_minus,
                            self.epsilon_plus, p),
                        "nominal_log_odds": worst_case_log_odds(
                            cf[j], S[~pos], S[pos], self.sigma, 0.0, 0.0, p)}
                if valid[j]:
                    results[i] = QueryResult("found", cf[j][None, :], cert)
                else:
                    status = "timeout" if timed_out else "not_found"
                    results[i] = QueryResult(status, None, {**cert, "distance": np.nan}, message=(
                        f"the RBR optimum (worst-case log-odds {cert['worst_case_log_odds']:.3g}) "
                        "is not in the target class on the model"
                        + (f"; time limit of {self.time_limit:g} s reached" if timed_out else "")))
        return results  # type: ignore[return-value]

    def _descend(self, X: np.ndarray, start: np.ndarray, S: np.ndarray, pos: np.ndarray,
                 radius: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """Projected gradient descent of F for all queries at once. ``S`` (n, m, d) samples,
        ``pos`` (n, m) favourable flags. Returns (points, steps per query, timed out)."""
        import torch

        step_c, rows = self._tables()
        last = rows.shape[1] - 1
        xt = torch.as_tensor(X, dtype=torch.float64)
        project = self.feasible_.projector(xt)
        St = torch.as_tensor(S, dtype=torch.float64)
        post = torch.as_tensor(pos)
        has_neg = torch.as_tensor((~pos).any(axis=1))
        rad = torch.as_tensor(radius, dtype=torch.float64)
        fill = -1e30  # not -inf: keeps the log-sum-exp gradient finite for an empty side
        var = torch.tensor(start, dtype=torch.float64)
        best = var.clone()
        best_val = torch.full((len(X),), torch.inf, dtype=torch.float64)
        stable = torch.zeros(len(X), dtype=torch.long)
        n_iter = np.zeros(len(X), dtype=np.int64)
        t0 = time.perf_counter()
        timed_out = False
        with torch.enable_grad():
            for _ in range(self.max_iter):
                live = stable < 10
                if not live.any():
                    break
                var.requires_grad_(True)
                c = torch.sqrt(((var[:, None, :] - St) ** 2).sum(-1) + 1e-18)  # (n, m)
                # optimisers of the inner problems at these c (linear interpolation in the
                # table; held fixed — envelope theorem)
                pos_c = np.minimum(c.detach().numpy() / step_c, last - 1e-9)
                i0 = pos_c.astype(np.int64)
                wt = pos_c - i0
                t = torch.as_tensor(rows[:, i0] * (1.0 - wt) + rows[:, i0 + 1] * wt)
                nll_op = t[2] + 0.5 * ((c - t[0]) * t[1]) ** 2
                nll_pe = t[5] + 0.5 * ((c + t[3]) * t[4]) ** 2
                num = torch.logsumexp(torch.where(post, fill, -nll_op), dim=1)
                den = torch.logsumexp(torch.where(post, -nll_pe, fill), dim=1)
                F = torch.where(has_neg, num, torch.zeros_like(num)) - den
                (grad,) = torch.autograd.grad(F.sum(), var)
                with torch.no_grad():
                    Fd = F.detach()
                    better = Fd < best_val - 1e-10
                    best = torch.where(better[:, None], var.detach(), best)
                    best_val = torch.where(better, Fd, best_val)
                    stable = torch.where(better, torch.zeros_like(stable), stable + 1)
                    step = var.detach() - self.lr * grad * live[:, None]
                    var = _project_l1(step - xt, rad) + xt
                    project(var)
                n_iter += live.numpy()
                if time.perf_counter() - t0 > self.time_limit:
                    timed_out = True
                    break
        return best.numpy(), n_iter, timed_out


def _project_l1(V: Any, radius: Any) -> Any:
    """Euclidean projection of each row of V onto the L1 ball of its radius (Duchi et al.
    2008, sort-based), torch, batched."""
    import torch

    a = V.abs()
    inside = a.sum(1) <= radius
    u, _ = torch.sort(a, dim=1, descending=True)
    css = torch.cumsum(u, dim=1)
    k = torch.arange(1, V.shape[1] + 1, dtype=V.dtype)
    cond = u * k > (css - radius[:, None])
    rho = (cond * k).argmax(dim=1)  # last index where cond holds
    theta = (css.gather(1, rho[:, None])[:, 0] - radius) / (rho + 1).to(V.dtype)
    proj = torch.sign(V) * torch.clamp(a - theta[:, None], min=0.0)
    return torch.where(inside[:, None], V, proj)
