"""Constraints between raw features: relations, conditionals, causal equations, groups and a
cap on the number of changes.

A :class:`Constraints` object holds

* **linear relations** between numeric (continuous / integer) raw features, written as text:
  ``"debt <= 0.6 * income"``, ``"years_employed <= age - 16"``, ``"a + b == c"``. The text is
  parsed with :mod:`ast` (never evaluated): feature names (backtick-quoted where they are not
  identifiers: ```hours-per-week```), numeric constants, ``+``, ``-``, unary ``-``, ``*``
  with a numeric constant on one side, and exactly one comparison among
  ``<=``, ``>=``, ``==``. Coefficients are in raw units;
* ``max_changes``: at most ``k`` raw features may differ from the query (a categorical or
  ordinal feature counts once, however many model-space columns it has);
* ``conditionals`` (:mod:`robustce.data.conditionals`): ``"if education increases then age
  increases by >= 1"``, ``'housing == "own" -> debt <= 2 * income'``;
* ``causal`` (:mod:`robustce.data.causal`): linear structural equations ``{child: {parent:
  β}}`` whose children follow their parents' changes (MINT);
* ``groups`` (:mod:`robustce.data.groups`): features that change together or not at all.

It is validated once against a :class:`~robustce.data.Schema` (:meth:`Constraints.validate`):
an unknown feature, a categorical / ordinal / binary feature in a relation, or a relation that
no point satisfies raise :class:`~robustce.errors.ValidationError` naming the problem.
:meth:`Constraints.satisfied` is the independent evaluator (raw rows in, one bool per row out);
:meth:`Constraints.check` reports which relations training rows violate;
:meth:`Constraints.compile` translates the relations exactly into model space
(``raw = lower + x · (upper − lower)`` per scaled column) for the exact methods.
See ``docs/constraints.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.causal import CausalModel
from robustce.data.conditionals import CompiledConditional, Conditional
from robustce.data.groups import CompiledGroup, FeatureGroup
from robustce.data.relations import SATISFIED_TOL, Relation, text_list
from robustce.data.schema import FeatureKind, Schema
from robustce.errors import ValidationError

__all__ = ["CompiledConstraints", "Constraints", "Relation", "as_constraints"]

@dataclass(frozen=True)
class CompiledConstraints:
    """:class:`Constraints` in a fitted encoder's model space: rows ``lower <= A x <= upper``
    (one per relation, each scaled so that its largest coefficient is 1) and ``max_changes``
    over ``feature_of_column``."""

    A: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    texts: tuple[str, ...]
    max_changes: int | None
    feature_of_column: np.ndarray
    n_features: int
    conditionals: tuple[CompiledConditional, ...] = ()
    #: the model-space columns of the causal model's children (moved by their parents only)
    causal_columns: np.ndarray | None = None
    groups: tuple[CompiledGroup, ...] = ()

    @property
    def empty(self) -> bool:
        return (len(self.texts) == 0 and self.max_changes is None and not self.conditionals
                and not self.groups)

    @property
    def has_rows(self) -> bool:
        """Relations or conditionals: rows that tie columns together (a tree MILP then
        returns its own point, not the query clipped to its leaves)."""
        return len(self.texts) > 0 or len(self.conditionals) > 0 or len(self.groups) > 0

    def n_changed(self, query: np.ndarray, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Per row of ``X`` (model space), the number of raw features with a column that
        differs from ``query`` by more than ``tol``."""
        moved = np.abs(np.atleast_2d(X) - np.asarray(query)[None, :]) > tol
        per = np.zeros((moved.shape[0], self.n_features), dtype=bool)
        for j in np.flatnonzero(moved.any(axis=0)):
            per[:, self.feature_of_column[j]] |= moved[:, j]
        return per.sum(axis=1)

    def relations_hold(self, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Per row of ``X`` (model space), whether every relation row holds within ``tol``."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if not len(self.texts):
            return np.ones(len(X), dtype=bool)
        v = X @ self.A.T
        return np.all((v >= self.lower - tol) & (v <= self.upper + tol), axis=1)

    def satisfied(self, query: np.ndarray, X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Per row of ``X`` (model space): every relation row holds within ``tol`` and at
        most ``max_changes`` features moved from ``query``."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        ok = self.relations_hold(X, tol)
        if self.max_changes is not None:
            ok &= self.n_changed(query, X) <= self.max_changes
        for c in self.conditionals:
            ok &= c.holds(query, X, tol)
        for g in self.groups:
            ok &= g.holds(query, X, tol)
        return ok


class Constraints:
    """Constraints between raw features: linear relations, conditionals, causal equations,
    groups and a cap on changed features (the module docstring has the language).

    Parameters
    ----------
    relations : iterable of strings such as ``"debt <= 0.6 * income"`` (see the module
        docstring for the language); parsed at once.
    max_changes : int >= 1 or None — at most this many raw features differ from the query
        (a categorical counts once).
    conditionals : if-then relations (:mod:`robustce.data.conditionals`), e.g. ``"if
        education increases then age increases by >= 1"``.
    causal : linear structural equations ``{child: {parent: β}}`` whose children follow
        their parents' changes (:mod:`robustce.data.causal`, MINT).
    groups : sets of features that change together or not at all
        (:mod:`robustce.data.groups`).

    Notes
    -----
    ``Constraints.from_dict({"relations": [...], "max_changes": 2})`` builds one from a
    mapping (TOML / JSON); :meth:`to_dict` gives it back.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=20, random_state=0)
    >>> cons = Constraints(["debt <= 0.6 * income"], max_changes=2).validate(data.schema)
    >>> cons.features
    ['debt', 'income']
    >>> query = data.frame.head(2)
    >>> cf = query.assign(debt=query.income * [0.5, 0.9])    # 2nd row breaks the relation
    >>> cons.satisfied(cf, query).tolist()
    [True, False]
    """

    def __init__(self, relations: Iterable[str] | str = (), max_changes: int | None = None,
                 conditionals: Iterable[str] | str = (),
                 causal: Mapping[str, Mapping[str, float]] | None = None,
                 groups: Iterable[Iterable[str]] = ()):
        texts = text_list(relations, "relations")
        self.relations: tuple[Relation, ...] = tuple(Relation.parse(t) for t in texts)
        self.conditionals: tuple[Conditional, ...] = tuple(
            Conditional(t) for t in text_list(conditionals, "conditionals"))
        self.causal: CausalModel | None = None if causal is None else CausalModel(causal)
        if isinstance(groups, str):
            raise ValidationError(f"constraints groups must be a list of feature lists, got "
                                  f"{groups!r}")
        try:
            self.groups: tuple[FeatureGroup, ...] = tuple(FeatureGroup(g) for g in groups)
        except TypeError:
            raise ValidationError(f"constraints groups must be a list of feature lists, got "
                                  f"{groups!r}") from None
        if max_changes is not None and (isinstance(max_changes, bool)
                                        or not isinstance(max_changes, int | np.integer)
                                        or max_changes < 1):
            raise ValidationError(f"constraints max_changes must be an integer >= 1 or None, "
                                  f"got {max_changes!r}")
        self.max_changes = None if max_changes is None else int(max_changes)
        self.schema: Schema | None = None

    # --- construction ---------------------------------------------------------------------
    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Constraints:
        if not isinstance(spec, Mapping):
            raise ValidationError(f"constraints must be a mapping with 'relations' and "
                                  f"'max_changes', got {type(spec).__name__}")
        unknown = sorted(set(spec) - {"relations", "max_changes", "conditionals", "causal",
                                      "groups"})
        if unknown:
            raise ValidationError(f"constraints: unknown keys {unknown}; expected 'relations', "
                                  "'max_changes', 'conditionals', 'causal', 'groups'")
        return cls(spec.get("relations", ()), spec.get("max_changes"),
                   spec.get("conditionals", ()), spec.get("causal"), spec.get("groups", ()))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"relations": [r.text for r in self.relations],
                               "max_changes": self.max_changes}
        if self.conditionals:
            out["conditionals"] = [c.text for c in self.conditionals]
        if self.causal is not None:
            out["causal"] = self.causal.to_dict()
        if self.groups:
            out["groups"] = [list(g.features) for g in self.groups]
        return out

    def __repr__(self) -> str:
        extra = (f", conditionals={[c.text for c in self.conditionals]!r}"
                 if self.conditionals else "")
        if self.causal is not None:
            extra += f", causal={self.causal.to_dict()!r}"
        if self.groups:
            extra += f", groups={[g.features for g in self.groups]!r}"
        return (f"Constraints(relations={[r.text for r in self.relations]!r}, "
                f"max_changes={self.max_changes!r}{extra})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Constraints) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    @property
    def features(self) -> list[str]:
        """Every feature some relation or conditional names."""
        return sorted({f for r in self.relations for f in r.features}
                      | {f for c in self.conditionals for f in c.features}
                      | set(() if self.causal is None else self.causal.features)
                      | {f for g in self.groups for f in g.features})

    # --- validation -----------------------------------------------------------------------
    def validate(self, schema: Schema) -> Constraints:
        """Check against ``schema`` (once): every feature exists and is numeric (continuous
        or integer), and each relation can hold somewhere in the features' bounds. Returns
        self, bound to the schema (used by :meth:`satisfied` for its tolerance scale)."""
        if not isinstance(schema, Schema):
            raise ValidationError(f"constraints validate against a Schema, got "
                                  f"{type(schema).__name__}")
        for r in self.relations:
            for f in r.features:
                if f not in schema:
                    raise ValidationError(f"constraint {r.text!r}: unknown feature {f!r}; "
                                          f"features are {schema.names}")
                kind = schema[f].kind
                if kind not in (FeatureKind.CONTINUOUS, FeatureKind.INTEGER):
                    raise ValidationError(f"constraint {r.text!r}: feature {f!r} is {kind}; "
                                          "linear relations take continuous or integer "
                                          "features only")
            self._check_integral(r, schema)
            # the relation's range over the features' bounds must meet rhs
            lo = hi = 0.0
            for f, a in r.coefs:
                b = (a * float(schema[f].lower), a * float(schema[f].upper))
                lo, hi = lo + min(b), hi + max(b)
            tol = SATISFIED_TOL * r.magnitude(schema)
            if ((r.op == "<=" and lo > r.rhs + tol) or (r.op == ">=" and hi < r.rhs - tol)
                    or (r.op == "==" and not lo - tol <= r.rhs <= hi + tol)):
                raise ValidationError(f"constraint {r.text!r} holds nowhere within the "
                                      f"features' bounds (left side ranges over [{lo:g}, "
                                      f"{hi:g}])")
        if self.max_changes is not None and self.max_changes > len(schema):
            raise ValidationError(f"constraints max_changes={self.max_changes} exceeds the "
                                  f"{len(schema)} features")
        for c in self.conditionals:
            c.validate(schema)
        if self.causal is not None:
            self.causal.validate(schema)
        for g in self.groups:
            g.validate(schema)
        self.schema = schema
        return self

    @staticmethod
    def _check_integral(r: Relation, schema: Schema) -> None:
        """An equality over integer features with integer coefficients needs an integer
        right-hand side divisible by the coefficients' gcd (units that cannot match:
        ``years == age + 0.5``); ValidationError otherwise."""
        if r.op != "==" or not r.coefs:
            return
        if any(schema[f].kind is not FeatureKind.INTEGER for f in r.features):
            return
        coefs = [a for _, a in r.coefs]
        if not all(float(a).is_integer() for a in coefs + [r.rhs]):
            if all(float(a).is_integer() for a in coefs):
                raise ValidationError(f"constraint {r.text!r}: its features are integers and "
                                      f"their coefficients integral, so the left side is an "
                                      f"integer and never equals {r.rhs:g}")
            return
        g = math.gcd(*(int(a) for a in coefs))
        if g and int(r.rhs) % g:
            raise ValidationError(f"constraint {r.text!r}: the left side is a multiple of {g} "
                                  f"over integer features and never equals {r.rhs:g}")

    def check_data(self, frame: pd.DataFrame) -> dict[str, int]:
        """The relations against training rows: ValidationError when no row satisfies all
        of them (the set is infeasible on the data; the message names each relation and how
        many of the rows violate it); otherwise ``{relation: number of violating rows}``
        (:meth:`check`)."""
        viol = self.violations(frame)
        counts = {c: int(viol[c].sum()) for c in viol.columns}
        if len(frame) and len(viol.columns) and viol.to_numpy().any(axis=1).all():
            parts = [f"{c!r} is violated by {n} of {len(frame)} rows" for c, n in counts.items()
                     if n]
            raise ValidationError("the constraints hold on no training row: " + "; ".join(parts))
        return counts

    # --- evaluation on raw rows -----------------------------------------------------------
    def violations(self, frame: pd.DataFrame, tol: float = SATISFIED_TOL) -> pd.DataFrame:
        """Per row and relation (columns: the relation texts), whether it is violated by
        more than ``tol`` times the relation's magnitude."""
        self._check_frame(frame)
        out = {}
        for r in self.relations:
            out[r.text] = r.violation(frame) > tol * r.magnitude(self.schema)
        return pd.DataFrame(out, index=frame.index, dtype=bool)

    def active(self, frame: pd.DataFrame, tol: float = SATISFIED_TOL) -> pd.DataFrame:
        """Per row and relation (columns: the relation texts), whether the relation is tight:
        its two sides differ by at most ``tol`` times the relation's magnitude (an equality
        that holds is always tight)."""
        self._check_frame(frame)
        out = {r.text: np.abs(r.lhs(frame) - r.rhs) <= tol * r.magnitude(self.schema)
               for r in self.relations}
        return pd.DataFrame(out, index=frame.index, dtype=bool)

    def n_changed(self, frame: pd.DataFrame, query_frame: pd.DataFrame,
                  tol: float = SATISFIED_TOL) -> np.ndarray:
        """Per row of ``frame``, how many raw features differ from its query (``query_frame``:
        one row for all, or one per row, matched by position). A numeric feature differs by
        more than ``tol`` times max(1, |query value|, its range); a categorical feature counts
        once."""
        if not isinstance(query_frame, pd.DataFrame):
            raise ValidationError("max_changes needs query_frame: the queries as a DataFrame")
        if len(query_frame) not in (1, len(frame)):
            raise ValidationError(f"query_frame must have 1 row or one per row ({len(frame)}), "
                                  f"got {len(query_frame)}")
        names = [c for c in frame.columns if c in query_frame.columns]
        missing = sorted(set(frame.columns) - set(query_frame.columns))
        if missing:
            raise ValidationError(f"query_frame lacks columns {missing}")
        count = np.zeros(len(frame), dtype=np.int64)
        for c in names:
            a = frame[c].to_numpy()
            b = query_frame[c].to_numpy()
            b = np.repeat(b, len(frame)) if len(b) == 1 else b
            feat = self.schema[c] if self.schema is not None and c in self.schema else None
            numeric = (feat.kind.is_numeric if feat is not None
                       else pd.api.types.is_numeric_dtype(frame[c])
                       and pd.api.types.is_numeric_dtype(query_frame[c]))
            if numeric:
                a, b = a.astype(np.float64), b.astype(np.float64)
                span = 0.0 if feat is None else float(feat.upper) - float(feat.lower)
                count += np.abs(a - b) > tol * np.maximum(np.maximum(1.0, np.abs(b)), span)
            else:
                count += np.array([x != y for x, y in zip(a, b, strict=True)], dtype=bool)
        return count

    def satisfied(self, raw_frame: pd.DataFrame, query_frame: pd.DataFrame | None = None,
                  tol: float = SATISFIED_TOL) -> np.ndarray:
        """The independent evaluator: per raw row, whether every relation holds (within
        ``tol`` times its magnitude, see :meth:`violations`) and, with ``max_changes``, at
        most that many features differ from the row's query (``query_frame``, required then).
        """
        if not (isinstance(tol, int | float) and not isinstance(tol, bool) and tol >= 0
                and math.isfinite(tol)):
            raise ValidationError(f"tol must be a finite number >= 0, got {tol!r}")
        ok = ~self.violations(raw_frame, tol).to_numpy().any(axis=1) if self.relations \
            else np.ones(len(raw_frame), dtype=bool)
        if self.max_changes is not None:
            if query_frame is None:
                raise ValidationError("constraints with max_changes need query_frame to "
                                      "count changed features")
            ok &= self.n_changed(raw_frame, query_frame, tol) <= self.max_changes
        # conditionals, the causal model and groups compare each row with its query
        relative = [*self.conditionals, *([] if self.causal is None else [self.causal]),
                    *self.groups]
        if relative and (query_frame is None or self.schema is None):
            raise ValidationError("conditionals, a causal model and feature groups need "
                                  "query_frame and a schema (validate first) to compare each "
                                  "row with its query")
        for part in relative:
            ok &= part.holds(raw_frame, query_frame, self.schema, tol)
        return ok

    def check(self, frame: pd.DataFrame, *, strict: bool = False) -> dict[str, int]:
        """How many rows of ``frame`` (e.g. the training data) violate each relation
        (``{relation text: count}``). With ``strict``, raise ValidationError naming every
        violated relation and its count."""
        viol = self.violations(frame)
        counts = {c: int(viol[c].sum()) for c in viol.columns}
        bad = {c: n for c, n in counts.items() if n}
        if strict and bad:
            parts = [f"{c!r} is violated by {n} of {len(frame)} rows" for c, n in bad.items()]
            raise ValidationError("constraints do not hold on the data: " + "; ".join(parts))
        return counts

    def _check_frame(self, frame: Any) -> None:
        if not isinstance(frame, pd.DataFrame):
            raise ValidationError(f"constraints evaluate raw rows (a DataFrame), got "
                                  f"{type(frame).__name__}")
        missing = [f for f in self.features if f not in frame.columns]
        if missing:
            raise ValidationError(f"constraints name features the frame lacks: {missing}")

    # --- model space --------------------------------------------------------------------
    def compile(self, encoder: Any) -> CompiledConstraints:
        """The relations as model-space rows of a fitted ``encoder``: each feature's
        ``raw = lower + x · (upper − lower)`` on its scaled column (integer features too:
        their grid column is scaled the same way), so the rows are exact. Validates against
        the encoder's schema first."""
        self.validate(encoder.schema)
        d = int(encoder.n_features_out_)
        blocks = {b.name: b for b in encoder.blocks_}
        A = np.zeros((len(self.relations), d))
        lo = np.full(len(self.relations), -np.inf)
        hi = np.full(len(self.relations), np.inf)
        for i, r in enumerate(self.relations):
            const = 0.0
            for f, a in r.coefs:
                b = blocks[f]
                if b.encoding != "scaled":
                    raise ValidationError(f"constraint {r.text!r}: feature {f!r} is encoded "
                                          f"as {b.encoding!r}, not scaled")
                flo, fhi = float(b.feature.lower), float(b.feature.upper)
                A[i, b.start] += a * (fhi - flo)
                const += a * flo
            rhs = r.rhs - const
            s = float(np.max(np.abs(A[i]))) if np.any(A[i]) else 1.0
            A[i] /= s
            rhs /= s
            if r.op in ("<=", "=="):
                hi[i] = rhs
            if r.op in (">=", "=="):
                lo[i] = rhs
        return CompiledConstraints(A, lo, hi, tuple(r.text for r in self.relations),
                                   self.max_changes, np.asarray(encoder.feature_of_column_),
                                   len(encoder.blocks_),
                                   tuple(c.compile(encoder) for c in self.conditionals)
                                   + tuple(() if self.causal is None
                                           else self.causal.compile(encoder)),
                                   None if self.causal is None
                                   else self.causal.child_columns(encoder),
                                   tuple(g.compile(encoder) for g in self.groups))


def as_constraints(value: Any) -> Constraints | None:
    """``None``, a :class:`Constraints`, or a mapping for :meth:`Constraints.from_dict`."""
    if value is None or isinstance(value, Constraints):
        return value
    if isinstance(value, Mapping):
        return Constraints.from_dict(value)
    raise ValidationError(f"constraints must be a robustce Constraints, a mapping with "
                          f"'relations' / 'max_changes', or None; got {type(value).__name__}")
