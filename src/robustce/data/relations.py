"""Linear relations between raw features: the text form ``"debt <= 0.6 * income"`` parsed with
:mod:`ast` (never evaluated) into coefficients in raw units (:class:`Relation`). Shared by
:mod:`robustce.data.constraints` and :mod:`robustce.data.conditionals` (a conditional's
consequence is a relation)."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.schema import Schema
from robustce.errors import ValidationError

__all__ = ["SATISFIED_TOL", "Relation", "text_list"]

#: default relative tolerance of :meth:`Constraints.satisfied`
SATISFIED_TOL = 1e-6
_OPS = {ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "=="}


def text_list(value: Any, what: str) -> list[str]:
    """A string or an iterable of strings as a list (ValidationError otherwise)."""
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise ValidationError(f"constraints {what} must be a list of strings, got "
                              f"{type(value).__name__}") from None


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _unquote(text: str) -> tuple[str, dict[str, str]]:
    """Backtick-quoted feature names (```hours-per-week` <= 60``, as in ``pandas.eval``)
    replaced by placeholder identifiers; returns the code and ``{placeholder: name}``."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        raise ValidationError(f"constraint {text!r}: unbalanced backtick (quote a feature "
                              "name as `name`)")
    names: dict[str, str] = {}
    for i in range(1, len(parts), 2):
        if not parts[i]:
            raise ValidationError(f"constraint {text!r}: empty quoted feature name")
        key = f"_q{len(names)}_"
        names[key] = parts[i]
        parts[i] = key
    return "".join(parts), names


def _rename(coefs: dict[str, float], const: float, names: dict[str, str]
            ) -> tuple[dict[str, float], float]:
    out: dict[str, float] = {}
    for f, a in coefs.items():
        g = names.get(f, f)
        out[g] = out.get(g, 0.0) + a
    return out, const


def _linear(node: ast.AST, text: str) -> tuple[dict[str, float], float]:
    """``node`` as (coefficients per feature, constant); ValidationError if not linear."""
    if isinstance(node, ast.Name):
        return {node.id: 1.0}, 0.0
    if isinstance(node, ast.Constant):
        if not _is_number(node.value) or not math.isfinite(float(node.value)):
            raise ValidationError(f"constraint {text!r}: {node.value!r} is not a finite number")
        return {}, float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        c, k = _linear(node.operand, text)
        s = -1.0 if isinstance(node.op, ast.USub) else 1.0
        return {f: s * v for f, v in c.items()}, s * k
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        ca, ka = _linear(node.left, text)
        cb, kb = _linear(node.right, text)
        s = 1.0 if isinstance(node.op, ast.Add) else -1.0
        out = dict(ca)
        for f, v in cb.items():
            out[f] = out.get(f, 0.0) + s * v
        return out, ka + s * kb
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        ca, ka = _linear(node.left, text)
        cb, kb = _linear(node.right, text)
        if ca and cb:
            raise ValidationError(f"constraint {text!r}: a product of features is not linear "
                                  "(only + - and * by a numeric constant)")
        coef, k, terms = (ka, kb, cb) if not ca else (kb, ka, ca)
        return {f: coef * v for f, v in terms.items()}, coef * k
    what = type(node).__name__
    if isinstance(node, ast.BinOp):
        what = f"operator {type(node.op).__name__}"
    raise ValidationError(f"constraint {text!r}: {what} is not allowed (a linear relation uses "
                          "feature names, numbers, + - and * by a numeric constant)")


@dataclass(frozen=True)
class Relation:
    """One parsed relation ``Σ coefs[f] · f  op  rhs`` (``op`` one of <=, >=, ==)."""

    text: str
    coefs: tuple[tuple[str, float], ...]
    op: str
    rhs: float

    @classmethod
    def parse(cls, text: Any) -> Relation:
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"a constraint relation must be a non-empty string, got "
                                  f"{text!r}")
        try:
            code, names = _unquote(text.strip())
            tree = ast.parse(code, mode="eval")
        except SyntaxError as exc:
            raise ValidationError(f"constraint {text!r}: not a relation ({exc.msg})") from None
        body = tree.body
        if not isinstance(body, ast.Compare) or len(body.ops) != 1:
            raise ValidationError(f"constraint {text!r}: needs exactly one comparison "
                                  "(<=, >= or ==)")
        op = _OPS.get(type(body.ops[0]))
        if op is None:
            raise ValidationError(f"constraint {text!r}: comparison "
                                  f"{type(body.ops[0]).__name__} is not allowed (<=, >=, ==)")
        cl, kl = _rename(*_linear(body.left, text), names)
        cr, kr = _rename(*_linear(body.comparators[0], text), names)
        coefs = dict(cl)
        for f, v in cr.items():
            coefs[f] = coefs.get(f, 0.0) - v
        names = sorted(coefs)  # every feature named, even with a zero net coefficient
        return cls(text.strip(), tuple((f, float(coefs[f])) for f in names), op, kr - kl)

    @property
    def features(self) -> list[str]:
        return [f for f, _ in self.coefs]

    def lhs(self, frame: pd.DataFrame) -> np.ndarray:
        out = np.zeros(len(frame))
        for f, a in self.coefs:
            out += a * np.asarray(frame[f], dtype=np.float64)
        return out

    def violation(self, frame: pd.DataFrame) -> np.ndarray:
        """Per row, how far the relation is violated in raw units (0 when it holds)."""
        d = self.lhs(frame) - self.rhs
        if self.op == "<=":
            return np.maximum(d, 0.0)
        if self.op == ">=":
            return np.maximum(-d, 0.0)
        return np.abs(d)

    def magnitude(self, schema: Schema | None = None) -> float:
        """The relation's raw magnitude, 1 + |rhs| + Σ |a_f| · max(|lower_f|, |upper_f|)
        (without a schema, 1 + |rhs|): the scale of its satisfaction tolerance."""
        s = 1.0 + abs(self.rhs)
        if schema is not None:
            for f, a in self.coefs:
                if f in schema and schema[f].kind.is_numeric:
                    s += abs(a) * max(abs(float(schema[f].lower)), abs(float(schema[f].upper)))
        return s
