"""RoCourseNet: CounterNet trained against a worst-case *data* shift (tri-level problem, eq. 4).

The attacker (eq. 3) shifts the training inputs by δ (‖δᵢ‖∞ ≤ ε, continuous features only); the
defender retrains its predictor on ``x + δ`` and the attacker picks δ so that the retrained
predictor ``f(·; θ'(δ))`` rejects the current CEs. (``shift_features="softmax"`` is the authors'
variant of the shifted inputs: one-hot blocks become ``softmax(x_b + δ_b)``, their δ unbounded.)
:func:`virtual_data_shift` (VDS, Algorithm 1) approximates it: T signed-gradient steps on δ,
each differentiating the adversarial loss through K unrolled training steps of the predictor.
:class:`RoCourseNet` (Algorithm 2) trains the explainer head against ``θ'`` every batch, with ε
scheduled linearly over the epochs.

Implementation: the predictor is evaluated with ``torch.func.functional_call`` under a *flat*
parameter vector θ (views per layer), and the K inner steps take ``torch.autograd.grad`` with
``create_graph=True``, so ∇δ flows through them (second-order terms included). Nesting
``torch.func.grad`` gives the same numbers but its transform overhead made one VDS call
(T = 7, K = 2, batch 128, a (50, 10) / (10,) network) take 120 ms against 38 ms this way; with
the flat θ, Adam's update is a few ops on one vector instead of a few per weight tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from robustce.data.dataset import Dataset
from robustce.errors import ValidationError
from robustce.methods.counternet import MAX_LR, CounterNet
from robustce.methods.counternet_network import _PredictorView
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


class _SoftmaxBlocks:
    """Column ranges ``[s, e)`` of one-hot blocks, for :func:`_shifted_inputs`: one vectorised
    softmax per block (index tensors built once, no Python loop over blocks per call)."""

    def __init__(self, blocks: Sequence[tuple[int, int]], d: int, device: torch.device):
        blocks = sorted((int(s), int(e)) for s, e in blocks)
        prev = 0
        for s, e in blocks:
            if not 0 <= prev <= s < e <= d:
                raise ValidationError(f"softmax_blocks must be disjoint, non-empty column ranges "
                                      f"[start, stop) inside 0..{d}, got {blocks}")
            prev = e
        self.blocks = blocks
        cols = [j for s, e in blocks for j in range(s, e)]
        which = [i for i, (s, e) in enumerate(blocks) for _ in range(s, e)]
        self.cols = torch.tensor(cols, dtype=torch.long, device=device)
        self.which = torch.tensor(which, dtype=torch.long, device=device)
        self.mask = torch.zeros(d, dtype=torch.bool, device=device)
        self.mask[self.cols] = True

    def __bool__(self) -> bool:
        return bool(self.blocks)

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        """``z`` with every block replaced by ``softmax(z_block)`` (row-wise)."""
        n, nb = z.shape[0], len(self.blocks)
        zc = z[:, self.cols]
        idx = self.which.expand(n, -1)
        # per-block max for stability (a constant per block: no effect on value or gradient)
        top = torch.full((n, nb), -torch.inf, dtype=z.dtype, device=z.device)
        top = top.scatter_reduce(1, idx, zc.detach(), "amax")
        e = torch.exp(zc - top.gather(1, idx))
        sums = torch.zeros((n, nb), dtype=z.dtype, device=z.device).index_add(1, self.which, e)
        return z.index_copy(1, self.cols, e / sums.gather(1, idx))


def _shifted_inputs(x: torch.Tensor, delta: torch.Tensor,
                    softmax: _SoftmaxBlocks | None) -> torch.Tensor:
    """The attacker's shifted training inputs: ``x + δ``, or with one-hot blocks the authors'
    ``cat_normalize(x + δ)`` (each block ``softmax(x_b + δ_b)``, other columns ``x + δ``)."""
    z = x + delta
    return softmax.apply(z) if softmax else z


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
            inner_lr: float, inner_optimizer: str, state: AdamState | None,
            softmax: _SoftmaxBlocks | None = None
            ) -> tuple[torch.Tensor, torch.Tensor, AdamState | None]:
    """K differentiable predictor steps on ``(x + δ, y)`` from flat θ, then ``L(f(x_cf; θ'))``.

    Each step's gradient is taken with ``create_graph=True``, so the returned loss stays
    differentiable in ``delta`` (and θ) through all K updates. With ``softmax`` blocks the steps
    train on ``cat_normalize(x + δ)`` instead (:func:`_shifted_inputs`).
    """
    th = theta if theta.requires_grad else theta.detach().requires_grad_(True)
    x_shift = None
    for _ in range(k):
        if x_shift is None:  # the same inputs in each of the K steps
            x_shift = _shifted_inputs(x, delta, softmax)
        loss = _mse_prob(predictor, flat.unflatten(th), x_shift, y)
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
    softmax_blocks: Sequence[tuple[int, int]] = (),
) -> tuple[torch.Tensor, tuple[Params, AdamState | None]]:
    """``L(f(x_cf; θ'), y_cf)`` after K unrolled predictor steps on ``(x + δ, y)`` from θ.

    Differentiable in ``delta`` (give it ``requires_grad``; ``torch.autograd.grad`` or
    ``.backward()`` then reach it through the unrolled steps — the only path: ``x_cf`` does not
    depend on δ). ``softmax_blocks``: column ranges whose shifted input is ``softmax(x_b + δ_b)``
    (see :func:`virtual_data_shift`). Returns the loss and ``(θ', optimizer state)``.
    """
    flat = _FlatParams(theta)
    softmax = _SoftmaxBlocks(softmax_blocks, x.shape[1], x.device)
    loss, th, state = _unroll(delta, predictor, flat, flat.flatten(theta), x, y, x_cf, y_cf,
                              int(k), float(inner_lr), inner_optimizer, state, softmax)
    return loss, (flat.unflatten(th), state)


def _project(delta: torch.Tensor, epsilon: float, norm: str,
             free: torch.Tensor | None = None) -> torch.Tensor:
    """δ onto the ε-ball of ``norm``; columns where ``free`` is true are left as they are (the
    authors' one-hot part of δ, never projected)."""
    if free is None:
        if norm == "inf":
            return delta.clamp(-epsilon, epsilon)
        n = delta.norm(dim=1, keepdim=True)
        return delta * torch.clamp(epsilon / (n + 1e-12), max=1.0)
    bounded = torch.where(free, torch.zeros_like(delta), delta)
    return torch.where(free, delta, _project(bounded, epsilon, norm))


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
    softmax_blocks: Sequence[tuple[int, int]] = (),
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

    ``softmax_blocks`` (column ranges ``[start, stop)`` of one-hot blocks; default none) switches
    to the authors' shifted inputs (relax ``cat_normalize``, ``BirkhoffG/RoCourseNet``
    ``BilevelAttacker``): the K steps train on ``x̃ = cat_normalize(x + δ)``, i.e. ``x + δ`` on
    the other columns and ``softmax(x_b + δ_b)`` on each block b, and the blocks' δ is never
    projected (only the other columns are kept in the ε-ball), so after T steps it may reach
    ε + T·α (3.5ε with the default α). The blocks' columns are shifted whatever ``shift_mask``
    says.
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
    softmax = _SoftmaxBlocks(softmax_blocks, x.shape[1], x.device)
    free = None
    if softmax:
        free = softmax.mask
        mask = torch.where(free, torch.ones_like(mask), mask)
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
                                      float(inner_lr), inner_optimizer, state, softmax)
            (g,) = torch.autograd.grad(loss, delta)
            th = th.detach()
            state = tuple(s.detach() for s in state) if state else state
            if norm == "inf":
                direction = torch.sign(g)
            else:
                gm = g * mask
                direction = gm / (gm.norm(dim=1, keepdim=True) + 1e-12)
            delta = _project((delta.detach() + step * direction) * mask, eps, norm,
                             free).detach()
    theta = {n: p.detach() for n, p in flat.unflatten(th).items()}
    return theta, delta


class RoCourseNet(CounterNet):
    """RoCourseNet (Algorithm 2): CounterNet whose explainer is trained against VDS.

    Per mini-batch: (i) predictor step on λ₁·L₁; (ii) VDS → shifted predictor θ'; (iii) explainer
    step on λ₂·L₂ + λ₃·L₃ with L₂ measured under θ'. ε grows linearly over the epochs
    (``ε_e = E·e/N`` for epoch e = 1..N; ``epsilon_schedule="constant"`` keeps E).

    Defaults are the paper's / the authors' code's.

    Parameters
    ----------
    epsilon : maximum shift E (0.1).
    n_steps : attacker steps T (7; german 10).
    k : unrolled predictor steps K (2).
    inner_lr : learning rate of the unrolled steps (0.03).
    alpha : attacker step size (None: 2.5ε/T with the epoch's ε).
    norm : "inf" (paper) or "l2" ball.
    inner_optimizer : "adam" (authors' code) or "sgd" (the paper's Algorithm 1 line 6).
    epsilon_schedule : "linear" (paper) or "constant".
    shift_features : which inputs the virtual data shift moves, and how.

        * "continuous" (default; the paper's text): δ on the scaled columns only, θ' trains on
          ``x + δ``; a dataset without scaled columns is rejected at ``fit``.
        * "all": δ on every model-space column (one-hot, binary and ordinal codes included), all
          of it projected onto the ε-ball, θ' trains on ``x + δ``.
        * "softmax": the authors' code (``BirkhoffG/RoCourseNet`` ``BilevelAttacker`` with relax
          ``cat_normalize``): θ' trains on ``x̃ = cat_normalize(x + δ)`` — each mutable one-hot
          block b becomes ``softmax(x_b + δ_b)`` and its δ_b is **not** projected (it grows by α
          per attacker step: up to ε + T·α = 3.5ε with the default α = 2.5ε/T); every other
          mutable column (scaled, and here also binary / ordinal codes, which the authors encode
          as continuous or one-hot) is ``x + δ`` with δ in the ε-ball. Immutable columns stay at
          ``x``, as relax's ``apply_constraints`` resets them. Even at δ = 0 the blocks are
          softened (``softmax`` of a one-hot row), so θ' is fitted to relaxed categorical inputs,
          the kind the explainer's soft CEs are during training.
    hidden, epochs, lr, batch_size, lambdas, dropout, prediction_loss, validity_dropout : as
        :class:`CounterNet`.
    bounded, ordinal_encoding, progress, device, activation, grad_clip, val_size : as
        :class:`CounterNet`.
    target_class, time_limit, random_state, n_jobs, constraints : as for every :class:`Explainer`.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> net = rc.methods.RoCourseNet(epochs=30, progress=False, random_state=0).fit(train)
    >>> rejected = test.frame[net.model.predict(test.frame) == 0].head(3)
    >>> res = net.explain(rejected)
    >>> bool((res.status == "found").any())
    True
    >>> bool((net.model.predict(res.counterfactuals[res.feature_names]) == 1).all())
    True
    """

    name: ClassVar[str] = "rocoursenet"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"

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
        check_choice(self.shift_features, "shift_features", ("continuous", "all", "softmax"))

    def _fit(self, data: Dataset) -> None:
        self._check_params()
        if self.shift_features == "continuous" and not any(f.kind.is_numeric
                                                           for f in data.schema):
            raise ValidationError(
                f"RoCourseNet's virtual data shift perturbs continuous features only, and dataset "
                f"{data.name!r} has none (all features are categorical/ordinal/binary); use "
                "shift_features='all' or CounterNet instead"
            )
        if self.shift_features == "softmax" and all(f.immutable for f in data.schema):
            raise ValidationError(
                f"RoCourseNet's virtual data shift perturbs mutable features, and every feature "
                f"of dataset {data.name!r} is immutable; use CounterNet instead"
            )
        super()._fit(data)

    def _start_epoch(self, epoch: int) -> None:
        E, N = float(self.epsilon), int(self.epochs)
        self.epsilon_ = E * (epoch + 1) / N if self.epsilon_schedule == "linear" else E
        if epoch == 0:
            cols = self.constraints_.continuous
            self._softmax_blocks: list[tuple[int, int]] = []
            if self.shift_features == "all":
                cols = np.ones_like(cols)
            elif self.shift_features == "softmax":  # the explainer's one-hot blocks, mutable ones
                cols = ~self.encoder_.immutable_mask_
                self._softmax_blocks = [(s, e) for s, e in self.constraints_.softmax_blocks
                                        if cols[s]]
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
            softmax_blocks=self._softmax_blocks,
        )
        return theta

    def _current_params(self) -> dict[str, torch.Tensor]:
        names = set(self.net_.predictor_names())
        return {n: p.detach() for n, p in self.net_.named_parameters() if n in names}

    def predictor_view_train(self) -> nn.Module:
        """The predictor view during training (no dropout in the attacker)."""
        return _PredictorView(self.net_)

