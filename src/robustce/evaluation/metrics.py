"""Evaluation metrics for counterfactual explanations — vectorised, one registry.

Every metric is a plain function on arrays (rows = CEs, aligned with their queries), and
:func:`evaluate` applies a chosen set of them to an :class:`~robustce.Explanations` object:
one row per query that received a CE, one column per metric. :func:`summarise` turns that
table into the numbers a results table reports (means, coverage, status counts).

Notation: x is a query, x' its CE (rank 0 for single-CE metrics), S = {x'_1, …, x'_|S|} the
set of CEs a multi-CE method returned for x, both in model space [0, 1]^d unless said otherwise.

Metrics (the names of :data:`METRICS`):

* ``validity`` — 1 iff the model predicts the target class for x' (a plain forward pass).
* ``proximity_l0/l1/l2/linf`` — ‖x' − x‖_p in model space (ℓ0 counts columns changed by more
  than 1e-9).
* ``proximity_l1_mean`` — ‖x' − x‖₁ / d in model space, d = the number of model-space columns
  (the mean per-column |Δ|): PROPLACE's *ℓ1* (the authors' ``normalised_l1``).
* ``raw_l0/l1/l2/linf`` — the MACE distance (Karimi et al., eq. 3) over raw features:
  δ_j = |x'_j − x_j| / R_j for numeric features (R_j = upper − lower), |Δ level| / (k_j − 1)
  for ordinals with k_j levels, 𝕀[x'_j ≠ x_j] for categorical and binary features, so a
  one-hot group counts once; the metric is ‖δ‖_p. ``raw_l0`` equals ``sparsity``.
* ``sparsity`` — the number of raw features changed.
* ``lof`` / ``lof_inlier`` — plausibility by the 10-Local Outlier Factor (Breunig et al.;
  PROPLACE's *lof*): scikit-learn ``LocalOutlierFactor(n_neighbors=10, novelty=True)`` fitted on
  the training points whose label is the CE's target class; ``lof`` is the LOF value (≈ 1 for
  inliers, > 1.5 outliers), ``lof_inlier`` is 1 when scikit-learn's ``predict`` calls the CE an
  inlier. One estimator per (dataset, encoder, target class), cached.
* ``vr`` — validity after retraining (PROPLACE's *vr*): the fraction of the models of a
  :class:`~robustce.models.families.ModelFamily` that predict the target class for x'.
* ``v_delta`` — Δ-validity (PROPLACE's *vΔ*): 1 iff x' is Δ-robust for the
  :class:`~robustce.robustness.ParameterShift` by the exact test
  :func:`robustce.robustness.is_delta_robust`.
* ``time`` — seconds the method spent on the query; ``n_counterfactuals`` — |S|.
* ``k_distance_l1/l2`` — (1/|S|) Σ_j dist(x, x'_j) (Leofante & Potyka, eq. 12).
* ``k_diversity_l1/l2`` — (|S| choose 2)⁻¹ Σ_{j<l} dist(x'_j, x'_l) (eq. 13); NaN when |S| < 2.
* ``set_distance_sum_l1/l2``, ``set_distance_max_l1/l2`` — the set distances of Leofante &
  Potyka (eq. 4–5) between the CEs S₁ of x and the CEs S₂ of a perturbed x₂ (``perturbed=``):
  set-distance_Σ(S₁, S₂) = 1/(2|S₁|) Σ_{c₁∈S₁} min_{c₂∈S₂} d(c₁, c₂) + 1/(2|S₂|) Σ_{c₂∈S₂}
  min_{c₁∈S₁} d(c₂, c₁) and set-distance_max(S₁, S₂) = ½ (max_{c₁} min_{c₂} d(c₁, c₂) +
  max_{c₂} min_{c₁} d(c₂, c₁)).
* ``coverage`` — summary only: found / (queries − already_target).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.distance import L0_TOL, NORMS, Distance
from robustce.errors import ConfigError, ValidationError
from robustce.models.network import resolve_targets

__all__ = [
    "METRICS",
    "LOFScorer",
    "MetricSpec",
    "available_metrics",
    "check_metrics",
    "default_metrics",
    "delta_validity",
    "evaluate",
    "feature_deltas",
    "k_distance",
    "k_distance_batch",
    "k_diversity",
    "k_diversity_batch",
    "lof_scores",
    "lp_distance",
    "proximity",
    "proximity_l1_mean",
    "raw_distance",
    "retrained_validity",
    "set_distance_max",
    "set_distance_sum",
    "set_distances_batch",
    "sparsity",
    "summarise",
    "validity",
]

INPUTS = ("data", "family", "shift", "perturbed")


# ----------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: its name, what it means, and what :func:`evaluate` needs for it.

    ``needs`` ⊆ {"data", "family", "shift", "perturbed"}; ``higher_is_better`` is None when
    neither direction is better (time is lower-is-better); ``per_query`` is False for
    summary-only metrics (``coverage``)."""

    name: str
    description: str
    needs: frozenset[str] = frozenset()
    higher_is_better: bool | None = None
    per_query: bool = True


def _spec(name: str, description: str, needs: Iterable[str] = (), higher: bool | None = None,
          per_query: bool = True) -> MetricSpec:
    return MetricSpec(name, description, frozenset(needs), higher, per_query)


_SPECS = [
    _spec("validity", "1 iff the model predicts the target class for the CE (forward pass)", (),
          True),
    *[_spec(f"proximity_{p}", f"{p.upper()} distance query→CE in model space [0,1]^d", (), False)
      for p in NORMS],
    _spec("proximity_l1_mean", "L1 distance query→CE in model space divided by the number of "
          "model-space columns d (PROPLACE's ℓ1, the authors' normalised_l1)", (), False),
    *[_spec(f"raw_{p}", f"{p.upper()} norm of the MACE per-feature distances (numeric |Δ|/range, "
            "ordinal |Δlevel|/(k−1), categorical 0/1)", (), False) for p in NORMS],
    _spec("sparsity", "number of raw features changed", (), False),
    _spec("lof", "10-Local Outlier Factor of the CE w.r.t. training points of the target class "
          "(≈1 inlier, >1.5 outlier)", ("data",), False),
    _spec("lof_inlier", "1 iff LOF calls the CE an inlier (mean = inlier share)", ("data",), True),
    _spec("vr", "fraction of retrained models (ModelFamily) predicting the target class",
          ("family",), True),
    _spec("v_delta", "1 iff the CE is Δ-robust by the exact test (is_delta_robust)", ("shift",),
          True),
    _spec("time", "seconds the method spent on the query", (), False),
    _spec("n_counterfactuals", "number of CEs returned for the query", (), None),
    *[_spec(f"k_distance_{p}", f"mean {p.upper()} distance from the query to its CEs (eq. 12)",
            (), False) for p in ("l1", "l2")],
    *[_spec(f"k_diversity_{p}", f"mean pairwise {p.upper()} distance within the CE set (eq. 13); "
            "NaN for fewer than two CEs", (), True) for p in ("l1", "l2")],
    *[_spec(f"set_distance_{kind}_{p}", f"set-distance_{kind} ({'eq. 4' if kind == 'sum' else 'eq. 5'}"
            f") under {p.upper()} between the CEs of a query and of its perturbed copy",
            ("perturbed",), False) for kind in ("sum", "max") for p in ("l1", "l2")],
    _spec("coverage", "share of queries needing a CE that got one (summary only)", (), True,
          per_query=False),
]

#: name -> :class:`MetricSpec`, in the order :func:`evaluate` writes columns.
METRICS: dict[str, MetricSpec] = {s.name: s for s in _SPECS}


def available_metrics() -> list[str]:
    """Names of all registered metrics (configs validate against this list)."""
    return list(METRICS)


def check_metrics(names: Iterable[str] | None, *, data: Any = None, family: Any = None,
                  shift: Any = None, perturbed: Any = None) -> list[str]:
    """Validate metric names before any work; returns the per-query ones in registry order.

    ``names=None`` means :func:`default_metrics`. An unknown name, or a metric whose input
    (``data``/``family``/``shift``/``perturbed``) is not given, raises
    :class:`~robustce.errors.ConfigError` naming it."""
    have = _have(data, family, shift, perturbed)
    if names is None:
        return default_metrics(data=data, family=family, shift=shift, perturbed=perturbed)
    if isinstance(names, str):
        names = [names]
    names = list(names)
    for n in names:
        if n not in METRICS:
            raise ConfigError(f"unknown metric {n!r}; available: {', '.join(METRICS)}")
        missing = sorted(METRICS[n].needs - have)
        if missing:
            raise ConfigError(f"metric {n!r} needs {' and '.join(missing)}= to be given")
    wanted = set(names)
    return [n for n, s in METRICS.items() if n in wanted and s.per_query]


def default_metrics(*, data: Any = None, family: Any = None, shift: Any = None,
                    perturbed: Any = None) -> list[str]:
    """Every per-query metric whose inputs are available."""
    have = _have(data, family, shift, perturbed)
    return [n for n, s in METRICS.items() if s.per_query and s.needs <= have]


def _have(data: Any, family: Any, shift: Any, perturbed: Any) -> set[str]:
    given = {"data": data, "family": family, "shift": shift, "perturbed": perturbed}
    return {k for k, v in given.items() if v is not None}


# ----------------------------------------------------------------------------------------
# Distances
# ----------------------------------------------------------------------------------------


def lp_distance(A: np.ndarray, B: np.ndarray, norm: str = "l1", *,
                weights: np.ndarray | None = None, tol: float = L0_TOL) -> np.ndarray:
    """‖A − B‖_p along the last axis (broadcasting): :class:`robustce.distance.Distance` in
    model space. ``weights`` scale each coordinate's |difference|; ℓ0 counts weighted
    differences larger than ``tol``."""
    return Distance(norm, weights=weights, tol=tol)(A, B)


def proximity(X: np.ndarray, C: np.ndarray, norm: str = "l1") -> np.ndarray:
    """Row-wise ‖C_i − X_i‖_p in model space."""
    X, C = _pair(X, C)
    return lp_distance(X, C, norm)


def proximity_l1_mean(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Row-wise ‖C_i − X_i‖₁ / d in model space (d = number of columns): the mean absolute
    change per model-space column, PROPLACE's ℓ1."""
    X, C = _pair(X, C)
    return lp_distance(X, C, "l1") / X.shape[1]


def _pair(X: Any, C: Any) -> tuple[np.ndarray, np.ndarray]:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    if X.shape != C.shape:
        raise ValidationError(f"queries and CEs must have the same shape, got {X.shape} and {C.shape}")
    return X, C


def _raw_pair(encoder: Encoder, X: Any, C: Any) -> tuple[np.ndarray, np.ndarray]:
    X, C = _pair(X, C)
    return encoder.check_array(X, name="queries"), encoder.check_array(C, name="CEs")


def feature_deltas(encoder: Encoder, X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """MACE per-feature distances δ_j ∈ [0, 1], shape (n, n_features): numeric |Δ|/R_j,
    ordinal |Δ level|/(k_j − 1), categorical and binary 𝕀[≠] (one-hot groups count once) —
    the per-unit deltas of ``Distance(space="raw")`` (exact on valid encodings)."""
    X, C = _raw_pair(encoder, X, C)
    return Distance("l1", space="raw").deltas(X, C, encoder)


def raw_distance(encoder: Encoder, X: np.ndarray, C: np.ndarray, norm: str = "l1") -> np.ndarray:
    """‖δ‖_p of :func:`feature_deltas` (MACE eq. 3 with one norm; ℓ0 counts δ_j > 0)."""
    X, C = _raw_pair(encoder, X, C)
    return Distance(norm, space="raw", tol=0.0)(X, C, encoder)


def sparsity(encoder: Encoder, X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Number of raw features whose value differs between query and CE."""
    return raw_distance(encoder, X, C, "l0").astype(np.int64)


# ----------------------------------------------------------------------------------------
# Validity and robustness
# ----------------------------------------------------------------------------------------


def validity(model: Any, C: np.ndarray, target_class: Any) -> np.ndarray:
    """Bool per CE: the model predicts the (per-row or scalar) target class."""
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    if len(C) == 0:
        return np.zeros(0, dtype=bool)
    return model.predict(C) == resolve_targets(target_class, len(C))


def retrained_validity(family: Any, C: np.ndarray, target_class: Any) -> np.ndarray:
    """Fraction of the family's models predicting the target class, per CE (PROPLACE *vr*).

    ``family.predict(C)`` must return labels of shape (n_models, n)."""
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    if len(C) == 0:
        return np.zeros(0)
    P = np.asarray(family.predict(C))
    if P.ndim != 2 or P.shape[1] != len(C):
        raise ValidationError(f"family.predict must return shape (n_models, {len(C)}), got {P.shape}")
    return (P == resolve_targets(target_class, len(C))[None, :]).mean(axis=0)


def delta_validity(model: Any, C: np.ndarray, shift: Any, target_class: Any) -> np.ndarray:
    """Bool per CE: Δ-robust under ``shift`` by the exact test (PROPLACE *vΔ*)."""
    from robustce.robustness import is_delta_robust  # lazily: it pulls in the MILP layer

    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    t = resolve_targets(target_class, len(C))
    if len(C) == 0:
        return np.zeros(0, dtype=bool)
    # one batched test: the exact test takes a target class per row
    return np.asarray(is_delta_robust(model, C, shift, target_class=t), dtype=bool)


# ----------------------------------------------------------------------------------------
# Plausibility (LOF)
# ----------------------------------------------------------------------------------------


def lof_scores(reference: np.ndarray, C: np.ndarray, n_neighbors: int = 10
               ) -> tuple[np.ndarray, np.ndarray]:
    """(LOF value, inlier flag) of each row of C w.r.t. ``reference`` (novelty mode).

    The LOF value is ``-score_samples`` of scikit-learn's ``LocalOutlierFactor(novelty=True)``;
    ``n_neighbors`` is lowered to len(reference) − 1 for tiny references."""
    est = _fit_lof(np.asarray(reference, dtype=np.float64), n_neighbors)
    return _score_lof(est, C)


def _fit_lof(reference: np.ndarray, n_neighbors: int) -> Any:
    from sklearn.neighbors import LocalOutlierFactor

    if int(n_neighbors) < 1:
        raise ValidationError(f"lof_neighbors must be a positive integer, got {n_neighbors}")
    if len(reference) < 2:
        return None
    k = min(int(n_neighbors), len(reference) - 1)
    return LocalOutlierFactor(n_neighbors=k, novelty=True).fit(reference)


def _score_lof(est: Any, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    if est is None:
        return np.full(len(C), np.nan), np.full(len(C), np.nan)
    if len(C) == 0:
        return np.zeros(0), np.zeros(0)
    return -est.score_samples(C), (est.predict(C) == 1).astype(np.float64)


class LOFScorer:
    """LOF plausibility w.r.t. the training points of each target class, fitted once per
    class on first use. ``labels="label"`` (default) selects points by their true label,
    ``"model"`` by the model's prediction (pass ``model=``)."""

    def __init__(self, data: Dataset, encoder: Encoder, n_neighbors: int = 10, *,
                 labels: str = "label", model: Any = None):
        if not isinstance(data, Dataset):
            raise ValidationError(f"data must be a robustce Dataset, got {type(data).__name__}")
        if labels not in ("label", "model"):
            raise ValidationError(f"labels must be 'label' or 'model', got {labels!r}")
        if labels == "model" and model is None:
            raise ValidationError("labels='model' needs model=")
        self.n_neighbors = int(n_neighbors)
        if self.n_neighbors < 1:
            raise ValidationError(f"lof_neighbors must be a positive integer, got {n_neighbors}")
        self._X = encoder.transform(data.frame)
        self._y = data.y if labels == "label" else np.asarray(model.predict(self._X))
        self._fitted: dict[int, Any] = {}

    def estimator(self, target_class: int) -> Any:
        t = int(target_class)
        if t not in self._fitted:
            self._fitted[t] = _fit_lof(self._X[self._y == t], self.n_neighbors)
        return self._fitted[t]

    def score(self, C: np.ndarray, target_class: Any) -> tuple[np.ndarray, np.ndarray]:
        """(LOF value, inlier flag) per CE, each scored against its own target class."""
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        t = resolve_targets(target_class, len(C))
        lof, inlier = np.full(len(C), np.nan), np.full(len(C), np.nan)
        for k in np.unique(t):
            rows = np.flatnonzero(t == k)
            lof[rows], inlier[rows] = _score_lof(self.estimator(int(k)), C[rows])
        return lof, inlier


_LOF_CACHE: dict[tuple[int, int, int], tuple[Any, Any, LOFScorer]] = {}
_LOF_CACHE_SIZE = 8


def _lof_scorer(data: Dataset, encoder: Encoder, n_neighbors: int) -> LOFScorer:
    """A cached :class:`LOFScorer` for (data, encoder, n_neighbors): repeated evaluations of
    several methods on one dataset fit each class's LOF once. The cache is keyed on object
    identity (held by weak references, 8 entries); a Dataset changed in place after a first
    evaluation is not re-read — pass a new Dataset object instead."""
    key = (id(data), id(encoder), int(n_neighbors))
    hit = _LOF_CACHE.get(key)
    if hit is not None and hit[0]() is data and hit[1]() is encoder and len(data) == hit[2]._X.shape[0]:
        return hit[2]
    scorer = LOFScorer(data, encoder, n_neighbors)
    while len(_LOF_CACHE) >= _LOF_CACHE_SIZE:
        _LOF_CACHE.pop(next(iter(_LOF_CACHE)))
    _LOF_CACHE[key] = (weakref.ref(data), weakref.ref(encoder), scorer)
    return scorer


# ----------------------------------------------------------------------------------------
# Sets of CEs (Leofante & Potyka)
# ----------------------------------------------------------------------------------------


def _set(S: Any) -> np.ndarray:
    S = np.atleast_2d(np.asarray(S, dtype=np.float64))
    if len(S) == 0:
        raise ValidationError("a CE set must not be empty")
    return S


def k_distance(x: np.ndarray, S: np.ndarray, norm: str = "l1") -> float:
    """(1/|S|) Σ_j dist(x, x'_j) (eq. 12)."""
    S = _set(S)
    return float(lp_distance(S, np.asarray(x, dtype=np.float64)[None, :], norm).mean())


def k_diversity(S: np.ndarray, norm: str = "l1") -> float:
    """(|S| choose 2)⁻¹ Σ_{j<l} dist(x'_j, x'_l) (eq. 13); NaN when |S| < 2."""
    S = _set(S)
    if len(S) < 2:
        return math.nan
    D = lp_distance(S[:, None, :], S[None, :, :], norm)
    j, l = np.triu_indices(len(S), k=1)
    return float(D[j, l].mean())


def set_distance_sum(S1: np.ndarray, S2: np.ndarray, norm: str = "l1") -> float:
    """set-distance_Σ(S₁, S₂) (eq. 4)."""
    D = lp_distance(_set(S1)[:, None, :], _set(S2)[None, :, :], norm)
    return float(0.5 * D.min(axis=1).mean() + 0.5 * D.min(axis=0).mean())


def set_distance_max(S1: np.ndarray, S2: np.ndarray, norm: str = "l1") -> float:
    """set-distance_max(S₁, S₂) (eq. 5)."""
    D = lp_distance(_set(S1)[:, None, :], _set(S2)[None, :, :], norm)
    return float(0.5 * (D.min(axis=1).max() + D.min(axis=0).max()))


def _rows(C: Any, n_rows: int, d: int | None = None) -> np.ndarray:
    """C as a 2-D float array of ``n_rows`` rows (an empty C keeps its width, or ``d``)."""
    C = np.asarray(C, dtype=np.float64)
    if C.ndim == 2 and len(C) == n_rows:
        return C
    if C.size == 0 and n_rows == 0:
        return np.zeros((0, C.shape[-1] if C.ndim == 2 else (d or 0)))
    if n_rows == 0 or C.size % n_rows:
        raise ValidationError(f"{C.size} values cannot form {n_rows} CE rows")
    return C.reshape(n_rows, -1)


def _padded(C: np.ndarray, owner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Long-format sets (rows C, set id ``owner`` in [0, n)) -> (n, k_max, d) and a mask."""
    owner = np.asarray(owner, dtype=np.int64)
    C = _rows(C, len(owner))
    counts = np.bincount(owner, minlength=n)
    k = max(int(counts.max(initial=0)), 1)
    order = np.argsort(owner, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(len(owner)) - starts[owner[order]]
    P = np.zeros((n, k, C.shape[1]))
    mask = np.zeros((n, k), dtype=bool)
    P[owner[order], slot] = C[order]
    mask[owner[order], slot] = True
    return P, mask


def k_distance_batch(X: np.ndarray, C: np.ndarray, owner: np.ndarray, norm: str = "l1"
                     ) -> np.ndarray:
    """eq. 12 for many sets at once: X (n, d) queries, C rows owned by query ``owner``.
    NaN for queries without CEs."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    owner = np.asarray(owner, dtype=np.int64)
    d = lp_distance(_rows(C, len(owner), X.shape[1]), X[owner], norm)
    counts = np.bincount(owner, minlength=len(X))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(owner, weights=d, minlength=len(X)) / np.where(counts, counts, np.nan)


def k_diversity_batch(C: np.ndarray, owner: np.ndarray, n: int, norm: str = "l1") -> np.ndarray:
    """eq. 13 for many sets at once; NaN for sets with fewer than two CEs."""
    P, mask = _padded(C, owner, n)
    D = lp_distance(P[:, :, None, :], P[:, None, :, :], norm)
    k = P.shape[1]
    pair = mask[:, :, None] & mask[:, None, :] & np.triu(np.ones((k, k), dtype=bool), 1)[None]
    n_pairs = pair.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n_pairs > 0, (D * pair).sum(axis=(1, 2)) / np.maximum(n_pairs, 1), np.nan)


def set_distances_batch(C1: np.ndarray, owner1: np.ndarray, C2: np.ndarray, owner2: np.ndarray,
                        n: int, norm: str = "l1") -> tuple[np.ndarray, np.ndarray]:
    """(set-distance_Σ, set-distance_max) between S₁ = rows of C1 owned by i and S₂ = rows
    of C2 owned by i, for i in [0, n); NaN where either set is empty."""
    P1, m1 = _padded(C1, owner1, n)
    P2, m2 = _padded(C2, owner2, n)
    D = lp_distance(P1[:, :, None, :], P2[:, None, :, :], norm)
    both = m1[:, :, None] & m2[:, None, :]
    D = np.where(both, D, np.inf)
    to2 = D.min(axis=2)  # (n, k1): min over S2 for each c1
    to1 = D.min(axis=1)  # (n, k2): min over S1 for each c2
    ok = m1.any(axis=1) & m2.any(axis=1)
    c1, c2 = m1.sum(axis=1), m2.sum(axis=1)
    s1 = np.where(m1, to2, 0.0).sum(axis=1) / np.maximum(c1, 1)
    s2 = np.where(m2, to1, 0.0).sum(axis=1) / np.maximum(c2, 1)
    mx1 = np.where(m1, to2, -np.inf).max(axis=1)
    mx2 = np.where(m2, to1, -np.inf).max(axis=1)
    with np.errstate(invalid="ignore"):
        total = np.where(ok, 0.5 * (s1 + s2), np.nan)
        worst = np.where(ok, 0.5 * (mx1 + mx2), np.nan)
    return total, worst


# ----------------------------------------------------------------------------------------
# Explanations -> per-query table -> summary
# ----------------------------------------------------------------------------------------


def evaluate(
    explanations: Any,
    model: Any,
    *,
    data: Dataset | None = None,
    family: Any = None,
    shift: Any = None,
    perturbed: Any = None,
    metrics: Sequence[str] | None = None,
    lof_neighbors: int = 10,
) -> pd.DataFrame:
    """Per-query metrics of ``explanations`` (an :class:`~robustce.Explanations`).

    One row per query that has a CE (index ``query_id``), one column per metric in registry
    order. Single-CE metrics use the rank-0 CE; ``k_*`` metrics use every CE of the query;
    ``set_distance_*`` compare the CEs of query i with those of query i of ``perturbed``
    (another Explanations for perturbed copies of the same queries, paired by position).
    ``data`` is the training Dataset (LOF), ``family`` a ModelFamily (``vr``), ``shift`` a
    ParameterShift (``v_delta``). ``metrics=None`` computes every metric whose inputs are
    given; naming a metric whose input is missing, or an unknown one, raises ConfigError
    before any work."""
    names = check_metrics(metrics, data=data, family=family, shift=shift, perturbed=perturbed)
    enc = model.encoder
    width = explanations.queries_encoded.shape[1]
    if width != enc.n_features_out_:
        raise ValidationError(f"explanations have {width} model-space columns but the model's "
                              f"encoder has {enc.n_features_out_}")
    if perturbed is not None and len(perturbed) != len(explanations):
        raise ValidationError(f"perturbed has {len(perturbed)} queries, explanations "
                              f"{len(explanations)}; they are paired by position")
    pos, C = explanations.first_counterfactuals()
    order = np.argsort(pos, kind="stable")
    pos, C = pos[order], C[order]
    X = explanations.queries_encoded[pos]
    t = explanations.target_class.to_numpy()[pos]
    out: dict[str, np.ndarray] = {}
    cache: dict[str, Any] = {}

    def all_cfs(expl: Any) -> tuple[np.ndarray, np.ndarray]:
        owner = expl.queries.index.get_indexer(expl.counterfactuals["query_id"])
        return expl.counterfactuals_encoded, owner

    for name in names:
        if name == "validity":
            out[name] = validity(model, C, t).astype(np.float64)
        elif name == "proximity_l1_mean":
            out[name] = proximity_l1_mean(X, C)
        elif name.startswith("proximity_"):
            out[name] = proximity(X, C, name.split("_", 1)[1])
        elif name.startswith("raw_"):
            if "delta" not in cache:
                cache["delta"] = feature_deltas(enc, X, C)
            out[name] = lp_distance(cache["delta"], 0.0, name.split("_", 1)[1], tol=0.0)
        elif name == "sparsity":
            out[name] = (feature_deltas(enc, X, C) > 0).sum(axis=1).astype(np.float64)
        elif name in ("lof", "lof_inlier"):
            if "lof" not in cache:
                cache["lof"] = _lof_scorer(data, enc, lof_neighbors).score(C, t)
            out[name] = cache["lof"][0 if name == "lof" else 1]
        elif name == "vr":
            out[name] = retrained_validity(family, C, t)
        elif name == "v_delta":
            out[name] = delta_validity(model, C, shift, t).astype(np.float64)
        elif name == "time":
            out[name] = explanations.timings.to_numpy(dtype=np.float64)[pos]
        elif name == "n_counterfactuals":
            _, owner = all_cfs(explanations)
            out[name] = np.bincount(owner, minlength=len(explanations))[pos].astype(np.float64)
        elif name.startswith("k_distance_"):
            Call, owner = all_cfs(explanations)
            out[name] = k_distance_batch(explanations.queries_encoded, Call, owner,
                                         name.rsplit("_", 1)[1])[pos]
        elif name.startswith("k_diversity_"):
            Call, owner = all_cfs(explanations)
            out[name] = k_diversity_batch(Call, owner, len(explanations),
                                          name.rsplit("_", 1)[1])[pos]
        elif name.startswith("set_distance_"):
            p = name.rsplit("_", 1)[1]
            if f"set_{p}" not in cache:
                C1, o1 = all_cfs(explanations)
                C2, o2 = all_cfs(perturbed)
                cache[f"set_{p}"] = set_distances_batch(C1, o1, C2, o2, len(explanations), p)
            out[name] = cache[f"set_{p}"][0 if "_sum_" in name else 1][pos]
        else:  # pragma: no cover - every registered per-query metric is handled above
            raise ConfigError(f"metric {name!r} has no implementation")
    index = explanations.queries.index[pos]
    frame = pd.DataFrame(out, index=index, columns=names)
    frame.index.name = "query_id"
    return frame


def summarise(per_query: pd.DataFrame, explanations: Any) -> dict[str, float]:
    """Means of the per-query metrics (NaNs skipped), plus ``coverage``, ``n_queries``,
    ``n_evaluated`` (rows of ``per_query``), ``n_<status>`` for every status and
    ``time_total`` (seconds over all queries)."""
    out: dict[str, float] = {}
    for col in per_query.columns:
        values = pd.to_numeric(per_query[col], errors="coerce").to_numpy(dtype=np.float64)
        finite = values[~np.isnan(values)]
        out[col] = float(finite.mean()) if len(finite) else math.nan
    out["coverage"] = float(explanations.coverage)
    out["n_queries"] = float(len(explanations))
    out["n_evaluated"] = float(len(per_query))
    for status, count in explanations.status_counts().items():
        out[f"n_{status}"] = float(count)
    out["time_total"] = float(explanations.timings.sum())
    return out
