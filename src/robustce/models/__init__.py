"""Models: the model protocol, the PyTorch MLP, the ReLU-network view."""

from robustce.models.base import Model
from robustce.models.mlp import MLP
from robustce.models.network import ReLUNetwork

__all__ = ["MLP", "Model", "ReLUNetwork"]
