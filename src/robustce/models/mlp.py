"""``MLP``: a PyTorch ReLU network trained on a :class:`~robustce.data.Dataset`.

Inference goes through the float64 numpy view (:meth:`MLP.network`), the same view every
certifier reads, so "valid" means the same thing everywhere.

Determinism: training runs with one intra-op torch thread (restored afterwards), weights are
initialised under a forked torch RNG seeded from ``random_state`` and mini-batches are shuffled
by a private ``torch.Generator``; so one seed gives bit-identical weights on a CPU, whatever
the global torch seed, the machine's thread count or joblib's ``n_jobs``. (Multi-threaded
reductions would change the last bits, and for these small networks one thread is also the
fastest.)
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.errors import NotFittedError, ValidationError
from robustce.models.base import Model, warn_if_constant
from robustce.models.network import ReLUNetwork
from robustce.models.persistence import register_model, save_model
from robustce.utils import check_random_state
from robustce.validation import check_bool, check_choice, check_integer, check_number

__all__ = ["MLP"]


_ADAM_FUSED = "fused" in inspect.signature(torch.optim.Adam).parameters


_THREADS_LOCK = threading.Lock()
_THREADS_STATE = {"users": 0, "before": 1}


ORDINAL_ENCODINGS = ("thermometer", "integer")
MAX_WIDTH = 100_000  # widest hidden layer accepted (a typo like 10**9 would exhaust memory)
MAX_EPOCHS = 1000  # default cap when training until the loss stops improving
PATIENCE = 10  # epochs without an improvement of TOL in the mean training loss before stopping
TOL = 1e-4


def check_two_classes(y: np.ndarray, what: str = "the training data") -> None:
    """Refuse to train a classifier on fewer than two classes (as scikit-learn does)."""
    present = np.unique(np.asarray(y))
    if len(present) < 2:
        raise ValidationError(f"{what} holds only one class ({present.tolist()}): a classifier "
                              "needs samples of at least 2 classes")


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """Run torch with one intra-op thread (bit-reproducible and fastest for small nets).

    Reference-counted, so concurrent trainings in threads (joblib's threading backend) all run
    single-threaded and the caller's setting is restored when the last one finishes.
    """
    with _THREADS_LOCK:
        if _THREADS_STATE["users"] == 0:
            _THREADS_STATE["before"] = torch.get_num_threads()
            torch.set_num_threads(1)
        _THREADS_STATE["users"] += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_STATE["users"] -= 1
            if _THREADS_STATE["users"] == 0:
                torch.set_num_threads(_THREADS_STATE["before"])


def _build_module(n_inputs: int, hidden: Sequence[int], n_outputs: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    prev = n_inputs
    for h in hidden:
        layers += [nn.Linear(prev, h), nn.ReLU()]
        prev = h
    layers.append(nn.Linear(prev, n_outputs))
    return nn.Sequential(*layers)


@register_model
class MLP(Model):
    """ReLU multi-layer perceptron with logit outputs (1 for binary, K for K classes).

    Parameters follow scikit-learn conventions: stored in ``__init__``, work in ``fit``.
    Training: Adam on (binary) cross-entropy, mini-batches shuffled by ``random_state``;
    deterministic on CPU for a given seed.

    Parameters
    ----------
    hidden_layers : sizes of the hidden ReLU layers.
    epochs : a fixed number of passes over the data; None (default): train until the epoch's mean
        training loss has not improved by ``tol`` for ``patience`` epochs, at most ``max_epochs``.
    max_epochs : cap on the epochs when ``epochs`` is None.
    patience : epochs without improvement before training stops (``epochs`` None).
    tol : the improvement of the mean training loss that counts (``epochs`` None).
    batch_size : mini-batch size.
    lr : Adam's learning rate.
    weight_decay : Adam's weight decay (L2).
    random_state : seed of the initial weights and the batch order.
    ordinal_encoding : model-space encoding of ordinal features, "thermometer" or "integer"
        (:class:`~robustce.data.Encoder`).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> model.network()                  # model space d = 13, one hidden layer, one logit
    ReLUNetwork(13-8-1)
    >>> model.class_names, model.predict_proba(test.frame.head(3)).shape
    (('rejected', 'approved'), (3, 2))
    """

    def __init__(
        self,
        hidden_layers: Sequence[int] = (20, 10),
        *,
        epochs: int | None = None,
        max_epochs: int = MAX_EPOCHS,
        patience: int = PATIENCE,
        tol: float = TOL,
        batch_size: int = 64,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        random_state: int | None = 0,
        ordinal_encoding: str = "thermometer",
    ):
        self.hidden_layers = hidden_layers
        self.epochs = epochs
        self.max_epochs = max_epochs
        self.patience = patience
        self.tol = tol
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.random_state = random_state
        self.ordinal_encoding = ordinal_encoding
        self.encoder: Encoder | None = None
        self._check_params()

    def _check_params(self) -> None:
        hidden = self.hidden_layers
        if isinstance(hidden, str) or not isinstance(hidden, Sequence | np.ndarray):
            raise ValidationError(f"hidden_layers must be a sequence of positive integers, got "
                                  f"{hidden!r}")
        for h in hidden:
            check_integer(h, "hidden_layers entries", low=1, high=MAX_WIDTH)
        self.hidden_layers = tuple(int(h) for h in hidden)
        if self.epochs is not None:
            check_integer(self.epochs, "epochs", low=1)
        check_integer(self.max_epochs, "max_epochs", low=1)
        check_integer(self.patience, "patience", low=1)
        check_number(self.tol, "tol", low=0)
        check_integer(self.batch_size, "batch_size", low=1)
        check_number(self.lr, "lr", low=0, low_open=True)
        check_number(self.weight_decay, "weight_decay", low=0)
        rs = self.random_state
        if not (rs is None or isinstance(rs, np.random.Generator)):
            check_integer(rs, "random_state", low=0)
        check_choice(self.ordinal_encoding, "ordinal_encoding", ORDINAL_ENCODINGS)

    def get_params(self) -> dict[str, Any]:
        return {
            "hidden_layers": list(self.hidden_layers),
            "epochs": self.epochs,
            "max_epochs": self.max_epochs,
            "patience": self.patience,
            "tol": self.tol,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "weight_decay": self.weight_decay,
            "random_state": self.random_state,
            "ordinal_encoding": self.ordinal_encoding,
        }

    # --- training -----------------------------------------------------------------------
    def fit(self, data: Dataset, encoder: Encoder | None = None) -> MLP:
        """Fit an encoder on ``data.schema`` (or use ``encoder``) and train from scratch; the
        model takes ``data``'s class names and favourable class."""
        if not isinstance(data, Dataset):
            raise ValidationError(f"fit expects a robustce Dataset, got {type(data).__name__}")
        self._check_params()
        check_two_classes(data.y)
        if encoder is None:
            encoder = Encoder(data.schema, ordinal_encoding=self.ordinal_encoding)
            X = encoder.fit_transform(data.frame)
        else:
            X = encoder.transform(data.frame)
        self.encoder = encoder
        self.class_names = tuple(data.class_names)
        self.favourable = data.favourable
        n_out = 1 if self.n_classes == 2 else self.n_classes
        seed = int(check_random_state(self.random_state).integers(2**31 - 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.module_ = _build_module(X.shape[1], self.hidden_layers, n_out)
        self._train(X, data.y, self.epochs, seed)
        warn_if_constant(self.predict(X), "the MLP", self._constant_hint())
        return self

    def _constant_hint(self) -> str:
        if self.epochs is not None:
            return (f"it trained for a fixed epochs={self.epochs}; leave epochs unset to train "
                    "until the training loss stops improving, or raise lr")
        return (f"it trained {self.n_epochs_} epochs (patience={self.patience}, "
                f"max_epochs={self.max_epochs}); try a larger lr, max_epochs or patience, or "
                "class weights for imbalanced data")

    def fit_more(self, data: Dataset | tuple[np.ndarray, np.ndarray], epochs: int,
                 random_state: int | None = None, lr: float | None = None,
                 resume_optimizer: bool = False) -> MLP:
        """Continue training the current weights (incremental update / fine-tuning).

        ``resume_optimizer``: start from the Adam state (moment estimates and step count) the
        last training left, as scikit-learn's ``partial_fit`` does, instead of a fresh Adam;
        ``lr`` then overrides the resumed learning rate only when given."""
        self._check_fitted()
        check_bool(resume_optimizer, "resume_optimizer")
        if resume_optimizer and getattr(self, "optimizer_state_", None) is None:
            raise NotFittedError("resume_optimizer=True needs the Adam state of a training run "
                                 "in this process (a loaded MLP has none)")
        if isinstance(data, Dataset):
            X, y = self.encoder.transform(data.frame), data.y
        else:
            X, y = self.encoder.check_array(data[0]), np.asarray(data[1], dtype=np.int64)
        seed = int(check_random_state(random_state).integers(2**31 - 1))
        self._train(X, y, int(epochs), seed, lr=lr,
                    optimizer_state=self.optimizer_state_ if resume_optimizer else None)
        return self

    def _train(self, X: np.ndarray, y: np.ndarray, epochs: int | None, seed: int,
               lr: float | None = None, optimizer_state: dict[str, Any] | None = None) -> None:
        """``epochs`` passes over the data; ``None``: until the epoch's mean training loss has
        not improved by ``tol`` for ``patience`` epochs, at most ``max_epochs``. Records
        ``n_epochs_`` and ``loss_curve_`` (mean training loss per epoch)."""
        if len(X) == 0:
            raise ValidationError("cannot train on an empty dataset")
        module = self.module_
        binary = module[-1].out_features == 1
        Xt = torch.tensor(X, dtype=torch.float32)  # a copy: joblib may pass read-only memmaps
        yt = torch.tensor(np.asarray(y), dtype=torch.float32 if binary else torch.long)
        loss_fn = nn.BCEWithLogitsLoss() if binary else nn.CrossEntropyLoss()
        if lr is not None and not lr > 0:
            raise ValidationError(f"lr must be positive, got {lr}")
        extra = {"fused": True} if _ADAM_FUSED else {}
        gen = torch.Generator().manual_seed(seed)
        bs = int(self.batch_size)
        with _single_thread():
            opt = torch.optim.Adam(module.parameters(), lr=lr or self.lr,
                                   weight_decay=self.weight_decay, **extra)
            if optimizer_state is not None:
                opt.load_state_dict(copy.deepcopy(optimizer_state))
                if lr is not None:
                    for group in opt.param_groups:
                        group["lr"] = lr
            module.train()
            curve: list[float] = []
            best, stale = math.inf, 0
            for _ in range(int(self.max_epochs) if epochs is None else epochs):
                perm = torch.randperm(len(Xt), generator=gen)
                total = 0.0
                for s in range(0, len(Xt), bs):
                    idx = perm[s:s + bs]
                    out = module(Xt[idx])
                    loss = loss_fn(out[:, 0], yt[idx]) if binary else loss_fn(out, yt[idx])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    total += float(loss.detach()) * len(idx)
                curve.append(total / len(Xt))
                if epochs is None:
                    if curve[-1] < best - self.tol:
                        best, stale = curve[-1], 0
                    else:
                        stale += 1
                        if stale >= self.patience:
                            break
            module.eval()
            self.optimizer_state_ = copy.deepcopy(opt.state_dict())
        self.n_epochs_ = len(curve)
        self.loss_curve_ = curve
        self._network = None

    # --- inference ----------------------------------------------------------------------
    def _check_fitted(self) -> None:
        super()._check_fitted()
        if not hasattr(self, "module_"):
            raise NotFittedError("this MLP is not fitted; call fit() first")

    def network(self) -> ReLUNetwork:
        """Weights as float64 numpy arrays (W of shape (out, in)), cached until refit."""
        self._check_fitted()
        if getattr(self, "_network", None) is None:
            linears = [m for m in self.module_ if isinstance(m, nn.Linear)]
            self._network = ReLUNetwork(
                [(m.weight.detach().double().numpy().copy(), m.bias.detach().double().numpy().copy())
                 for m in linears]
            )
        return self._network

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return self.network().forward(self.encode(X))

    def torch_module(self) -> nn.Module:
        """The trained torch module (float32)."""
        self._check_fitted()
        return self.module_

    # --- persistence --------------------------------------------------------------------
    def save(self, path: str | Path, *, overwrite: bool = True) -> Path:
        """Save to the directory ``path``: ``model.json`` (class, parameters, encoder, class
        names, format version, weights checksum) and ``weights.pt`` (a torch state dict).

        No pickle: :func:`robustce.models.load` reads the weights with
        ``torch.load(..., weights_only=True)``. The directory is written beside ``path`` and
        renamed into place, so a crash never leaves a half-written model. An existing saved
        model at ``path`` is replaced (unless ``overwrite=False``); any other existing
        directory or file is left alone and an error raised.
        """
        self._check_fitted()
        return save_model(self, path, overwrite=overwrite)

    def _state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.module_.state_dict().items()}

    def _saved_params(self) -> dict[str, Any]:
        return self.get_params()

    @classmethod
    def _from_saved(cls, params: dict[str, Any], encoder: Encoder, class_names: tuple[Any, ...],
                    state: dict[str, torch.Tensor]) -> MLP:
        model = cls(**params)
        model.encoder = encoder
        model.class_names = tuple(class_names)
        n_out = 1 if len(class_names) == 2 else len(class_names)
        model.module_ = _build_module(encoder.n_features_out_, model.hidden_layers, n_out)
        model.module_.load_state_dict(state, strict=True)
        model.module_.eval()
        model._network = None
        return model

    def __repr__(self) -> str:
        return f"MLP(hidden_layers={self.hidden_layers}, epochs={self.epochs}, lr={self.lr})"
