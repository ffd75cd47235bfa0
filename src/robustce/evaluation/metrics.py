"""Evaluation metrics for counterfactual explanations — vectorised, one registry.

Every metric is a plain function on arrays (rows = CEs, aligned with their queries). The
registry :data:`METRICS` maps each name to a :class:`MetricSpec` that carries its *compute*
function (scikit-learn's scorer dict is the model): ``compute(inputs) -> one value per query``
on a :class:`MetricInputs`. :func:`evaluate` applies a chosen set of them to an
:class:`~robustce.Explanations` object — one row per query that received a CE, one column per
metric — and :func:`summarise` turns that table into the numbers a results table reports
(means, coverage, status counts). A new metric is one :func:`register_metric` call (or one
entry in ``_SPECS``), not an edit of :func:`evaluate`.

Plausibility (LOF) lives in :mod:`robustce.evaluation.plausibility`, the metrics of CE sets in
:mod:`robustce.evaluation.set_metrics`; both are registered here and re-exported.

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
  :func:`robustce.robustness.is_delta_robust`; for a tree model with an
  :class:`~robustce.robustness.EnsembleShift`, (δ, ε)-robust by its exact test.
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.encoder import Encoder
from robustce.distance import L0_TOL, NORMS, Distance
from robustce.errors import ConfigError, ValidationError
from robustce.evaluation.plausibility import LOFScorer, lof_scorer, lof_scores
from robustce.evaluation.set_metrics import (
    k_distance,
    k_distance_batch,
    k_diversity,
    k_diversity_batch,
    set_distance_max,
    set_distance_sum,
    set_distances_batch,
)
from robustce.models.network import resolve_targets

__all__ = [
    "METRICS",
    "LOFScorer",
    "MetricInputs",
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
    "lof_scorer",
    "lof_scores",
    "lp_distance",
    "proximity",
    "proximity_l1_mean",
    "raw_distance",
    "register_metric",
    "retrained_validity",
    "set_distance_max",
    "set_distance_sum",
    "set_distances_batch",
    "sparsity",
    "summarise",
    "unregister_metric",
    "validity",
]

INPUTS = ("data", "family", "shift", "perturbed")


# ----------------------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------------------


class MetricInputs:
    """What a metric's compute function sees, for the queries that received a CE.

    ``X`` (n, d) the queries and ``C`` (n, d) their rank-0 CEs in model space, ``targets`` (n,)
    their target classes, ``pos`` their positions in ``explanations``; ``encoder`` is the
    model's. Intermediate results shared by several metrics (the per-feature deltas, the LOF
    scores, every CE of every query, the set distances) are computed once per :func:`evaluate`
    call.

    Parameters
    ----------
    explanations : the :class:`~robustce.Explanations` evaluated.
    model : the model they explain (with ``.encoder``).
    data : the training :class:`~robustce.data.Dataset` (for plausibility metrics), or None.
    family : the :class:`~robustce.models.ModelFamily` (for retrain-robustness metrics), or None.
    shift : the :class:`~robustce.robustness.ParameterShift` Δ (for Δ-robustness), or None.
    perturbed : :class:`~robustce.Explanations` of perturbed copies of the queries, paired by
        position (for stability metrics), or None.
    lof_neighbors : LOF's k for plausibility (default 10).
    lof : a fitted :class:`LOFScorer` of ``data`` to reuse, or None (one is fitted on use).

    Examples
    --------
    A custom metric's compute receives one; built directly it shows what is there:

    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> result = rc.methods.MILPNearest(model, train).explain(rejected)
    >>> inputs = rc.evaluation.MetricInputs(result, model, data=train)
    >>> inputs.X.shape, inputs.C.shape, inputs.targets.tolist()
    ((3, 13), (3, 13), [1, 1, 1])
    >>> inputs.feature_deltas().shape  # per raw feature
    (3, 8)
    """

    def __init__(self, explanations: Any, model: Any, *, data: Any = None, family: Any = None,
                 shift: Any = None, perturbed: Any = None, lof_neighbors: int = 10,
                 lof: LOFScorer | None = None):
        self.explanations, self.model, self.encoder = explanations, model, model.encoder
        self.data, self.family, self.shift, self.perturbed = data, family, shift, perturbed
        self.lof_neighbors = lof_neighbors
        self._lof = lof
        pos, C = explanations.first_counterfactuals()
        order = np.argsort(pos, kind="stable")
        self.pos, self.C = pos[order], C[order]
        self.X = explanations.queries_encoded[self.pos]
        self.targets = explanations.target_class.to_numpy()[self.pos]
        self._cache: dict[Any, Any] = {}

    def _once(self, key: Any, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def feature_deltas(self) -> np.ndarray:
        """MACE per-feature deltas query→CE, (n, n_features)."""
        return self._once("deltas", lambda: feature_deltas(self.encoder, self.X, self.C))

    def lof(self) -> tuple[np.ndarray, np.ndarray]:
        """(LOF value, inlier flag) per CE against its target class's training points."""
        def score() -> tuple[np.ndarray, np.ndarray]:
            scorer = self._lof if self._lof is not None else lof_scorer(
                self.data, self.encoder, self.lof_neighbors)
            return scorer.score(self.C, self.targets)

        return self._once("lof", score)

    def all_cfs(self, which: str = "explanations") -> tuple[np.ndarray, np.ndarray]:
        """Every CE of every query (rows, owner position) of the explanations or ``perturbed``."""
        expl = self.explanations if which == "explanations" else self.perturbed

        def make() -> tuple[np.ndarray, np.ndarray]:
            owner = expl.queries.index.get_indexer(expl.counterfactuals["query_id"])
            return expl.counterfactuals_encoded, owner

        return self._once(("cfs", which), make)

    def set_distances(self, norm: str) -> tuple[np.ndarray, np.ndarray]:
        """(set-distance_Σ, set-distance_max) per query position under ``norm``."""
        def make() -> tuple[np.ndarray, np.ndarray]:
            C1, o1 = self.all_cfs()
            C2, o2 = self.all_cfs("perturbed")
            return set_distances_batch(C1, o1, C2, o2, len(self.explanations), norm)

        return self._once(("set", norm), make)


#: compute function of a per-query metric: inputs -> one value per row of ``inputs.C``
Compute = Callable[[MetricInputs], np.ndarray]


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric: its name, what it means, what :func:`evaluate` needs for it, and
    the function that computes it.

    ``needs`` ⊆ {"data", "family", "shift", "perturbed"}; ``higher_is_better`` is None when
    neither direction is better (time is lower-is-better); ``per_query`` is False for
    summary-only metrics (``coverage``, no ``compute``).

    Parameters
    ----------
    name : the metric's column name (unique in the registry).
    description : one line, shown by the CLI and in reports.
    needs : the inputs of :func:`evaluate` it reads, as above.
    higher_is_better : True, False or None (see above).
    per_query : whether it is computed per query (see above).
    compute : the function computing it from a :class:`MetricInputs` (per-query metrics).

    Examples
    --------
    >>> spec = rc.evaluation.METRICS["validity"]
    >>> spec.description, spec.higher_is_better, sorted(rc.evaluation.METRICS["lof"].needs)
    ('1 iff the model predicts the target class for the CE (forward pass)', True, ['data'])
    >>> import numpy as np
    >>> max_change = rc.evaluation.MetricSpec(
    ...     "max_change", "largest model-space change of a CE", higher_is_better=False,
    ...     compute=lambda m: np.abs(m.C - m.X).max(axis=1))
    >>> max_change.per_query, max_change.needs
    (True, frozenset())
    """

    name: str
    description: str
    needs: frozenset[str] = frozenset()
    higher_is_better: bool | None = None
    per_query: bool = True
    compute: Compute | None = field(default=None, compare=False, repr=False)


def _spec(name: str, description: str, needs: Iterable[str] = (), higher: bool | None = None,
          per_query: bool = True, compute: Compute | None = None) -> MetricSpec:
    return MetricSpec(name, description, frozenset(needs), higher, per_query, compute)


def _proximity(norm: str) -> Compute:
    return lambda m: proximity(m.X, m.C, norm)


def _raw(norm: str) -> Compute:
    return lambda m: lp_distance(m.feature_deltas(), 0.0, norm, tol=0.0)


def _n_counterfactuals(m: MetricInputs) -> np.ndarray:
    _, owner = m.all_cfs()
    return np.bincount(owner, minlength=len(m.explanations))[m.pos].astype(np.float64)


def _k_distance(norm: str) -> Compute:
    def compute(m: MetricInputs) -> np.ndarray:
        C, owner = m.all_cfs()
        return k_distance_batch(m.explanations.queries_encoded, C, owner, norm)[m.pos]
    return compute


def _k_diversity(norm: str) -> Compute:
    def compute(m: MetricInputs) -> np.ndarray:
        C, owner = m.all_cfs()
        return k_diversity_batch(C, owner, len(m.explanations), norm)[m.pos]
    return compute


def _set_distance(kind: str, norm: str) -> Compute:
    return lambda m: m.set_distances(norm)[0 if kind == "sum" else 1][m.pos]


_SPECS = [
    _spec("validity", "1 iff the model predicts the target class for the CE (forward pass)", (),
          True, compute=lambda m: validity(m.model, m.C, m.targets).astype(np.float64)),
    *[_spec(f"proximity_{p}", f"{p.upper()} distance query→CE in model space [0,1]^d", (), False,
            compute=_proximity(p)) for p in NORMS],
    _spec("proximity_l1_mean", "L1 distance query→CE in model space divided by the number of "
          "model-space columns d (PROPLACE's ℓ1, the authors' normalised_l1)", (), False,
          compute=lambda m: proximity_l1_mean(m.X, m.C)),
    *[_spec(f"raw_{p}", f"{p.upper()} norm of the MACE per-feature distances (numeric |Δ|/range, "
            "ordinal |Δlevel|/(k−1), categorical 0/1)", (), False, compute=_raw(p)) for p in NORMS],
    _spec("sparsity", "number of raw features changed", (), False,
          compute=lambda m: (m.feature_deltas() > 0).sum(axis=1).astype(np.float64)),
    _spec("lof", "10-Local Outlier Factor of the CE w.r.t. training points of the target class "
          "(≈1 inlier, >1.5 outlier)", ("data",), False, compute=lambda m: m.lof()[0]),
    _spec("lof_inlier", "1 iff LOF calls the CE an inlier (mean = inlier share)", ("data",), True,
          compute=lambda m: m.lof()[1]),
    _spec("vr", "fraction of retrained models (ModelFamily) predicting the target class",
          ("family",), True, compute=lambda m: retrained_validity(m.family, m.C, m.targets)),
    _spec("v_delta", "1 iff the CE is robust under shift by the exact test (a network's Δ-test, "
          "a tree model's (δ, ε)-test, or a given certifier)", ("shift",),
          True, compute=lambda m: delta_validity(m.model, m.C, m.shift, m.targets).astype(np.float64)),
    _spec("time", "seconds the method spent on the query", (), False,
          compute=lambda m: m.explanations.timings.to_numpy(dtype=np.float64)[m.pos]),
    _spec("n_counterfactuals", "number of CEs returned for the query", (), None,
          compute=_n_counterfactuals),
    *[_spec(f"k_distance_{p}", f"mean {p.upper()} distance from the query to its CEs (eq. 12)",
            (), False, compute=_k_distance(p)) for p in ("l1", "l2")],
    *[_spec(f"k_diversity_{p}", f"mean pairwise {p.upper()} distance within the CE set (eq. 13); "
            "NaN for fewer than two CEs", (), True, compute=_k_diversity(p)) for p in ("l1", "l2")],
    *[_spec(f"set_distance_{kind}_{p}", f"set-distance_{kind} ({'eq. 4' if kind == 'sum' else 'eq. 5'}"
            f") under {p.upper()} between the CEs of a query and of its perturbed copy",
            ("perturbed",), False, compute=_set_distance(kind, p))
      for kind in ("sum", "max") for p in ("l1", "l2")],
    _spec("coverage", "share of queries needing a CE that got one (summary only)", (), True,
          per_query=False),
]

#: name -> :class:`MetricSpec`, in the order :func:`evaluate` writes columns.
METRICS: dict[str, MetricSpec] = {s.name: s for s in _SPECS}


def register_metric(spec: MetricSpec) -> None:
    """Add a metric to :data:`METRICS` (after the built-in ones). A per-query metric needs a
    ``compute`` function; names are unique and ``needs`` ⊆ :data:`INPUTS`.

    Parameters
    ----------
    spec : the metric's :class:`MetricSpec`.

    Examples
    --------
    >>> import numpy as np
    >>> from robustce.evaluation.metrics import unregister_metric
    >>> rc.evaluation.register_metric(rc.evaluation.MetricSpec(
    ...     "max_change", "largest model-space change of a CE", higher_is_better=False,
    ...     compute=lambda m: np.abs(m.C - m.X).max(axis=1)))
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> result = rc.methods.MILPNearest(model, train).explain(rejected)
    >>> rc.evaluation.evaluate(result, model, metrics=["max_change"]).round(3)
              max_change
    query_id
    1               1.00
    8               0.38
    13              1.00
    >>> unregister_metric("max_change")  # the registry is global
    """
    if not isinstance(spec, MetricSpec):
        raise ConfigError(f"register_metric expects a MetricSpec, got {type(spec).__name__}")
    if spec.name in METRICS:
        raise ConfigError(f"metric {spec.name!r} is already registered")
    if spec.per_query and not callable(spec.compute):
        raise ConfigError(f"per-query metric {spec.name!r} needs a compute function")
    unknown = set(spec.needs) - set(INPUTS)
    if unknown:
        raise ConfigError(f"metric {spec.name!r} needs unknown inputs {sorted(unknown)}; known: {INPUTS}")
    METRICS[spec.name] = MetricSpec(spec.name, spec.description, frozenset(spec.needs),
                                    spec.higher_is_better, spec.per_query, spec.compute)


def unregister_metric(name: str) -> None:
    """Remove a metric added with :func:`register_metric` (built-in ones stay)."""
    if name in {s.name for s in _SPECS}:
        raise ConfigError(f"metric {name!r} is built in and cannot be removed")
    METRICS.pop(name, None)


def available_metrics() -> list[str]:
    """Names of all registered metrics (configs validate against this list).

    Examples
    --------
    >>> names = rc.evaluation.available_metrics()
    >>> names[:4]
    ['validity', 'proximity_l0', 'proximity_l1', 'proximity_l2']
    >>> [n for n in names if n.startswith("proximity")]
    ['proximity_l0', 'proximity_l1', 'proximity_l2', 'proximity_linf', 'proximity_l1_mean']
    """
    return list(METRICS)


def check_metrics(names: Iterable[str] | None, *, data: Any = None, family: Any = None,
                  shift: Any = None, perturbed: Any = None) -> list[str]:
    """Validate metric names before any work; returns the per-query ones in registry order.

    ``names=None`` means :func:`default_metrics`. An unknown name, or a metric whose input
    (``data``/``family``/``shift``/``perturbed``) is not given, raises
    :class:`~robustce.errors.ConfigError` naming it.

    Parameters
    ----------
    names : the metric names asked for, or None.
    data : the training :class:`~robustce.data.Dataset` (LOF), or None.
    family : a :class:`~robustce.models.ModelFamily` (``vr``), or None.
    shift : a ParameterShift, EnsembleShift or Certifier (``v_delta``), or None.
    perturbed : Explanations of perturbed queries (``set_distance_*``), or None.

    Returns
    -------
    list of str

    Examples
    --------
    >>> rc.evaluation.check_metrics(["proximity_l1", "validity"])  # registry order
    ['validity', 'proximity_l1']
    >>> rc.evaluation.check_metrics(["lof"])  # LOF needs the training data
    Traceback (most recent call last):
    ...
    robustce.errors.ConfigError: metric 'lof' needs data= to be given
    """
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
    """Every per-query metric whose inputs are available.

    Parameters
    ----------
    data, family, shift, perturbed : the inputs given, as :func:`check_metrics` takes them.

    Returns
    -------
    list of str

    Examples
    --------
    >>> plain = rc.evaluation.default_metrics()  # no data, family or shift given
    >>> "validity" in plain, "lof" in plain
    (True, False)
    >>> extra = rc.evaluation.default_metrics(shift=rc.robustness.ParameterShift(0.05))
    >>> sorted(set(extra) - set(plain))
    ['v_delta']
    """
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
    """Bool per CE: robust under ``shift`` (PROPLACE *vΔ*): a
    :class:`~robustce.robustness.ParameterShift` or δ — the exact Δ-test of a network —, an
    :class:`~robustce.robustness.EnsembleShift` — the exact (δ, ε)-test of a tree model —, or
    any :class:`~robustce.robustness.Certifier` (only its ``robust`` counts)."""
    # lazily: the robustness layer pulls in the MILP layer
    from robustce.robustness import EnsembleCertifier, EnsembleShift, is_delta_robust

    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    t = resolve_targets(target_class, len(C))
    if len(C) == 0:
        return np.zeros(0, dtype=bool)
    if isinstance(shift, EnsembleShift):
        shift = EnsembleCertifier(shift)
    if callable(getattr(shift, "certify", None)):
        return np.asarray(shift.certify(model, C, t).robust, dtype=bool)
    # one batched test: the exact test takes a target class per row
    return np.asarray(is_delta_robust(model, C, shift, target_class=t), dtype=bool)


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
    lof: LOFScorer | None = None,
) -> pd.DataFrame:
    """Per-query metrics of ``explanations`` (an :class:`~robustce.Explanations`).

    One row per query that has a CE (index ``query_id``), one column per metric in registry
    order. Single-CE metrics use the rank-0 CE; ``k_*`` metrics use every CE of the query;
    ``set_distance_*`` compare the CEs of query i with those of query i of ``perturbed``
    (another Explanations for perturbed copies of the same queries, paired by position).
    ``data`` is the training Dataset (LOF), ``family`` a ModelFamily (``vr``), ``shift`` a
    ParameterShift, EnsembleShift or Certifier (``v_delta``); ``lof`` a fitted
    :class:`LOFScorer` for ``data`` with ``lof_neighbors`` neighbours to reuse (a benchmark
    fits it once for all its methods' cells).
    ``metrics=None`` computes every metric whose inputs are
    given; naming a metric whose input is missing, or an unknown one, raises ConfigError
    before any work.

    Parameters
    ----------
    explanations : the :class:`~robustce.Explanations` to score.
    model : the model that was explained.
    data : the training :class:`~robustce.data.Dataset` (LOF).
    family : a :class:`~robustce.models.ModelFamily` of retrained models (``vr``).
    shift : a ParameterShift, EnsembleShift or Certifier (``v_delta``).
    perturbed : Explanations of perturbed copies of the queries (``set_distance_*``).
    metrics : names of the metrics to compute (None: every one whose inputs are given).
    lof_neighbors : k of the k-LOF.
    lof : a fitted :class:`LOFScorer` to reuse.

    Returns
    -------
    pandas.DataFrame
        One row per query with a CE, one column per metric.


    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> result = rc.methods.MILPNearest(model, train).explain(rejected)
    >>> per_query = rc.evaluation.evaluate(result, model, data=train,
    ...                                    metrics=["validity", "proximity_l1", "lof_inlier"])
    >>> per_query.round(3)
              validity  proximity_l1  lof_inlier
    query_id
    1              1.0         2.000         1.0
    8              1.0         0.391         1.0
    13             1.0         2.000         1.0
    """
    names = check_metrics(metrics, data=data, family=family, shift=shift, perturbed=perturbed)
    enc = model.encoder
    width = explanations.queries_encoded.shape[1]
    if width != enc.n_features_out_:
        raise ValidationError(f"explanations have {width} model-space columns but the model's "
                              f"encoder has {enc.n_features_out_}")
    if perturbed is not None and len(perturbed) != len(explanations):
        raise ValidationError(f"perturbed has {len(perturbed)} queries, explanations "
                              f"{len(explanations)}; they are paired by position")
    if lof is not None and (lof.n_neighbors != int(lof_neighbors)
                            or lof.n_rows != (0 if data is None else len(data))):
        raise ValidationError(f"lof was fitted with {lof.n_neighbors} neighbours on "
                              f"{lof.n_rows} rows; this evaluation asks for "
                              f"{lof_neighbors} on the {0 if data is None else len(data)} rows "
                              f"of data")
    inputs = MetricInputs(explanations, model, data=data, family=family, shift=shift,
                          perturbed=perturbed, lof_neighbors=lof_neighbors, lof=lof)
    out: dict[str, np.ndarray] = {}
    for name in names:
        values = METRICS[name].compute(inputs)
        if np.shape(values) != (len(inputs.pos),):
            raise ValidationError(f"metric {name!r} returned shape {np.shape(values)}, "
                                  f"expected ({len(inputs.pos)},): one value per query with a CE")
        out[name] = values
    pos = inputs.pos
    index = explanations.queries.index[pos]
    frame = pd.DataFrame(out, index=index, columns=names)
    frame.index.name = "query_id"
    return frame


def summarise(per_query: pd.DataFrame, explanations: Any) -> dict[str, float]:
    """Means of the per-query metrics (NaNs skipped), plus ``coverage``, ``n_queries``,
    ``n_evaluated`` (rows of ``per_query``), ``n_<status>`` for every status and
    ``time_total`` (seconds over all queries).

    Parameters
    ----------
    per_query : the frame :func:`evaluate` returns.
    explanations : the :class:`~robustce.Explanations` it scored.

    Returns
    -------
    dict of str to float

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> result = rc.methods.MILPNearest(model, train).explain(rejected)
    >>> per_query = rc.evaluation.evaluate(result, model, metrics=["validity", "sparsity"])
    >>> summary = rc.evaluation.summarise(per_query, result)
    >>> {k: round(summary[k], 3) for k in ("validity", "sparsity", "coverage", "n_queries")}
    {'validity': 1.0, 'sparsity': 1.333, 'coverage': 1.0, 'n_queries': 3.0}
    """
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
