"""CounterNet (Guo et al., 2021): a predictor and its recourse generator trained together.

One network: an encoder ``z = h(x)``, a predictor head ``p = q(z)``, ``ŷ = σ(w·p + b)``, and an
explainer head ``x_cf = g([z, p])`` that outputs the whole counterfactual in model space. Once
trained, a CE costs one forward pass (the amortised method).

Training is block-wise coordinate descent, per mini-batch (RoCourseNet paper, Algorithm 2 without
the attacker):

1. predictor step on ``λ₁·L₁``, ``L₁ = MSE(ŷ, y)`` (or binary cross-entropy:
   ``prediction_loss="bce"``) — encoder + predictor;
2. explainer step on ``λ₂·L₂ + λ₃·L₃`` with the predictor frozen, ``L₂ = MSE(f(x_cf), 1 − round(ŷ))``
   (validity), ``L₃ = MSE(x, x_cf)`` (proximity) — explainer weights only.

(Mean squared errors throughout, as in the authors' configurations.)

The explainer's raw output is mapped onto valid encodings: scaled, binary and integer-coded
columns through a sigmoid (so they stay in [0, 1]); one-hot groups through a softmax; thermometer
ordinals through a softmax over their levels turned into the cumulative code. Immutable columns are
reset to the query, increase-only (decrease-only) columns clamped to ``≥ x`` (``≤ x``). At
inference the soft CE is projected to an exact encoding (one-hot by argmax, integers snapped).

Unlike the post-hoc methods, the constructor takes **no model**: CounterNet *is* the classifier.
``CounterNet(**params).fit(train)``, then ``explain``, ``predict`` and ``predict_proba``;
``.model`` is the trained predictor as a robustce :class:`~robustce.models.NetworkModel` (a plain
ReLU network once dropout is off), so every metric, certifier and exact test applies to it.

The network itself (module, predictor view, leaky-ReLU model, the map onto valid encodings):
:mod:`~robustce.methods.counternet_network`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from robustce.data.constraint_source import FROM_DATASET
from robustce.data.constraints import Constraints
from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import NotFittedError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer, Trainable
from robustce.methods.counternet_network import (
    ACTIVATIONS,
    CEConstraints,
    CounterNetModule,
    LeakyNetworkModel,
    _PredictorView,
    _seeded,
)
from robustce.methods.counternet_network import LEAKY_SLOPE as LEAKY_SLOPE  # re-exported
from robustce.models.mlp import _single_thread
from robustce.models.network_model import NetworkModel
from robustce.utils import check_random_state
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["CounterNet", "LeakyNetworkModel"]

LOAN_HIDDEN = ((200, 50), (50,), (50,))
MAX_EPOCHS = 100_000  # epochs cap (the papers train 50-100)
MAX_LR = 1e3  # learning-rate cap (float32 steps overflow far below 1e300)


class CounterNet(Trainable, Explainer):
    """CounterNet: predictor and CE generator in one network, trained block-wise.

    Parameters
    ----------
    hidden : (encoder, predictor, explainer) layer sizes; default the authors' loan network
        ``((200, 50), (50,), (50,))`` (german ``((100, 50), (20,), (20,))``, student
        ``((50, 10), (10,), (10,))``).
    epochs, lr, batch_size : Adam training (paper: 50 epochs, 0.003, 128).
    lambdas : (λ₁, λ₂, λ₃) weights of prediction, validity and proximity losses.
    dropout : dropout rate after every hidden layer during training.
    prediction_loss : L₁, "mse" (squared error of the probability, the authors' choice, default)
        or "bce" (binary cross-entropy on the logit). On very imbalanced data (a single early
        loan year: 96 % approvals) either gives a near-constant predictor, and then no valid CE.
    validity_dropout : measure the validity loss L₂ on the predictor *with* its training dropout
        (the authors' code evaluates ``f(x_cf)`` in training mode) instead of the deterministic
        predictor (default), pushing CEs past the boundary of the thinned networks too.
    bounded : keep continuous CE features inside the training range ([0, 1] scaled; default).
        ``False`` leaves them unbounded, as the authors' code does (its ``cat_normalize`` passes
        continuous outputs through): CEs may then lie outside the data, where a ReLU predictor
        extrapolates linearly — not a realistic recourse, but what the paper's numbers rest on.
    activation : hidden-layer activation, "relu" (default) or "leaky_relu" (slope 0.01, the
        paper-era code's). With "leaky_relu", ``.model`` is a :class:`LeakyNetworkModel`
        (exact predictions, no ReLU-network view for the certifiers).
    grad_clip : clip each step's gradient to this global L2 norm (per optimiser: predictor,
        explainer) before the Adam step; ``None`` (default) no clipping (paper-era code: 0.5).
    val_size : hold out this stratified share of the training data as a *validation* split and
        keep the weights of the epoch with the lowest validation loss λ₁L₁ + λ₂L₂ + λ₃L₃
        (unshifted predictor; the authors' checkpoint monitor ``val/val_loss``). ``None``
        (default): train on all rows, keep the last epoch. (The authors' code validated on the
        test split; here the test data never chooses the checkpoint.)
    ordinal_encoding : encoder used for model space ("thermometer" or "integer").
    progress : show a progress bar over epochs.
    device : torch device to train on ("cpu", "cuda", ...); inference runs on it too.
    target_class, time_limit, random_state, n_jobs, constraints : as for every
        :class:`Explainer` (constraints: CEs that violate them are removed).

    No model is passed in: CounterNet trains its own predictor (``.model`` after ``fit``).
    Binary classification only.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> net = rc.methods.CounterNet(epochs=30, progress=False, random_state=0).fit(train)
    >>> rejected = test.frame[net.model.predict(test.frame) == 0].head(3)
    >>> res = net.explain(rejected)  # synthetic_loan's relations apply: CEs breaking them go
    >>> res.to_frame()["constraints_removed"].tolist(), res.meta["constraints"]["source"]
    ([1, 1, 0], 'dataset')
    >>> net = rc.methods.CounterNet(epochs=30, progress=False, random_state=0,
    ...                             constraints=None).fit(train)  # switched off
    >>> res = net.explain(rejected)
    >>> bool((res.status == "found").any())
    True
    >>> bool((net.model.predict(res.counterfactuals[res.feature_names]) == 1).all())
    True
    """

    name: ClassVar[str] = "counternet"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"

    def __init__(
        self,
        *,
        hidden: Sequence[Sequence[int]] = LOAN_HIDDEN,
        epochs: int = 50,
        lr: float = 0.003,
        batch_size: int = 128,
        lambdas: Sequence[float] = (1.0, 0.2, 0.1),
        dropout: float = 0.3,
        prediction_loss: str = "mse",
        validity_dropout: bool = False,
        bounded: bool = True,
        activation: str = "relu",
        grad_clip: float | None = None,
        val_size: float | None = None,
        ordinal_encoding: str = "thermometer",
        progress: bool = True,
        device: str = "cpu",
        target_class: int | None = None,
        time_limit: float = 60.0,
        random_state: int | np.random.Generator | None = None,
        n_jobs: int = 1,
        constraints: Constraints | str | None = FROM_DATASET,
    ):
        self.hidden = hidden
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.lambdas = lambdas
        self.dropout = dropout
        self.prediction_loss = prediction_loss
        self.validity_dropout = validity_dropout
        self.bounded = bounded
        self.activation = activation
        self.grad_clip = grad_clip
        self.val_size = val_size
        self.ordinal_encoding = ordinal_encoding
        self.progress = progress
        self.device = device
        super().__init__(None, None, target_class=target_class, time_limit=time_limit,
                         random_state=random_state, n_jobs=n_jobs, constraints=constraints)

    # --- parameters -----------------------------------------------------------------------
    def _check_params(self) -> None:
        if self.model is not None:
            super()._check_params()
        else:  # before fit: the base checks that need no model (binary only)
            self._check_common_params(2)
        try:
            hidden = tuple(tuple(int(h) for h in part) for part in self.hidden)
        except (TypeError, ValueError):
            raise ValidationError("hidden must be three sequences of layer sizes (encoder, "
                                  f"predictor, explainer), got {self.hidden!r}") from None
        if len(hidden) != 3 or not all(hidden) or min(min(p) for p in hidden) < 1:
            raise ValidationError("hidden must be three non-empty sequences of positive layer "
                                  f"sizes (encoder, predictor, explainer), got {self.hidden!r}")
        self.hidden_ = hidden
        check_integer(self.epochs, "epochs", low=1, high=MAX_EPOCHS)
        check_number(self.lr, "lr", low=0, low_open=True, high=MAX_LR)
        check_integer(self.batch_size, "batch_size", low=1)
        try:
            lambdas = tuple(float(v) for v in self.lambdas)
        except (TypeError, ValueError):
            raise ValidationError(f"lambdas must be three numbers, got {self.lambdas!r}") from None
        if len(lambdas) != 3:
            raise ValidationError(f"lambdas must be three numbers (λ1, λ2, λ3), got {lambdas}")
        for name, v in zip(("λ1", "λ2", "λ3"), lambdas, strict=True):
            check_number(v, f"lambdas {name}", low=0)
        self.lambdas_ = lambdas
        check_number(self.dropout, "dropout", low=0, high=1, high_open=True)
        check_choice(self.prediction_loss, "prediction_loss", ("bce", "mse"))
        check_bool(self.validity_dropout, "validity_dropout")
        check_bool(self.bounded, "bounded")
        check_choice(self.activation, "activation", ACTIVATIONS)
        check_number(self.grad_clip, "grad_clip", low=0, low_open=True, allow_none=True)
        check_number(self.val_size, "val_size", low=0, low_open=True, high=1, high_open=True,
                     allow_none=True)
        check_choice(self.ordinal_encoding, "ordinal_encoding", ("thermometer", "integer"))
        check_bool(self.progress, "progress")
        try:
            self.device_ = torch.device(self.device)
        except (RuntimeError, TypeError):
            raise ValidationError(f"device must be a torch device name, got {self.device!r}") from None

    # --- training -------------------------------------------------------------------------
    def _fit(self, data: Dataset) -> None:
        self._check_params()
        if data.n_classes != 2:
            raise ValidationError(f"{type(self).__name__} is binary only; dataset {data.name!r} "
                                  f"has {data.n_classes} classes")
        if len(data) == 0:
            raise ValidationError("cannot train on an empty dataset")
        encoder = Encoder(data.schema, ordinal_encoding=self.ordinal_encoding)
        encoder.fit(data.frame)
        self._resolve_constraints(data)  # the training data's own constraints by default
        if self._constraints_obj is not None:  # validated once the schema is known (a copy)
            self._constraints_obj = Constraints.from_dict(
                self._constraints_obj.to_dict()).validate(data.schema)
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        val = None
        if self.val_size is not None:  # the checkpoint's validation split, out of training
            data, held = data.split(test_size=float(self.val_size), random_state=seed)
            val = (encoder.transform(held.frame), held.y)
        X = encoder.transform(data.frame)
        dev = self.device_
        self.encoder_ = encoder
        self.constraints_ = CEConstraints(encoder, dev, bounded=bool(self.bounded))
        self.class_names_ = tuple(data.class_names)
        t0 = time.perf_counter()
        with _single_thread(), _seeded(seed, dev):
            self.net_ = CounterNetModule(X.shape[1], self.hidden_, float(self.dropout),
                                         self.activation).to(dev)
            self._val = None if val is None else (
                torch.tensor(val[0], dtype=torch.float32, device=dev),
                torch.tensor(val[1], dtype=torch.float32, device=dev))
            self._train(torch.tensor(X, dtype=torch.float32, device=dev),
                        torch.tensor(data.y, dtype=torch.float32, device=dev), seed)
            del self._val
        self.net_.eval()
        self.fit_time_ = time.perf_counter() - t0
        if self.activation == "relu":
            self.model = NetworkModel(self.net_.relu_weights(), encoder, self.class_names_)
        else:
            self.model = LeakyNetworkModel(self.net_.relu_weights(), encoder, self.class_names_)
        self.data = data

    def _train(self, X: torch.Tensor, y: torch.Tensor, seed: int) -> None:
        net = self.net_
        lam1, lam2, lam3 = self.lambdas_
        pred_params = [p for n, p in net.named_parameters() if not n.startswith("explainer.")]
        exp_params = list(net.explainer.parameters())
        opt1 = torch.optim.Adam(pred_params, lr=float(self.lr))
        opt2 = torch.optim.Adam(exp_params, lr=float(self.lr))
        gen = torch.Generator().manual_seed(seed)
        bs = int(self.batch_size)
        self.epoch_times_: list[float] = []
        self.history_: list[dict[str, float]] = []
        bar = tqdm(range(int(self.epochs)), desc=type(self).__name__, unit="epoch",
                   disable=not self.progress, leave=False)
        best: dict[str, Any] = {"loss": math.inf, "state": None}
        for epoch in bar:
            t0 = time.perf_counter()
            self._start_epoch(epoch)
            net.train()
            perm = torch.randperm(len(X), generator=gen).to(X.device)
            sums = np.zeros(3)
            for s in range(0, len(X), bs):
                idx = perm[s:s + bs]
                xb, yb = X[idx], y[idx]
                # (i) predictor step: λ1·L1 on encoder + predictor
                loss1 = lam1 * self._prediction_loss(net.logit(xb), yb)
                opt1.zero_grad()
                loss1.backward()
                self._clip(pred_params)
                opt1.step()
                # (ii) explainer step: λ2·L2 + λ3·L3 with the predictor frozen
                logit, raw = net(xb)
                y_cf = 1.0 - torch.round(torch.sigmoid(logit.detach()))
                cf = self.constraints_.soft(xb, raw)
                params = self._validity_params(xb, yb, cf.detach(), y_cf)
                p_cf = torch.sigmoid(self._shifted_logit(params, cf))
                loss2 = torch.mean((p_cf - y_cf) ** 2)
                loss3 = torch.mean((cf - xb) ** 2)
                grads = torch.autograd.grad(lam2 * loss2 + lam3 * loss3, exp_params)
                opt2.zero_grad()
                for p, g in zip(exp_params, grads, strict=True):
                    p.grad = g
                self._clip(exp_params)
                opt2.step()
                sums += len(idx) * np.array([loss1.item(), loss2.item(), loss3.item()])
            sums /= len(X)
            self.history_.append({"L1": sums[0], "L2": sums[1], "L3": sums[2]})
            if self._val is not None:
                self._checkpoint(epoch, best)
            self.epoch_times_.append(time.perf_counter() - t0)
            bar.set_postfix(L1=f"{sums[0]:.3f}", L2=f"{sums[1]:.3f}", L3=f"{sums[2]:.3f}")
        bar.close()
        if best["state"] is not None:
            net.load_state_dict(best["state"])
        net.eval()

    def _clip(self, params: list[torch.Tensor]) -> None:
        if self.grad_clip is not None:
            nn.utils.clip_grad_norm_(params, float(self.grad_clip))

    def validation_loss(self, X: torch.Tensor, y: torch.Tensor) -> float:
        """λ₁L₁ + λ₂L₂ + λ₃L₃ of the network (eval mode, unshifted predictor) on ``(X, y)``."""
        lam1, lam2, lam3 = self.lambdas_
        self.net_.eval()
        with torch.no_grad():
            logit, raw = self.net_(X)
            y_cf = 1.0 - torch.round(torch.sigmoid(logit))
            cf = self.constraints_.soft(X, raw)
            p_cf = torch.sigmoid(_PredictorView(self.net_)(cf))
            loss = (lam1 * self._prediction_loss(logit, y) + lam2 * torch.mean((p_cf - y_cf) ** 2)
                    + lam3 * torch.mean((cf - X) ** 2))
        return float(loss)

    def _checkpoint(self, epoch: int, best: dict[str, Any]) -> None:
        """Record the epoch's validation loss; keep the weights if it is the lowest so far."""
        loss = self.validation_loss(*self._val)
        self.history_[-1]["val"] = loss
        if loss < best["loss"]:
            best["loss"] = loss
            best["state"] = copy.deepcopy(self.net_.state_dict())
            self.best_epoch_ = epoch

    def _prediction_loss(self, logit: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.prediction_loss == "bce":
            return nn.functional.binary_cross_entropy_with_logits(logit, y)
        return torch.mean((torch.sigmoid(logit) - y) ** 2)

    # hooks RoCourseNet overrides: the predictor the validity loss is measured on
    def _start_epoch(self, epoch: int) -> None:
        """Called at the start of each epoch (RoCourseNet schedules ε here)."""

    def _validity_params(self, x: torch.Tensor, y: torch.Tensor, cf: torch.Tensor,
                         y_cf: torch.Tensor) -> dict[str, torch.Tensor] | None:
        """Predictor parameters for L2 (``None``: the current, unshifted predictor)."""
        return None

    def _shifted_logit(self, params: dict[str, torch.Tensor] | None,
                       x: torch.Tensor) -> torch.Tensor:
        # validity_dropout: L2 reads the predictor with its training dropout (as the authors'
        # code does), so a CE must stay valid under random thinning of the predictor
        view = _PredictorView(self.net_, dropout=self.validity_dropout)
        if params is None:
            return view(x)
        return torch.func.functional_call(view, params, (x,))

    # --- fitted state ---------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not getattr(self, "is_fitted_", False) or self.model is None:
            raise NotFittedError(f"{type(self).__name__} learns from data: call fit(train) first")

    @property
    def encoder(self) -> Encoder:  # type: ignore[override]
        self._check_fitted()
        return self.encoder_

    def predictor_params(self) -> dict[str, torch.Tensor]:
        """θ: the predictor's parameters (detached copies), keyed for ``functional_call``."""
        self._check_fitted()
        names = set(self.net_.predictor_names())
        return {n: p.detach().clone() for n, p in self.net_.named_parameters() if n in names}

    def predictor_view(self) -> nn.Module:
        """``f(x; θ)`` as a module whose parameter names match :meth:`predictor_params`."""
        self._check_fitted()
        return _PredictorView(self.net_)

    # --- inference ------------------------------------------------------------------------
    def predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Class probabilities (n, 2) from the trained predictor."""
        self._check_fitted()
        return self.model.predict_proba(X)

    def predict(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """Predicted classes (0/1) from the trained predictor."""
        self._check_fitted()
        return self.model.predict(X)

    def counterfactuals(self, X: np.ndarray) -> np.ndarray:
        """One CE per row of model-space ``X`` (n, d): one forward pass plus projection to an
        exact encoding. No validity check (``explain`` does that)."""
        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        with torch.no_grad(), _single_thread():
            xt = torch.as_tensor(X, dtype=torch.float32, device=self.device_)
            _, raw = self.net_(xt)
            soft = self.constraints_.soft(xt, raw).cpu().double().numpy()
        return self.constraints_.hard(X, soft)

    def _explain_batch(self, X: np.ndarray, targets: np.ndarray) -> list[QueryResult]:
        t0 = time.perf_counter()
        cfs = self.counterfactuals(X)
        flips = self.model.predict(cfs) == targets
        each = (time.perf_counter() - t0) / max(len(X), 1)
        return [QueryResult("found", cfs[i:i + 1], time=each) if ok else
                QueryResult("not_found", None, time=each,
                            message="the explainer head's CE does not reach the target class")
                for i, ok in enumerate(flips)]
