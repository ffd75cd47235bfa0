"""One distance for every method, metric and certificate: :class:`Distance`.

A distance between a query x and a CE x' (both in model space [0, 1]^d) is named by

* ``norm`` ∈ {l0, l1, l2, linf} — how the per-unit deltas are combined;
* ``space`` — what a *unit* is:

  - ``"model"``: every model-space column is a unit, δ_j = w_j |x'_j − x_j|;
  - ``"raw"``: every raw feature is a unit, δ_f = Σ_{j ∈ f} w_j |x'_j − x_j| over the feature's
    columns. With the default column weights ω this is MACE's per-type normalised distance
    (Karimi et al., eq. 3): numeric |Δ| / (upper − lower) (the column is min-max scaled, ω = 1),
    ordinal |Δ level| / (k − 1) (thermometer columns ω = 1/(k − 1); integer-coded ω = 1),
    categorical and binary 𝕀[x'_f ≠ x_f] (one-hot columns ω = ½: a change moves two columns).
    On valid encodings — every encoded raw row and every returned CE — it equals those values;
    it is also exactly the linear form a MILP minimises (:meth:`Distance.column_weights`);

* ``weights`` — the column weights w (per model-space column); ``None`` means 1 per column in
  model space and ω in raw space. Given weights replace the defaults;
* ``tol`` — the ℓ0 tolerance: a unit counts as changed when δ > ``tol``.

Then ‖δ‖₁ = Σ δ, ‖δ‖₂ = √(Σ δ²), ‖δ‖∞ = max δ, ‖δ‖₀ = #{δ > tol}. Raw space needs the model's
fitted :class:`~robustce.data.Encoder` (it knows which columns form a feature).

This module imports only from :mod:`robustce.data` and :mod:`robustce.errors`, so every layer
(solvers included) can use it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.data.encoder import Encoder
from robustce.errors import ValidationError

__all__ = ["L0_TOL", "NORMS", "SPACES", "Distance", "check_norm", "raw_column_weights",
           "feature_fixed_costs", "unit_cost_weights"]

NORMS = ("l0", "l1", "l2", "linf")
SPACES = ("model", "raw")
#: default ℓ0 tolerance: a coordinate counts as changed when its |Δ| exceeds it
L0_TOL = 1e-9
_ALIASES = {"inf": "linf", "l_inf": "linf", "max": "linf"}
_MINKOWSKI_P = {"l1": 1.0, "l2": 2.0, "linf": math.inf}


def check_norm(norm: Any, allowed: tuple[str, ...] = NORMS) -> str:
    """The canonical name of ``norm`` ("inf", "l_inf", "max" mean "linf"), or a
    :class:`~robustce.errors.ValidationError` naming the allowed ones."""
    key = str(norm).lower()
    key = _ALIASES.get(key, key)
    if key not in allowed:
        raise ValidationError(f"norm must be one of {allowed}, got {norm!r}")
    return key


def raw_column_weights(encoder: Encoder) -> np.ndarray:
    """ω: per model-space column, the weight of |x'_j − x_j| in its raw feature's δ_f — ½ for
    one-hot columns, 1/(k − 1) for the k − 1 thermometer columns of a k-level ordinal, 1 for
    scaled, binary and integer-coded columns (already normalised to [0, 1])."""
    _check_encoder(encoder)
    w = np.ones(encoder.n_features_out_)
    for b in encoder.blocks_:
        if b.encoding == "onehot":
            w[b.slice] = 0.5
        elif b.encoding == "thermometer":
            w[b.slice] = 1.0 / max(b.width, 1)
    return w


def unit_cost_weights(encoder: Encoder, costs: Mapping[str, float]) -> np.ndarray:
    """Column weights that make the raw-space ℓ1 distance the **cost of a CE in the user's
    units**: ``Σ_f cost_f · |x'_f − x_f|`` with ``x_f`` in raw units for a numeric feature,
    in levels for an ordinal, and ``cost_f`` per change of a categorical or binary feature.
    Features not in ``costs`` keep their default weight ω (:func:`raw_column_weights`); a cost
    of 0 makes a feature free. Use as ``Distance("l1", weights=..., space="raw")`` or
    ``MILPNearest(weights=...)``. Raises ValidationError for an unknown feature or a
    negative / non-finite cost."""
    _check_encoder(encoder)
    if not isinstance(costs, Mapping):
        raise ValidationError(f"costs must map feature names to costs, got "
                              f"{type(costs).__name__}")
    w = raw_column_weights(encoder).copy()
    blocks = {b.name: b for b in encoder.blocks_}
    for f, c in costs.items():
        if f not in blocks:
            raise ValidationError(f"costs: unknown feature {f!r}; features are {list(blocks)}")
        if isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c) or c < 0:
            raise ValidationError(f"costs[{f!r}] must be a finite number >= 0, got {c!r}")
        b = blocks[f]
        if b.encoding == "scaled":  # one column unit = the feature's range in raw units
            w[b.slice] = float(c) * (float(b.feature.upper) - float(b.feature.lower))
        elif b.encoding == "thermometer":  # one column per level step
            w[b.slice] = float(c)
        elif b.encoding == "integer_levels":
            w[b.slice] = float(c) * max(b.feature.n_levels - 1, 1)
        else:  # one-hot (a change moves two columns) or binary
            w[b.slice] = float(c) * (0.5 if b.encoding == "onehot" else 1.0)
    return w


def feature_fixed_costs(encoder: Encoder, costs: Mapping[str, float]) -> tuple[float, ...]:
    """Per raw feature (encoder order), the fixed cost of changing it at all, from
    ``{feature: cost}`` (others 0): ``Distance("l1", space="raw", fixed=...)``. Raises
    ValidationError for an unknown feature or a negative / non-finite cost."""
    _check_encoder(encoder)
    if not isinstance(costs, Mapping):
        raise ValidationError(f"fixed_costs must map feature names to costs, got "
                              f"{type(costs).__name__}")
    names = [b.name for b in encoder.blocks_]
    out = np.zeros(len(names))
    for f, c in costs.items():
        if f not in names:
            raise ValidationError(f"fixed_costs: unknown feature {f!r}; features are {names}")
        if isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c) or c < 0:
            raise ValidationError(f"fixed_costs[{f!r}] must be a finite number >= 0, got {c!r}")
        out[names.index(f)] = float(c)
    return tuple(out.tolist())


def _check_encoder(encoder: Any) -> None:
    if not hasattr(encoder, "blocks_"):
        raise ValidationError("a raw-space distance needs the model's fitted Encoder (encoder=)")


@dataclass(frozen=True)
class Distance:
    """A named distance: ``norm`` over per-unit deltas of ``space``, with column ``weights``.

    Parameters
    ----------
    norm : "l0", "l1", "l2" or "linf" ("inf" is accepted for "linf").
    weights : None, or one non-negative finite weight per model-space column (stored as a
        tuple, so the object is hashable and serialisable).
    space : "model" (units are columns) or "raw" (units are raw features; see the module).
    tol : ℓ0 tolerance (≥ 0).
    fixed : None, or one non-negative fixed cost per raw feature (``space="raw"``, ``norm="l1"``
        only): charged once when any column of the feature moves by more than ``tol`` — the
        cost of changing it at all, on top of its per-unit cost (``weights``,
        :func:`unit_cost_weights`). Not differentiable (:meth:`torch` refuses it).

    ``A`` and ``B`` below are model-space arrays whose last axis is the d columns; leading axes
    broadcast. Raw space needs ``encoder=``.
    """

    norm: str = "l1"
    weights: tuple[float, ...] | None = None
    space: str = "model"
    tol: float = L0_TOL
    fixed: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "norm", check_norm(self.norm))
        if self.space not in SPACES:
            raise ValidationError(f"space must be one of {SPACES}, got {self.space!r}")
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=np.float64).reshape(-1)
            if not np.isfinite(w).all() or np.any(w < 0):
                raise ValidationError("distance weights must be finite non-negative numbers")
            object.__setattr__(self, "weights", tuple(float(v) for v in w))
        tol = float(self.tol)
        if not (math.isfinite(tol) and tol >= 0):
            raise ValidationError(f"the l0 tolerance tol must be a finite number >= 0, got {self.tol}")
        object.__setattr__(self, "tol", tol)
        if self.fixed is not None:
            f = np.asarray(self.fixed, dtype=np.float64).reshape(-1)
            if not np.isfinite(f).all() or np.any(f < 0):
                raise ValidationError("fixed costs must be finite non-negative numbers")
            if self.space != "raw" or self.norm != "l1":
                raise ValidationError(f"fixed costs need space='raw' and norm='l1', got "
                                      f"space={self.space!r}, norm={self.norm!r}")
            object.__setattr__(self, "fixed", tuple(float(v) for v in f))

    # --- structure ------------------------------------------------------------------------
    def column_weights(self, encoder: Encoder | None = None, d: int | None = None) -> np.ndarray:
        """w: the coefficient of |x'_j − x_j| per model-space column — the given ``weights``,
        else 1 (model space) or ω (raw space, :func:`raw_column_weights`). These are the
        objective coefficients a MILP uses for this distance."""
        if d is None and encoder is not None:
            d = int(encoder.n_features_out_)
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=np.float64)
            if d is not None and len(w) != d:
                raise ValidationError(f"the distance has {len(w)} column weights, the data {d} "
                                      "model-space columns")
            return w
        if self.space == "raw":
            return raw_column_weights(encoder)
        if d is None:
            raise ValidationError("model-space column weights need the number of columns d")
        return np.ones(d)

    def units(self, encoder: Encoder | None = None, d: int | None = None) -> np.ndarray:
        """Per model-space column, the index of the unit its delta adds to: the raw feature
        (raw space) or the column itself (model space)."""
        if self.space == "raw":
            _check_encoder(encoder)
            return encoder.feature_of_column_
        if d is None:
            if encoder is None:
                raise ValidationError("model-space units need the number of columns d")
            d = int(encoder.n_features_out_)
        return np.arange(d)

    @property
    def minkowski_p(self) -> float:
        """The Minkowski ``p`` of an unweighted model-space distance (1, 2 or ∞) — what a
        KD-tree (``scipy.spatial.cKDTree.query(p=...)``) searches with."""
        if self.space != "model" or self.norm not in _MINKOWSKI_P:
            raise ValidationError(f"a Minkowski p exists only for model-space l1/l2/linf, not "
                                  f"{self.name}")
        return _MINKOWSKI_P[self.norm]

    @property
    def name(self) -> str:
        """Short label, e.g. ``"l1"``, ``"raw_l1"``, ``"weighted_l1"``."""
        prefix = ("raw_" if self.space == "raw" else "") + ("weighted_" if self.weights else "")
        return prefix + self.norm

    # --- computation ----------------------------------------------------------------------
    def deltas(self, A: Any, B: Any, encoder: Encoder | None = None) -> np.ndarray:
        """Per-unit deltas δ (last axis: d columns in model space, one per raw feature in raw
        space), broadcasting ``A`` against ``B``."""
        diff = np.abs(np.asarray(A, dtype=np.float64) - np.asarray(B, dtype=np.float64))
        d = diff.shape[-1] if diff.ndim else 0
        if self.space == "model":
            if self.weights is not None:
                diff = diff * self.column_weights(d=d)
            return diff
        _check_encoder(encoder)
        if d != encoder.n_features_out_:
            raise ValidationError(f"arrays have {d} columns, the encoder {encoder.n_features_out_}")
        return _sum_blocks(diff * self.column_weights(encoder), encoder)

    def __call__(self, A: Any, B: Any, encoder: Encoder | None = None) -> np.ndarray:
        """‖δ(A, B)‖ along the last axis (broadcasting), as float64 — plus, with ``fixed``,
        the fixed cost of every feature that moved."""
        out = self.reduce(self.deltas(A, B, encoder))
        if self.fixed is not None:
            moved = np.abs(np.asarray(A, dtype=np.float64) - np.asarray(B, dtype=np.float64))
            per = _sum_blocks((moved > self.tol).astype(np.float64), encoder) > 0
            f = np.asarray(self.fixed)
            if per.shape[-1] != len(f):
                raise ValidationError(f"the distance has {len(f)} fixed costs, the encoder "
                                      f"{per.shape[-1]} raw features")
            out = out + per @ f
        return out

    def reduce(self, delta: np.ndarray) -> np.ndarray:
        """The norm of per-unit deltas along the last axis."""
        if self.norm == "l0":
            return (delta > self.tol).sum(axis=-1).astype(np.float64)
        if self.norm == "l1":
            return delta.sum(axis=-1)
        if self.norm == "l2":
            return np.sqrt((delta * delta).sum(axis=-1))
        return delta.max(axis=-1, initial=0.0)

    def rowwise(self, A: Any, B: Any, encoder: Encoder | None = None) -> np.ndarray:
        """Distance of row i of ``A`` to row i of ``B`` (both (n, d); a 1-D array is one row
        and may be paired with many), shape (n,)."""
        A = np.atleast_2d(np.asarray(A, dtype=np.float64))
        B = np.atleast_2d(np.asarray(B, dtype=np.float64))
        if A.shape[-1] != B.shape[-1] or (len(A) != len(B) and 1 not in (len(A), len(B))):
            raise ValidationError(f"cannot pair rows of shapes {A.shape} and {B.shape}")
        return self(A, B, encoder)

    def pairwise(self, A: Any, B: Any, encoder: Encoder | None = None) -> np.ndarray:
        """All distances between the rows of ``A`` (n, d) and of ``B`` (m, d): shape (n, m)."""
        A = np.atleast_2d(np.asarray(A, dtype=np.float64))
        B = np.atleast_2d(np.asarray(B, dtype=np.float64))
        if A.shape[-1] != B.shape[-1]:
            raise ValidationError(f"rows of shapes {A.shape} and {B.shape} are not comparable")
        return self(A[:, None, :], B[None, :, :], encoder)

    def torch(self, A: Any, B: Any, encoder: Encoder | None = None) -> Any:
        """:meth:`rowwise` on torch tensors (differentiable; for gradient-based methods)."""
        import torch

        if self.fixed is not None:
            raise ValidationError("a distance with fixed costs is not differentiable; "
                                  "gradient methods take per-unit costs (weights) only")
        diff = (A - B).abs()
        if self.space == "raw" or self.weights is not None:
            w = self.column_weights(encoder, d=diff.shape[-1])
            diff = diff * torch.as_tensor(w, dtype=diff.dtype)
        if self.space == "raw":
            units = torch.as_tensor(self.units(encoder))
            per = torch.zeros(*diff.shape[:-1], len(encoder.blocks_), dtype=diff.dtype)
            diff = per.index_add(diff.dim() - 1, units, diff)
        if self.norm == "l0":
            return (diff > self.tol).sum(dim=-1).to(diff.dtype)
        if self.norm == "l1":
            return diff.sum(dim=-1)
        if self.norm == "l2":
            return (diff * diff).sum(dim=-1).sqrt()
        return diff.amax(dim=-1)

    # --- (de)serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {"norm": self.norm, "weights": None if self.weights is None else list(self.weights),
               "space": self.space, "tol": self.tol}
        if self.fixed is not None:
            out["fixed"] = list(self.fixed)
        return out

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Distance:
        unknown = set(spec) - {"norm", "weights", "space", "tol", "fixed"}
        if unknown:
            raise ValidationError(f"unknown Distance fields {sorted(unknown)}")
        w, f = spec.get("weights"), spec.get("fixed")
        return cls(spec.get("norm", "l1"), None if w is None else tuple(w),
                   spec.get("space", "model"), spec.get("tol", L0_TOL),
                   None if f is None else tuple(f))

    def __repr__(self) -> str:
        parts = [f"norm={self.norm!r}", f"space={self.space!r}"]
        if self.weights is not None:
            parts.append(f"weights=<{len(self.weights)} columns>")
        if self.tol != L0_TOL:
            parts.append(f"tol={self.tol:g}")
        return f"Distance({', '.join(parts)})"


def _sum_blocks(cols: np.ndarray, encoder: Encoder) -> np.ndarray:
    """Per raw feature, the sum of its columns (last axis), in column order."""
    widths = np.array([b.width for b in encoder.blocks_], dtype=np.int64)
    out = np.zeros((*cols.shape[:-1], len(widths)))
    filled = np.flatnonzero(widths > 0)
    if len(filled):
        starts = np.array([encoder.blocks_[j].start for j in filled], dtype=np.int64)
        out[..., filled] = np.add.reduceat(cols, starts, axis=-1)
    return out
