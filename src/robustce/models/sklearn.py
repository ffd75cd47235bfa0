"""scikit-learn adapters: ``wrap(estimator, encoder)`` gives a fitted estimator the Model protocol.

The estimator must have been fitted on the encoder's model-space arrays (``encoder.transform``
of the raw frame), with the labels 0..K-1 of a :class:`~robustce.data.Dataset` or with any
labels (``class_names`` then defaults to ``estimator.classes_``). Supported final estimators:

* linear classifiers (``LogisticRegression`` and other ``LinearClassifierMixin`` models) —
  ``network()`` is a one-layer ReLUNetwork: one logit (binary) or K logits (multinomial);
* ``MLPClassifier`` with ``activation="relu"`` — ``network()`` has ``coefs_`` transposed; the
  logistic output gives one logit, the softmax output K logits;
* ``DecisionTreeClassifier``/``ExtraTreeClassifier`` and ``RandomForestClassifier``/
  ``ExtraTreesClassifier`` — ``trees()`` gives :class:`TreeView` arrays; ``network()`` raises
  :class:`UnsupportedModelError`;
* ``XGBClassifier`` and ``LGBMClassifier`` (kind ``"boosted"``) — ``additive_trees()`` reads
  the booster's dump (:func:`robustce.models.boosters.booster_view`, exact as
  :func:`~robustce.models.from_sklearn`); ``logits`` are the booster's margins from that view.
  This is how the retraining families of :mod:`robustce.models.families` hold boosters.

A ``Pipeline`` ending in one of them is accepted (it receives the encoded array). When its other
steps are per-feature affine scalers (``StandardScaler``, ``MinMaxScaler`` with ``clip=False``,
``MaxAbsScaler``, ``"passthrough"``) they become ``network()``'s fixed input map (a shift set Δ
moves the estimator's own weights; ``network().weights`` folds the map in, exact up to float64
rounding) and are folded into ``trees()`` (thresholds pulled back through the pipeline's own ``transform``, so
routing matches scikit-learn bit for bit), which therefore stay in model space; other
transformers make those views unavailable while ``predict``/``logits`` keep working.

Logits: linear models and MLPs give their pre-activation output scores. Trees and forests have
none; their ``logits`` are log-odds ``log p1 - log p0`` (binary) or log-probabilities (K
classes) of ``predict_proba`` (clipped at 1e-12), so that the margin is > 0 exactly when
scikit-learn predicts the target class. ``predict_proba`` is always the estimator's own.

Wrapped models are not saved by robustce (``save`` raises): persist the estimator with its own
tools (e.g. ``skops.io``) and wrap it again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.data.encoder import Encoder
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models.base import Model
from robustce.models.boosting import AdditiveTrees
from robustce.models.network import ReLUNetwork
from robustce.models.trees import TreeView, forest_predict_proba

__all__ = ["SklearnModel", "wrap"]

_EPS = 1e-12


def _final_and_steps(estimator: Any) -> tuple[Any, list[Any]]:
    from sklearn.pipeline import Pipeline

    if isinstance(estimator, Pipeline):
        steps = [s for _, s in estimator.steps]
        return steps[-1], [s for s in steps[:-1] if s is not None and s != "passthrough"]
    return estimator, []


def _kind(final: Any) -> str:
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
    from sklearn.linear_model._base import LinearClassifierMixin
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    if type(final).__module__.split(".")[0] in ("xgboost", "lightgbm"):
        return "boosted"
    if isinstance(final, MLPClassifier):
        return "mlp"
    if isinstance(final, DecisionTreeClassifier):  # ExtraTreeClassifier subclasses it
        return "tree"
    if isinstance(final, RandomForestClassifier | ExtraTreesClassifier):
        return "forest"
    if isinstance(final, LinearClassifierMixin):
        return "linear"
    raise UnsupportedModelError(
        f"cannot wrap {type(final).__name__}: supported are LogisticRegression (and other linear "
        "classifiers), MLPClassifier (ReLU), DecisionTreeClassifier, RandomForestClassifier, "
        "ExtraTreesClassifier, XGBClassifier, LGBMClassifier and Pipelines ending in one of them"
    )


def _affine_of(step: Any, d: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) with step(x) = scale * x + shift, or None if the step is not such a scaler."""
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

    if isinstance(step, StandardScaler):
        scale = np.asarray(step.scale_, dtype=np.float64) if step.scale_ is not None else np.ones(d)
        mean = np.asarray(step.mean_, dtype=np.float64) if step.mean_ is not None else np.zeros(d)
        if not step.with_mean:
            mean = np.zeros(d)
        return 1.0 / scale, -mean / scale
    if isinstance(step, MinMaxScaler) and not step.clip:
        return np.asarray(step.scale_, dtype=np.float64), np.asarray(step.min_, dtype=np.float64)
    if isinstance(step, MaxAbsScaler):
        return 1.0 / np.asarray(step.scale_, dtype=np.float64), np.zeros(d)
    return None


class SklearnModel(Model):
    """A fitted scikit-learn classifier (or Pipeline) over model space, with the Model protocol.

    Parameters
    ----------
    estimator : the fitted classifier or Pipeline, fitted on ``encoder.transform(frame)``.
    encoder : the fitted :class:`~robustce.data.Encoder`.
    class_names : names of the classes (default: ``estimator.classes_``).

    Examples
    --------
    A forest trained on model space; its trees are read as arrays (what MACE encodes):

    >>> from sklearn.ensemble import RandomForestClassifier
    >>> data = rc.datasets.load("moons", n_samples=50, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> X = enc.transform(data.frame)
    >>> forest = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, data.y)
    >>> model = SklearnModel(forest, enc)
    >>> model, len(model.trees()), bool((model.predict(data.frame) == forest.predict(X)).all())
    (SklearnModel(RandomForestClassifier, kind='forest'), 3, True)
    """

    def __init__(self, estimator: Any, encoder: Encoder, class_names: Any = None):
        if not isinstance(encoder, Encoder):
            raise ValidationError(f"wrap needs a robustce Encoder, got {type(encoder).__name__}")
        if not hasattr(encoder, "blocks_"):
            raise NotFittedError("the encoder is not fitted; call encoder.fit(frame) first")
        final, steps = _final_and_steps(estimator)
        self.kind = _kind(final)
        if not hasattr(final, "classes_"):
            raise NotFittedError(f"{type(final).__name__} is not fitted; fit it on encoder.transform(frame)")
        n_in = getattr(estimator, "n_features_in_", None)
        if n_in is not None and n_in != encoder.n_features_out_:
            raise ValidationError(
                f"the estimator was fitted on {n_in} features but the encoder gives "
                f"{encoder.n_features_out_}; fit it on encoder.transform(frame)"
            )
        classes = np.asarray(final.classes_)
        if classes.dtype == object and classes.size and isinstance(classes[0], np.ndarray) or (
                self.kind in ("tree", "forest") and getattr(final, "n_outputs_", 1) != 1):
            raise UnsupportedModelError("multi-output / multi-label estimators are not supported")
        if self.kind == "mlp":
            if final.activation != "relu":
                raise UnsupportedModelError(
                    f"MLPClassifier(activation={final.activation!r}) is not supported: only ReLU "
                    "networks have an exact ReLUNetwork view; refit with activation='relu'"
                )
            if final.out_activation_ not in ("logistic", "softmax") or (
                    final.out_activation_ == "logistic" and len(classes) != 2):
                raise UnsupportedModelError("multi-label MLPClassifier models are not supported")
        self.estimator = estimator
        self.final_ = final
        self.steps_ = steps
        self.encoder = encoder
        self.classes_ = classes
        if class_names is None:
            class_names = tuple(c.item() if isinstance(c, np.generic) else c for c in classes)
        self.class_names = tuple(class_names)
        if len(self.class_names) != len(classes):
            raise ValidationError(
                f"class_names has {len(self.class_names)} entries but the estimator has "
                f"{len(classes)} classes"
            )
        self._network: ReLUNetwork | None = None
        self._ensemble: AdditiveTrees | None = None
        if self.kind == "boosted":
            self.additive_trees()  # refuse what cannot be read now, not at the first predict

    # --- helpers ------------------------------------------------------------------------
    def _transform(self, Z: np.ndarray) -> np.ndarray:
        for step in self.steps_:
            Z = step.transform(Z)
        return Z

    def _affine(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Composition of the pipeline's scalers as (scale, shift); None if not affine."""
        d = self.encoder.n_features_out_
        scale, shift = np.ones(d), np.zeros(d)
        for step in self.steps_:
            aff = _affine_of(step, d)
            if aff is None:
                return None
            a, c = aff
            scale, shift = a * scale, a * shift + c
        return scale, shift

    # --- Model protocol -----------------------------------------------------------------
    def logits(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        Z = self._transform(self.encode(X))
        if self.kind == "linear":
            s = np.asarray(self.final_.decision_function(Z), dtype=np.float64)
            return s[:, None] if s.ndim == 1 else s
        if self.kind == "mlp":
            return self._mlp_forward(Z)
        if self.kind == "boosted":  # the exact additive view: the booster's own margin
            return self.additive_trees().logits(self.encode(X))
        p = np.clip(np.asarray(self.final_.predict_proba(Z), dtype=np.float64), _EPS, 1.0)
        if p.shape[1] == 2:
            return (np.log(p[:, 1]) - np.log(p[:, 0]))[:, None]
        return np.log(p)

    def predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        Z = self._transform(self.encode(X))
        if hasattr(self.final_, "predict_proba"):
            try:
                return np.asarray(self.final_.predict_proba(Z), dtype=np.float64)
            except AttributeError:  # e.g. a linear model without probabilities
                pass
        return super().predict_proba(X)

    def _mlp_layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        f = self.final_
        return [(np.asarray(W, dtype=np.float64).T, np.asarray(b, dtype=np.float64))
                for W, b in zip(f.coefs_, f.intercepts_, strict=True)]

    def _mlp_forward(self, Z: np.ndarray) -> np.ndarray:
        h = np.asarray(Z, dtype=np.float64)
        layers = self._mlp_layers()
        for i, (W, b) in enumerate(layers):
            h = h @ W.T + b
            if i < len(layers) - 1:
                h = np.maximum(h, 0.0)
        return h

    def network(self) -> ReLUNetwork:
        """ReLU-network view in model space (linear models and ReLU MLPs): the estimator's own
        layers after the scalers as a fixed input map (``weights``: the map folded in)."""
        if self._network is not None:
            return self._network
        if self.kind in ("tree", "forest", "boosted"):
            view = "additive_trees()" if self.kind == "boosted" else "trees()"
            raise UnsupportedModelError(
                f"{type(self.final_).__name__} has no ReLU-network view; use {view} (MACE, "
                "MILPNearest) or a model-agnostic explainer"
            )
        if self.kind == "linear":
            W = np.atleast_2d(np.asarray(self.final_.coef_, dtype=np.float64))
            b = np.atleast_1d(np.asarray(self.final_.intercept_, dtype=np.float64)).reshape(-1)
            if b.shape[0] != W.shape[0]:
                b = np.broadcast_to(b, (W.shape[0],)).copy()
            layers = [(W, b)]
        else:
            layers = self._mlp_layers()
        aff = self._affine()
        if aff is None:
            raise UnsupportedModelError(
                "the pipeline's preprocessing is not a per-feature affine scaler "
                f"({[type(s).__name__ for s in self.steps_]}); no ReLU-network view in model space"
            )
        scale, shift = aff
        if np.all(scale == 1.0) and np.all(shift == 0.0):
            self._network = ReLUNetwork(layers)
        else:  # the scalers are a fixed input map: Δ moves the estimator's own weights
            self._network = ReLUNetwork(layers, input_map=(np.diag(scale), shift))
        return self._network

    def trees(self) -> list[TreeView]:
        """The tree(s) as :class:`TreeView` arrays in model space (one for a single tree)."""
        if self.kind not in ("tree", "forest"):
            raise UnsupportedModelError(f"{type(self.final_).__name__} is not a tree ensemble")
        aff = self._affine()
        if aff is None:
            raise UnsupportedModelError(
                "the pipeline's preprocessing is not a per-feature affine scaler; no tree view in model space"
            )
        scale, _ = aff
        if np.any(scale <= 0):
            raise UnsupportedModelError("a scaler with non-positive scale would flip tree thresholds")
        pullback = self._pullback if self.steps_ else None
        estimators = [self.final_] if self.kind == "tree" else list(self.final_.estimators_)
        return [TreeView.from_sklearn(e.tree_, pullback=pullback) for e in estimators]

    def _pullback(self, feature: np.ndarray, threshold: np.ndarray) -> np.ndarray:
        """Largest model-space x with float32(steps(x)[feature]) <= threshold, per node.

        The scalers are increasing per feature and IEEE rounding is monotone, so the set of
        such x is a half-line; its end is found by bisection over the float64 values
        themselves (the pipeline's own ``transform`` is the oracle), so routing matches
        scikit-learn bit for bit.
        """
        d = self.encoder.n_features_out_
        rows = np.arange(len(feature))
        t = np.asarray(threshold, dtype=np.float64)

        def passes(x: np.ndarray) -> np.ndarray:  # float32(step(x)) <= t, vectorised over nodes
            Z = np.zeros((len(x), d))
            Z[rows, feature] = x
            z = self._transform(Z)[rows, feature]
            return z.astype(np.float32) <= t

        scale, shift = self._affine()
        guess = (t - shift[feature]) / scale[feature]
        width = 1e-6 * (np.abs(guess) + 1.0)
        lo, hi = guess - width, guess + width
        for _ in range(60):  # widen until passes(lo) and not passes(hi)
            bad_lo, bad_hi = ~passes(lo), passes(hi)
            if not (bad_lo.any() or bad_hi.any()):
                break
            width = np.where(bad_lo | bad_hi, width * 16.0, width)
            lo = np.where(bad_lo, guess - width, lo)
            hi = np.where(bad_hi, guess + width, hi)
        else:
            raise UnsupportedModelError("could not map tree thresholds back through the pipeline")
        klo, khi = _float_key(lo), _float_key(hi)
        while np.any(khi - klo > 1):
            mid = klo + (khi - klo) // 2
            ok = passes(_key_float(mid))
            klo, khi = np.where(ok, mid, klo), np.where(ok, khi, mid)
        return _key_float(klo)

    def additive_trees(self) -> AdditiveTrees:
        """A boosted model (XGBoost, LightGBM) as :class:`AdditiveTrees` over model space: the
        booster's own trees read from its dump (:func:`robustce.models.boosters.booster_view`),
        with the pipeline's per-feature scalers folded into the thresholds."""
        if self.kind != "boosted":
            raise UnsupportedModelError(f"{type(self.final_).__name__} is not a boosted model")
        if self._ensemble is None:
            from robustce.models.boosters import booster_view

            aff = self._affine()
            if aff is None:
                raise UnsupportedModelError(
                    "the pipeline's preprocessing is not a per-feature affine scaler "
                    f"({[type(s).__name__ for s in self.steps_]}); no tree view in model space")
            scale, shift = aff
            self._ensemble = booster_view(self.final_, self.encoder, np.diag(scale), shift,
                                          label=f"the wrapped {type(self.final_).__name__}")
        return self._ensemble

    def tree_predict_proba(self, X: pd.DataFrame | np.ndarray) -> np.ndarray:
        """``predict_proba`` recomputed from :meth:`trees` (equals the estimator's)."""
        return forest_predict_proba(self.trees(), self.encode(X))

    def __repr__(self) -> str:
        final = getattr(self, "final_", None)
        return f"SklearnModel({type(final).__name__}, kind={getattr(self, 'kind', None)!r})"


_INT64_MIN = np.int64(np.iinfo(np.int64).min)


def _float_key(x: np.ndarray) -> np.ndarray:
    """float64 -> int64 keys in the same order (consecutive floats have consecutive keys)."""
    i = np.asarray(x, dtype=np.float64).view(np.int64)
    return np.where(i < 0, _INT64_MIN - i, i)


def _key_float(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=np.int64)
    return np.where(k < 0, _INT64_MIN - k, k).view(np.float64)


def wrap(estimator: Any, encoder: Encoder, class_names: Any = None) -> SklearnModel:
    """Wrap a fitted scikit-learn classifier (or Pipeline) trained on ``encoder``'s model space.

    Parameters
    ----------
    estimator : the fitted classifier or Pipeline, trained on ``encoder.transform(frame)``.
    encoder : the fitted :class:`~robustce.data.Encoder` of its model space.
    class_names : names of the classes (default: ``estimator.classes_``).

    Returns
    -------
    SklearnModel

    Raises
    ------
    UnsupportedModelError
        An estimator robustce cannot read.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    >>> enc = rc.data.Encoder(data.schema).fit(data.frame)
    >>> lr = LogisticRegression().fit(enc.transform(data.frame), data.y)
    >>> model = wrap(lr, enc, class_names=data.class_names)
    >>> model, model.predict(data.frame.head(3)).tolist()
    (SklearnModel(LogisticRegression, kind='linear'), [0, 0, 1])
    """
    return SklearnModel(estimator, encoder, class_names=class_names)
