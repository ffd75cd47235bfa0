"""The models :func:`~robustce.models.from_sklearn` returns, over robustce's model space, each
keeping the original estimator and the folded preprocessing: :class:`ImportedNetworkModel`
(linear / MLP), :class:`ImportedTreeModel` (tree, forest) and :class:`ImportedBoostedModel`
(gradient boosting, XGBoost, LightGBM)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.encoder import Encoder
from robustce.models.base import Model, logits_of_proba
from robustce.models.boosting import AdditiveTrees
from robustce.models.network import ReLUNetwork
from robustce.models.network_model import NetworkModel
from robustce.models.trees import TreeView, forest_predict_proba

__all__ = ["ImportedBoostedModel", "ImportedNetworkModel", "ImportedTreeModel"]



class _Imported:
    """What every imported model keeps: the original estimator and the folded map."""

    estimator: Any
    preprocessing: tuple[np.ndarray, np.ndarray]
    encoder: Encoder

    def transformed(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """The pipeline's transformed inputs ``Z = A x + c`` of raw or model-space rows."""
        A, c = self.preprocessing
        return self.encode(X) @ A.T + c  # type: ignore[attr-defined]

    def estimator_predict(self, frame: pd.DataFrame) -> np.ndarray:
        """Class indices (0..K-1) the *original* estimator predicts on raw rows."""
        pred = self.estimator.predict(frame[list(self.encoder.schema.names)]
                                      if isinstance(frame, pd.DataFrame) else frame)
        classes = list(np.asarray(self.estimator.classes_))
        return np.array([classes.index(p) for p in pred], dtype=np.int64)

    def raw_rows(self, X: np.ndarray) -> pd.DataFrame:
        """Model-space rows decoded to raw rows in the pipeline's column order."""
        frame = self.encoder.inverse_transform(X)
        return frame[list(self._columns)]  # type: ignore[attr-defined]


class ImportedNetworkModel(_Imported, NetworkModel):
    """A linear model or ReLU MLP pipeline. ``network()`` keeps the estimator's own layers
    with the preprocessing as a fixed input map (a shift set Δ moves the estimator's
    ``coefs_``/``intercepts_`` or ``coef_``/``intercept_``, never the preprocessing);
    ``network().weights`` is the same function with the map folded into layer 1.

    Parameters
    ----------
    network : the estimator's layers, with the preprocessing as input map.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    estimator : the original fitted estimator or Pipeline.
    preprocessing : ``(A, c)``: the pipeline's preprocessing as ``Z = A x + c`` on model-space
        rows ``x``.
    columns : the pipeline's raw column order.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(data.frame, data.y)
    >>> model = rc.models.from_sklearn(pipe, data)
    >>> model, model.network().input_map is not None   # the scaler: a fixed map before layer 1
    (ImportedNetworkModel(LogisticRegression, ReLUNetwork(2→2-1)), True)
    """

    kind = "network"

    def __init__(self, network: ReLUNetwork, encoder: Encoder, class_names: Any,
                 estimator: Any, preprocessing: tuple[np.ndarray, np.ndarray], columns: list[str]):
        super().__init__(network, encoder, class_names)
        self.estimator, self.preprocessing, self._columns = estimator, preprocessing, columns

    def __repr__(self) -> str:
        return f"ImportedNetworkModel({type(_final(self.estimator)).__name__}, {self._network!r})"


class ImportedTreeModel(_Imported, Model):
    """A decision tree or forest pipeline; ``trees()`` are over model space (MACE encodes them).

    Parameters
    ----------
    trees : the trees over model space.
    kind : ``"tree"`` (one tree) or ``"forest"``.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    estimator : the original fitted estimator or Pipeline.
    preprocessing : ``(A, c)``: the pipeline's preprocessing as ``Z = A x + c`` on model-space
        rows ``x``.
    columns : the pipeline's raw column order.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> tree = DecisionTreeClassifier(max_depth=2, random_state=0)
    >>> pipe = make_pipeline(StandardScaler(), tree).fit(data.frame, data.y)
    >>> model = rc.models.from_sklearn(pipe, data)
    >>> model, model.trees()[0].n_nodes       # splits mapped back to model space
    (ImportedTreeModel(DecisionTreeClassifier, 1 trees), 7)
    >>> bool((model.predict(data.frame) == pipe.predict(data.frame)).all())
    True
    """

    def __init__(self, trees: list[TreeView], kind: str, encoder: Encoder, class_names: Any,
                 estimator: Any, preprocessing: tuple[np.ndarray, np.ndarray], columns: list[str]):
        self._trees, self.kind, self.encoder = trees, kind, encoder
        self.class_names = tuple(class_names)
        self.estimator, self.preprocessing, self._columns = estimator, preprocessing, columns

    def trees(self) -> list[TreeView]:
        return list(self._trees)

    def predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return forest_predict_proba(self._trees, self.encode(X))

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return logits_of_proba(self.predict_proba(X))

    def predict(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_proba(X), axis=1)

    def __repr__(self) -> str:
        return f"ImportedTreeModel({type(_final(self.estimator)).__name__}, {len(self._trees)} trees)"


class ImportedBoostedModel(_Imported, Model):
    """A gradient-boosting pipeline; ``additive_trees()`` is its view over model space.

    Parameters
    ----------
    ensemble : the boosted trees over model space.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes.
    estimator : the original fitted estimator or Pipeline.
    preprocessing : ``(A, c)``: the pipeline's preprocessing as ``Z = A x + c`` on model-space
        rows ``x``.
    columns : the pipeline's raw column order.

    Examples
    --------
    >>> from sklearn.ensemble import GradientBoostingClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> gb = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0)
    >>> model = rc.models.from_sklearn(gb.fit(data.frame, data.y), data)
    >>> model
    ImportedBoostedModel(GradientBoostingClassifier, 3 trees)
    >>> bool((model.predict(data.frame) == gb.predict(data.frame)).all())
    True
    """

    kind = "boosted"

    def __init__(self, ensemble: AdditiveTrees, encoder: Encoder, class_names: Any,
                 estimator: Any, preprocessing: tuple[np.ndarray, np.ndarray], columns: list[str]):
        self._ensemble, self.encoder = ensemble, encoder
        self.class_names = tuple(class_names)
        self.estimator, self.preprocessing, self._columns = estimator, preprocessing, columns

    def additive_trees(self) -> AdditiveTrees:
        return self._ensemble

    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        return self._ensemble.logits(self.encode(X))

    def __repr__(self) -> str:
        return (f"ImportedBoostedModel({type(_final(self.estimator)).__name__}, "
                f"{len(self._ensemble.trees)} trees)")


def _final(estimator: Any) -> Any:
    from sklearn.pipeline import Pipeline

    return estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator

