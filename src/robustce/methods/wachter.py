"""``Wachter``: gradient search for a nearby valid counterfactual (Wachter, Mittelstadt & Russell).

For a query x with target class t, Wachter et al. minimise over x'

    L(x'; λ) = λ · ℓ(m_t(x')) + Σ_j w_j |x'_j − x_j|,

where m_t is the target-class margin of the model's logits (binary: ±z; K classes:
z_t − max_{j≠t} z_j, see :func:`~robustce.models.network.class_margin`), ℓ a validity loss and
w_j per-column weights of the L1 proximity term (uniform; inverse median absolute deviation,
Wachter's choice; or inverse range). λ starts at ``lam_init`` and is multiplied by
``lam_schedule`` for every query that has no valid CE after ``max_iter`` steps, at most
``max_lambda_steps`` times.

Implementation (batch first): all queries are optimised together in one float64 torch tensor
with Adam (``model.torch_logits``); each query has its own λ. Immutable columns are frozen by
zeroing their gradient; after every step the point is clipped to [0, 1] and projected onto the
increase/decrease-only constraints (x'_j ≥ x_j, resp. ≤). Every ``check_every`` steps the
points are projected to valid encodings (``encoder.project``: integer grid, one-hot argmax,
monotone thermometers) and checked by a plain forward pass; the first valid projected point of
a query is its CE and the query stops. Queries still without a valid CE at the end get
``not_found`` (``timeout`` when the time budget ran out first); when every feature is immutable
no search can run and every query is ``infeasible``.

Flat regions: where the target margin's gradient with respect to the mutable columns is exactly
zero at the start point (e.g. every first-layer ReLU inactive — the logit is a constant there),
Adam cannot move the point. This is detected for all queries at once before the search; such a
query's ``not_found`` message says so and suggests ``init_noise > 0``, which starts the search
from a random point near the query, outside the plateau if it is small enough.

Validity losses ``loss``: ``"hinge"`` — ℓ = max(0, κ − m_t) (κ = ``margin``); ``"bce"`` — the
(binary) cross-entropy of the margin shifted by κ, ℓ = log(1 + exp(κ − m_t)).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from robustce.distance import Distance
from robustce.errors import UnsupportedModelError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.feasible import FeasibleSet, distance_weights
from robustce.models.network import class_margin, torch_class_margin
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["Wachter"]

MAX_LAMBDA = 1e12  # λ cap: the validity term beyond it only overflows float64 losses


class Wachter(Explainer):
    """Gradient-based counterfactual search with an L1 proximity term (Wachter et al. 2017).

    Parameters
    ----------
    model : a differentiable model (``model.differentiable``: ReLU MLPs, linear models).
    data : training Dataset; needed only for ``distance_weights="mad"`` or ``"range"``.
    lam_init : float > 0 — initial λ (weight of the validity term).
    lam_schedule : float > 1 — λ is multiplied by this after each round without a valid CE.
    max_lambda_steps : int — number of λ rounds (caps the search).
    max_iter : int — Adam steps per λ round.
    lr : float — Adam learning rate (model space is [0, 1]^d).
    loss : "hinge" or "bce" — validity loss ℓ on the target margin.
    margin : float ≥ 0 — κ, the target margin the loss asks for (logit units).
    distance_weights : None (uniform), "mad" (1/median absolute deviation per model-space
        column of the training data; columns with zero MAD use 1/std, then 1), "range"
        (1/(max − min) of the training data; zero ranges use 1), or an array of d weights ≥ 0.
    check_every : int — validity (after projection) is checked every this many steps.
    init_noise : float ≥ 0 — std of Gaussian noise added to the mutable columns of the start
        point (0: start at the query; the search is then fully deterministic). The escape
        from a flat region (zero input gradient at the query), which the ``not_found``
        message reports.
    straight_through : bool — evaluate the validity term at the projected point
        (``encoder.project``) with a straight-through gradient, so that the loss asks for a
        valid *encoding*, not a valid relaxation (one-hot mass split between categories,
        integers between grid points). Off: the classic relaxed loss.
    target_class, time_limit, random_state, n_jobs, constraints : see
        :class:`~robustce.methods.base.Explainer`. The time limit applies to the batch (all
        queries advance together); ``n_jobs`` is not used.

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : Σ_j w_j |x'_j − x_j| of the returned CE (NaN if none).
    margin : target-class margin m_t(x') of the returned CE (> 0 means valid).
    lambda : the λ in force when the CE was found (or the last one tried).
    n_iter : optimisation steps spent on the query.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.Wachter(model, train, random_state=0).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "wachter"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("distance", "margin", "lambda", "n_iter")

    def __init__(
        self,
        model: Any,
        data: Any = None,
        *,
        lam_init: float = 0.1,
        lam_schedule: float = 2.0,
        max_lambda_steps: int = 10,
        max_iter: int = 200,
        lr: float = 0.02,
        loss: str = "hinge",
        margin: float = 0.05,
        distance_weights: Any = None,
        check_every: int = 1,
        init_noise: float = 0.0,
        straight_through: bool = True,
        **kwargs: Any,
    ):
        self.lam_init = lam_init
        self.lam_schedule = lam_schedule
        self.max_lambda_steps = max_lambda_steps
        self.max_iter = max_iter
        self.lr = lr
        self.loss = loss
        self.margin = margin
        self.distance_weights = distance_weights
        self.check_every = check_every
        self.init_noise = init_noise
        self.straight_through = straight_through
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        model = self.model
        if not model.differentiable:
            raise UnsupportedModelError(
                f"Wachter needs a differentiable model (torch_logits); {type(model).__name__} "
                "has no ReLU-network view — use NearestNeighbour or a MILP method instead")
        check_number(self.lam_init, "lam_init", low=0, low_open=True, high=MAX_LAMBDA)
        check_number(self.lam_schedule, "lam_schedule", low=1, low_open=True)  # λ *= it
        for label in ("max_lambda_steps", "max_iter", "check_every"):
            check_integer(getattr(self, label), label, low=1)
        check_number(self.lr, "lr", low=0, low_open=True)
        check_choice(self.loss, "loss", ("hinge", "bce"))
        check_number(self.margin, "margin", low=0)
        check_number(self.init_noise, "init_noise", low=0)
        check_bool(self.straight_through, "straight_through")
        self.weights_ = self._weights(self.distance_weights)
        self.feasible_ = FeasibleSet(self.encoder)
        #: the proximity term of the loss and the reported distance: weighted model-space L1
        self.distance_ = Distance("l1", weights=None if self.distance_weights is None
                                  else self.weights_)

    def _weights(self, spec: Any) -> np.ndarray:
        return distance_weights(spec, self.encoder, self.data)

    # --- search -----------------------------------------------------------------------------
    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        return self._search(X, targets)

    def _search(self, X: np.ndarray, targets: np.ndarray, required: np.ndarray | None = None,
                time_budget: float | None = None) -> list[QueryResult]:
        """The batched search. ``required``: per query, the target margin a CE must reach
        (None: a valid CE, margin > 0); the loss then asks for ``required + margin``.
        ``time_budget``: seconds for this call (default ``time_limit``)."""
        import torch

        n = len(X)
        kappa = np.full(n, float(self.margin))
        if required is not None:
            required = np.asarray(required, dtype=np.float64)
            kappa = kappa + required
        budget = self.time_limit if time_budget is None else float(time_budget)
        rng = self._rng()
        free = ~self.encoder.immutable_mask_
        if not free.any():  # nothing may change: no search can leave the query's class
            return [QueryResult("infeasible", None, {"distance": np.nan, "margin": np.nan,
                                                     "lambda": np.nan, "n_iter": 0},
                                message="every feature is immutable: no counterfactual exists")
                    for _ in range(n)]
        start = X.copy()
        if self.init_noise > 0:
            noise = rng.normal(0.0, self.init_noise, size=X.shape) * free
            start = self._constrain_np(X + noise, X)
        flat = self._flat_start(start, targets)
        lam = np.full(n, self.lam_init, dtype=np.float64)
        n_iter = np.zeros(n, dtype=np.int64)
        best: list[np.ndarray | None] = [None] * n
        done = np.zeros(n, dtype=bool)
        current = start.copy()
        threads = torch.get_num_threads()
        # the tensors are small (queries × d, hidden widths): thread hand-offs cost more than
        # they save, and on a busy machine they dominate — run the loop single-threaded
        torch.set_num_threads(1)
        try:
            timed_out = self._optimise(X, targets, lam, n_iter, best, done, current, kappa,
                                       required, budget)
        finally:
            torch.set_num_threads(threads)
        return [self._result(X[i], int(targets[i]), best[i], lam[i], n_iter[i], timed_out, flat[i],
                             budget)
                for i in range(n)]

    def _flat_start(self, start: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Per query: whether the gradient of the target margin with respect to the mutable
        columns is exactly zero at the start point (as the first step sees it, through the
        straight-through projection). There the validity term cannot move the point and the
        L1 term has zero (sub)gradient, so Adam stays put — e.g. every first-layer ReLU of
        the network inactive. One batched forward/backward pass."""
        import torch

        free = ~self.encoder.immutable_mask_
        if len(start) == 0 or not free.any():
            return np.zeros(len(start), dtype=bool)
        with torch.enable_grad():
            var = torch.tensor(start, dtype=torch.float64, requires_grad=True)
            inp = var
            if self.straight_through:
                proj = torch.as_tensor(self.encoder.project(start, *self.encoder.domain(start)))
                inp = var + (proj - var).detach()
            m = torch_class_margin(self.model.torch_logits(inp), targets)
            (grad,) = torch.autograd.grad(m.sum(), var, allow_unused=True)
        if grad is None:  # the margin does not depend on the input at all
            return np.ones(len(start), dtype=bool)
        return np.all(grad.detach().numpy()[:, free] == 0.0, axis=1)

    def _penalty(self, var: Any, xa: Any, rows: np.ndarray) -> Any:
        """Per row, the proximity term of the loss (torch, differentiable) for the points
        ``var`` of the queries ``xa`` (``rows``: their positions in the batch). Wachter: the
        weighted L1 distance; subclasses change the term (e.g. a prototype pull)."""
        return self.distance_.torch(var, xa)

    def _optimise(self, X: np.ndarray, targets: np.ndarray, lam: np.ndarray, n_iter: np.ndarray,
                  best: list, done: np.ndarray, current: np.ndarray, kappa: np.ndarray,
                  required: np.ndarray | None, budget: float) -> bool:
        """Adam rounds over all queries; fills ``best``/``done``/``lam``/``n_iter`` in place.
        ``kappa``: per query, the margin the validity loss asks for; ``required``: per query,
        the margin a CE must reach (None: valid). Returns whether ``budget`` (seconds) stopped
        the search."""
        import torch

        enc = self.encoder
        free = ~enc.immutable_mask_
        t0 = time.perf_counter()
        timed_out = False
        free_t = torch.as_tensor(free, dtype=torch.float64)
        with torch.enable_grad():
            for rnd in range(self.max_lambda_steps):
                active = np.flatnonzero(~done)
                if len(active) == 0 or timed_out:
                    break
                if rnd > 0:
                    lam[active] = np.minimum(lam[active] * self.lam_schedule, MAX_LAMBDA)
                xa = torch.as_tensor(X[active], dtype=torch.float64)
                project = self.feasible_.projector(xa)
                box = enc.domain(X[active])  # [0, 1], widened to a query beyond its range
                lam_t = torch.as_tensor(lam[active], dtype=torch.float64)
                ta = targets[active]
                kap_t = torch.as_tensor(kappa[active], dtype=torch.float64)
                var = torch.tensor(current[active], dtype=torch.float64, requires_grad=True)
                opt = torch.optim.Adam([var], lr=self.lr)
                live = np.ones(len(active), dtype=bool)
                live_t = torch.ones(len(active), 1, dtype=torch.float64)
                for it in range(self.max_iter):
                    inp = var
                    if self.straight_through:
                        proj = torch.as_tensor(enc.project(var.detach().numpy(), *box))
                        inp = var + (proj - var).detach()
                    logits = self.model.torch_logits(inp)
                    m = torch_class_margin(logits, ta)
                    if self.loss == "hinge":
                        v = torch.relu(kap_t - m)
                    else:
                        v = torch.nn.functional.softplus(kap_t - m)
                    dist = self._penalty(var, xa, active)
                    total = (lam_t * v + dist).sum()
                    opt.zero_grad()
                    total.backward()
                    var.grad.mul_(free_t).mul_(live_t)
                    opt.step()
                    with torch.no_grad():
                        project(var)
                    n_iter[active[live]] += 1
                    if (it + 1) % self.check_every == 0 or it + 1 == self.max_iter:
                        cand = enc.project(var.detach().numpy(), *box)
                        ok = live & (self.model.predict(cand) == ta) & self.actionable(X[active], cand)
                        if required is not None:
                            ok &= class_margin(self.model.logits(cand), ta) >= required[active]
                        for j in np.flatnonzero(ok):
                            best[active[j]] = cand[j]
                        done[active[ok]] = True
                        live &= ~ok
                        if ok.any():
                            live_t = torch.as_tensor(live, dtype=torch.float64)[:, None]
                        if not live.any():
                            break
                    if time.perf_counter() - t0 > budget:
                        timed_out = True
                        break
                current[active] = var.detach().numpy()
        return timed_out

    def _constrain_np(self, Z: np.ndarray, X: np.ndarray) -> np.ndarray:
        return self.feasible_.project_np(Z, X)

    def _result(self, x: np.ndarray, target: int, cf: np.ndarray | None, lam: float, n_iter: int,
                timed_out: bool, flat: bool = False, budget: float | None = None) -> QueryResult:
        if cf is None:
            status = "timeout" if timed_out else "not_found"
            limit = self.time_limit if budget is None else budget
            why = (f"time limit of {limit:g} s reached" if timed_out else
                   f"no valid CE after {self.max_lambda_steps} λ rounds of {self.max_iter} steps "
                   f"(last λ = {lam:g})")
            if flat:
                where = "the query" if self.init_noise == 0 else "the noisy start point"
                hint = ("set init_noise > 0 to start from a random point near the query" if
                        self.init_noise == 0 else f"try a larger init_noise than {self.init_noise:g}")
                why += (f"; the model's input gradient is exactly zero at {where} (a flat region, "
                        f"e.g. every first-layer ReLU inactive), so the gradient search could not "
                        f"move — {hint}, or use a MILP or neighbour method")
            return QueryResult(status, None, {"distance": np.nan, "margin": np.nan,
                                              "lambda": float(lam), "n_iter": int(n_iter)},
                               message=why)
        margin = float(class_margin(self.model.logits(cf[None, :]), target)[0])
        dist = float(self.distance_.rowwise(cf, x)[0])
        return QueryResult("found", cf[None, :], {"distance": dist, "margin": margin,
                                                  "lambda": float(lam), "n_iter": int(n_iter)})
