"""SMT (z3) encodings for MACE (Karimi et al., AISTATS 2020): characteristic formulae of fitted
models, raw feature variables linked to model space, and the distance formula (eq. 3).

**Variables per raw feature** (:class:`SMTInput`), linked to the model's input exactly as the
:class:`~robustce.data.Encoder` defines it:

* continuous — one real ``x`` in ``[0, 1]``, the min-max scaled value (raw ``lower + x·R``);
* integer — one int ``k`` in ``[0, R]``, the raw value minus ``lower``; model input ``k / R``;
* binary — one bool; model input ``If(b, 1, 0)``;
* categorical — one int ``c`` in ``[0, K)``, the level index; one-hot column ``j`` is ``c == j``;
* ordinal — one int ``c`` in ``[0, K)`` in order; thermometer column ``j`` is ``c >= j + 1``
  (integer-coded ordinals: ``c / (K - 1)``).

**Characteristic formulae** ``φ_f(x, t)``, true iff the model predicts class ``t`` at ``x``:

* a tree: the disjunction over the leaves predicting ``t`` of the conjunction of their path
  conditions (paper Fig. 2); the conditions are shared along the tree as a DAG;
* a forest (scikit-learn's soft vote): per tree a real ``v_k`` fixed by the reached leaf
  (``path_l ⇒ v_k = value_l``, exactly one leaf reached), and the vote of the target class
  beats every other class with scikit-learn's tie rule (the first maximum wins);
* a ReLU network (logistic regression is the one-layer case; sklearn ``MLPClassifier`` and our
  ``MLP`` through ``model.network()``): one real per hidden neuron, ``h = If(z >= 0, z, 0)``
  (paper Fig. 3), neurons that interval bounds prove stable written without the ``If``; the
  target logit beats the others by at least ``tau``.

Exactness against float64. Tree thresholds ``t`` (already adjusted by :class:`TreeView` so that
``x <= t`` reproduces scikit-learn's float32 routing) are compared exactly for the floats the
model will see: a grid column ``k / R`` by the exact set of grid points whose float64 value is
``<= t``, 0/1 columns by their two values, and a real column with the split margin ``m``
(:class:`~robustce.models.trees.SplitMargins`: 2^-40 of the feature's magnitude, plus 2^-21 of
the raw threshold on a float32 raw column) — left iff ``x <= t − m``, right iff ``x >= t + m`` —
so that the raw row the user receives, decoded and scored again (re-encoded, or by the user's
own pipeline), is routed the same way (a column that the query box fixes, an immutable value,
is routed exactly). Every counterfactual satisfying the formula is therefore routed to the
same leaf; the lower bounds of MACE are proven for CEs that clear every split by its margin
(points within ``m`` of a threshold are not considered). Network logits are real arithmetic;
``tau > 0`` keeps the float64 forward pass on the same side.

**Distance** (:meth:`SMTInput.distance`): per raw feature ``δ_j = |Δ| / R_j`` (numeric),
``|Δ level| / (K_j - 1)`` (ordinal), ``𝕀[≠]`` (categorical, binary; a one-hot group counts
once); ``d = (α‖δ‖₀ + β‖δ‖₁ + γ‖δ‖∞) / J`` with ``α + β + γ = 1`` so that ``d ∈ [0, 1]`` (the
division of ‖δ‖∞ by the number of features J follows the authors' code). Absolute values are
slack reals (``e_j >= ±Δ``) and ‖δ‖₀ uses one bool per feature, so every formula stays in
linear real/integer arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import z3

from robustce.data.encoder import Encoder, FeatureBlock
from robustce.data.schema import Actionability, FeatureKind
from robustce.errors import SolverError, ValidationError
from robustce.models.trees import SplitMargins, TreeStack
from robustce.solvers.tightening import l1_ball_max

#: smallest model-space change of a real feature that the diversity clause counts as a change
DIFFER_RESOLUTION = 1e-6

__all__ = [
    "SMTInput",
    "SMTResult",
    "assert_all",
    "check",
    "constraint_formulas",
    "forest_formula",
    "interval_bounds",
    "network_formula",
    "rational",
    "tree_formula",
]


@lru_cache(maxsize=1 << 18)
def _rational(value: float) -> z3.RatNumRef:
    f = Fraction(value)
    return z3.RealVal(f"{f.numerator}/{f.denominator}")


def rational(value: float) -> z3.RatNumRef:
    """The exact rational value of a float64 as a z3 constant (``RealVal(0.1)`` would be 1/10)."""
    return _rational(float(value))


@lru_cache(maxsize=1 << 16)
def _vote(a: float, b: float) -> z3.RatNumRef:
    f = Fraction(a) - Fraction(b)
    return z3.RealVal(f"{f.numerator}/{f.denominator}")


def _to_float(value: z3.ExprRef) -> float:
    """A z3 numeral (int or rational) as the nearest float64."""
    if z3.is_int_value(value):
        return float(value.as_long())
    if z3.is_rational_value(value):
        return float(Fraction(value.numerator_as_long(), value.denominator_as_long()))
    if z3.is_algebraic_value(value):  # irrational (cannot arise in linear arithmetic)
        return float(value.approx(20).as_fraction())
    raise SolverError(f"z3 returned a non-numeric value {value}")


def _is_one(p: z3.BoolRef) -> z3.ArithRef:
    return z3.If(p, z3.RealVal(1), z3.RealVal(0))


@dataclass
class _Var:
    """One raw feature: its z3 variable and where it sits in model space."""

    block: FeatureBlock
    var: z3.ExprRef
    sort: str  # "real" (scaled continuous), "grid" (int k, column k/steps), "bool", "level"
    steps: int = 0  # grid: number of grid steps; level: number of levels


@dataclass
class SMTResult:
    """Outcome of one satisfiability call."""

    status: str  # "sat", "unsat" or "unknown"
    x: np.ndarray | None  # the model-space row of the satisfying assignment (sat only)
    reason: str = ""
    time: float = 0.0


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
            e = z3.Real(f"_e_{id(self)}_{i}")
            cons += [e >= scale * diff, e >= -scale * diff]
            per_feature.append(e)
        if alpha > 0 and changed:
            total.append(rational(alpha) * z3.Sum(changed))
        if beta > 0 and per_feature:
            total.append(rational(beta) * z3.Sum(per_feature))
        if gamma > 0 and per_feature:
            m = z3.Real(f"_max_{id(self)}")
            cons += [m >= e for e in per_feature] + [m >= 0]
            total.append(rational(gamma) * m)
        D = z3.Real(f"_dist_{id(self)}")
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


#: relative slack of a constraint row's bounds in z3 (see :func:`constraint_formulas`)
_ROW_SLACK = 1e-12


def constraint_formulas(inp: SMTInput, x: np.ndarray, constraints: Any) -> list[z3.BoolRef]:
    """The constraints (:class:`robustce.data.constraints.CompiledConstraints`) as z3
    formulas over ``inp``'s variables in rational arithmetic (each bound widened by 1e-12 of
    the row's magnitude: the compiled float64 rows would otherwise make an equality over
    integer features exactly unsatisfiable, e.g. ``b − a = 0.1 · 10`` with 0.1 ≠ 1/10): each relation row
    ``lower <= Σ_j A_j x_j <= upper`` (:meth:`SMTInput.linear`), and with ``max_changes = k``
    ``Σ_f [feature f differs from the query x] <= k`` (a categorical counts once); each
    conditional as ``Implies(condition, consequence)``; each group of features as "all keep
    the query's value, or all change" (a real column by at least the group's least move)."""
    out: list[z3.BoolRef] = []

    def within(e: z3.ArithRef, a: np.ndarray, lo: float, hi: float) -> list[z3.BoolRef]:
        # the compiled rows are float64 (a coefficient 1/10, a query's 0.1): in exact
        # arithmetic an equality over integer features could lose its lattice solutions, so
        # each bound is widened by 1e-12 of the row's magnitude (far below any lattice step)
        slack = _ROW_SLACK * (1.0 + float(np.abs(a).sum())
                              + max(abs(v) for v in (lo, hi, 0.0) if math.isfinite(v)))
        return ([e >= rational(lo - slack)] if math.isfinite(lo) else []) + (
            [e <= rational(hi + slack)] if math.isfinite(hi) else [])

    A = np.asarray(constraints.A, dtype=np.float64)
    for i in range(A.shape[0]):
        if not np.any(A[i]):
            continue
        e = inp.linear(A[i], 0.0)
        out += within(e, A[i], float(constraints.lower[i]), float(constraints.upper[i]))
    if constraints.max_changes is not None:
        moved = [z3.If(inp.equal(i, v), 0, 1) for i, v in enumerate(inp.values(x))]
        out.append(z3.Sum(moved) <= int(constraints.max_changes))
    q = np.asarray(x, dtype=np.float64).reshape(-1)
    for c in getattr(constraints, "conditionals", ()):
        if c.kind in ("expr", "category_change"):
            coef, const = c.indicator(q)
            cond = inp.linear(coef, const) > rational(0.5)
        else:
            m = inp.linear(c.cond, -float(c.cond @ q))
            cond = {1: m > 0, -1: m < 0, 0: m != 0}[c.direction]
        v = inp.linear(c.a, 0.0)
        shift = float(c.q_coef @ q)
        cons = within(v, c.a, c.lower + shift, c.upper + shift)
        out.append(z3.Implies(cond, z3.And(cons)))
    vals = inp.values(x) if getattr(constraints, "groups", ()) else []
    owner = np.asarray(constraints.feature_of_column)
    for g in getattr(constraints, "groups", ()):
        same, moved = [], []
        for cols, eps in zip(g.columns, g.min_move, strict=True):
            i = int(owner[cols[0]])
            v = inp.vars[i]
            same.append(inp.equal(i, vals[i]))
            if v.sort == "real":  # a real column moves by at least ε (as the MILP asks)
                c = rational(vals[i])
                moved.append(z3.Or(v.var >= c + rational(eps), v.var <= c - rational(eps)))
            else:
                moved.append(z3.Not(same[-1]))
        out.append(z3.Or(z3.And(same), z3.And(moved)))
    return out


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


# ----------------------------------------------------------------------------------------
# Characteristic formulae
# ----------------------------------------------------------------------------------------


def _and2(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    """``z3.And(a, b)``: the same term, built by one C call without the Python API's argument
    checks (which cost more than the call; tree paths make tens of thousands of these)."""
    ctx = a.ctx
    args = (z3.Ast * 2)(a.as_ast(), b.as_ast())
    return z3.BoolRef(z3.z3core.Z3_mk_and(ctx.ref(), 2, args), ctx)


def _or(terms: Sequence[z3.BoolRef]) -> z3.BoolRef:
    """``z3.Or(terms)`` (a non-empty list of Boolean terms): the same term by one C call."""
    ctx = terms[0].ctx
    args = (z3.Ast * len(terms))(*(t.as_ast() for t in terms))
    return z3.BoolRef(z3.z3core.Z3_mk_or(ctx.ref(), len(terms), args), ctx)


def assert_all(solver: z3.Solver, terms: Sequence[z3.BoolRef]) -> None:
    """``solver.add(*terms)`` for Boolean terms, one C call each (what ``add`` does after its
    per-term sort checks)."""
    ref, handle = solver.ctx.ref(), solver.solver
    for t in terms:
        z3.z3core.Z3_solver_assert(ref, handle, t.as_ast())


def _implies_eq(cond: z3.BoolRef, var: z3.ArithRef, value: z3.ArithRef) -> z3.BoolRef:
    """``z3.Implies(cond, var == value)`` for a real variable and a real numeral: the same
    term by two C calls. (Python evaluates ``var == value`` as ``value.__eq__(var)``, the
    numeral's class being a subclass of the variable's, so the equality reads ``value = var``.)"""
    ctx = cond.ctx
    eq = z3.z3core.Z3_mk_eq(ctx.ref(), value.as_ast(), var.as_ast())
    return z3.BoolRef(z3.z3core.Z3_mk_implies(ctx.ref(), cond.as_ast(), eq), ctx)


#: the stacks of recently seen tree lists, keyed by the trees' ids; each entry keeps its trees
#: alive (so an id is not reused while its entry lives)
_STACKS: dict[tuple[int, ...], tuple[Sequence[Any], TreeStack]] = {}


def _tree_stack(trees: Sequence[Any]) -> TreeStack:
    """The (cached) :class:`~robustce.models.trees.TreeStack` of ``trees``: a solver build
    reuses the arrays of the build before instead of concatenating a forest's nodes again."""
    key = tuple(id(t) for t in trees)
    hit = _STACKS.get(key)
    if hit is None:
        if len(_STACKS) >= 8:
            _STACKS.pop(next(iter(_STACKS)))
        hit = _STACKS[key] = (tuple(trees), TreeStack.of(trees))
    return hit[1]


def _reachable(stack: TreeStack, lo: np.ndarray, hi: np.ndarray,
               prune: Callable[[np.ndarray, np.ndarray], Any] | None,
               margin: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Breadth-first over all trees at once, one level per numpy pass: the nodes reachable in
    the box ``[lo, hi]`` as entries (entry ``k < n_trees`` is tree ``k``'s root). Returns the
    node of every entry and, per entry, the entry of its only child when the box decides the
    test (``forced``) or of its left / right child when it does not (-1: none, or pruned).
    Without ``prune`` a child keeps its parent's box; with it the child's box is narrowed by
    the test and ``prune(lo, hi)`` (one bool per box row) may drop it. ``margin`` (per stack
    node, :meth:`SMTInput.margins`): a box decides a test only when it clears the threshold
    by it (``hi <= t − m`` / ``lo >= t + m``), or when it fixes the column (an immutable
    value is routed as the model routes it)."""
    node = stack.roots.copy()
    d = len(lo)
    LO = np.broadcast_to(np.asarray(lo, np.float64), (len(node), d)).copy()
    HI = np.broadcast_to(np.asarray(hi, np.float64), (len(node), d)).copy()
    ids = np.arange(len(node))
    nodes = [node]
    parents: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (parent ids, child ids, which)
    n_entries = len(node)
    while len(node):
        inner = stack.left[node] >= 0
        node, LO, HI, ids = node[inner], LO[inner], HI[inner], ids[inner]
        if not len(node):
            break
        rows = np.arange(len(node))
        f, t = stack.feature[node], stack.threshold[node]
        m = margin[node] if margin is not None else np.zeros(len(node))
        a, b = LO[rows, f], HI[rows, f]
        fixed = a == b
        lm = t - m
        rm = np.where(m > 0, t + m, np.nextafter(t, np.inf))
        go_left = (b <= lm) | (fixed & (b <= t))
        go_right = ~go_left & ((a >= rm) | (fixed & (a > t)))
        split = ~(go_left | go_right)
        new_node = [np.where(go_left, stack.left[node], stack.right[node])[~split]]
        new_lo, new_hi = [LO[~split]], [HI[~split]]
        new_parent, which = [ids[~split]], [np.zeros(int((~split).sum()), dtype=np.int8)]
        s = np.flatnonzero(split)
        for side, child in ((1, stack.left), (2, stack.right)):
            clo, chi = LO[s], HI[s]
            if prune is not None:
                clo, chi = clo.copy(), chi.copy()
                if side == 1:
                    chi[np.arange(len(s)), f[s]] = lm[s]
                else:
                    clo[np.arange(len(s)), f[s]] = rm[s]
                keep = ~np.asarray(prune(clo, chi), dtype=bool) if len(s) else np.zeros(0, bool)
            else:
                keep = np.ones(len(s), dtype=bool)
            new_node.append(child[node[s[keep]]])
            new_lo.append(clo[keep])
            new_hi.append(chi[keep])
            new_parent.append(ids[s[keep]])
            which.append(np.full(int(keep.sum()), side, dtype=np.int8))
        node = np.concatenate(new_node)
        LO, HI = np.concatenate(new_lo), np.concatenate(new_hi)
        ids = np.arange(n_entries, n_entries + len(node))
        n_entries += len(node)
        nodes.append(node)
        parents.append((np.concatenate(new_parent), ids, np.concatenate(which)))
    forced = np.full(n_entries, -1, dtype=np.int64)
    lchild, rchild = forced.copy(), forced.copy()
    for par, child, which in parents:
        for arr, w in ((forced, 0), (lchild, 1), (rchild, 2)):
            sel = which == w
            arr[par[sel]] = child[sel]
    return np.concatenate(nodes), forced, lchild, rchild


def _leaf_paths_all(trees: Sequence[Any], inp: SMTInput, lo: np.ndarray, hi: np.ndarray,
                    prune: Callable[[np.ndarray, np.ndarray], Any] | None = None
                    ) -> list[list[tuple[int, z3.BoolRef | bool]]]:
    """Per tree, the leaves reachable inside the box ``[lo, hi]`` with their path conditions;
    tests the box decides are left out (partial evaluation of the characteristic formula).
    ``prune(lo, hi)`` may drop a subtree given the column ranges its path allows (e.g. when
    every point there is provably farther than the distance bound; it receives a stack of
    boxes and returns one bool per row). The reachable nodes are found for all trees at once
    (:func:`_reachable`); the conditions are then built depth-first, right branch first, and
    an input-domain test that is never true drops its branch."""
    stack = _tree_stack(trees)
    inner = stack.left >= 0
    margin = np.zeros(len(stack.feature))
    margin[inner] = inp.margins(stack.feature[inner], stack.threshold[inner])
    node, forced, lchild, rchild = _reachable(stack, lo, hi, prune, margin)
    feat, thr, left = stack.feature, stack.threshold, stack.left
    out: list[list[tuple[int, z3.BoolRef | bool]]] = []
    for k in range(len(stack.roots)):
        base = int(stack.roots[k])
        paths: list[tuple[int, z3.BoolRef | bool]] = []
        todo: list[tuple[int, Any]] = [(k, True)]
        while todo:
            e, cond = todo.pop()
            n = int(node[e])
            if left[n] < 0:
                paths.append((n - base, cond))
                continue
            if forced[e] >= 0:
                todo.append((int(forced[e]), cond))
                continue
            f, t = int(feat[n]), float(thr[n])
            for child, pred in ((int(lchild[e]), inp.le(f, t)), (int(rchild[e]), inp.gt(f, t))):
                if pred is False or child < 0:
                    continue
                todo.append((child, cond if pred is True else (pred if cond is True
                                                               else _and2(cond, pred))))
        out.append(paths)
    return out


def tree_formula(tree: Any, inp: SMTInput, target: int,
                 box: tuple[np.ndarray, np.ndarray] | None = None,
                 prune: Callable[[np.ndarray, np.ndarray], bool] | None = None) -> z3.BoolRef:
    """φ_f(x, target) of one decision tree (:class:`~robustce.models.TreeView`): the
    disjunction of the path conditions of the leaves whose argmax class is ``target``."""
    lo, hi = box if box is not None else (np.zeros(tree.n_features), np.ones(tree.n_features))
    leaf_class = np.argmax(tree.value, axis=1)
    conds = [c for leaf, c in _leaf_paths_all([tree], inp, lo, hi, prune)[0]
             if leaf_class[leaf] == target]
    if any(c is True for c in conds):
        return z3.BoolVal(True)
    return _or(conds) if conds else z3.BoolVal(False)


# Building the tree formulae term by term through z3's Python API is most of a forest's solver
# build time (adult, 100 trees: ≈ 60 % of MACE's time per query). Writing them as SMT-LIB text
# (a define-fun per path node) and parsing once built them 2.3× faster, but z3 then solved them
# 2.8× slower on 20 adult queries (the parser keeps a written negative number as a unary-minus
# term and an equality in its written orientation, where the API builds numerals and orders
# the arguments), so the API build stays.
def forest_formula(trees: Sequence[Any], inp: SMTInput, target: int,
                   box: tuple[np.ndarray, np.ndarray] | None = None, tau: float = 0.0,
                   prefix: str = "v",
                   prune: Callable[[np.ndarray, np.ndarray], bool] | None = None
                   ) -> list[z3.BoolRef]:
    """φ_f(x, target) of a soft-voting forest (scikit-learn's mean of leaf distributions):
    per tree and rival class ``c`` a real ``v = value_l[target] - value_l[c]`` of the reached
    leaf ``l``; the summed votes must be > ``tau`` against rivals listed before ``target``
    and >= ``tau`` against those after it (``np.argmax`` keeps the first maximum)."""
    if len(trees) == 0:
        raise ValidationError("a forest needs at least one tree")
    n_features = trees[0].n_features
    lo, hi = box if box is not None else (np.zeros(n_features), np.ones(n_features))
    n_classes = trees[0].n_classes
    rivals = [c for c in range(n_classes) if c != target]
    cons: list[z3.BoolRef] = []
    sums: dict[int, list[z3.ArithRef]] = {c: [] for c in rivals}
    const: dict[int, Fraction] = dict.fromkeys(rivals, Fraction(0))
    all_paths = _leaf_paths_all(trees, inp, lo, hi, prune)
    for k, (tree, paths) in enumerate(zip(trees, all_paths, strict=True)):
        value = tree.value
        if not paths:  # no leaf of this tree is within reach: nothing is
            return [z3.BoolVal(False)]
        if len(paths) == 1 and paths[0][1] is True:  # decided by the box
            leaf = paths[0][0]
            for c in rivals:
                const[c] += Fraction(float(value[leaf, target])) - Fraction(float(value[leaf, c]))
            continue
        conds = [c for _, c in paths]
        if any(c is True for c in conds):  # cannot happen with more than one path
            raise SolverError("inconsistent tree paths")
        cons.append(_or(conds))  # some leaf is reached (excludes points between floats)
        leaves = np.array([leaf for leaf, _ in paths])
        for c in rivals:
            a, b = value[leaves, target], value[leaves, c]
            if np.all(a - b == a[0] - b[0]) and np.all(a == a[0]):  # one vote everywhere
                const[c] += Fraction(float(a[0])) - Fraction(float(b[0]))
                continue
            var = z3.Real(f"{prefix}_{id(inp)}_{k}_{c}")
            cons += [_implies_eq(cond, var, _vote(float(ai), float(bi)))
                     for ai, bi, cond in zip(a, b, conds, strict=True)]
            sums[c].append(var)
    for c in rivals:
        total = z3.Sum([*sums[c], z3.RealVal(str(const[c] - Fraction(float(tau))))])
        cons.append(total > 0 if c < target else total >= 0)
    return cons


def additive_formula(ensemble: Any, inp: SMTInput, target: int,
                     box: tuple[np.ndarray, np.ndarray] | None = None, tau: float = 0.0,
                     prefix: str = "g",
                     prune: Callable[[np.ndarray, np.ndarray], bool] | None = None
                     ) -> list[z3.BoolRef]:
    """φ_f(x, target) of an additive tree ensemble (gradient boosting,
    :class:`~robustce.models.boosting.AdditiveTrees`): per tree a real ``v`` equal to the leaf
    value of the reached leaf, logit ``z_k = b_k + Σ v``. Binary (one logit): class 1 iff
    ``z > tau``, class 0 iff ``z <= -tau``; K logits: ``z_t − z_c`` > ``tau`` against rivals
    listed before ``target`` and >= ``tau`` after it (``np.argmax`` keeps the first maximum)."""
    trees = list(ensemble.trees)
    n_features = trees[0].n_features
    lo, hi = box if box is not None else (np.zeros(n_features), np.ones(n_features))
    n_logits = ensemble.n_logits
    cons: list[z3.BoolRef] = []
    terms: list[list[Any]] = [[] for _ in range(n_logits)]
    const = [Fraction(float(b)) for b in ensemble.baseline]
    all_paths = _leaf_paths_all(trees, inp, lo, hi, prune)
    for m, (tree, k, paths) in enumerate(zip(trees, ensemble.output, all_paths, strict=True)):
        if not paths:
            return [z3.BoolVal(False)]
        vals = tree.value[[leaf for leaf, _ in paths], 0]
        if len(paths) == 1 or np.all(vals == vals[0]):
            if len(paths) > 1:
                cons.append(_or([c for _, c in paths]))
            const[int(k)] += Fraction(float(vals[0]))
            continue
        var = z3.Real(f"{prefix}_{id(inp)}_{m}")
        conds = [c for _, c in paths]
        cons.append(_or(conds))
        cons += [_implies_eq(cond, var, _rational(float(v)))
                 for v, cond in zip(vals, conds, strict=True)]
        terms[int(k)].append(var)
    z = [z3.Sum([*terms[k], z3.RealVal(str(const[k]))]) for k in range(n_logits)]
    t = z3.RealVal(str(Fraction(float(tau))))
    if n_logits == 1:
        cons.append(z[0] > t if target == 1 else z[0] <= -t)
        return cons
    for c in range(n_logits):
        if c != target:
            cons.append(z[target] - z[c] > t if c < target else z[target] - z[c] >= t)
    return cons


def interval_bounds(weights: Sequence[tuple[np.ndarray, np.ndarray]], lo: np.ndarray,
                    hi: np.ndarray, first: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-activation bounds of every layer over the input box ``[lo, hi]`` (interval
    arithmetic, sign-aware). ``first``: sound first-layer bounds to intersect with the
    interval ones (e.g. :func:`l1_ball_bounds`); later layers propagate from the tighter ones."""
    out = []
    a, b = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    for i, (W, bias) in enumerate(weights):
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        zl = Wp @ a + Wn @ b + bias
        zu = Wp @ b + Wn @ a + bias
        pad = 1e-12 * (1.0 + np.abs(zl) + np.abs(zu))  # float rounding: keep the bounds sound
        zl, zu = zl - pad, zu + pad
        if i == 0 and first is not None:
            zl, zu = np.maximum(zl, first[0]), np.minimum(zu, first[1])
        out.append((zl, zu))
        if i < len(weights) - 1:
            a, b = np.maximum(zl, 0.0), np.maximum(zu, 0.0)
    return out


def l1_ball_bounds(W: np.ndarray, bias: np.ndarray, x: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray, w: np.ndarray, budget: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Exact bounds of ``W @ y + bias`` over ``{y ∈ [lo, hi] : Σ_c w_c |y_c − x_c| <= budget}``
    (:func:`robustce.solvers.tightening.l1_ball_max`, a fractional knapsack per neuron and
    direction), padded for float rounding. With w the raw-distance column weights ω (each
    feature's ω-weighted column moves bound its δ_f from below) and budget J·δ/β, the set
    contains every input within MACE's ℓ1 distance δ: the bounds are sound for it, and much
    tighter than the box's when several columns may move but their sum may not."""
    W = np.asarray(W, dtype=np.float64)
    z0 = W @ np.asarray(x, dtype=np.float64) + bias
    zu = z0 + l1_ball_max(W, x, lo, hi, w, budget)
    zl = z0 - l1_ball_max(-W, x, lo, hi, w, budget)
    pad = 1e-9 * (1.0 + np.abs(zl) + np.abs(zu))
    return zl - pad, zu + pad


def network_formula(weights: Sequence[tuple[np.ndarray, np.ndarray]], inp: SMTInput, target: int,
                    box: tuple[np.ndarray, np.ndarray] | None = None, tau: float = 1e-6,
                    prefix: str = "h",
                    first: tuple[np.ndarray, np.ndarray] | None = None) -> list[z3.BoolRef]:
    """φ_f(x, target) of a ReLU network (last layer = logits; one logit for binary models,
    class 1 iff logit > 0): one real per hidden neuron with ``h = If(z >= 0, z, 0)``, stable
    neurons (by interval bounds over ``box``, first-layer ones tightened by ``first`` when
    given) without the ``If``; the target wins by >= ``tau``."""
    d = inp.encoder.n_features_out_
    lo, hi = box if box is not None else (np.zeros(d), np.ones(d))
    bounds = interval_bounds(weights, lo, hi, first)
    cons: list[z3.BoolRef] = []
    W0, b0 = weights[0]
    pre = [inp.linear(W0[i], b0[i]) for i in range(W0.shape[0])]
    for layer in range(1, len(weights)):
        zl, zu = bounds[layer - 1]
        post: list[z3.ArithRef] = []
        for i, z in enumerate(pre):
            if zu[i] <= 0:
                post.append(z3.RealVal(0))
                continue
            h = z3.Real(f"{prefix}_{id(inp)}_{layer}_{i}")
            if zl[i] >= 0:
                cons.append(h == z)
            else:
                # exact ReLU, plus its triangle relaxation as redundant cuts for z3's simplex
                slope = zu[i] / (zu[i] - zl[i])
                cons += [h == z3.If(z >= 0, z, z3.RealVal(0)), h >= 0, h >= z,
                         h <= rational(slope) * z - rational(slope * zl[i])
                         + rational(1e-9 * (1 + zu[i] - zl[i]))]
            post.append(h)
        W, b = weights[layer]
        pre = []
        for i in range(W.shape[0]):
            terms = [rational(W[i, j]) * post[j] for j in range(W.shape[1])
                     if W[i, j] != 0 and not (z3.is_rational_value(post[j]))]
            pre.append(z3.Sum([*terms, rational(b[i])]))
    t = rational(tau)
    if len(pre) == 1:
        if target not in (0, 1):
            raise ValidationError(f"binary network: target class must be 0 or 1, got {target}")
        cons.append(pre[0] >= t if target == 1 else pre[0] <= -t)
    else:
        cons += [pre[target] - pre[c] >= t for c in range(len(pre)) if c != target]
    return cons


# ----------------------------------------------------------------------------------------
# The oracle
# ----------------------------------------------------------------------------------------


def check(solver: z3.Solver, inp: SMTInput, extra: Sequence[z3.BoolRef] = (),
          timeout: float | None = None) -> SMTResult:
    """One SAT call: is ``solver``'s formula ∧ ``extra`` satisfiable? ``timeout`` in seconds
    (z3's own per-call limit; ``unknown`` on expiry)."""
    import time

    if timeout is not None:
        if not timeout > 0:
            return SMTResult("unknown", None, "no time left")
        solver.set("timeout", max(1, int(math.ceil(timeout * 1000))))
    t0 = time.perf_counter()
    if extra:
        solver.push()
        solver.add(*extra)
    try:
        r = solver.check()
        if r == z3.sat:
            return SMTResult("sat", inp.decode(solver.model()), time=time.perf_counter() - t0)
        if r == z3.unsat:
            return SMTResult("unsat", None, time=time.perf_counter() - t0)
        return SMTResult("unknown", None, solver.reason_unknown(), time.perf_counter() - t0)
    finally:
        if extra:
            solver.pop()
