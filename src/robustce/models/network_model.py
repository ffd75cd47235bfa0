"""``NetworkModel``: any ReLU network given by its weights, as a robustce model.

For networks trained elsewhere (weights exported from another framework, a published model) or
built by hand: pair a :class:`ReLUNetwork` over model space with the :class:`Encoder` that
defines that space, and every explainer, certifier and metric accepts it.

A ``NetworkModel`` saves and loads (:func:`robustce.models.load`) with its network's whole
structure — layers, activations, input map and shift scale — so the parameters a certificate
ranges over survive the round trip. An imported model's certified view is saved as
``NetworkModel(model.network(), model.encoder, model.class_names, model.favourable).save(path)``
(the original estimator or module is saved with its own tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.encoder import Encoder
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import Model
from robustce.models.network import ReLUNetwork
from robustce.models.persistence import register_model, save_model

__all__ = ["NetworkModel"]


@register_model
class NetworkModel(Model):
    """A fixed :class:`ReLUNetwork` (or its ``[(W, b), ...]`` weights) over a fitted encoder.

    Parameters
    ----------
    network : the network, or its layers' ``[(W, b), ...]``.
    encoder : the fitted :class:`~robustce.data.Encoder` whose model space the network takes.
    class_names : names of the classes; default 0..K-1 (K = 2 for a one-logit network).
    favourable : the favourable class, by label or index (default: none declared).

    Examples
    --------
    A hand-written rule over the two features of ``moons`` (in model space ``[0, 1]^2``):
    class 1 iff ``4 x1 − 4 x2 > 1``.

    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> model = NetworkModel([(np.array([[4.0, -4.0]]), np.array([-1.0]))], enc)
    >>> model
    NetworkModel(ReLUNetwork(2-1), classes=[0, 1])
    >>> X = np.array([[0.9, 0.1], [0.5, 0.5]])
    >>> model.predict(X).tolist(), model.logits(X).round(3).tolist()
    ([1, 0], [[2.2], [-1.0]])
    """

    def __init__(self, network: ReLUNetwork | Sequence[tuple[np.ndarray, np.ndarray]],
                 encoder: Encoder, class_names: Sequence[Any] | None = None,
                 favourable: Any = None):
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
        self.set_favourable(favourable)

    def network(self) -> ReLUNetwork:
        return self._network

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return self._network.forward(self.encode(X))

    def __repr__(self) -> str:
        return f"NetworkModel({self._network!r}, classes={list(self.class_names)})"

    # --- save / load ------------------------------------------------------------------------
    def save(self, path: Any, *, overwrite: bool = True) -> Any:
        """Save to a directory (see :func:`robustce.models.load`): the network's layers,
        activations, input map and shift scale, the encoder, the class names and the favourable
        class."""
        if type(self) is not NetworkModel:
            raise UnsupportedModelError(
                f"{type(self).__name__} keeps the original estimator/module, which robustce does "
                "not save (use its own tools, e.g. skops.io or torch.save); to save the network "
                "robustce certifies: NetworkModel(model.network(), model.encoder, "
                "model.class_names, model.favourable).save(path)")
        return save_model(self, path, overwrite=overwrite)

    def _state_dict(self) -> dict[str, Any]:
        import torch

        net = self._network
        state = {}
        for i, (W, b) in enumerate(net.layers):
            state[f"layer{i}.W"], state[f"layer{i}.b"] = torch.from_numpy(W), torch.from_numpy(b)
        if net.input_map is not None:
            state["input_map.A"] = torch.from_numpy(net.input_map[0])
            state["input_map.c"] = torch.from_numpy(net.input_map[1])
        for i, (SW, Sb) in enumerate(net.shift_scale or []):
            state[f"scale{i}.W"], state[f"scale{i}.b"] = torch.from_numpy(SW), torch.from_numpy(Sb)
        return {k: v.clone() for k, v in state.items()}

    def _saved_params(self) -> dict[str, Any]:
        net = self._network
        return {"n_layers": len(net.layers), "activations": list(net.activations),
                "input_map": net.input_map is not None, "shift_scale": net.shift_scale is not None}

    @classmethod
    def _from_saved(cls, params: dict[str, Any], encoder: Encoder, class_names: tuple[Any, ...],
                    state: dict[str, Any]) -> NetworkModel:
        n = int(params["n_layers"])

        def arr(key: str) -> np.ndarray:
            if key not in state:
                raise ValidationError(f"the saved weights lack {key!r}")
            return state[key].double().numpy()

        layers = [(arr(f"layer{i}.W"), arr(f"layer{i}.b")) for i in range(n)]
        input_map = (arr("input_map.A"), arr("input_map.c")) if params.get("input_map") else None
        scale = ([(arr(f"scale{i}.W"), arr(f"scale{i}.b")) for i in range(n)]
                 if params.get("shift_scale") else None)
        net = ReLUNetwork(layers, activations=params.get("activations"), input_map=input_map,
                          shift_scale=scale)
        return cls(net, encoder, class_names)
