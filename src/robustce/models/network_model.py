"""``NetworkModel``: any ReLU network given by its weights, as a robustce model.

For networks trained elsewhere (weights exported from another framework, a published model) or
built by hand: pair a :class:`ReLUNetwork` over model space with the :class:`Encoder` that
defines that space, and every explainer, certifier and metric accepts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.encoder import Encoder
from robustce.errors import ValidationError
from robustce.models.base import Model
from robustce.models.network import ReLUNetwork

__all__ = ["NetworkModel"]


class NetworkModel(Model):
    """A fixed :class:`ReLUNetwork` (or its ``[(W, b), ...]`` weights) over a fitted encoder.

    ``class_names`` defaults to 0..K-1 (K = 2 for a one-logit network).
    """

    def __init__(self, network: ReLUNetwork | Sequence[tuple[np.ndarray, np.ndarray]],
                 encoder: Encoder, class_names: Sequence[Any] | None = None):
        net = network if isinstance(network, ReLUNetwork) else ReLUNetwork(network)
        if not isinstance(encoder, Encoder):
            raise ValidationError(f"encoder must be a robustce Encoder, got {type(encoder).__name__}")
        encoder._check_fitted()
        if net.n_inputs != encoder.n_features_out_:
            raise ValidationError(
                f"the network takes {net.n_inputs} inputs but the encoder gives "
                f"{encoder.n_features_out_} model-space columns"
            )
        names = tuple(range(net.n_classes)) if class_names is None else tuple(class_names)
        if len(names) != net.n_classes:
            raise ValidationError(
                f"{len(names)} class names for a network with {net.n_classes} classes"
            )
        self._network = net
        self.encoder = encoder
        self.class_names = names

    def network(self) -> ReLUNetwork:
        return self._network

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return self._network.forward(self.encode(X))

    def __repr__(self) -> str:
        return f"NetworkModel({self._network!r}, classes={list(self.class_names)})"
