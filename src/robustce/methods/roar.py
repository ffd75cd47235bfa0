"""``ROAR``: robust algorithmic recourse against weight shifts (Upadhyay, Joshi & Lakkaraju,
NeurIPS 2021), with ROAR-LIME for non-linear models.

For a linear scorer g(x') = wᵀx' + b of the target class (> 0 means the target class), ROAR
solves

    min_{x'}  max_{‖(Δw, Δb)‖_∞ ≤ δ_max}  ℓ(g_{w+Δw, b+Δb}(x'))  +  λ · Σ_j c_j |x'_j − x_j|,

with ℓ(z) = log(1 + e^{−z}) the binary cross-entropy of the target label. ℓ is decreasing in
z and z is linear in (Δw, Δb), so the inner maximum is attained at the vertex that lowers the
score most: Δw* = −δ_max · sign(x'), Δb* = −δ_max (:func:`roar_worst_case`), giving the
worst-case score g*(x') = wᵀx' + b − δ_max (‖x'‖₁ + 1). (The authors solve this inner LP with
a solver at every step; the closed form is its solution.) The outer problem is minimised by
Adam over all queries at once; model space is [0, 1]^d, so ‖x'‖₁ = Σ_j x'_j.

The scorer: for a binary model without hidden layers (logistic regression, a network with one
layer) it is the model's own logit, sign-flipped for target class 0 — ROAR exactly. Otherwise
(**ROAR-LIME**) it is a local linear surrogate of the model's target-class margin m_t (see
:func:`~robustce.models.network.class_margin`) fitted around each query: ``lime_samples``
points x + N(0, ``lime_scale``²) on the mutable columns (clipped to [0, 1]), weighted by the
LIME kernel exp(−‖z − x‖² / kw²) (kw = ``kernel_width``, default 0.75·√(d_free)·``lime_scale``,
LIME's 0.75·√d in units of the noise), fitted by weighted ridge regression (sklearn ``Ridge``
with sample weights, one fit per query). The authors fit LIME on the model's probabilities; a
fit of the margin keeps g in logit units, where δ_max means what it means for a logistic
model. Robustness is then with respect to shifts of the *surrogate*, and validity is checked
on the real model.

λ schedule: every query starts at λ = ``lam_init``; Adam runs until the query's objective
changes by less than ``tol`` between steps (at most ``max_iter`` steps); the point is
projected to a valid encoding and checked by a forward pass of the model. Queries without a
valid CE get λ ← λ · ``lam_decay`` (less weight on cost, more on the worst-case loss) and
continue from where they stopped, at most ``max_lambda_steps`` rounds (the authors pick one
λ for a whole data set by a validity sweep instead).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from robustce.distance import Distance
from robustce.errors import RobustCEError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.feasible import FeasibleSet, distance_weights
from robustce.models.network import class_margin
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["ROAR", "roar_worst_case"]


def roar_worst_case(w: np.ndarray, b: Any, X: np.ndarray, delta_max: float,
                    shift_bias: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROAR's inner maximisation in closed form for linear scorers g(x) = w·x + b.

    ``w`` (d,) or one row per point (n, d), ``b`` a number or (n,), ``X`` (n, d). Returns
    ``(score, dW, db)``: the worst-case score g_{w+Δw*, b+Δb*}(x) = w·x + b − δ_max(‖x‖₁ + 1)
    (without the 1 when the bias is not shifted) and the maximising shift Δw* = −δ_max·sign(x)
    (n, d), Δb* = −δ_max (n,) — the L∞-ball vertex that maximises the cross-entropy loss
    log(1 + e^{−g}) of the target label."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    W = np.broadcast_to(np.asarray(w, dtype=np.float64), X.shape)
    B = np.broadcast_to(np.asarray(b, dtype=np.float64), (len(X),))
    dW = -delta_max * np.sign(X)
    db = np.full(len(X), -delta_max if shift_bias else 0.0)
    score = np.einsum("ij,ij->i", W + dW, X) + B + db
    return score, dW, db


class ROAR(Explainer):
    """Robust algorithmic recourse (Upadhyay et al. 2021); ROAR-LIME for non-linear models.

    Parameters
    ----------
    model : any robustce model (binary linear models are used exactly; every other model
        through a local linear surrogate of its target-class margin).
    data : training Dataset; needed only for ``distance_weights="mad"`` or ``"range"``.
    delta_max : float ≥ 0 — δ_max, the L∞ radius of the weight (and bias) shift.
    shift_bias : bool — whether the bias is shifted too (the authors: yes).
    lam_init : float > 0 — initial λ, the weight of the cost term (the authors' default 0.1).
    lam_decay : float in (0, 1) — λ is multiplied by this after a round without a valid CE.
    max_lambda_steps : int — number of λ rounds (caps the search).
    max_iter : int — Adam steps per λ round.
    lr : float — Adam learning rate (model space is [0, 1]^d).
    tol : float > 0 — a query's round ends when its objective changes by less than this.
    lime_samples : int — surrogate samples per query (ROAR-LIME).
    lime_scale : float > 0 — std of the surrogate samples around the query (model space).
    kernel_width : float > 0 or None — LIME kernel width (None: 0.75·√(d_free)·lime_scale).
    ridge_alpha : float ≥ 0 — L2 penalty of the surrogate's ridge fit.
    distance_weights : None, "mad", "range" or d weights ≥ 0 — the c_j of the L1 cost
        (as :class:`~robustce.methods.Wachter`).
    target_class, time_limit, random_state, n_jobs, constraints : see
        :class:`~robustce.methods.base.Explainer` (the time limit applies to the batch;
        ``n_jobs`` is not used).

    Certificate columns (``certificate_columns``)
    ----------------------------------------------
    distance : Σ_j c_j |x'_j − x_j| of the returned CE (NaN if none).
    worst_case_score : g*(x'), the scorer's value under the worst shift in the δ_max-ball
        (> 0: the scorer keeps the target class under every such shift).
    worst_case_loss : log(1 + e^{−g*(x')}), ROAR's robust loss at the CE.
    fidelity : weighted R² of the surrogate on its samples (1 for an exact linear model).
    lambda : the λ of the round that found the CE (or the last one tried).
    n_iter : Adam steps spent on the query.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.ROAR(model, train, random_state=0).explain(rejected)
    >>> res.status.tolist()
    ['found', 'found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1, 1])
    """

    name: ClassVar[str] = "roar"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = (
        "distance", "worst_case_score", "worst_case_loss", "fidelity", "lambda", "n_iter")

    def __init__(
        self,
        model: Any,
        data: Any = None,
        *,
        delta_max: float = 0.1,
        shift_bias: bool = True,
        lam_init: float = 0.1,
        lam_decay: float = 0.5,
        max_lambda_steps: int = 8,
        max_iter: int = 500,
        lr: float = 0.01,
        tol: float = 1e-5,
        lime_samples: int = 1000,
        lime_scale: float = 0.1,
        kernel_width: float | None = None,
        ridge_alpha: float = 1e-3,
        distance_weights: Any = None,
        **kwargs: Any,
    ):
        self.delta_max = delta_max
        self.shift_bias = shift_bias
        self.lam_init = lam_init
        self.lam_decay = lam_decay
        self.max_lambda_steps = max_lambda_steps
        self.max_iter = max_iter
        self.lr = lr
        self.tol = tol
        self.lime_samples = lime_samples
        self.lime_scale = lime_scale
        self.kernel_width = kernel_width
        self.ridge_alpha = ridge_alpha
        self.distance_weights = distance_weights
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        check_number(self.delta_max, "delta_max", low=0)
        check_bool(self.shift_bias, "shift_bias")
        check_number(self.lam_init, "lam_init", low=0, low_open=True)
        check_number(self.lam_decay, "lam_decay", low=0, high=1, low_open=True, high_open=True)
        for label in ("max_lambda_steps", "max_iter"):
            check_integer(getattr(self, label), label, low=1, high=1_000_000)
        check_integer(self.lime_samples, "lime_samples", low=2, high=1_000_000)
        check_number(self.lr, "lr", low=0, low_open=True)
        check_number(self.tol, "tol", low=0, low_open=True)
        check_number(self.lime_scale, "lime_scale", low=0, high=1e3, low_open=True)
        check_number(self.kernel_width, "kernel_width", low=0, high=1e6, low_open=True,
                     allow_none=True)
        check_number(self.ridge_alpha, "ridge_alpha", low=0)
        self.weights_ = distance_weights(self.distance_weights, self.encoder, self.data)
        self.distance_ = Distance("l1", weights=None if self.distance_weights is None
                                  else self.weights_)
        self.feasible_ = FeasibleSet(self.encoder)
        self.linear_ = self._linear_scorer()

    def _linear_scorer(self) -> tuple[np.ndarray, float] | None:
        """(w, b) of a binary model's logit when the model is linear, else None."""
        if self.model.n_classes != 2:
            return None
        try:
            net = self.model.network()
        except RobustCEError:  # no network view (trees, ...): ROAR-LIME
            return None
        if len(net.weights) != 1 or net.weights[0][0].shape[0] != 1:
            return None
        W, b = net.weights[0]
        return np.asarray(W[0], dtype=np.float64), float(np.asarray(b).reshape(-1)[0])

    # --- scorers --------------------------------------------------------------------------
    def _scorers(self, X: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per query: (w (n, d), b (n,), fidelity (n,)) of the target-class scorer."""
        n, d = X.shape
        if self.linear_ is not None:
            w, b = self.linear_
            sign = np.where(targets == 1, 1.0, -1.0)
            return sign[:, None] * w[None, :], sign * b, np.ones(n)
        from sklearn.linear_model import Ridge

        rng = self._rng()
        free = self.feasible_.free
        kw = (self.kernel_width if self.kernel_width is not None
              else 0.75 * np.sqrt(max(int(free.sum()), 1)) * self.lime_scale)
        m = self.lime_samples
        noise = rng.normal(0.0, self.lime_scale, size=(n, m, d)) * free
        lo, hi = self.encoder.domain(X)
        Z = np.clip(X[:, None, :] + noise, lo[:, None, :], hi[:, None, :])
        Z[:, 0, :] = X  # the query itself is one of the samples (as in LIME)
        flat = Z.reshape(n * m, d)
        logits = self.model.logits(flat).reshape(n, m, -1).transpose(1, 0, 2)  # (m, n, K)
        y = class_margin(logits, targets).T  # (n, m): target margin of each sample
        sq = np.sum((Z - X[:, None, :]) ** 2, axis=2)
        kern = np.exp(-sq / kw**2)
        W = np.zeros((n, d))
        B = np.zeros(n)
        fid = np.zeros(n)
        for i in range(n):  # one small weighted ridge fit per query
            reg = Ridge(alpha=self.ridge_alpha).fit(Z[i][:, free], y[i], sample_weight=kern[i])
            W[i, free] = reg.coef_
            B[i] = reg.intercept_
            fid[i] = reg.score(Z[i][:, free], y[i], sample_weight=kern[i])
        return W, B, fid

    # --- search -----------------------------------------------------------------------------
    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        import torch

        n = len(X)
        nan_cert = {"distance": np.nan, "worst_case_score": np.nan, "worst_case_loss": np.nan,
                    "fidelity": np.nan, "lambda": np.nan, "n_iter": 0}
        if not self.feasible_.free.any():
            return [QueryResult("infeasible", None, dict(nan_cert),
                                message="every feature is immutable: no counterfactual exists")
                    for _ in range(n)]
        W, B, fid = self._scorers(X, targets)
        lam = np.full(n, float(self.lam_init))
        n_iter = np.zeros(n, dtype=np.int64)
        best: list[np.ndarray | None] = [None] * n
        current = X.copy()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # small tensors: thread hand-offs cost more than they save
        try:
            timed_out = self._optimise(X, targets, W, B, lam, n_iter, best, current)
        finally:
            torch.set_num_threads(threads)
        out = []
        for i in range(n):
            cert = {"fidelity": float(fid[i]), "lambda": float(lam[i]), "n_iter": int(n_iter[i])}
            cf = best[i]
            if cf is None:
                why = (f"time limit of {self.time_limit:g} s reached" if timed_out else
                       f"no valid CE after {self.max_lambda_steps} λ rounds (last λ = {lam[i]:g})")
                if fid[i] < 0.5:
                    why += f"; the local surrogate fits the model poorly (weighted R² {fid[i]:.2f})"
                out.append(QueryResult("timeout" if timed_out else "not_found", None,
                                       {**nan_cert, **cert}, message=why))
                continue
            score, _, _ = roar_worst_case(W[i], B[i], cf[None, :], self.delta_max, self.shift_bias)
            cert.update(distance=float(self.distance_.rowwise(cf, X[i])[0]),
                        worst_case_score=float(score[0]),
                        worst_case_loss=float(np.logaddexp(0.0, -score[0])))
            out.append(QueryResult("found", cf[None, :], cert))
        return out

    def _optimise(self, X: np.ndarray, targets: np.ndarray, W: np.ndarray, B: np.ndarray,
                  lam: np.ndarray, n_iter: np.ndarray, best: list, current: np.ndarray) -> bool:
        """λ rounds of Adam over all unfinished queries; fills ``best``, ``lam``, ``n_iter`` and
        ``current`` in place. Returns whether the time limit stopped the search."""
        import torch

        t0 = time.perf_counter()
        done = np.zeros(len(X), dtype=bool)
        free_t = torch.as_tensor(self.feasible_.free, dtype=torch.float64)
        bias_shift = self.delta_max if self.shift_bias else 0.0
        with torch.enable_grad():
            for rnd in range(self.max_lambda_steps):
                active = np.flatnonzero(~done)
                if len(active) == 0:
                    break
                if rnd > 0:
                    lam[active] *= self.lam_decay
                xa = torch.as_tensor(X[active], dtype=torch.float64)
                project = self.feasible_.projector(xa)
                wa = torch.as_tensor(W[active], dtype=torch.float64)
                ba = torch.as_tensor(B[active], dtype=torch.float64)
                lam_t = torch.as_tensor(lam[active], dtype=torch.float64)
                var = torch.tensor(current[active], dtype=torch.float64, requires_grad=True)
                opt = torch.optim.Adam([var], lr=self.lr)
                live = torch.ones(len(active), 1, dtype=torch.float64)
                prev = torch.full((len(active),), torch.inf, dtype=torch.float64)
                for _ in range(self.max_iter):
                    # worst case of the δ_max-ball in closed form (roar_worst_case), x' ≥ 0
                    score = (wa * var).sum(1) + ba - self.delta_max * var.abs().sum(1) - bias_shift
                    obj = torch.nn.functional.softplus(-score) + lam_t * self.distance_.torch(var, xa)
                    opt.zero_grad()
                    obj.sum().backward()
                    var.grad.mul_(free_t).mul_(live)
                    opt.step()
                    with torch.no_grad():
                        project(var)
                        n_iter[active] += live[:, 0].numpy().astype(np.int64)
                        moving = (prev - obj.detach()).abs() >= self.tol
                        live = live * moving[:, None].to(torch.float64)
                        prev = obj.detach()
                    if not live.any():
                        break
                    if time.perf_counter() - t0 > self.time_limit:
                        current[active] = var.detach().numpy()
                        self._check_round(X, targets, active, current, best, done)
                        return True
                current[active] = var.detach().numpy()
                self._check_round(X, targets, active, current, best, done)
        return False

    def _check_round(self, X: np.ndarray, targets: np.ndarray, active: np.ndarray,
                     current: np.ndarray, best: list, done: np.ndarray) -> None:
        """Project the round's points to valid encodings and keep the valid, actionable ones."""
        cand = self.encoder.project(current[active], *self.encoder.domain(X[active]))
        ok = (self.model.predict(cand) == targets[active]) & self.actionable(X[active], cand)
        for j in np.flatnonzero(ok):
            best[active[j]] = cand[j]
        done[active[ok]] = True
