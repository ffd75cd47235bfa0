"""MILP input variables of model space: :class:`InputVars` (variables and the box they range
over), and :func:`encode_input_domain`, which encodes model space with the encoder's structure
(one-hot groups, integer grids, thermometer ordinals, binaries, immutable and monotone
features)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.solvers.milp import MILP


@dataclass(frozen=True)
class InputVars:
    """Input variables of an encoding and the box they range over (used for big-M)."""

    index: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        idx = np.asarray(self.index, dtype=np.int64).reshape(-1)
        lo = np.asarray(self.lower, dtype=np.float64).reshape(-1)
        hi = np.asarray(self.upper, dtype=np.float64).reshape(-1)
        if not (idx.shape == lo.shape == hi.shape):
            raise ValidationError("InputVars: index, lower and upper must have the same length")
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ValidationError("InputVars: input bounds must be finite (big-M comes from them)")
        object.__setattr__(self, "index", idx)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)


@dataclass
class InputDomain:
    """Model-space input variables with the encoder's structure.

    ``column_kind`` per column: ``"continuous"``, ``"grid"`` (integer grid ``z / steps``),
    ``"binary"`` (0/1: binary, one-hot and thermometer columns) or ``"fixed"``.
    """

    vars: InputVars
    column_kind: np.ndarray
    grid_steps: np.ndarray  # steps of grid columns, 0 elsewhere
    grid_vars: np.ndarray  # integer variable per grid column, -1 elsewhere

    @property
    def index(self) -> np.ndarray:
        return self.vars.index

    @property
    def lower(self) -> np.ndarray:
        return self.vars.lower

    @property
    def upper(self) -> np.ndarray:
        return self.vars.upper


def _grid_bounds(lo: np.ndarray, hi: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    eps = 1e-9
    return np.ceil(lo * steps - eps), np.floor(hi * steps + eps)


@dataclass(frozen=True)
class _DomainStructure:
    """What :func:`encode_input_domain` reads off an encoder's blocks, per column: kind,
    grid steps, always-fixed columns, the one-hot and thermometer groups and the
    actionability masks (computed once per fitted encoder)."""

    blocks: Any  # the encoder's ``blocks_`` list it was computed from
    kind: np.ndarray
    steps: np.ndarray
    fixed: np.ndarray
    onehot_groups: list[np.ndarray]
    thermo_groups: list[np.ndarray]
    immutable: np.ndarray
    increase: np.ndarray
    decrease: np.ndarray


_STRUCTURES: weakref.WeakKeyDictionary[Any, _DomainStructure] = weakref.WeakKeyDictionary()


def _domain_structure(encoder: Any, d: int) -> _DomainStructure:
    """The encoder's :class:`_DomainStructure`, cached while its ``blocks_`` stay the same."""
    try:
        st = _STRUCTURES.get(encoder)
    except TypeError:  # not weak-referenceable: compute every time
        st = None
    if st is not None and st.blocks is encoder.blocks_ and len(st.kind) == d:
        return st
    kind = np.full(d, "continuous", dtype=object)
    steps = np.zeros(d, dtype=np.int64)
    fixed = np.zeros(d, dtype=bool)
    acts = {a: np.zeros(d, dtype=bool) for a in ("immutable", "increase", "decrease")}
    onehot_groups: list[np.ndarray] = []
    thermo_groups: list[np.ndarray] = []
    for blk in encoder.blocks_:
        cols = np.arange(blk.start, blk.stop)
        enc = blk.encoding
        if enc in ("binary", "onehot", "thermometer"):
            kind[cols] = "binary"
            if enc == "onehot":
                onehot_groups.append(cols)
            elif enc == "thermometer" and len(cols) > 1:
                thermo_groups.append(cols)
        elif blk.n_steps is not None:
            if blk.n_steps > 0:
                kind[cols], steps[cols] = "grid", blk.n_steps
            else:
                fixed[cols] = True
        elif enc == "scaled" and blk.feature.lower == blk.feature.upper:
            fixed[cols] = True
        act = str(blk.actionability.value if hasattr(blk.actionability, "value")
                  else blk.actionability)
        if act in acts:
            acts[act][cols] = True
    st = _DomainStructure(encoder.blocks_, kind, steps, fixed, onehot_groups, thermo_groups,
                          acts["immutable"], acts["increase"], acts["decrease"])
    try:
        _STRUCTURES[encoder] = st
    except TypeError:
        pass
    return st


def column_kinds(encoder: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(column_kind, grid_steps)`` of a fitted encoder's model space — what
    :func:`encode_input_domain` gives without a query (kinds ``"continuous"``, ``"binary"``,
    ``"grid"``, ``"fixed"``), read off the encoder without building a MILP."""
    st = _domain_structure(encoder, int(encoder.n_features_out_))
    kind = st.kind.copy()
    kind[st.fixed] = "fixed"
    return kind, st.steps.copy()


def encode_input_domain(milp: MILP, space: Any, query: np.ndarray | None = None, *,
                        lower: np.ndarray | None = None, upper: np.ndarray | None = None,
                        actionability: bool = True, integer_grid: bool = True) -> InputDomain:
    """Input variables for model space.

    ``space``: a fitted :class:`~robustce.data.Encoder` (structured domain), a model with an
    ``encoder``, or an int ``d`` (plain box, default ``[0, 1]^d``). With a ``query`` (1-D,
    model space) and ``actionability``, immutable features are fixed to the query and
    increase-/decrease-only features bounded by it. The box is ``[0, 1]^d`` — with an encoder
    and a query, the encoder's :meth:`~robustce.data.Encoder.domain` of the query (widened to
    hold a value beyond an observed range). ``lower`` / ``upper`` (per column) intersect it.
    ``integer_grid=False`` leaves grid columns continuous (kind still
    ``"grid"``, no step variable): for models that only compare a grid column with grid-
    aligned bounds (tree splits), the caller rounds afterwards.
    """
    encoder = getattr(space, "encoder", space)
    if isinstance(space, int | np.integer):
        encoder = None
        d = int(space)
    elif hasattr(encoder, "blocks_"):
        d = int(encoder.n_features_out_)
    else:
        raise ValidationError(
            f"space must be a fitted Encoder, a model with one, or a number of columns; got "
            f"{type(space).__name__}")
    q = None
    if query is not None:
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        if q.shape[0] != d or not np.isfinite(q).all():
            raise ValidationError(f"query must be a finite vector of {d} model-space values")
    box_lo, box_hi = np.zeros(d), np.ones(d)
    if encoder is not None and q is not None:
        box_lo, box_hi = encoder.domain(q)
    lo = box_lo if lower is None else np.asarray(lower, dtype=np.float64).reshape(-1).copy()
    hi = box_hi if upper is None else np.asarray(upper, dtype=np.float64).reshape(-1).copy()
    if lo.shape[0] != d or hi.shape[0] != d:
        raise ValidationError(f"lower/upper must have {d} entries")
    if encoder is not None:
        lo, hi = np.maximum(lo, box_lo), np.minimum(hi, box_hi)
    if encoder is not None:
        st = _domain_structure(encoder, d)
        kind, steps, fixed = st.kind.copy(), st.steps, st.fixed.copy()
        onehot_groups, thermo_groups = st.onehot_groups, st.thermo_groups
        if q is not None and actionability:
            imm = st.immutable
            lo[imm], hi[imm] = q[imm], q[imm]
            fixed |= imm
            np.maximum(lo, q, out=lo, where=st.increase)
            np.minimum(hi, q, out=hi, where=st.decrease)
        const = fixed & (lo < hi)  # constant features (zero-width scale) encode as 0
        lo[const] = hi[const] = np.clip(0.0, lo[const], hi[const])
    else:
        kind = np.full(d, "continuous", dtype=object)
        steps = np.zeros(d, dtype=np.int64)
        fixed = np.zeros(d, dtype=bool)
        onehot_groups, thermo_groups = [], []
    if np.any(lo > hi + 1e-12):
        bad = int(np.argmax(lo > hi + 1e-12))
        raise ValidationError(f"empty input box at column {bad}: [{lo[bad]}, {hi[bad]}]")
    hi = np.maximum(lo, hi)
    kind[fixed] = "fixed"
    vt = np.where(kind == "binary", "B", "C")
    x = milp.add_vars(d, lo, hi, vt)
    grid_vars = np.full(d, -1, dtype=np.int64)
    g = np.flatnonzero(kind == "grid") if integer_grid else np.zeros(0, dtype=np.int64)
    if g.size:
        zlo, zhi = _grid_bounds(lo[g], hi[g], steps[g])
        z = milp.add_vars(g.size, zlo, np.maximum(zhi, zlo), "I")  # empty grid -> infeasible row
        grid_vars[g] = z
        r = np.arange(g.size)
        # x - z / steps = 0
        milp.add_constrs_coo(np.concatenate([r, r]), np.concatenate([x[g], z]),
                             np.concatenate([np.ones(g.size), -1.0 / steps[g]]), g.size, 0.0, 0.0)
    if onehot_groups:  # one row per group: its columns sum to 1
        members = np.concatenate(onehot_groups)
        rows = np.repeat(np.arange(len(onehot_groups)), [len(c) for c in onehot_groups])
        milp.add_constrs_coo(rows, x[members], np.ones(members.size), len(onehot_groups), 1.0, 1.0)
    if thermo_groups:
        rr, cc, vv = [], [], []
        n_rows = 0
        for cols in thermo_groups:
            k = len(cols) - 1
            r = np.arange(n_rows, n_rows + k)
            rr += [r, r]
            cc += [x[cols[:-1]], x[cols[1:]]]
            vv += [np.ones(k), -np.ones(k)]
            n_rows += k
        milp.add_constrs_coo(np.concatenate(rr), np.concatenate(cc), np.concatenate(vv), n_rows, 0.0, np.inf)
    return InputDomain(InputVars(x, lo, hi), kind, steps, grid_vars)


def restrict_domain(milp: MILP, domain: InputDomain, lower: np.ndarray, upper: np.ndarray
                    ) -> InputDomain:
    """The same variables of ``domain`` with their bounds changed to ``[lower, upper]`` (e.g.
    an incumbent box from :func:`robustce.methods.milp_nearest.incumbent_box`; grid columns
    on their lattice), integer grid variables bounded to match."""
    lo = np.asarray(lower, dtype=np.float64).reshape(-1)
    hi = np.asarray(upper, dtype=np.float64).reshape(-1)
    x = domain.index
    milp.set_var_bounds(x, lo, hi)
    g = np.flatnonzero(domain.grid_vars >= 0)
    if g.size:
        st = domain.grid_steps[g]
        milp.set_var_bounds(domain.grid_vars[g], np.round(lo[g] * st), np.round(hi[g] * st))
    return InputDomain(InputVars(x, lo, hi), domain.column_kind, domain.grid_steps,
                       domain.grid_vars)

