"""The z3 variables of the raw features (:class:`SMTInput`): their domain and actionability,
the exact model-space column tests, MACE's distance formula, the diversity clause, and the
decoding of a z3 model back to a model-space row."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from robustce.data.encoder import Encoder, FeatureBlock
from robustce.data.schema import Actionability, FeatureKind
from robustce.errors import ValidationError
from robustce.models.trees import SplitMargins
from robustce.solvers.smt.terms import _is_one, _to_float, rational

#: smallest model-space change of a real feature that the diversity clause counts as a change
DIFFER_RESOLUTION = 1e-6


@dataclass
class _Var:
    """One raw feature: its z3 variable and where it sits in model space."""

    block: FeatureBlock
    var: z3.ExprRef
    sort: str  # "real" (scaled continuous), "grid" (int k, column k/steps), "bool", "level"
    steps: int = 0  # grid: number of grid steps; level: number of levels


class SMTInput:
    """z3 variables for the raw features of ``encoder``'s schema and the model-space columns
    they define. ``domain`` holds the type and range constraints (plausibility, part i) of the
    unit box; :meth:`domain_at` those of one query's box (:meth:`Encoder.domain
    <robustce.data.Encoder.domain>`: a column of an observed-range feature widened to hold
    the query's own value, so an applicant beyond the training range is searched from where
    it stands). The column tests (:meth:`le`, :meth:`gt`) are exact on every box: a test is
    decided without a formula only where the declared range decides it."""

    def __init__(self, encoder: Encoder, prefix: str = "x"):
        encoder._check_fitted()
        self.encoder = encoder
        #: the variables' name prefix; auxiliary variables (distance slacks, tree votes,
        #: neurons) are named after it too — never after an object id, so that z3 sees the
        #: same names, hence the same formula, in every run
        self.prefix = prefix
        self.vars: list[_Var] = []
        self.domain: list[z3.BoolRef] = []
        self._col_block = np.empty(encoder.n_features_out_, dtype=np.int64)
        self._le: dict[tuple[int, float], Any] = {}
        self._gt: dict[tuple[int, float], Any] = {}
        self._margins = SplitMargins.of(encoder)
        #: per raw feature: its range is observed (soft), so a query may lie beyond it
        self._soft = np.zeros(len(encoder.blocks_), dtype=bool)
        soft_cols = set(encoder.observed_columns_.tolist())
        for i, b in enumerate(encoder.blocks_):
            self._soft[i] = b.start in soft_cols
            f = b.feature
            name = f"{prefix}_{i}"
            self._col_block[b.slice] = i
            if b.encoding == "scaled" and f.kind is FeatureKind.CONTINUOUS:
                var = _Var(b, z3.Real(name), "real")
            elif b.encoding in ("scaled", "integer_levels"):
                var = _Var(b, z3.Int(name), "grid", int(b.n_steps or 0))
            elif b.encoding == "binary":
                var = _Var(b, z3.Bool(name), "bool")
            else:  # onehot / thermometer
                var = _Var(b, z3.Int(name), "level", f.n_levels)
            self.vars.append(var)
            self.domain += self._domain_of(var)

    @property
    def n_features(self) -> int:
        return len(self.vars)

    def domain_at(self, x: np.ndarray) -> list[z3.BoolRef]:
        """The type and range constraints of query ``x``'s search box: :attr:`domain`, with
        each observed-range column widened to the query's own value (a real column to
        ``[min(0, x_j), max(1, x_j)]``, a grid column to the grid steps between
        ``min(0, k)`` and ``max(steps, k)``, k the query's step)."""
        x = np.asarray(x, dtype=np.float64)
        if not self._soft.any():
            return list(self.domain)
        lo, hi = self.encoder.domain(x)
        vals = self.values(x)
        out: list[z3.BoolRef] = []
        for i, v in enumerate(self.vars):
            b = v.block
            if not self._soft[i] or (v.sort == "real" and b.feature.upper == b.feature.lower):
                out += self._domain_of(v)
            elif v.sort == "real":
                out += [v.var >= rational(float(lo[b.start])), v.var <= rational(float(hi[b.start]))]
            else:  # grid
                out += [v.var >= min(0, vals[i]), v.var <= max(v.steps, vals[i])]
        return out

    def _domain_of(self, v: _Var) -> list[z3.BoolRef]:
        """The unit box's constraints on one variable (:attr:`domain` is theirs over all
        variables)."""
        f = v.block.feature
        if v.sort == "real":  # a constant feature encodes as 0
            return [v.var == 0] if f.upper == f.lower else [v.var >= 0, v.var <= 1]
        if v.sort == "grid":
            return [v.var >= 0, v.var <= v.steps]
        if v.sort == "level":
            return [v.var >= 0, v.var <= f.n_levels - 1]
        return []

    # --- model-space columns -------------------------------------------------------------
    def _indicator(self, col: int) -> z3.BoolRef:
        """For a 0/1 column: the predicate 'this column is 1'."""
        v = self.vars[self._col_block[col]]
        j = col - v.block.start
        if v.sort == "bool":
            return v.var
        if v.block.encoding == "onehot":
            return v.var == j
        return v.var >= j + 1  # thermometer

    def column(self, col: int) -> z3.ArithRef:
        """The model-space value of column ``col`` as a real expression."""
        v = self.vars[self._col_block[col]]
        if v.sort == "real":
            return v.var
        if v.sort == "grid":
            return z3.ToReal(v.var) / v.steps if v.steps else z3.RealVal(0)
        return _is_one(self._indicator(col))

    def linear(self, weights: np.ndarray, bias: float) -> z3.ArithRef:
        """``Σ_j w_j x_j + b`` over the model-space columns, grouped per raw feature (a
        categorical block becomes one ``If`` chain over its levels)."""
        w = np.asarray(weights, dtype=np.float64)
        terms: list[z3.ArithRef] = [rational(bias)]
        for v in self.vars:
            ws = w[v.block.slice]
            if not np.any(ws):
                continue
            if v.sort == "real":
                terms.append(rational(ws[0]) * v.var)
            elif v.sort == "grid":
                if v.steps:  # the column is exactly k / steps (a float 1/steps is not:
                    # an equality over integer features would have no exact solution)
                    terms.append(rational(ws[0]) / v.steps * z3.ToReal(v.var))
            elif v.sort == "bool":
                terms.append(z3.If(v.var, rational(ws[0]), z3.RealVal(0)))
            elif v.block.encoding == "onehot":
                expr = rational(ws[-1])
                for j in range(len(ws) - 2, -1, -1):
                    expr = z3.If(v.var == j, rational(ws[j]), expr)
                terms.append(expr)
            else:  # thermometer: level c contributes the sum of its first c weights
                cum = np.concatenate([[0.0], np.cumsum(ws)])
                expr = rational(cum[-1])
                for c in range(len(cum) - 2, -1, -1):
                    expr = z3.If(v.var == c, rational(cum[c]), expr)
                terms.append(expr)
        return z3.Sum(terms)

    def margins(self, cols: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
        """Per split ``x[col] <= t``, the margin by which a point on a real column must clear
        it (:class:`~robustce.models.trees.SplitMargins`; 0 for grid and 0/1 columns, whose
        values are exact)."""
        return self._margins(cols, thresholds)

    def le(self, col: int, threshold: float) -> z3.BoolRef | bool:
        """Exactly 'the float64 model input of column ``col`` is <= threshold' (a Python bool
        when the column's domain decides it). Cached per (column, threshold)."""
        key = (col, float(threshold))
        out = self._le.get(key)
        if out is None:
            out = self._le[key] = self._le_uncached(col, key[1])
        return out

    def _le_uncached(self, col: int, threshold: float) -> z3.BoolRef | bool:
        t = float(threshold)
        v = self.vars[self._col_block[col]]
        if v.sort == "real":
            if v.block.feature.upper == v.block.feature.lower:
                return 0.0 <= t
            return v.var <= rational(t - float(self.margins(np.array([col]), np.array([t]))[0]))
        if v.sort == "grid":
            if self._soft[self._col_block[col]] and v.steps:
                # the query's box may reach beyond [0, steps]: no shortcut from the range
                return v.var <= _grid_kmax_unbounded(v.steps, t)
            kmax = _grid_kmax(v.steps, t)
            if kmax < 0:
                return False
            if kmax >= v.steps:
                return True
            return v.var <= kmax
        if t >= 1.0:
            return True
        if t < 0.0:
            return False
        return z3.Not(self._indicator(col))

    def gt(self, col: int, threshold: float) -> z3.BoolRef | bool:
        """Exactly 'the float64 model input of column ``col`` is > threshold' (cached)."""
        key = (col, float(threshold))
        out = self._gt.get(key)
        if out is None:
            out = self._gt[key] = self._gt_uncached(col, key[1])
        return out

    def _gt_uncached(self, col: int, threshold: float) -> z3.BoolRef | bool:
        t = float(threshold)
        v = self.vars[self._col_block[col]]
        if v.sort == "real":
            if v.block.feature.upper == v.block.feature.lower:
                return 0.0 > t
            m = float(self.margins(np.array([col]), np.array([t]))[0])
            return v.var >= rational(max(float(np.nextafter(t, np.inf)), t + m))
        le = self.le(col, t)
        return (not le) if isinstance(le, bool) else z3.Not(le)

    # --- query-dependent parts -----------------------------------------------------------
    def values(self, x: np.ndarray) -> list[Any]:
        """Per raw feature, the value of its variable at the model-space row ``x`` (a float
        for continuous, an int grid step or level index, a bool)."""
        x = np.asarray(x, dtype=np.float64)
        out: list[Any] = []
        for v in self.vars:
            b = v.block
            if v.sort == "real":
                out.append(float(x[b.start]))
            elif v.sort == "grid":
                out.append(int(round(x[b.start] * v.steps)) if v.steps else 0)
            elif v.sort == "bool":
                out.append(bool(x[b.start] >= 0.5))
            elif b.encoding == "onehot":
                out.append(int(np.argmax(x[b.slice])))
            else:
                out.append(int((x[b.slice] >= 0.5).sum()))
        return out

    def _const(self, v: _Var, value: Any) -> z3.ExprRef:
        if v.sort == "real":
            return rational(value)
        if v.sort == "bool":
            return z3.BoolVal(bool(value))
        return z3.IntVal(int(value))

    def equal(self, i: int, value: Any) -> z3.BoolRef:
        """Feature ``i`` takes ``value`` (as returned by :meth:`values`)."""
        v = self.vars[i]
        return v.var == self._const(v, value)

    def actionability(self, x: np.ndarray,
                      overrides: Mapping[str, str | Actionability] | None = None
                      ) -> list[z3.BoolRef]:
        """Plausibility, part ii: immutable features keep the query's value, increase-only
        (decrease-only) features do not go down (up). ``overrides`` maps feature names to an
        actionability replacing the schema's (user constraints such as 'age unchanged')."""
        overrides = dict(overrides or {})
        out: list[z3.BoolRef] = []
        for i, (v, val) in enumerate(zip(self.vars, self.values(x), strict=True)):
            act = Actionability(overrides.get(v.block.name, v.block.actionability))
            if act is Actionability.FREE:
                continue
            if act is Actionability.IMMUTABLE:
                out.append(self.equal(i, val))
                continue
            if v.sort == "bool":
                # increase: a true query stays true; decrease: a false query stays false
                if act is Actionability.INCREASE and val:
                    out.append(v.var)
                elif act is Actionability.DECREASE and not val:
                    out.append(z3.Not(v.var))
                continue
            if v.block.encoding == "onehot":
                raise ValidationError(f"feature {v.block.name!r} is categorical; "
                                      f"{act.value}-only needs an ordered kind")
            c = self._const(v, val)
            out.append(v.var >= c if act is Actionability.INCREASE else v.var <= c)
        return out

    def box(self, x: np.ndarray, overrides: Mapping[str, str | Actionability] | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """Per model-space column, the range allowed by the actionability constraints at query
        ``x`` (used to prune tree nodes and to bound network neurons)."""
        overrides = dict(overrides or {})
        x = np.asarray(x, dtype=np.float64)
        lo, hi = self.encoder.domain(x)  # [0, 1], widened to a query beyond an observed range
        for v in self.vars:
            b = v.block
            act = Actionability(overrides.get(b.name, b.actionability))
            if b.encoding == "scaled" and b.feature.upper == b.feature.lower:
                hi[b.slice] = 0.0
            if act is Actionability.IMMUTABLE:
                lo[b.slice] = hi[b.slice] = x[b.slice]
            elif act is Actionability.INCREASE:
                lo[b.slice] = x[b.slice]
            elif act is Actionability.DECREASE:
                hi[b.slice] = x[b.slice]
        return lo, hi

    def ball(self, x: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
        """Per model-space column, a range containing every assignment whose per-feature
        distances δ_j to the query ``x`` are all <= ``radius`` (widened by a few ulps, so it
        is a sound superset; used to prune trees and bound neurons along the bisection)."""
        x = np.asarray(x, dtype=np.float64)
        lo, hi = self.encoder.domain(x)  # the query's box (the unit box, widened)
        if not math.isfinite(radius):
            return lo, hi
        for v, val in zip(self.vars, self.values(x), strict=True):
            b = v.block
            if v.sort == "real":
                lo[b.start] = max(lo[b.start],
                                  float(np.nextafter(np.nextafter(val - radius, -np.inf), -np.inf)))
                hi[b.start] = min(hi[b.start],
                                  float(np.nextafter(np.nextafter(val + radius, np.inf), np.inf)))
            elif v.sort == "bool" or b.encoding == "onehot":
                if radius < 1.0:
                    lo[b.slice] = hi[b.slice] = x[b.slice]
            else:
                span = v.steps if v.sort == "grid" else v.steps - 1
                reach = int(math.floor(radius * span)) + 1 if span > 0 else 0
                k_lo = max(min(0, val), val - reach)  # within the query's box
                k_hi = min(max(span, val), val + reach)
                if v.sort == "grid":
                    if span > 0:
                        lo[b.start], hi[b.start] = np.float64(k_lo) / span, np.float64(k_hi) / span
                    else:
                        lo[b.start] = hi[b.start] = 0.0
                else:  # thermometer columns j: 1 iff level >= j + 1
                    j = np.arange(1, b.width + 1)
                    lo[b.slice] = (k_lo >= j).astype(float)
                    hi[b.slice] = (k_hi >= j).astype(float)
        return lo, hi

    def distance(self, x: np.ndarray, norm: Mapping[str, float],
                 priced: Sequence[bool] | None = None, fixed: Sequence[float] | None = None
                 ) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
        """MACE's normalised distance to the query ``x`` (eq. 3): returns ``(D, constraints)``
        where the constraints make ``D`` at least the distance of every assignment (and the
        distance itself is attainable), so ``D <= δ`` holds iff ``d(x', x) <= δ``.

        ``norm`` maps "l0", "l1", "linf" to their weights α, β, γ (summing to 1).
        ``priced``: per raw feature, whether its change counts (False for a causal child:
        MINT prices the actions only; default all). ``fixed``: per raw feature, a cost added
        (before the division by J) when it changes at all (default none)."""
        alpha = float(norm.get("l0", 0.0))
        beta = float(norm.get("l1", 0.0))
        gamma = float(norm.get("linf", 0.0))
        vals = self.values(x)
        cons: list[z3.BoolRef] = []
        n = len(self.vars)
        total: list[z3.ArithRef] = []
        need_abs = beta > 0 or gamma > 0
        per_feature: list[z3.ArithRef] = []
        changed: list[z3.ArithRef] = []
        for i, (v, val) in enumerate(zip(self.vars, vals, strict=True)):
            same = self.equal(i, val)
            if fixed is not None and fixed[i] > 0:
                total.append(z3.If(same, z3.RealVal(0), rational(fixed[i])))
            if priced is not None and not priced[i]:
                continue
            if alpha > 0:
                changed.append(z3.If(same, z3.RealVal(0), z3.RealVal(1)))
            if not need_abs:
                continue
            if v.sort == "bool" or v.block.encoding == "onehot":
                per_feature.append(z3.If(same, z3.RealVal(0), z3.RealVal(1)))
                continue
            if v.sort == "real":
                diff = v.var - rational(val)
                scale = z3.RealVal(1)
            else:
                span = v.steps if v.sort == "grid" else v.steps - 1
                if span <= 0:
                    per_feature.append(z3.RealVal(0))
                    continue
                diff = z3.ToReal(v.var - int(val))
                scale = z3.RealVal(f"1/{span}")
            e = z3.Real(f"_e_{self.prefix}_{i}")
            cons += [e >= scale * diff, e >= -scale * diff]
            per_feature.append(e)
        if alpha > 0 and changed:
            total.append(rational(alpha) * z3.Sum(changed))
        if beta > 0 and per_feature:
            total.append(rational(beta) * z3.Sum(per_feature))
        if gamma > 0 and per_feature:
            m = z3.Real(f"_max_{self.prefix}")
            cons += [m >= e for e in per_feature] + [m >= 0]
            total.append(rational(gamma) * m)
        D = z3.Real(f"_dist_{self.prefix}")
        cons.append(D * n >= z3.Sum(total) if total else D >= 0)
        return D, cons

    def differs(self, x: np.ndarray) -> z3.BoolRef:
        """Diversity clause: the assignment differs from the row ``x`` in at least one feature
        (‖·‖₀ ≥ 1, paper §4.2); a real feature by at least :data:`DIFFER_RESOLUTION` of its
        range — z3 may otherwise move it by a rational too small to survive decoding to a
        float, returning the same CE twice."""
        out = []
        for i, val in enumerate(self.values(x)):
            v = self.vars[i]
            if v.sort == "real":
                c = self._const(v, val)
                out.append(z3.Or(v.var <= c - DIFFER_RESOLUTION, v.var >= c + DIFFER_RESOLUTION))
            else:
                out.append(z3.Not(self.equal(i, val)))
        return z3.Or(out)

    # --- reading a solution --------------------------------------------------------------
    def decode(self, model: z3.ModelRef) -> np.ndarray:
        """The model-space row (float64, as the encoder would encode it) of a z3 model (a
        declared range's column clipped to [0, 1] against float rounding; an observed one's
        kept, as its box may reach beyond)."""
        x = np.zeros(self.encoder.n_features_out_)
        for i, v in enumerate(self.vars):
            b = v.block
            val = model.eval(v.var, model_completion=True)
            if v.sort == "real":
                x[b.start] = _to_float(val) if self._soft[i] else min(max(_to_float(val), 0.0), 1.0)
            elif v.sort == "grid":
                k = int(val.as_long())
                x[b.start] = np.float64(k) / v.steps if v.steps else 0.0
            elif v.sort == "bool":
                x[b.start] = 1.0 if z3.is_true(val) else 0.0
            elif b.encoding == "onehot":
                x[b.start + int(val.as_long())] = 1.0
            else:
                x[b.slice] = int(val.as_long()) >= np.arange(1, b.width + 1)
        return x


def _grid_kmax(steps: int, t: float) -> int:
    """Largest k in [0, steps] whose float64 model input ``k / steps`` is <= t (-1 if none)."""
    if steps == 0:
        return 0 if 0.0 <= t else -1
    if not math.isfinite(t):
        return steps if t > 0 else -1
    k = int(math.floor(t * steps))
    k = min(max(k, -1), steps)
    while k + 1 <= steps and np.float64(k + 1) / steps <= t:
        k += 1
    while k >= 0 and np.float64(k) / steps > t:
        k -= 1
    return k


def _grid_kmax_unbounded(steps: int, t: float) -> int:
    """Largest integer k (of any sign) whose float64 model input ``k / steps`` is <= t
    (``steps`` > 0, ``t`` finite or not: ±inf give a step beyond any box)."""
    if not math.isfinite(t):
        return 2**62 if t > 0 else -(2**62)
    k = int(math.floor(t * steps))
    while np.float64(k + 1) / steps <= t:
        k += 1
    while np.float64(k) / steps > t:
        k -= 1
    return k

