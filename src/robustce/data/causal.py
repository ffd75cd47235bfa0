"""Causal consequences of actions: a linear structural causal model over raw features (MINT,
Karimi, Schölkopf & Valera 2021, restricted to linear additive equations).

``CausalModel({"income": {"education": 5000.0}})`` says ``income := 5000 · education + U``
(education an ordinal: its level index; numeric features in raw units). Each key is a
*child*; its mapping gives the coefficient β of each parent. The noise ``U`` of every child
is abducted from the query, so after the user acts on some features the counterfactual value
of a child is

    x'_c = q_c + Σ_p β_cp · (x'_p − q_p)

— the structural equation applied to the actions, downstream effects included (a parent may
itself be a child). A child is not acted upon: it moves only through its parents, even when
its actionability is immutable (every exact method widens its box: MILPNearest and its
subclasses, MACE, PROPLACE). The graph must be acyclic (validated).

:meth:`CausalModel.holds` evaluates raw rows against their queries; :meth:`compile` gives
each equation as an always-active model-space row
(:class:`~robustce.data.conditionals.CompiledConditional` with a constant-1 condition), which
every exact method encodes like a conditional's consequence. The exact methods price the CE
by its actions only: a child's columns weigh 0 in their distances (MILPNearest's default,
MACE's ℓ0 / ℓ1 / ℓ∞ terms, PROPLACE's ℓ1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.conditionals import CompiledConditional, aligned, numeric_values, value_form
from robustce.data.schema import FeatureKind, Schema
from robustce.errors import ValidationError

__all__ = ["CausalModel"]


class CausalModel:
    """Linear structural equations ``child := Σ β · parent + U`` (module docstring).

    Parameters
    ----------
    equations : mapping ``{child: {parent: β, ...}, ...}`` (β finite, raw units per unit or
        per ordinal level of the parent).
    """

    def __init__(self, equations: Mapping[str, Mapping[str, float]]):
        if not isinstance(equations, Mapping):
            raise ValidationError(f"causal must map each child feature to {{parent: β}}, got "
                                  f"{type(equations).__name__}")
        eq: dict[str, dict[str, float]] = {}
        for child, parents in equations.items():
            if not isinstance(parents, Mapping) or not parents:
                raise ValidationError(f"causal[{child!r}] must map its parents to coefficients, "
                                      f"got {parents!r}")
            row: dict[str, float] = {}
            for p, beta in parents.items():
                if isinstance(beta, bool) or not isinstance(beta, int | float) \
                        or not math.isfinite(float(beta)):
                    raise ValidationError(f"causal[{child!r}][{p!r}] must be a finite number, "
                                          f"got {beta!r}")
                row[str(p)] = float(beta)
            eq[str(child)] = row
        self.equations = eq
        self._check_acyclic()

    def to_dict(self) -> dict[str, dict[str, float]]:
        return {c: dict(ps) for c, ps in self.equations.items()}

    @property
    def children(self) -> list[str]:
        return list(self.equations)

    @property
    def features(self) -> list[str]:
        return sorted(set(self.equations) | {p for ps in self.equations.values() for p in ps})

    def _check_acyclic(self) -> None:
        """ValidationError naming a cycle of the graph parent → child, if there is one."""
        state: dict[str, int] = {}  # 1 visiting, 2 done
        path: list[str] = []

        def visit(node: str) -> None:
            state[node] = 1
            path.append(node)
            for p in self.equations.get(node, {}):
                if state.get(p) == 1:
                    cyc = path[path.index(p):] + [p]
                    raise ValidationError("the causal graph has a cycle: "
                                          + " ← ".join(cyc) + " (each arrow: child ← parent)")
                if state.get(p) is None:
                    visit(p)
            path.pop()
            state[node] = 2

        for child in self.equations:
            if state.get(child) is None:
                visit(child)

    def validate(self, schema: Schema) -> None:
        """Features exist; children are numeric (continuous / integer); parents numeric or
        ordinal (ValidationError naming the problem)."""
        for f in self.features:
            if f not in schema:
                raise ValidationError(f"causal: unknown feature {f!r}; features are "
                                      f"{schema.names}")
        for c, ps in self.equations.items():
            if not schema[c].kind.is_numeric:
                raise ValidationError(f"causal: child {c!r} is {schema[c].kind}; structural "
                                      "equations give continuous or integer features")
            for p in ps:
                k = schema[p].kind
                if not (k.is_numeric or k is FeatureKind.ORDINAL):
                    raise ValidationError(f"causal: parent {p!r} of {c!r} is {k}; parents are "
                                          "numeric or ordinal (level index)")

    # --- raw evaluation ----------------------------------------------------------------------
    _values = staticmethod(numeric_values)

    def holds(self, frame: pd.DataFrame, query_frame: pd.DataFrame, schema: Schema,
              tol: float) -> np.ndarray:
        """Per raw row: every child equals its query value plus the equation applied to its
        parents' changes, within ``tol`` times the equation's magnitude (1 + |q_c| + Σ |β| ·
        the parent's largest absolute value)."""
        fr, q = aligned(frame, query_frame)
        ok = np.ones(len(fr), dtype=bool)
        for c, ps in self.equations.items():
            qc = self._values(q, schema, c)
            want = qc.copy()
            scale = 1.0 + np.abs(qc)
            for p, beta in ps.items():
                a, b = self._values(fr, schema, p), self._values(q, schema, p)
                want += beta * (a - b)
                feat = schema[p]
                top = (feat.n_levels - 1 if feat.kind is FeatureKind.ORDINAL
                       else max(abs(float(feat.lower)), abs(float(feat.upper))))
                scale = scale + abs(beta) * top
            ok &= np.abs(self._values(fr, schema, c) - want) <= tol * scale
        return ok

    # --- model space -------------------------------------------------------------------------
    def compile(self, encoder: Any) -> list[CompiledConditional]:
        """One always-active row per child: ``v_c(x) − Σ β v_p(x) = v_c(q) − Σ β v_p(q)``,
        ``v`` a feature's raw value (or level) as a linear form of its columns."""
        self.validate(encoder.schema)
        d = int(encoder.n_features_out_)
        blocks = {b.name: b for b in encoder.blocks_}

        def value(f: str) -> np.ndarray:
            return value_form(blocks[f], d, "causal")[0]

        out = []
        for child, ps in self.equations.items():
            a = value(child)
            for p, beta in ps.items():
                a = a - beta * value(p)
            s = float(np.max(np.abs(a))) if np.any(a) else 1.0
            text = f"{child} = query + " + " + ".join(f"{beta:g}·Δ{p}" for p, beta in ps.items())
            out.append(CompiledConditional(text, "expr", np.zeros(d), 1.0, 0, a / s, 0.0, 0.0,
                                           a / s))
        return out

    def child_columns(self, encoder: Any) -> np.ndarray:
        """The model-space columns of every child (they are not acted upon)."""
        cols = [np.arange(b.start, b.stop) for b in encoder.blocks_ if b.name in self.equations]
        return np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
