"""RoCourseNet: CounterNet trained against a worst-case *data* shift (tri-level problem, eq. 4).

The attacker (eq. 3) shifts the training inputs by δ (‖δᵢ‖∞ ≤ ε, continuous features only); the
defender retrains its predictor on ``x + δ`` and the attacker picks δ so that the retrained
predictor ``f(·; θ'(δ))`` rejects the current CEs. :func:`virtual_data_shift` (VDS, Algorithm 1)
approximates it: T signed-gradient steps on δ, each differentiating the adversarial loss through
K unrolled training steps of the predictor. :class:`RoCourseNet` (Algorithm 2) trains the explainer
head against ``θ'`` every batch, with ε scheduled linearly over the epochs.

Implementation: the predictor is evaluated with ``torch.func.functional_call`` under a *flat*
parameter vector θ (views per layer), and the K inner steps take ``torch.autograd.grad`` with
``create_graph=True``, so ∇δ flows through them (second-order terms included). Nesting
``torch.func.grad`` gives the same numbers but its transform overhead made one VDS call
(T = 7, K = 2, batch 128, a (50, 10) / (10,) network) take 120 ms against 38 ms this way; with
the flat θ, Adam's update is a few ops on one vector instead of a few per weight tensor.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from robustce.data.dataset import Dataset
from robustce.errors import ValidationError
from robustce.methods.counternet import MAX_LR, CounterNet, _PredictorView
from robustce.models.mlp import _single_thread
from robustce.validation import check_choice, check_integer, check_number

__all__ = ["RoCourseNet", "unrolled_adversarial_loss", "virtual_data_shift"]

Params = dict[str, torch.Tensor]
AdamState = tuple  # Adam: (m, v, step count as a 0-d tensor), flat like θ; SGD: ()

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


class _FlatParams:
    """θ as one flat vector and back: the unrolled steps update a single tensor (a handful of
    ops per step instead of a handful per parameter tensor), and ``functional_call`` reads views
    of it under the predictor's own parameter names."""

    def __init__(self, theta: Params):
        self.names = list(theta)
        self.shapes = [theta[n].shape for n in self.names]
        self.sizes = [theta[n].numel() for n in self.names]

    def flatten(self, theta: Params) -> torch.Tensor:
        return torch.cat([theta[n].reshape(-1) for n in self.names])

    def unflatten(self, flat: torch.Tensor) -> Params:
        return {n: part.view(shape) for n, part, shape in
                zip(self.names, torch.split(flat, self.sizes), self.shapes, strict=True)}


def _mse_prob(predictor: nn.Module, params: Params, x: torch.Tensor,
              target: torch.Tensor) -> torch.Tensor:
    """Mean squared error between ``σ(f(x; params))`` and ``target`` (the authors' losses)."""
    return torch.mean((torch.sigmoid(functional_call(predictor, params, (x,))) - target) ** 2)


def _inner_step(theta: torch.Tensor, g: torch.Tensor, state: AdamState | None, lr: float,
                optimizer: str) -> tuple[torch.Tensor, AdamState | None]:
    """One differentiable training step of the (flat) predictor θ: SGD or Adam (Algorithm 1
    line 6)."""
    if optimizer == "sgd":
        return theta - lr * g, ()
    b1, b2 = ADAM_BETAS
    m, v, t = state if state else (torch.zeros_like(theta), torch.zeros_like(theta),
                                   torch.zeros((), dtype=theta.dtype, device=theta.device))
    t = t + 1
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    # sqrt(v + tiny): finite derivative where a gradient entry is exactly 0
    step = (m / (1 - b1 ** t)) / (torch.sqrt(v / (1 - b2 ** t) + 1e-30) + ADAM_EPS)
    return theta - lr * step, (m, v, t)


def _unroll(delta: torch.Tensor, predictor: nn.Module, flat: _FlatParams, theta: torch.Tensor,
            x: torch.Tensor, y: torch.Tensor, x_cf: torch.Tensor, y_cf: torch.Tensor, k: int,
            inner_lr: float, inner_optimizer: str, state: AdamState | None
            ) -> tuple[torch.Tensor, torch.Tensor, AdamState | None]:
    """K differentiable predictor steps on ``(x + δ, y)`` from flat θ, then ``L(f(x_cf; θ'))``.

    Each step's gradient is taken with ``create_graph=True``, so the returned loss stays
    differentiable in ``delta`` (and θ) through all K updates.
    """
    th = theta if theta.requires_grad else theta.detach().requires_grad_(True)
    for _ in range(k):
        loss = _mse_prob(predictor, flat.unflatten(th), x + delta, y)
        (g,) = torch.autograd.grad(loss, th, create_graph=True)
        th, state = _inner_step(th, g, state, inner_lr, inner_optimizer)
    return _mse_prob(predictor, flat.unflatten(th), x_cf, y_cf), th, state


def unrolled_adversarial_loss(
    delta: torch.Tensor,
    predictor: nn.Module,
    theta: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    x_cf: torch.Tensor,
    y_cf: torch.Tensor,
    *,
    k: int = 2,
    inner_lr: float = 0.03,
    inner_optimizer: str = "adam",
    state: AdamState | None = None,
) -> tuple[torch.Tensor, tuple[Params, AdamState | None]]:
    """``L(f(x_cf; θ'), y_cf)`` after K unrolled predictor steps on ``(x + δ, y)`` from θ.

    Differentiable in ``delta`` (give it ``requires_grad``; ``torch.autograd.grad`` or
    ``.backward()`` then reach it through the unrolled steps — the only path: ``x_cf`` does not
    depend on δ). Returns the loss and ``(θ', optimizer state)``.
    """
    flat = _FlatParams(theta)
    loss, th, state = _unroll(delta, predictor, flat, flat.flatten(theta), x, y, x_cf, y_cf,
                              int(k), float(inner_lr), inner_optimizer, state)
    return loss, (flat.unflatten(th), state)


def _project(delta: torch.Tensor, epsilon: float, norm: str) -> torch.Tensor:
    if norm == "inf":
        return delta.clamp(-epsilon, epsilon)
    n = delta.norm(dim=1, keepdim=True)
    return delta * torch.clamp(epsilon / (n + 1e-12), max=1.0)


MAX_SHIFT = 1e3  # ε and α caps (inputs live in [0, 1])
MAX_INNER_STEPS = 10_000  # T and K caps: each is a loop per training batch


def _check_vds(epsilon: float, n_steps: int, k: int, inner_lr: float, alpha: float | None,
               norm: str, inner_optimizer: str) -> None:
    # model space is scaled to [0, 1]: a shift beyond MAX_SHIFT only overflows float32
    check_number(epsilon, "epsilon", low=0, low_open=True, high=MAX_SHIFT)
    check_integer(n_steps, "n_steps (T)", low=1, high=MAX_INNER_STEPS)
    check_integer(k, "k (unrolled steps K)", low=1, high=MAX_INNER_STEPS)
    check_number(inner_lr, "inner_lr", low=0, low_open=True, high=MAX_LR)
    check_number(alpha, "alpha", low=0, low_open=True, high=MAX_SHIFT, allow_none=True)
    check_choice(norm, "norm", ("inf", "l2"))
    check_choice(inner_optimizer, "inner_optimizer", ("adam", "sgd"))


def virtual_data_shift(
    predictor: nn.Module,
    theta: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    x_cf: torch.Tensor,
    y_cf: torch.Tensor,
    *,
    epsilon: float = 0.1,
    n_steps: int = 7,
    k: int = 2,
    inner_lr: float = 0.03,
    alpha: float | None = None,
    norm: str = "inf",
    shift_mask: torch.Tensor | np.ndarray | None = None,
    inner_optimizer: str = "adam",
    generator: torch.Generator | None = None,
) -> tuple[Params, torch.Tensor]:
    """Virtual data shift (Algorithm 1): a worst-case shifted predictor θ' and the shift δ.

    ``predictor(x) -> logit`` is evaluated with ``functional_call`` under parameters ``theta``
    (e.g. ``CounterNet.predictor_view()`` and ``.predictor_params()``). ``(x, y)`` is the training
    batch, ``x_cf`` its CEs and ``y_cf`` the class each CE should get (``1 − round(f(x; θ))``).

    δ ~ U(−ε, ε) on the ``shift_mask`` columns (default all; RoCourseNet passes the continuous
    ones), then T times: θ' ← K unrolled steps on ``(x + δ, y)`` (SGD or, as in the authors'
    code, Adam with ``inner_lr``; θ' and the optimizer state carry over between attacker steps),
    δ ← δ + α·sign(∇δ L(f(x_cf; θ'), y_cf)) (L2: the row-normalised gradient), projected onto the
    ε-ball of ``norm``. ``alpha`` defaults to 2.5ε/T. Returns detached ``(θ', δ)``.
    """
    _check_vds(epsilon, n_steps, k, inner_lr, alpha, norm, inner_optimizer)
    if x.ndim != 2 or x_cf.shape != x.shape or y.shape != (len(x),) or y_cf.shape != (len(x),):
        raise ValidationError(f"virtual_data_shift needs x and x_cf of one shape (n, d) and y, "
                              f"y_cf of shape (n,); got {tuple(x.shape)}, {tuple(x_cf.shape)}, "
                              f"{tuple(y.shape)}, {tuple(y_cf.shape)}")
    if shift_mask is None:
        mask = torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
    else:
        mask = torch.as_tensor(np.asarray(shift_mask, dtype=bool), device=x.device).to(x.dtype)
        if mask.shape != (x.shape[1],):
            raise ValidationError(f"shift_mask must have one entry per column ({x.shape[1]}), "
                                  f"got shape {tuple(mask.shape)}")
        if not bool(mask.any()):
            raise ValidationError("shift_mask selects no column: the virtual data shift needs at "
                                  "least one continuous feature to perturb")
    eps = float(epsilon)
    step = 2.5 * eps / n_steps if alpha is None else float(alpha)
    u = torch.rand(x.shape, generator=generator, dtype=x.dtype).to(x.device)
    delta = (2 * u - 1) * eps * mask
    flat = _FlatParams(theta)
    th = flat.flatten(theta).detach()
    state: AdamState | None = None
    with _single_thread():
        for _ in range(int(n_steps)):
            delta.requires_grad_(True)
            loss, th, state = _unroll(delta, predictor, flat, th, x, y, x_cf, y_cf, int(k),
                                      float(inner_lr), inner_optimizer, state)
            (g,) = torch.autograd.grad(loss, delta)
            th = th.detach()
            state = tuple(s.detach() for s in state) if state else state
            if norm == "inf":
                direction = torch.sign(g)
            else:
                gm = g * mask
                direction = gm / (gm.norm(dim=1, keepdim=True) + 1e-12)
            delta = _project((delta.detach() + step * direction) * mask, eps, norm).detach()
    theta = {n: p.detach() for n, p in flat.unflatten(th).items()}
    return theta, delta


class RoCourseNet(CounterNet):
    """RoCourseNet (Algorithm 2): CounterNet whose explainer is trained against VDS.

    Per mini-batch: (i) predictor step on λ₁·L₁; (ii) VDS → shifted predictor θ'; (iii) explainer
    step on λ₂·L₂ + λ₃·L₃ with L₂ measured under θ'. ε grows linearly over the epochs
    (``ε_e = E·e/N`` for epoch e = 1..N; ``epsilon_schedule="constant"`` keeps E).

    Parameters (beyond :class:`CounterNet`'s; defaults from the paper / authors' code)
    ----------
    epsilon : maximum shift E (0.1).
    n_steps : attacker steps T (7; german 10).
    k : unrolled predictor steps K (2).
    inner_lr : learning rate of the unrolled steps (0.03).
    alpha : attacker step size (None: 2.5ε/T with the epoch's ε).
    norm : "inf" (paper) or "l2" ball.
    inner_optimizer : "adam" (authors' code) or "sgd" (the paper's Algorithm 1 line 6).
    epsilon_schedule : "linear" (paper) or "constant".
    shift_features : "continuous" (paper: δ on the scaled columns only; a dataset without any is
        rejected at ``fit``) or "all" (δ on every model-space column, one-hot and binary codes
        included: the attacker may also blur categorical codes, as the authors' code does where
        it leaves the categorical part of δ unprojected).
    """

    name: ClassVar[str] = "rocoursenet"

    def __init__(
        self,
        *,
        epsilon: float = 0.1,
        n_steps: int = 7,
        k: int = 2,
        inner_lr: float = 0.03,
        alpha: float | None = None,
        norm: str = "inf",
        inner_optimizer: str = "adam",
        epsilon_schedule: str = "linear",
        shift_features: str = "continuous",
        **kwargs,
    ):
        self.epsilon = epsilon
        self.n_steps = n_steps
        self.k = k
        self.inner_lr = inner_lr
        self.alpha = alpha
        self.norm = norm
        self.inner_optimizer = inner_optimizer
        self.epsilon_schedule = epsilon_schedule
        self.shift_features = shift_features
        super().__init__(**kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        _check_vds(self.epsilon, self.n_steps, self.k, self.inner_lr, self.alpha, self.norm,
                   self.inner_optimizer)
        check_choice(self.epsilon_schedule, "epsilon_schedule", ("linear", "constant"))
        check_choice(self.shift_features, "shift_features", ("continuous", "all"))

    def _fit(self, data: Dataset) -> None:
        self._check_params()
        if self.shift_features == "continuous" and not any(f.kind.is_numeric
                                                           for f in data.schema):
            raise ValidationError(
                f"RoCourseNet's virtual data shift perturbs continuous features only, and dataset "
                f"{data.name!r} has none (all features are categorical/ordinal/binary); use "
                "shift_features='all' or CounterNet instead"
            )
        super()._fit(data)

    def _start_epoch(self, epoch: int) -> None:
        E, N = float(self.epsilon), int(self.epochs)
        self.epsilon_ = E * (epoch + 1) / N if self.epsilon_schedule == "linear" else E
        if epoch == 0:
            cols = self.constraints_.continuous
            if self.shift_features == "all":
                cols = np.ones_like(cols)
            self._shift_mask = torch.tensor(cols, device=self.device_)
            self._vds_gen = torch.Generator().manual_seed(int(self._vds_seed()))
            self.epsilons_ = []
        self.epsilons_.append(self.epsilon_)

    def _vds_seed(self) -> int:
        return int(torch.randint(2**31 - 1, (1,)).item())  # under _seeded: fixed by random_state

    def _validity_params(self, x: torch.Tensor, y: torch.Tensor, cf: torch.Tensor,
                         y_cf: torch.Tensor) -> dict[str, torch.Tensor]:
        eps = self.epsilon_
        alpha = self.alpha
        theta, _ = virtual_data_shift(
            self.predictor_view_train(), self._current_params(), x, y, cf, y_cf, epsilon=eps,
            n_steps=int(self.n_steps), k=int(self.k), inner_lr=float(self.inner_lr),
            alpha=alpha, norm=self.norm, shift_mask=self._shift_mask,
            inner_optimizer=self.inner_optimizer, generator=self._vds_gen,
        )
        return theta

    def _current_params(self) -> dict[str, torch.Tensor]:
        names = set(self.net_.predictor_names())
        return {n: p.detach() for n, p in self.net_.named_parameters() if n in names}

    def predictor_view_train(self) -> nn.Module:
        """The predictor view during training (no dropout in the attacker)."""
        return _PredictorView(self.net_)

