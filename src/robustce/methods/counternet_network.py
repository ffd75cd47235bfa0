"""CounterNet's network (:mod:`~robustce.methods.counternet`; RoCourseNet trains the same one):
the torch module — encoder, predictor head and explainer head — and the view of its predictor
alone, the leaky-ReLU predictor as a robustce model, the map of the explainer's raw output onto
valid encodings (:class:`CEConstraints`), and the seeded torch RNG training runs under.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from robustce.data.encoder import Encoder
from robustce.models.base import Model

__all__ = ["ACTIVATIONS", "LEAKY_SLOPE", "CEConstraints", "CounterNetModule", "LeakyNetworkModel"]

LEAKY_SLOPE = 0.01  # nn.LeakyReLU's and flax's default negative slope
ACTIVATIONS = ("relu", "leaky_relu")


def _mlp(n_in: int, sizes: Sequence[int], dropout: float,
         activation: str = "relu") -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = []
    for h in sizes:
        act = nn.ReLU() if activation == "relu" else nn.LeakyReLU(LEAKY_SLOPE)
        layers += [nn.Linear(n_in, h), act, nn.Dropout(dropout)]
        n_in = h
    return nn.Sequential(*layers), n_in


class CounterNetModule(nn.Module):
    """Encoder, predictor head (one logit) and explainer head (raw CE, ``d`` columns)."""

    def __init__(self, n_inputs: int, hidden: Sequence[Sequence[int]], dropout: float,
                 activation: str = "relu"):
        super().__init__()
        enc, dec, exp = hidden
        self.activation = activation
        self.encoder, n_z = _mlp(n_inputs, enc, dropout, activation)
        self.predictor, n_p = _mlp(n_z, dec, dropout, activation)
        self.head = nn.Linear(n_p, 1)
        body, n_e = _mlp(n_z + n_p, exp, dropout, activation)
        self.explainer = nn.Sequential(*body, nn.Linear(n_e, n_inputs))

    def predictor_names(self) -> list[str]:
        """Names of the parameters of ``f(x; θ)`` (encoder, predictor, head)."""
        return [n for n, _ in self.named_parameters() if not n.startswith("explainer.")]

    def logit(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.predictor(self.encoder(x)))[:, 0]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.encoder(x)
        p = self.predictor(z)
        return self.head(p)[:, 0], self.explainer(torch.cat([z, p], dim=1))

    def relu_weights(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The predictor as ``[(W, b), ...]`` (float64; dropout is the identity at inference)."""
        linears = [m for m in (*self.encoder, *self.predictor, self.head)
                   if isinstance(m, nn.Linear)]
        return [(m.weight.detach().cpu().double().numpy(), m.bias.detach().cpu().double().numpy())
                for m in linears]


class LeakyNetworkModel(Model):
    """A fixed leaky-ReLU network (``[(W, b), ...]``, slope :data:`LEAKY_SLOPE`) over a fitted
    encoder: CounterNet's predictor with ``activation="leaky_relu"``. It predicts exactly as the
    trained module; having no ReLU-network view, the exact certifiers do not apply to it."""

    def __init__(self, weights: Sequence[tuple[np.ndarray, np.ndarray]], encoder: Encoder,
                 class_names: Sequence[Any]):
        self.weights = [(np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64))
                        for W, b in weights]
        self.encoder = encoder
        self.class_names = tuple(class_names)

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        h = self.encode(X)
        for i, (W, b) in enumerate(self.weights):
            h = h @ W.T + b
            if i < len(self.weights) - 1:
                h = np.where(h > 0, h, LEAKY_SLOPE * h)
        return h


class _PredictorView(nn.Module):
    """``f(x; θ)`` alone, sharing the module's parameters (names match ``predictor_names``), so
    ``torch.func.functional_call`` can evaluate it under shifted parameters θ'. Without dropout
    (deterministic in any mode) unless ``dropout=True``: then the dropout layers act as they do
    in the network's current train/eval mode."""

    def __init__(self, net: CounterNetModule, dropout: bool = False):
        super().__init__()
        self.encoder, self.predictor, self.head = net.encoder, net.predictor, net.head
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for m in (*self.encoder, *self.predictor):
            if self.dropout or not isinstance(m, nn.Dropout):
                x = m(x)
        return self.head(x)[:, 0]


class CEConstraints:
    """Maps the explainer's raw output onto (soft) valid encodings for one :class:`Encoder`.

    ``soft(x, raw)``: differentiable, used in training; ``hard(x, soft)``: exact encodings
    (numpy, via ``Encoder.project``), used at inference. Both reset immutable columns to the query
    and clamp increase/decrease-only columns.
    """

    def __init__(self, encoder: Encoder, device: torch.device, bounded: bool = True):
        encoder._check_fitted()
        self.encoder = encoder
        sig = np.zeros(encoder.n_features_out_, dtype=bool)
        free = np.zeros(encoder.n_features_out_, dtype=bool)
        self._grid: dict[int, int] = {}
        self.softmax_blocks: list[tuple[int, int]] = []
        self.thermo_blocks: list[tuple[int, int]] = []
        for b in encoder.blocks_:
            if b.encoding == "onehot":
                self.softmax_blocks.append((b.start, b.stop))
            elif b.encoding == "thermometer":
                self.thermo_blocks.append((b.start, b.stop))
            elif not bounded and b.encoding == "scaled" and b.feature.lower != b.feature.upper:
                free[b.slice] = True  # numeric, unbounded: the raw output as it is
                self._grid[b.start] = b.n_steps or 0  # integers stay on their (extended) grid
            else:
                sig[b.slice] = True
        self.sigmoid_cols = torch.tensor(np.flatnonzero(sig), device=device)
        self.free_cols = torch.tensor(np.flatnonzero(free), device=device)

        def mask(m: np.ndarray) -> torch.Tensor:
            return torch.tensor(m, dtype=torch.bool, device=device)

        self.immutable = mask(encoder.immutable_mask_)
        self.increasing = mask(encoder.increasing_mask_)
        self.decreasing = mask(encoder.decreasing_mask_)
        self.continuous = np.array([b.encoding == "scaled" for b in encoder.blocks_
                                    for _ in range(b.width)], dtype=bool)

    def soft(self, x: torch.Tensor, raw: torch.Tensor) -> torch.Tensor:
        parts = torch.empty_like(raw)
        parts[:, self.sigmoid_cols] = torch.sigmoid(raw[:, self.sigmoid_cols])
        parts[:, self.free_cols] = raw[:, self.free_cols]
        for s, e in self.softmax_blocks:
            parts[:, s:e] = torch.softmax(raw[:, s:e], dim=1)
        for s, e in self.thermo_blocks:
            # levels 0..w; logits for levels 1..w come from the block, level 0 is the reference
            logits = torch.cat([torch.zeros_like(raw[:, s:s + 1]), raw[:, s:e]], dim=1)
            p = torch.softmax(logits, dim=1)
            # thermometer column j (level >= j + 1) = P(level >= j + 1)
            parts[:, s:e] = torch.flip(torch.cumsum(torch.flip(p[:, 1:], [1]), 1), [1])
        cf = torch.where(self.immutable, x, parts)
        cf = torch.where(self.increasing, torch.maximum(cf, x), cf)
        return torch.where(self.decreasing, torch.minimum(cf, x), cf)

    def hard(self, X: np.ndarray, soft: np.ndarray) -> np.ndarray:
        enc = self.encoder
        cf = enc.project(soft)
        for j, steps in self._grid.items():  # unbounded numeric columns: not clipped
            cf[:, j] = np.round(soft[:, j] * steps) / steps if steps else soft[:, j]
        cf[:, enc.immutable_mask_] = X[:, enc.immutable_mask_]
        cf[:, enc.increasing_mask_] = np.maximum(cf, X)[:, enc.increasing_mask_]
        cf[:, enc.decreasing_mask_] = np.minimum(cf, X)[:, enc.decreasing_mask_]
        return cf


@contextlib.contextmanager
def _seeded(seed: int, device: torch.device) -> Iterator[None]:
    """Torch RNG forked and seeded (weights, dropout), the caller's state restored after."""
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
