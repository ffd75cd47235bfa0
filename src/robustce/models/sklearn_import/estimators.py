"""The final estimators scikit-learn itself provides, each family folded with the
preprocessing ``Z = A x + c``: linear classifiers and ReLU MLPs as a network with the
preprocessing as input map; decision trees, random forests and extra trees as tree views over
model space; ``GradientBoostingClassifier`` and ``HistGradientBoostingClassifier`` as additive
trees. (XGBoost and LightGBM: :mod:`robustce.models.boosters`.)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.encoder import Encoder
from robustce.errors import UnsupportedModelError
from robustce.models.base import Model
from robustce.models.boosting import AdditiveTrees
from robustce.models.network import ReLUNetwork
from robustce.models.sklearn_import.imported import (
    ImportedBoostedModel,
    ImportedNetworkModel,
    ImportedTreeModel,
)
from robustce.models.sklearn_import.preprocessing import _Basis
from robustce.models.sklearn_import.splits import _mapped_tree, _SplitMap
from robustce.models.trees import TreeView

SUPPORTED_ESTIMATORS = (
    "LogisticRegression (and other linear classifiers), MLPClassifier(activation='relu'), "
    "DecisionTreeClassifier, RandomForestClassifier, ExtraTreesClassifier, "
    "GradientBoostingClassifier, HistGradientBoostingClassifier, XGBClassifier, LGBMClassifier"
)


# ----------------------------------------------------------------------------------------
# Tree views of scikit-learn's fitted trees
# ----------------------------------------------------------------------------------------


def _tree_view(tree: Any, split: _SplitMap, *, float32: bool, regression_scale: float | None
               ) -> TreeView:
    """A scikit-learn ``tree_`` (fitted on Z) as a TreeView over model space."""
    left = np.asarray(tree.children_left, dtype=np.int64)
    right = np.asarray(tree.children_right, dtype=np.int64)
    thr_raw = np.asarray(tree.threshold, dtype=np.float64)
    value = np.asarray(tree.value, dtype=np.float64)[:, 0, :]
    if regression_scale is not None:
        value = value[:, :1] * regression_scale
    else:
        sums = value.sum(axis=1, keepdims=True)
        value = np.divide(value, sums, out=np.zeros_like(value), where=sums > 0)
    return _mapped_tree(np.asarray(tree.feature, dtype=np.int64), thr_raw, left, right,
                        left < 0, value, split, float32)


def _hgb_tree_view(nodes: np.ndarray, split: _SplitMap, label: str) -> TreeView:
    """A HistGradientBoosting predictor's nodes (float64 splits ``x <= num_threshold``)."""
    if np.any(nodes["is_categorical"]):
        raise UnsupportedModelError(
            f"{label}: native categorical splits (categorical_features) are not supported; "
            "one-hot encode the categories in the pipeline instead")
    leaf = nodes["is_leaf"].astype(bool)
    return _mapped_tree(nodes["feature_idx"].astype(np.int64),
                        nodes["num_threshold"].astype(np.float64),
                        nodes["left"].astype(np.int64), nodes["right"].astype(np.int64), leaf,
                        np.asarray(nodes["value"], dtype=np.float64)[:, None], split, False)



# ----------------------------------------------------------------------------------------
# Every built-in family
# ----------------------------------------------------------------------------------------


def _build(final: Any, label: str, A: np.ndarray, c: np.ndarray, encoder: Encoder,
           basis: _Basis, class_names: tuple[Any, ...], estimator: Any, columns: list[str],
           oracle: tuple[Any, pd.DataFrame | None]) -> Model:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model._base import LinearClassifierMixin
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    what = f"{label} ({type(final).__name__})"
    n_classes = len(final.classes_)
    args = (encoder, class_names, estimator, (A, c), columns)
    if isinstance(final, MLPClassifier | LinearClassifierMixin):
        if isinstance(final, MLPClassifier):
            if final.activation != "relu":
                raise UnsupportedModelError(
                    f"{what}: activation={final.activation!r} is not supported; only ReLU "
                    "networks have an exact ReLUNetwork view")
            if final.out_activation_ not in ("logistic", "softmax") or (
                    final.out_activation_ == "logistic" and n_classes != 2):
                raise UnsupportedModelError(f"{what}: multi-label MLPs are not supported")
            layers = [(np.asarray(W, dtype=np.float64).T, np.asarray(b, dtype=np.float64))
                      for W, b in zip(final.coefs_, final.intercepts_, strict=True)]
        else:
            W = np.atleast_2d(np.asarray(final.coef_, dtype=np.float64))
            b = np.atleast_1d(np.asarray(final.intercept_, dtype=np.float64)).reshape(-1)
            if b.shape[0] != W.shape[0]:
                b = np.broadcast_to(b, (W.shape[0],)).copy()
            if W.shape[0] != (1 if n_classes == 2 else n_classes):
                raise UnsupportedModelError(f"{what}: unexpected coefficient shape {W.shape}")
            layers = [(W, b)]
        # the preprocessing is a fixed input map; Δ ranges over the estimator's own
        # coefs_/intercepts_ (coef_/intercept_) as they are
        return ImportedNetworkModel(ReLUNetwork(layers, input_map=(A, c)), *args)
    split = _SplitMap(A, c, encoder, basis, what, *oracle)
    if isinstance(final, DecisionTreeClassifier | RandomForestClassifier | ExtraTreesClassifier):
        if getattr(final, "n_outputs_", 1) != 1:
            raise UnsupportedModelError(f"{what}: multi-output trees are not supported")
        single = isinstance(final, DecisionTreeClassifier)
        estimators = [final] if single else list(final.estimators_)
        trees = [_tree_view(e.tree_, split, float32=True, regression_scale=None) for e in estimators]
        return ImportedTreeModel(trees, "tree" if single else "forest", *args)
    if isinstance(final, GradientBoostingClassifier):
        from sklearn.dummy import DummyClassifier

        if not (final.init_ == "zero" or isinstance(final.init_, DummyClassifier)):
            raise UnsupportedModelError(f"{what}: a custom init estimator is not supported")
        stages = final.estimators_
        trees, output = [], []
        for stage in stages:
            for k, reg in enumerate(stage):
                trees.append(_tree_view(reg.tree_, split, float32=True,
                                        regression_scale=float(final.learning_rate)))
                output.append(k)
        n_logits = stages.shape[1]
        probe = np.zeros((1, A.shape[0])) + c[None, :]
        if getattr(final, "feature_names_in_", None) is not None:  # fitted on a frame
            probe = pd.DataFrame(probe, columns=final.feature_names_in_)
        raw = np.asarray(final.decision_function(probe), dtype=np.float64).reshape(1, -1)
        partial = AdditiveTrees(trees, np.array(output), np.zeros(n_logits))
        baseline = raw[0] - partial.logits(np.zeros((1, basis.d)))[0]
        return ImportedBoostedModel(AdditiveTrees(trees, np.array(output), baseline), *args)
    if isinstance(final, HistGradientBoostingClassifier):
        trees, output = [], []
        for it in final._predictors:
            for k, pred in enumerate(it):
                trees.append(_hgb_tree_view(pred.nodes, split, what))
                output.append(k)
        baseline = np.asarray(final._baseline_prediction, dtype=np.float64).reshape(-1)
        return ImportedBoostedModel(AdditiveTrees(trees, np.array(output), baseline), *args)
    raise UnsupportedModelError(f"{what} is not supported; supported: {SUPPORTED_ESTIMATORS}")
