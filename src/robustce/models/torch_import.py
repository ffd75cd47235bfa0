"""``from_torch``: a ``torch.nn.Sequential`` ReLU network trained elsewhere, as a robustce model.

Supported layers: ``Linear``, ``ReLU``, ``BatchNorm1d`` (in eval mode: the per-feature affine
map ``γ (h − μ)/√(σ² + ε) + β`` of its running statistics, folded into the neighbouring
``Linear``), ``Dropout`` (the identity in eval mode), ``Flatten`` and ``Identity``; consecutive
affine layers are composed. Anything else raises :class:`UnsupportedModelError` naming the layer.

The module's input is either robustce's model space (pass the :class:`Encoder` it was trained
on) or the output of a fitted scikit-learn preprocessor on raw frames (pass the
``ColumnTransformer``/``Pipeline`` and the raw training data; it is folded into the first
layer exactly as in :func:`~robustce.models.from_sklearn`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.data.schema import Schema
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import warn_if_constant
from robustce.models.network import ReLUNetwork
from robustce.models.network_model import NetworkModel

__all__ = ["TorchNetworkModel", "from_torch", "torch_layers"]


def torch_layers(module: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ReLUNetwork weights ``[(W, b), ...]`` of a Sequential of supported layers."""
    import torch
    from torch import nn

    if not isinstance(module, nn.Sequential):
        raise UnsupportedModelError(
            f"from_torch needs a torch.nn.Sequential, got {type(module).__name__}")
    layers: list[tuple[np.ndarray, np.ndarray]] = []
    pending: tuple[np.ndarray, np.ndarray] | None = None  # affine map after the last ReLU
    open_affine = False  # the last layer is affine with no ReLU after it yet
    for i, layer in enumerate(module):
        what = f"layer {i} ({type(layer).__name__})"
        if isinstance(layer, nn.Dropout | nn.Flatten | nn.Identity):
            continue
        if isinstance(layer, nn.Linear):
            W = layer.weight.detach().to(torch.float64).cpu().numpy()
            b = (layer.bias.detach().to(torch.float64).cpu().numpy() if layer.bias is not None
                 else np.zeros(W.shape[0]))
            if pending is not None:  # Linear(s * h + t) = (W diag s) h + (W t + b)
                s, t = pending
                W, b = W * s[None, :], b + W @ t
                pending = None
            if open_affine:  # compose with the previous affine layer
                W0, b0 = layers.pop()
                W, b = W @ W0, W @ b0 + b
            layers.append((W, b))
            open_affine = True
        elif isinstance(layer, nn.BatchNorm1d):
            if layer.training:
                raise UnsupportedModelError(f"{what} is in training mode; call module.eval()")
            if layer.running_mean is None or layer.running_var is None:
                raise UnsupportedModelError(f"{what}: track_running_stats=False is not supported")
            mean = layer.running_mean.detach().to(torch.float64).cpu().numpy()
            var = layer.running_var.detach().to(torch.float64).cpu().numpy()
            s = 1.0 / np.sqrt(var + float(layer.eps))
            t = -mean * s
            if layer.affine:
                g = layer.weight.detach().to(torch.float64).cpu().numpy()
                beta = layer.bias.detach().to(torch.float64).cpu().numpy()
                s, t = g * s, g * t + beta
            if open_affine:  # fold into the Linear before it
                W, b = layers.pop()
                layers.append((s[:, None] * W, s * b + t))
            elif pending is not None:
                s0, t0 = pending
                pending = (s * s0, s * t0 + t)
            else:
                pending = (s, t)
        elif isinstance(layer, nn.ReLU):
            if not open_affine:
                raise UnsupportedModelError(f"{what}: a ReLU must follow a Linear layer")
            open_affine = False
        else:
            raise UnsupportedModelError(
                f"{what} is not supported: from_torch takes Linear, ReLU, BatchNorm1d (eval), "
                "Dropout, Flatten and Identity")
    if not layers or not open_affine or pending is not None:
        raise UnsupportedModelError("the Sequential must end in a Linear layer (the logits)")
    return layers


class TorchNetworkModel(NetworkModel):
    """A torch Sequential folded into a :class:`ReLUNetwork` over model space."""

    kind = "network"

    def __init__(self, network: ReLUNetwork, encoder: Encoder, class_names: Any, module: Any,
                 preprocessing: tuple[np.ndarray, np.ndarray] | None):
        super().__init__(network, encoder, class_names)
        self.module, self.preprocessing = module, preprocessing

    def module_predict(self, X: pd.DataFrame | np.ndarray, preprocessor: Any = None) -> np.ndarray:
        """Class indices the *original* module predicts (binary: logit > 0; else argmax)."""
        import torch

        if preprocessor is not None:
            inp = np.asarray(preprocessor.transform(X), dtype=np.float64)
        else:
            inp = self.encode(X)
        with torch.no_grad():
            p = next(self.module.parameters())
            z = self.module(torch.as_tensor(inp, dtype=p.dtype)).double().numpy()
        return (z[:, 0] > 0).astype(np.int64) if z.shape[1] == 1 else np.argmax(z, axis=1)


def from_torch(module: Any, encoder: Encoder | Any,
               data_or_schema: pd.DataFrame | Dataset | Schema | None = None, *,
               class_names: Any = None) -> TorchNetworkModel:
    """A robustce model of a trained ``torch.nn.Sequential`` (one logit = binary, else K).

    ``encoder``: the fitted robustce :class:`Encoder` whose model space the module takes, or a
    fitted scikit-learn preprocessor on raw frames (then ``data_or_schema`` as in
    :func:`~robustce.models.from_sklearn`; the preprocessor is folded into layer 1).
    """
    layers = torch_layers(module)
    preprocessing = None
    if isinstance(encoder, Encoder):
        enc = encoder
    else:
        from robustce.models.sklearn_import import fold_preprocessing

        enc, A, c = fold_preprocessing(encoder, data_or_schema)
        preprocessing = (A, c)
        if A.shape[0] != layers[0][0].shape[1]:
            raise ValidationError(
                f"the preprocessor gives {A.shape[0]} columns but the module takes "
                f"{layers[0][0].shape[1]}")
        A, c = preprocessing
        W0, b0 = layers[0]
        layers[0] = (W0 @ A, b0 + W0 @ c)
    net = ReLUNetwork(layers)
    if net.n_inputs != enc.n_features_out_:
        raise ValidationError(
            f"the module takes {net.n_inputs} inputs but the encoder gives {enc.n_features_out_}")
    if class_names is None:
        if isinstance(data_or_schema, Dataset) and len(data_or_schema.class_names) == net.n_classes:
            class_names = data_or_schema.class_names
        else:
            class_names = tuple(range(net.n_classes))
    model = TorchNetworkModel(net, enc, tuple(class_names), module, preprocessing)
    frame = data_or_schema.frame if isinstance(data_or_schema, Dataset) else data_or_schema
    if isinstance(frame, pd.DataFrame):  # training data given: is the module constant on it?
        warn_if_constant(model.predict(frame), "the imported torch module")
    return model
