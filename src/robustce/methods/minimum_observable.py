"""``MinimumObservable`` (MO): the nearest training point that the model puts in the target
class, under MACE's normalised distance (Karimi et al. 2020, §5; Wexler et al. 2019).

For a query x̂ with target class t,

    x' = argmin_{z ∈ D_t(x̂)} d(x̂, z),     d = (α‖δ‖₀ + β‖δ‖₁ + γ‖δ‖∞) / J

with δ_j the per-feature distances of MACE eq. 3 (numeric |Δ|/R_j, ordinal |Δ level|/(K_j − 1),
categorical and binary 𝕀[≠]) and D_t(x̂) the training points z with model(z) = t that satisfy
the plausibility clauses MACE uses: the schema's actionability with the ``actionability``
overrides (immutable columns equal, increase-only not lower, decrease-only not higher).

It differs from :class:`~robustce.methods.NearestNeighbour` (model-space ℓ_p through a
KD-tree) in the distance only: per-feature raw distances (a one-hot category change counts 1,
not 2; ℓ0 counts changed raw features), which no KD-tree metric expresses, so the search is a
vectorised scan over the candidates of the target class — this is the baseline of MACE's
Tables 2–4 and the seed of MACE's Algorithm 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from robustce.data.schema import Actionability
from robustce.distance import Distance
from robustce.errors import ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer

__all__ = ["MinimumObservable", "check_actionability", "mace_distance", "normalise_norm",
           "reachable"]

NORMS = ("l0", "l1", "linf")


def normalise_norm(norm: str | Mapping[str, float]) -> dict[str, float]:
    """``"l1"`` -> ``{"l1": 1.0}``; a mapping of weights α, β, γ (eq. 3) is checked: keys in
    ``NORMS``, non-negative, summing to 1 (so that the distance lies in [0, 1])."""
    if isinstance(norm, str):
        if norm not in NORMS:
            raise ValidationError(f"norm must be one of {NORMS} or a mapping of their weights, "
                                  f"got {norm!r}")
        return {norm: 1.0}
    if not isinstance(norm, Mapping) or not norm:
        raise ValidationError(f"norm must be one of {NORMS} or a mapping of their weights, "
                              f"got {norm!r}")
    unknown = [k for k in norm if k not in NORMS]
    if unknown:
        raise ValidationError(f"unknown norm(s) {unknown}; expected keys among {NORMS}")
    w = {k: float(v) for k, v in norm.items()}
    if any(not math.isfinite(v) or v < 0 for v in w.values()):
        raise ValidationError(f"norm weights must be finite and >= 0, got {dict(norm)}")
    if abs(sum(w.values()) - 1.0) > 1e-9:
        raise ValidationError(f"norm weights must sum to 1 (so d ∈ [0, 1]), got {dict(norm)}")
    return {k: v for k, v in w.items() if v > 0}


def mace_distance(encoder: Any, q: np.ndarray, X: np.ndarray,
                  norm: str | Mapping[str, float] = "l1", *,
                  column_weights: np.ndarray | None = None,
                  fixed: Any = None) -> np.ndarray:
    """MACE's normalised distance (eq. 3) of each row of ``X`` from the query ``q``, built on
    :class:`~robustce.distance.Distance` in raw space:
    ``(α‖δ‖₀ + β‖δ‖₁ + γ‖δ‖∞ + Σ_j c_j 𝕀[δ_j > 0]) / J`` over the per-feature distances
    δ_j ∈ [0, 1] (numeric ``|Δ|/R_j``, ordinal ``|Δ level|/(K_j − 1)``, categorical and binary
    ``𝕀[≠]``), J = number of raw features.

    ``column_weights`` replace the default ω (a causal child's columns weigh 0: MINT prices
    the actions only); ``fixed`` gives per raw feature a fixed cost c_j of changing it at all
    (default none)."""
    weights = normalise_norm(norm)
    J = len(encoder.blocks_)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    q = np.asarray(q, dtype=np.float64)
    total = np.zeros(len(X))
    for key, w in weights.items():
        total += w * Distance(key, weights=column_weights, space="raw",
                              tol=0.0).rowwise(q, X, encoder)
    if fixed is not None and np.any(np.asarray(fixed) > 0):
        moved = Distance("l1", space="raw").deltas(q, X, encoder) > 0  # per raw feature
        total += moved @ np.asarray(fixed, dtype=np.float64)
    return total / J


def check_actionability(encoder: Any, actionability: Any) -> dict[str, str]:
    """``{feature: "immutable" | "increase" | "decrease" | "free"}`` overrides checked against
    the schema: a mapping, known features, known values, no monotone constraint on a
    categorical feature."""
    if actionability is None:
        return {}
    if not isinstance(actionability, Mapping):
        raise ValidationError("actionability must be a mapping {feature: 'immutable' | "
                              f"'increase' | 'decrease' | 'free'}}, got {actionability!r}")
    for name, act in actionability.items():
        feature = encoder.schema[name]  # SchemaError names an unknown feature
        try:
            a = Actionability(act)
        except ValueError:
            raise ValidationError(f"actionability of {name!r} must be one of "
                                  f"{[m.value for m in Actionability]}, got {act!r}") from None
        if feature.kind.value == "categorical" and a in (Actionability.INCREASE,
                                                          Actionability.DECREASE):
            raise ValidationError(f"feature {name!r} is categorical; {a.value}-only needs an "
                                  "ordered kind")
    return dict(actionability)


def reachable(encoder: Any, x: np.ndarray, C: np.ndarray, acts: Mapping[str, str]) -> np.ndarray:
    """Per row of ``C``: the schema's actionability with the ``acts`` overrides holds for the
    move ``x → C[i]`` (exact comparisons: candidates are encoded rows)."""
    ok = np.ones(len(C), dtype=bool)
    for b in encoder.blocks_:
        act = Actionability(acts.get(b.name, b.actionability))
        if act is Actionability.FREE:
            continue
        d = C[:, b.slice] - x[None, b.slice]
        if act is Actionability.IMMUTABLE:
            ok &= np.all(d == 0, axis=1)
        elif act is Actionability.INCREASE:
            ok &= np.all(d >= 0, axis=1)
        elif act is Actionability.DECREASE:
            ok &= np.all(d <= 0, axis=1)
    return ok


class MinimumObservable(Explainer):
    """Nearest plausible training point in the target class under MACE's distance (MO).

    Parameters
    ----------
    model, data : the classifier and its training :class:`~robustce.data.Dataset` (required;
        its rows are the candidates).
    norm : "l1" (default), "l0", "linf" or a mapping ``{"l0": α, "l1": β, "linf": γ}`` summing
        to 1 — :func:`mace_distance`.
    actionability : optional ``{feature: "immutable" | "increase" | "decrease" | "free"}``
        overriding the schema's actionability (e.g. ``{"age": "immutable"}``).
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer` (the scan is
        deterministic; ``n_jobs`` is not used).

    Notes
    -----
    Certificate columns: ``distance`` (MACE distance of the CE, NaN if none),
    ``n_candidates`` (training points of the target class that are reachable),
    ``training_index`` (index label in ``data.frame`` of the CE).

    Statuses: ``found``; ``infeasible`` — no reachable training point in the target class.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MinimumObservable(model, train).explain(rejected)
    >>> res.status.tolist()
    ['infeasible', 'found', 'found']
    """

    name: ClassVar[str] = "minimum_observable"
    #: training points that violate the constraints leave the candidates (the scan is exact
    #: over the pool, as without constraints)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("distance", "n_candidates", "training_index")

    def __init__(self, model: Any, data: Any = None, *, norm: str | Mapping[str, float] = "l1",
                 actionability: Mapping[str, str] | None = None, **kwargs: Any):
        self.norm = norm
        self.actionability = actionability
        super().__init__(model, data, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.data is None:
            raise ValidationError("MinimumObservable needs the training data (data=) to search")
        self._norm = normalise_norm(self.norm)
        self._acts = check_actionability(self.encoder, self.actionability)
        self._cands: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def candidates(self, target: int) -> tuple[np.ndarray, np.ndarray]:
        """(encoded training rows the model puts in ``target``, their index labels); cached."""
        t = int(target)
        if t not in self._cands:
            X = self.encoder.transform(self.data.frame)
            keep = self.model.predict(X) == t
            self._cands[t] = (X[keep], self.data.frame.index.to_numpy()[keep])
        return self._cands[t]

    def nearest(self, x: np.ndarray, target: int, exclude: list[np.ndarray] = ()
                ) -> tuple[np.ndarray | None, float, int, Any]:
        """(CE, its distance, number of reachable candidates, its index label) for one query;
        ``exclude``: rows the CE must differ from (MACE's diversity). (None, nan, n, None)
        when no candidate is reachable."""
        C, labels = self.candidates(target)
        ok = reachable(self.encoder, x, C, self._acts)
        for row in exclude:
            ok &= np.any(C != row[None, :], axis=1)
        if self.constraints_ is not None and ok.any():
            ok[ok] = self.constraints_.satisfied(x, C[ok])
        n = int(ok.sum())
        if n == 0:
            return None, math.nan, 0, None
        C, labels = C[ok], labels[ok]
        d = mace_distance(self.encoder, x, C, self._norm)
        i = int(np.argmin(d))
        return C[i], float(d[i]), n, labels[i]

    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        cf, dist, n, label = self.nearest(x, target)
        cert = {"distance": dist, "n_candidates": n, "training_index": label}
        if cf is None:
            extra = "" if self.constraints_ is None else " that satisfies the constraints"
            return QueryResult("infeasible", None, cert,
                               message=f"no reachable training point in the target class{extra}")
        return QueryResult("found", cf[None], cert)
