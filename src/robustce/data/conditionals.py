"""Conditional relations: ``if <condition> then <consequence>`` between raw features.

Written ``"if education increases then age increases by >= 1"`` or, equivalently,
``'purpose == "car" -> amount <= 50000'``. A **condition** is one of

* ``f increases`` / ``f decreases`` / ``f changes`` — the CE's value of ``f`` compared with the
  query's (a numeric or ordinal feature for increases / decreases; any feature for changes);
* ``f == value`` — the CE's category (a categorical, binary or ordinal feature; ``value`` a
  Python literal: ``"car"``, ``1``).

A **consequence** is a linear relation (:class:`~robustce.data.constraints.Relation`: ``amount
<= 50000``, ``debt <= 0.5 * income``) or ``f increases by >= k`` / ``f decreases by >= k``
(``k > 0`` in raw units; without ``by``, any increase of at least the evaluator's tolerance is
not expressible exactly, so ``by >= k`` is required for numeric features; an ordinal may say
``increases`` for one level).

Semantics: a CE satisfies the conditional when the condition is false, or the consequence
holds (material implication). :func:`conditional_holds` evaluates raw rows against their
queries; :meth:`Conditional.compile` gives the model-space form that
:func:`robustce.solvers.conditional_encoding.encode_conditionals` turns into big-M rows.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.relations import Relation
from robustce.data.schema import FeatureKind, Schema
from robustce.errors import ValidationError

__all__ = ["CompiledConditional", "Conditional", "aligned", "is_conditional", "numeric_values",
           "value_form"]

_NAME = r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_MOVE = re.compile(rf"^{_NAME}\s+(increases|decreases|changes)$")
_EQ = re.compile(rf"^{_NAME}\s*==\s*(.+)$")
_BY = re.compile(rf"^{_NAME}\s+(increases|decreases)(?:\s+by\s*>=\s*(.+))?$")
_SPLIT_IF = re.compile(r"^\s*if\s+(.+?)\s+then\s+(.+?)\s*$", re.S)


def is_conditional(text: Any) -> bool:
    """Whether ``text`` is written as a conditional (``if … then …`` or ``… -> …``)."""
    return isinstance(text, str) and (bool(_SPLIT_IF.match(text)) or "->" in text)


def numeric_values(frame: pd.DataFrame, schema: Schema, f: str) -> np.ndarray:
    """The raw values of ``f`` as numbers (an ordinal as its level index)."""
    feat = schema[f]
    if feat.kind is FeatureKind.ORDINAL:
        lv = {c: i for i, c in enumerate(feat.categories)}
        return np.array([lv[v] for v in frame[f].tolist()], dtype=np.float64)
    return np.asarray(frame[f], dtype=np.float64)


def aligned(frame: pd.DataFrame, query_frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``frame`` and its queries row by row (``query_frame``: one row for all, or one per row
    by position), both with a fresh index."""
    q = query_frame if len(query_frame) == len(frame) else \
        query_frame.iloc[np.zeros(len(frame), dtype=np.int64)]
    return frame.reset_index(drop=True), q.reset_index(drop=True)


def value_form(block: Any, d: int, where: str) -> tuple[np.ndarray, float]:
    """(coef, const): a feature's raw value (an ordinal's level index) as ``coef @ x + const``
    over the ``d`` model-space columns, exact on valid encodings (scaled: ``lower + x ·
    (upper − lower)``; thermometer: the sum of its columns; integer-coded: ``x · (k − 1)``).
    ValidationError (prefixed by ``where``) for an encoding without an order."""
    c = np.zeros(d)
    if block.encoding == "scaled":
        c[block.start] = float(block.feature.upper) - float(block.feature.lower)
        return c, float(block.feature.lower)
    if block.encoding == "thermometer":
        c[block.slice] = 1.0
        return c, 0.0
    if block.encoding == "integer_levels":
        c[block.start] = float(max(block.feature.n_levels - 1, 1))
        return c, 0.0
    raise ValidationError(f"{where}: feature {block.name!r} is encoded as {block.encoding!r}, "
                          "which has no numeric value")


def _name(token: str) -> str:
    return token[1:-1] if token.startswith("`") else token


@dataclass(frozen=True)
class CompiledConditional:
    """A conditional in a fitted encoder's model space (``d`` columns).

    Condition: ``kind == "expr"`` — the indicator is ``cond @ x + cond_const`` (0/1 on valid
    encodings); ``kind == "category_change"`` — a categorical / binary feature differs from
    the query (:meth:`indicator`); ``kind == "move"`` — the movement ``m = cond @ (x − q)`` with ``direction``
    +1 (increase: m > 0), −1 (decrease: m < 0) or 0 (change: m ≠ 0). Consequence: ``lower +
    q_coef @ q <= a @ x <= upper + q_coef @ q``."""

    text: str
    kind: str
    cond: np.ndarray
    cond_const: float
    direction: int
    a: np.ndarray
    lower: float
    upper: float
    q_coef: np.ndarray

    def indicator(self, query: np.ndarray) -> tuple[np.ndarray, float]:
        """For an ``expr`` or ``category_change`` condition: (coef, const) with the condition's
        0/1 indicator ``coef @ x + const`` on valid encodings (a category change is
        ``Σ_j w_j |x_j − q_j|``, linear once the query's 0/1 columns are known)."""
        if self.kind == "expr":
            return self.cond, self.cond_const
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        sgn = np.where(q >= 0.5, -1.0, 1.0)
        coef = self.cond * sgn
        return coef, float(-(coef @ q))

    def holds(self, query: np.ndarray, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Per row of ``X`` (model space): the condition is false or the consequence holds
        (within ``tol``)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        if self.kind in ("expr", "category_change"):
            coef, const = self.indicator(q)
            on = X @ coef + const > 0.5
        else:
            m = (X - q[None, :]) @ self.cond
            on = {1: m > tol, -1: m < -tol, 0: np.abs(m) > tol}[self.direction]
        v = X @ self.a
        shift = float(self.q_coef @ q)
        ok = (v >= self.lower + shift - tol) & (v <= self.upper + shift + tol)
        return ~on | ok


class Conditional:
    """One parsed conditional relation (module docstring)."""

    def __init__(self, text: str):
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"a conditional must be a non-empty string, got {text!r}")
        self.text = text.strip()
        m = _SPLIT_IF.match(self.text)
        if m:
            cond, cons = m.group(1).strip(), m.group(2).strip()
        else:
            parts = self.text.split("->")
            if len(parts) != 2:
                raise ValidationError(f"conditional {text!r}: write 'if <condition> then "
                                      "<consequence>' or '<condition> -> <consequence>'")
            cond, cons = parts[0].strip(), parts[1].strip()
        mm, me = _MOVE.match(cond), _EQ.match(cond)
        if mm:
            self.cond_feature, self.cond_kind = _name(mm.group(1)), mm.group(2)
            self.cond_value: Any = None
        elif me:
            self.cond_feature, self.cond_kind = _name(me.group(1)), "=="
            try:
                self.cond_value = ast.literal_eval(me.group(2).strip())
            except (ValueError, SyntaxError):
                raise ValidationError(f"conditional {text!r}: {me.group(2).strip()!r} is not a "
                                      "literal value (quote a category: \"car\")") from None
        else:
            raise ValidationError(f"conditional {text!r}: condition {cond!r} must be 'f "
                                  "increases', 'f decreases', 'f changes' or 'f == value'")
        mb = _BY.match(cons)
        self.relation: Relation | None = None
        if mb:
            self.cons_feature, self.cons_kind = _name(mb.group(1)), mb.group(2)
            by = mb.group(3)
            try:
                self.cons_by = None if by is None else float(ast.literal_eval(by.strip()))
            except (ValueError, SyntaxError, TypeError):
                raise ValidationError(f"conditional {text!r}: 'by >= {by}' needs a number") \
                    from None
            if self.cons_by is not None and not self.cons_by > 0:
                raise ValidationError(f"conditional {text!r}: 'by >= k' needs k > 0")
        else:
            self.cons_feature = self.cons_kind = None
            self.cons_by = None
            self.relation = Relation.parse(cons)

    def __repr__(self) -> str:
        return f"Conditional({self.text!r})"

    @property
    def features(self) -> list[str]:
        out = [self.cond_feature]
        out += [self.cons_feature] if self.relation is None else self.relation.features
        return sorted(set(out))

    # --- validation ------------------------------------------------------------------------
    def validate(self, schema: Schema) -> None:
        """Every feature exists and fits its role (ValidationError naming the problem)."""
        for f in self.features:
            if f not in schema:
                raise ValidationError(f"conditional {self.text!r}: unknown feature {f!r}; "
                                      f"features are {schema.names}")
        cf = schema[self.cond_feature]
        if self.cond_kind in ("increases", "decreases") and not (
                cf.kind.is_numeric or cf.kind is FeatureKind.ORDINAL):
            raise ValidationError(f"conditional {self.text!r}: {cf.name!r} is {cf.kind}; "
                                  "'increases' / 'decreases' need a numeric or ordinal feature")
        if self.cond_kind == "==":
            if cf.kind.is_numeric:
                raise ValidationError(f"conditional {self.text!r}: {cf.name!r} is {cf.kind}; "
                                      "'f == value' conditions take categorical, binary or "
                                      "ordinal features (write a numeric condition as a "
                                      "relation's consequence instead)")
            if self.cond_value not in tuple(cf.categories):
                raise ValidationError(f"conditional {self.text!r}: {self.cond_value!r} is not "
                                      f"a category of {cf.name!r} {tuple(cf.categories)}")
        if self.relation is not None:
            for f in self.relation.features:
                if not schema[f].kind.is_numeric:
                    raise ValidationError(f"conditional {self.text!r}: feature {f!r} is "
                                          f"{schema[f].kind}; relations take continuous or "
                                          "integer features only")
        else:
            g = schema[self.cons_feature]
            if not (g.kind.is_numeric or g.kind is FeatureKind.ORDINAL):
                raise ValidationError(f"conditional {self.text!r}: {g.name!r} is {g.kind}; "
                                      "'increases by' needs a numeric or ordinal feature")
            if g.kind.is_numeric and self.cons_by is None:
                raise ValidationError(f"conditional {self.text!r}: a numeric consequence needs "
                                      f"'{g.name} {self.cons_kind} by >= k' (k > 0)")

    # --- raw evaluation ----------------------------------------------------------------------
    _values = staticmethod(numeric_values)

    def holds(self, frame: pd.DataFrame, query_frame: pd.DataFrame, schema: Schema,
              tol: float) -> np.ndarray:
        """Per raw row (its query: ``query_frame`` by position, one row for all or one per
        row): the condition is false or the consequence holds; numeric changes count beyond
        ``tol`` times max(1, |query value|, the feature's range)."""
        fr, q = aligned(frame, query_frame)

        def moved(f: str) -> np.ndarray:
            feat = schema[f]
            if not (feat.kind.is_numeric or feat.kind is FeatureKind.ORDINAL):
                return np.where(fr[f].to_numpy() != q[f].to_numpy(), 1.0, 0.0)
            a, b = self._values(fr, schema, f), self._values(q, schema, f)
            d = a - b
            if feat.kind.is_numeric:
                span = float(feat.upper) - float(feat.lower)
                d = np.where(np.abs(d) > tol * np.maximum(np.maximum(1.0, np.abs(b)), span),
                             d, 0.0)
            return d

        if self.cond_kind == "==":
            on = np.array([v == self.cond_value for v in fr[self.cond_feature].tolist()],
                          dtype=bool)
        else:
            m = moved(self.cond_feature)
            on = {"increases": m > 0, "decreases": m < 0, "changes": m != 0}[self.cond_kind]
        if self.relation is not None:
            scale = self.relation.magnitude(schema)
            ok = self.relation.violation(fr) <= tol * scale
        else:
            a = self._values(fr, schema, self.cons_feature)
            b = self._values(q, schema, self.cons_feature)
            d = (a - b) if self.cons_kind == "increases" else (b - a)
            k = 1.0 if self.cons_by is None else self.cons_by
            ok = d >= k - tol * max(1.0, abs(k))
        return ~on | ok

    # --- model space -------------------------------------------------------------------------
    def compile(self, encoder: Any) -> CompiledConditional:
        """The model-space form (:class:`CompiledConditional`) for a fitted ``encoder``."""
        self.validate(encoder.schema)
        d = int(encoder.n_features_out_)
        blocks = {b.name: b for b in encoder.blocks_}

        def level_expr(b: Any) -> tuple[np.ndarray, float]:
            return value_form(b, d, f"conditional {self.text!r}")

        cb = blocks[self.cond_feature]
        cond = np.zeros(d)
        const, direction, kind = 0.0, 0, "move"
        if self.cond_kind == "==":
            kind = "expr"
            idx = tuple(cb.feature.categories).index(self.cond_value)
            if cb.encoding == "onehot":
                cond[cb.start + idx] = 1.0
            elif cb.encoding == "binary":
                cond[cb.start], const = (1.0, 0.0) if idx == 1 else (-1.0, 1.0)
            elif cb.encoding == "thermometer":  # [level == v] = T_v − T_{v+1}, T_0 = 1, T_k = 0
                k = cb.feature.n_levels
                if idx == 0:
                    const = 1.0
                else:
                    cond[cb.start + idx - 1] = 1.0
                if idx + 1 <= k - 1:
                    cond[cb.start + idx] = -1.0
            else:
                raise ValidationError(f"conditional {self.text!r}: 'f == value' on the "
                                      f"{cb.encoding!r} encoding of {cb.name!r} is not supported")
        elif cb.encoding in ("onehot", "binary"):  # changes: Σ w_j |x_j − q_j| (w = ½ one-hot)
            kind = "category_change"
            cond[cb.slice] = 0.5 if cb.encoding == "onehot" else 1.0
        else:
            cond = level_expr(cb)[0]
            direction = {"increases": 1, "decreases": -1, "changes": 0}[self.cond_kind]
        a, q_coef = np.zeros(d), np.zeros(d)
        if self.relation is not None:
            lo, hi = -np.inf, np.inf
            rhs = self.relation.rhs
            for f, coef in self.relation.coefs:
                c, k0 = level_expr(blocks[f])
                a += coef * c
                rhs -= coef * k0
            if self.relation.op in ("<=", "=="):
                hi = rhs
            if self.relation.op in (">=", "=="):
                lo = rhs
        else:
            c, _ = level_expr(blocks[self.cons_feature])
            k = 1.0 if self.cons_by is None else self.cons_by
            sign = 1.0 if self.cons_kind == "increases" else -1.0
            a, q_coef = sign * c, sign * c  # sign·(v(x) − v(q)) >= k
            lo, hi = k, np.inf
        s = float(np.max(np.abs(a))) if np.any(a) else 1.0
        return CompiledConditional(self.text, kind, cond, const, direction, a / s, lo / s,
                                   hi / s, q_coef / s)
