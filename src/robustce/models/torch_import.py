"""``from_torch``: a ``torch.nn.Sequential`` ReLU network trained elsewhere, as a robustce model.

Supported layers: ``Linear``, ``ReLU``, ``BatchNorm1d`` (in eval mode: its running statistics
normalise, its affine γ, β scale and shift), ``Dropout`` (the identity in eval mode), ``Flatten``
and ``Identity``. Anything else raises :class:`UnsupportedModelError` naming the layer.

The module's input is either robustce's model space (pass the :class:`Encoder` it was trained
on) or the output of a fitted scikit-learn preprocessor on raw frames (pass the
``ColumnTransformer``/``Pipeline`` and the raw training data; it becomes the network's fixed
input map, as in :func:`~robustce.models.from_sklearn`).

Certificates are about the module's own parameters: ``network()`` keeps its layers as they are
(:func:`torch_network`) — every Linear layer's weights and bias, every BatchNorm's γ and β move
by ±δ under a shift of radius δ; the preprocessing and the BatchNorm running statistics are
data and stay fixed. ``network().weights`` is the same function with the affine pieces
composed (what the MILP methods search over).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.data.schema import Schema
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models.base import favourable_in, warn_if_constant
from robustce.models.network import ReLUNetwork
from robustce.models.network_model import NetworkModel

__all__ = ["TorchNetworkModel", "from_torch", "torch_layers", "torch_network"]


def _numpy(t: Any) -> np.ndarray:
    import torch

    return t.detach().to(torch.float64).cpu().numpy()


def torch_network(module: Any, input_map: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> ReLUNetwork:
    """The module's own parameterisation as a structured :class:`ReLUNetwork` (what a shift
    set Δ ranges over; see :func:`from_torch`), after the fixed ``input_map`` if given.

    * every ``Linear`` is its own layer (weights and bias each move by ±δ; a missing bias is
      a fixed 0); two Linear layers in a row stay two layers with an identity between;
    * a ``BatchNorm1d`` (eval) splits into its normalisation ``(h − μ)/√(σ² + ε)`` — running
      statistics are data, fixed — and, when ``affine``, the layer ``γ ĥ + β`` whose γ and β
      each move by ±δ (a diagonal layer: the zeros off its diagonal stay zero). The
      normalisation is a per-row rescaling of the layer before it when that layer has no
      activation yet (its rows' radius scales by 1/√(σ² + ε): the same set of functions), is
      composed into the input map when the BatchNorm comes first, and is a fixed layer of its
      own after a ReLU;
    * ``ReLU`` after a layer; ``Dropout``, ``Flatten``, ``Identity`` are skipped.
    """
    from torch import nn

    if not isinstance(module, nn.Sequential):
        raise UnsupportedModelError(
            f"from_torch needs a torch.nn.Sequential, got {type(module).__name__}")
    # per layer [W, b, S_W, S_b]; acts[i]: the activation after layer i ("identity" until a ReLU)
    layers: list[list[np.ndarray]] = []
    acts: list[str] = []
    open_layer = False  # the last layer has no ReLU after it yet
    in_map = input_map

    def diag_layer(g: np.ndarray, beta: np.ndarray, moving: bool) -> None:
        nonlocal open_layer
        k = len(g)
        s_w = np.eye(k) if moving else np.zeros((k, k))
        layers.append([np.diag(g), beta, s_w, np.full(k, 1.0 if moving else 0.0)])
        acts.append("identity")
        open_layer = True

    for i, layer in enumerate(module):
        what = f"layer {i} ({type(layer).__name__})"
        if isinstance(layer, nn.Dropout | nn.Flatten | nn.Identity):
            continue
        if isinstance(layer, nn.Linear):
            W = _numpy(layer.weight)
            b = _numpy(layer.bias) if layer.bias is not None else np.zeros(W.shape[0])
            sb = np.full(W.shape[0], 1.0 if layer.bias is not None else 0.0)
            layers.append([W, b, np.ones_like(W), sb])
            acts.append("identity")
            open_layer = True
        elif isinstance(layer, nn.BatchNorm1d):
            if layer.training:
                raise UnsupportedModelError(f"{what} is in training mode; call module.eval()")
            if layer.running_mean is None or layer.running_var is None:
                raise UnsupportedModelError(f"{what}: track_running_stats=False is not supported")
            mean, var = _numpy(layer.running_mean), _numpy(layer.running_var)
            s = 1.0 / np.sqrt(var + float(layer.eps))
            t = -mean * s
            if open_layer:  # rescale the rows of the layer before it (s > 0)
                W, b, sw, sbias = layers[-1]
                layers[-1] = [s[:, None] * W, s * b + t, s[:, None] * sw, s * sbias]
            elif not layers:  # the module's input: compose into the (fixed) input map
                if in_map is None:
                    in_map = (np.diag(s), t)
                else:
                    A, c = in_map
                    in_map = (s[:, None] * A, s * c + t)
            else:  # after a ReLU: a fixed layer of its own
                diag_layer(s, t, moving=False)
            if layer.affine:
                diag_layer(_numpy(layer.weight), _numpy(layer.bias), moving=True)
        elif isinstance(layer, nn.ReLU):
            if not open_layer:
                raise UnsupportedModelError(f"{what}: a ReLU must follow a Linear layer")
            acts[-1] = "relu"
            open_layer = False
        else:
            raise UnsupportedModelError(
                f"{what} is not supported: from_torch takes Linear, ReLU, BatchNorm1d (eval), "
                "Dropout, Flatten and Identity")
    if not layers or not open_layer:
        raise UnsupportedModelError("the Sequential must end in a Linear layer (the logits)")
    scales = [(sw, sb) for _, _, sw, sb in layers]
    plain_scale = all((sw == 1).all() and (sb == 1).all() for sw, sb in scales)
    return ReLUNetwork([(W, b) for W, b, _, _ in layers], activations=acts[:-1],
                       input_map=in_map, shift_scale=None if plain_scale else scales)


def torch_layers(module: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """The plain ReLU layers ``[(W, b), ...]`` computing a Sequential's function (affine
    layers composed: :attr:`ReLUNetwork.weights` of :func:`torch_network`)."""
    return torch_network(module).weights


class TorchNetworkModel(NetworkModel):
    """A torch Sequential folded into a :class:`ReLUNetwork` over model space (built by
    :func:`from_torch`).

    Parameters
    ----------
    network : the folded network.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    module : the original ``torch.nn.Sequential``.
    preprocessing : ``(A, c)`` of a folded scikit-learn preprocessor (its output is
        ``A x + c`` on model-space rows ``x``), or None when the module takes model space.

    Examples
    --------
    >>> import torch
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> _ = torch.manual_seed(0)
    >>> module = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    >>> model = from_torch(module, enc)
    >>> type(model).__name__, model.network().layer_sizes
    ('TorchNetworkModel', [2, 4, 1])
    >>> bool((model.predict(data.frame) == model.module_predict(data.frame)).all())
    True
    """

    kind = "network"
    #: the user's fitted scikit-learn preprocessor on raw frames (None: the module takes
    #: model space); explainers score every returned CE with ``module_predict`` through it
    preprocessor: Any = None

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
               class_names: Any = None, favourable: Any = None) -> TorchNetworkModel:
    """A robustce model of a trained ``torch.nn.Sequential`` (one logit = binary, else K).

    ``encoder``: the fitted robustce :class:`Encoder` whose model space the module takes, or a
    fitted scikit-learn preprocessor on raw frames (then ``data_or_schema`` as in
    :func:`~robustce.models.from_sklearn`; the preprocessor is folded into layer 1).

    Parameters
    ----------
    module : the trained ``torch.nn.Sequential`` (Linear / ReLU, BatchNorm in eval mode, Dropout
        ignored).
    encoder : see above.
    data_or_schema : with a scikit-learn preprocessor as ``encoder``: the raw training frame,
        :class:`~robustce.data.Dataset` or :class:`~robustce.data.Schema`, as
        :func:`~robustce.models.from_sklearn` takes.
    class_names : names of the classes (default: the dataset's, else ``0..K-1``).
    favourable : the favourable class, by label or index (default: the dataset's, where its
        label is one of the model's classes; else none).

    Returns
    -------
    TorchNetworkModel

    Raises
    ------
    UnsupportedModelError
        A layer robustce cannot read exactly.

    Examples
    --------
    A module trained on model space (here untrained: any weights will do) with a BatchNorm:

    >>> import torch
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> _ = torch.manual_seed(0)
    >>> module = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.BatchNorm1d(8),
    ...                              torch.nn.ReLU(), torch.nn.Linear(8, 1)).eval()
    >>> model = from_torch(module, enc)
    >>> X = torch.as_tensor(enc.transform(data.frame), dtype=torch.float32)
    >>> logits = module(X).detach().double().numpy()
    >>> bool(np.allclose(model.logits(data.frame), logits, atol=1e-5))
    True
    """
    preprocessing = None
    net = torch_network(module)  # UnsupportedModelError names a bad layer before anything else
    if isinstance(encoder, Encoder):
        enc = encoder
    else:
        from robustce.models.sklearn_import import fold_preprocessing

        enc, A, c = fold_preprocessing(encoder, data_or_schema)
        preprocessing = (A, c)
        n_in = net.parameter_sizes[0]
        if A.shape[0] != n_in:
            raise ValidationError(
                f"the preprocessor gives {A.shape[0]} columns but the module takes {n_in}")
        net = torch_network(module, input_map=(A, c))
    if net.n_inputs != enc.n_features_out_:
        raise ValidationError(
            f"the module takes {net.n_inputs} inputs but the encoder gives {enc.n_features_out_}")
    if class_names is None:
        if isinstance(data_or_schema, Dataset) and len(data_or_schema.class_names) == net.n_classes:
            class_names = data_or_schema.class_names
        else:
            class_names = tuple(range(net.n_classes))
    model = TorchNetworkModel(net, enc, tuple(class_names), module, preprocessing)
    model.preprocessor = None if isinstance(encoder, Encoder) else encoder
    model.set_favourable(favourable_in(data_or_schema, model.class_names) if favourable is None
                         else favourable)
    frame = data_or_schema.frame if isinstance(data_or_schema, Dataset) else data_or_schema
    if isinstance(frame, pd.DataFrame):  # training data given: is the module constant on it?
        warn_if_constant(model.predict(frame), "the imported torch module")
    return model
