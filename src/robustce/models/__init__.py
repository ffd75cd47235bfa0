"""Models: the model protocol, the PyTorch MLP, scikit-learn adapters, tree views, the
ReLU-network view, save/load, retraining families (model-shift protocols), the user's own
retrain procedure (:class:`RetrainProcedure`) and black-box models (:func:`black_box`)."""

from robustce.models import boosters  # noqa: F401  (registers XGBoost/LightGBM with from_sklearn)
from robustce.models.base import Model
from robustce.models.boosting import AdditiveTrees
from robustce.models.families import (
    FamilyValidity,
    ModelFamily,
    RetrainProcedure,
    continued_family,
    group_family,
    incremental_family,
    proplace_family,
    seed_family,
    split_halves,
)
from robustce.models.mlp import MLP
from robustce.models.network import ReLUNetwork
from robustce.models.network_model import NetworkModel
from robustce.models.opaque import BlackBoxModel, black_box
from robustce.models.persistence import ModelFileError, load
from robustce.models.sklearn import SklearnModel, wrap
from robustce.models.sklearn_import import (
    ImportedBoostedModel,
    ImportedNetworkModel,
    ImportedTreeModel,
    fold_preprocessing,
    from_sklearn,
)
from robustce.models.torch_import import TorchNetworkModel, from_torch
from robustce.models.trees import TreeView, forest_predict_proba

__all__ = [
    "AdditiveTrees",
    "BlackBoxModel",
    "RetrainProcedure",
    "black_box",
    "ImportedBoostedModel",
    "ImportedNetworkModel",
    "ImportedTreeModel",
    "fold_preprocessing",
    "from_sklearn",
    "from_torch",
    "TorchNetworkModel",
    "NetworkModel",
    "MLP",
    "FamilyValidity",
    "Model",
    "ModelFamily",
    "ModelFileError",
    "ReLUNetwork",
    "SklearnModel",
    "TreeView",
    "forest_predict_proba",
    "group_family",
    "continued_family",
    "incremental_family",
    "load",
    "proplace_family",
    "seed_family",
    "split_halves",
    "wrap",
]
