"""Robustness to *input* changes (Leofante & Potyka, §6 protocol) — for any explainer.

The person's data moves a little — a typo, a rounding, a month later — and the explanation
should not jump. The protocol, per query x of class l = model(x):

1. draw x₂ ~ N(x, diag(σ²)) with variance σ²_j = ``scale`` · range_j (the paper: 0.0008 ·
   range, range_j = max − min of column j over the training data, in model space), clip it to
   the training range, project it to a valid encoding, and draw again until model(x₂) = l
   (at most ``max_tries`` rounds; a query whose every draw changed class gets NaN);
2. explain x and x₂ with the same explainer;
3. compare the two CE sets S₁, S₂ by the set distances of eq. 4–5 (Σ and max) — for a
   single-CE method both reduce to d(c₁, c₂) (Lemma 1);
4. repeat ``n_repeats`` times (the paper: 3) and report mean ± std over all (query, repeat)
   pairs.

:func:`perturb_inputs` is step 1 (vectorised over queries and repeats), :func:`input_robustness`
runs the whole protocol with one batched ``explain`` call for all perturbed copies, and
:func:`summarise_input_robustness` gives the mean ± std table. The benchmark runner enables it
per config with an ``[evaluation.perturb]`` table (``scale``, ``n_repeats``, ``max_tries``); it
then reports the ``set_distance_{sum,max}_{l1,l2}`` metrics, per query averaged over repeats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.distance import Distance
from robustce.errors import ValidationError
from robustce.evaluation.set_metrics import set_distances_batch
from robustce.utils import check_random_state

__all__ = [
    "PERTURB_DEFAULTS",
    "PerturbationSpec",
    "input_robustness",
    "per_query_set_distances",
    "perturb_inputs",
    "summarise_input_robustness",
    "training_ranges",
]

#: The paper's settings: variance 0.0008 · range, 3 repeats.
PERTURB_DEFAULTS = {"scale": 0.0008, "n_repeats": 3, "max_tries": 100}
SET_NORMS = ("l1", "l2")


@dataclass(frozen=True)
class PerturbationSpec:
    """Validated protocol settings (``scale`` > 0 is a *variance* factor)."""

    scale: float = PERTURB_DEFAULTS["scale"]
    n_repeats: int = PERTURB_DEFAULTS["n_repeats"]
    max_tries: int = PERTURB_DEFAULTS["max_tries"]

    def __post_init__(self) -> None:
        s = float(self.scale)
        if not math.isfinite(s) or s <= 0:
            raise ValidationError(f"scale must be a positive number (variance factor), got {self.scale!r}")
        for name in ("n_repeats", "max_tries"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or int(v) < 1:
                raise ValidationError(f"{name} must be a positive integer, got {v!r}")


def training_ranges(model: Any, data: Dataset | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) of each model-space column over the training data."""
    X = model.encoder.transform(data.frame) if isinstance(data, Dataset) else \
        model.encoder.check_array(data, name="training data")
    if len(X) == 0:
        raise ValidationError("training data is empty")
    return X.min(axis=0), X.max(axis=0)


def perturb_inputs(model: Any, X: np.ndarray, lower: np.ndarray, upper: np.ndarray, *,
                   scale: float = PERTURB_DEFAULTS["scale"], max_tries: int = PERTURB_DEFAULTS["max_tries"],
                   project: bool = True, random_state: Any = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(X₂, kept): per row of X a draw of N(x, diag(scale · (upper − lower))) clipped to
    [lower, upper] (and projected to a valid encoding if ``project``) that the model gives
    x's class; rows are redrawn together, at most ``max_tries`` rounds. ``kept[i]`` is False
    where every draw changed the class (X₂[i] is then NaN)."""
    spec = PerturbationSpec(scale, 1, max_tries)
    X = model.encoder.check_array(X, name="queries")
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    if lower.shape != (X.shape[1],) or upper.shape != (X.shape[1],) or np.any(upper < lower):
        raise ValidationError(f"lower/upper must be two ({X.shape[1]},) arrays with lower <= upper")
    rng = check_random_state(random_state)
    std = np.sqrt(spec.scale * (upper - lower))
    label = model.predict(X)
    out = np.full_like(X, np.nan)
    todo = np.arange(len(X))
    for _ in range(spec.max_tries):
        draw = np.clip(X[todo] + rng.standard_normal((len(todo), X.shape[1])) * std, lower, upper)
        if project:
            draw = model.encoder.project(draw)
        same = model.predict(draw) == label[todo]
        out[todo[same]] = draw[same]
        todo = todo[~same]
        if len(todo) == 0:
            break
    kept = ~np.isnan(out).any(axis=1)
    return out, kept


def _owners(expl: Any) -> np.ndarray:
    return expl.queries.index.get_indexer(expl.counterfactuals["query_id"])


def _n_invalid(model: Any, expl: Any, owner: np.ndarray, n: int) -> np.ndarray:
    """Per owner in [0, n): how many of its CEs the model does not put in the target class."""
    C = expl.counterfactuals_encoded
    if len(C) == 0:
        return np.zeros(n)
    t = expl.target_class.to_numpy()[_owners(expl)]
    return np.bincount(owner, weights=(model.predict(C) != t).astype(float), minlength=n)


def input_robustness(explainer: Any, queries: Any, data: Dataset, *, explanations: Any = None,
                     scale: float = PERTURB_DEFAULTS["scale"],
                     n_repeats: int = PERTURB_DEFAULTS["n_repeats"],
                     max_tries: int = PERTURB_DEFAULTS["max_tries"], norms: Any = SET_NORMS,
                     random_state: Any = None) -> pd.DataFrame:
    """Run the protocol; one row per (query, repeat).

    ``explanations`` (the explainer's result for ``queries``) is reused when given. Columns:
    ``query_id``, ``repeat``, ``perturbed`` (a same-class draw was found), ``noise_l1`` /
    ``noise_l2`` (d(x, x₂)), ``n_cfs`` / ``n_cfs_perturbed`` (|S₁|, |S₂|), ``valid`` (every CE
    of both sets passes a forward pass), and ``set_distance_{sum,max}_{norm}`` (eq. 4–5; NaN
    where either set is empty or no draw kept the class)."""
    spec = PerturbationSpec(scale, n_repeats, max_tries)
    model = explainer.model
    expl = explanations if explanations is not None else explainer.explain(queries)
    X = expl.queries_encoded
    n, r = len(X), spec.n_repeats
    lower, upper = training_ranges(model, data)
    Xr = np.tile(X, (r, 1))  # pair p = repeat (p // n), query (p % n)
    X2, kept = perturb_inputs(model, Xr, lower, upper, scale=spec.scale, max_tries=spec.max_tries,
                              random_state=random_state)
    rows = np.flatnonzero(kept)
    C1, o1 = expl.counterfactuals_encoded, _owners(expl)
    C1r = np.tile(C1, (r, 1))
    o1r = (o1[None, :] + n * np.arange(r)[:, None]).ravel()
    out = pd.DataFrame({
        "query_id": np.tile(expl.queries.index.to_numpy(), r),
        "repeat": np.repeat(np.arange(r), n),
        "perturbed": kept,
        "noise_l1": Distance("l1").rowwise(X2, Xr),
        "noise_l2": Distance("l2").rowwise(X2, Xr),
    })
    n_cfs2 = np.zeros(n * r, dtype=np.int64)
    valid2 = np.ones(n * r, dtype=bool)
    C2, o2 = np.zeros((0, X.shape[1])), np.zeros(0, dtype=np.int64)
    if len(rows):
        expl2 = explainer.explain(X2[rows])
        C2, o2 = expl2.counterfactuals_encoded, rows[_owners(expl2)]
        n_cfs2 = np.bincount(o2, minlength=n * r)
        valid2 = _n_invalid(model, expl2, o2, n * r) == 0
    n_cfs1 = np.bincount(o1r, minlength=n * r)
    bad1 = _n_invalid(model, expl, o1, n)
    out["n_cfs"] = n_cfs1
    out["n_cfs_perturbed"] = n_cfs2
    out["valid"] = np.tile(bad1 == 0, r) & valid2
    for p in norms:
        total, worst = set_distances_batch(C1r, o1r, C2, o2, n * r, p)
        out[f"set_distance_sum_{p}"] = total
        out[f"set_distance_max_{p}"] = worst
    return out


def summarise_input_robustness(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (over all (query, repeat) pairs with both sets non-empty) of every
    set-distance, k-free column of :func:`input_robustness`; plus the pair counts."""
    cols = [c for c in table.columns if c.startswith("set_distance_") or c.startswith("noise_")]
    both = table["n_cfs"].gt(0) & table["n_cfs_perturbed"].gt(0) & table["perturbed"]
    sel = table.loc[both, cols]
    out = pd.DataFrame({"mean": sel.mean(), "std": sel.std(ddof=0)})
    extra = pd.DataFrame({"mean": [float(both.sum()), float(len(table)),
                                   float(table.loc[both, "valid"].mean()) if both.any() else math.nan],
                          "std": [math.nan] * 3}, index=["n_pairs", "n_total", "valid_share"])
    return pd.concat([out, extra])


def per_query_set_distances(table: pd.DataFrame) -> pd.DataFrame:
    """The ``set_distance_*`` columns averaged over repeats, one row per query (the benchmark
    runner's per-query metric values)."""
    cols = [c for c in table.columns if c.startswith("set_distance_")]
    return table.groupby("query_id", sort=False)[cols].mean()
