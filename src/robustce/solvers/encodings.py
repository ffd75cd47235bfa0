"""MILP encodings of ReLU networks, of their interval abstractions, and of input domains.

One encoder serves both kinds of network. An *interval network* (PROPLACE Def. 5, MILP (6))
has every weight in ``[W⁻, W⁺]`` and bias in ``[b⁻, b⁺]``; a plain network is the special case
``W⁻ = W⁺``. For a layer with non-negative inputs ``v`` (post-ReLU activations, or inputs in
``[0, 1]``), the pre-activation of neuron ``i`` can take exactly the values

    lo_i(v) = W⁻_i v + b⁻_i   ...   hi_i(v) = W⁺_i v + b⁺_i

and, since every neuron owns its weight row, neurons choose independently. So the set of
reachable post-activations is ``relu(lo_i(v)) <= v'_i <= relu(hi_i(v))``: the left inequality is
convex (one row, no binary); the right one needs a binary only when ``hi_i`` can change sign over
the domain. Big-M constants come from interval bounds (:meth:`IntervalNetwork.layer_bounds`
over the input box) — never a fixed constant — and neurons that are stable over the box get no
binary at all. For a plain network this is the usual big-M ReLU encoding
(``v >= z, v <= z - L(1 - s), v <= U s``).

Inputs of any sign are handled *sign-aware*: for input ``x_j <= 0`` the lower end uses ``W⁺``
and the upper end ``W⁻``; a variable input whose box straddles 0 is split exactly,
``x = x⁺ - x⁻`` with a binary choosing the side. A fixed point input needs no variables at
all: the first layer's pre-activation range is the constant interval
``[W⁻x⁺ + W⁺x⁻ + b⁻, W⁺x⁺ + W⁻x⁻ + b⁺]`` and its activations become bounded variables.

:func:`encode_input_domain` encodes model space with the encoder's structure (one-hot groups,
integer grids, thermometer ordinals, binaries, immutable and monotone features).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robustce.distance import Distance
from robustce.errors import ValidationError
from robustce.models.network import IntervalNetwork
from robustce.solvers.milp import MILP

__all__ = [
    "DistanceObjective",
    "HullRegion",
    "InputDomain",
    "InputVars",
    "LayerEncoding",
    "column_kinds",
    "NetworkEncoding",
    "encode_constraints",
    "encode_distance",
    "encode_hull_region",
    "encode_input_domain",
    "encode_interval_network",
    "encode_network",
    "encode_shifted_network",
    "plain_interval",
    "restrict_domain",
]

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
class LayerEncoding:
    """One hidden layer: post-ReLU variables, binaries (-1 where the neuron is stable) and the
    bounds used: pre-activation range ``[lower, upper]`` and ``upper_min`` = min of the upper-end
    pre-activation ``hi(v)`` over the domain (equal to ``lower`` for plain networks)."""

    post: np.ndarray
    binary: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    upper_min: np.ndarray
    lower_max: np.ndarray

    @property
    def n_binaries(self) -> int:
        return int((self.binary >= 0).sum())


@dataclass
class NetworkEncoding:
    """Variables of an encoded (interval) network. ``out_lower`` / ``out_upper``: the output
    logits at the lower / upper end of their weight intervals (the same variables for a plain
    network, also available as ``outputs``)."""

    inputs: np.ndarray | None
    hidden: list[LayerEncoding]
    out_lower: np.ndarray
    out_upper: np.ndarray
    out_bounds: tuple[np.ndarray, np.ndarray]
    plain: bool
    aux: dict[str, Any] = field(default_factory=dict)

    @property
    def outputs(self) -> np.ndarray:
        if not self.plain:
            raise ValidationError("an interval network has two output sets: out_lower and out_upper")
        return self.out_lower

    @property
    def n_binaries(self) -> int:
        return sum(layer.n_binaries for layer in self.hidden) + int(self.aux.get("n_sign_binaries", 0))


def plain_interval(network: Any) -> IntervalNetwork:
    """The degenerate interval network of a plain network (``W⁻ = W⁺ = W``)."""
    return IntervalNetwork.point(network)


def encode_network(milp: MILP, network: Any, inputs: InputVars | np.ndarray,
                   *, bounds: list[tuple[np.ndarray, np.ndarray]] | None = None) -> NetworkEncoding:
    """Encode a plain ReLU network (fixed weights) on ``inputs`` (``bounds``: per-layer
    pre-activation bounds, e.g. LP-tightened ones; interval bounds over the box if None)."""
    return encode_interval_network(milp, plain_interval(network), inputs, bounds=bounds, plain=True)


def encode_shifted_network(milp: MILP, network: Any, shift: Any,
                           inputs: InputVars | np.ndarray,
                           *, bounds: list[tuple[np.ndarray, np.ndarray]] | None = None
                           ) -> NetworkEncoding:
    """Encode the interval network of ``shift`` around ``network`` (PROPLACE MILP (6) with the
    weights eliminated). With a fixed input point it is exact: its optimum over any linear
    objective of the outputs equals the optimum over all networks in Δ (see
    :mod:`robustce.robustness.exact`). ``shift``: anything whose ``interval(network)`` gives
    the :class:`IntervalNetwork` of Δ (a :class:`~robustce.robustness.ParameterShift`)."""
    if not callable(getattr(shift, "interval", None)):
        raise ValidationError(f"shift must be a ParameterShift, got {type(shift).__name__}")
    return encode_interval_network(milp, shift.interval(network), inputs, bounds=bounds, plain=False)


# --- linear expressions over the previous layer ------------------------------------------------


@dataclass
class _Expr:
    """Per-neuron lower-end and upper-end pre-activations as ``A @ x[cols] + c``."""

    cols: np.ndarray
    A_lo: np.ndarray
    c_lo: np.ndarray
    A_hi: np.ndarray
    c_hi: np.ndarray
    box_lo: np.ndarray  # bounds of the variables in cols (for ranges)
    box_hi: np.ndarray

    def ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(min lo, max lo, min hi, max hi) over the variables' box (sound)."""
        lo_min = self.c_lo + _min_affine(self.A_lo, self.box_lo, self.box_hi)
        lo_max = self.c_lo - _min_affine(-self.A_lo, self.box_lo, self.box_hi)
        if self.A_hi is self.A_lo and np.array_equal(self.c_hi, self.c_lo):  # a plain layer
            return lo_min, lo_max, lo_min.copy(), lo_max.copy()
        hi_min = self.c_hi + _min_affine(self.A_hi, self.box_lo, self.box_hi)
        hi_max = self.c_hi - _min_affine(-self.A_hi, self.box_lo, self.box_hi)
        return lo_min, lo_max, hi_min, hi_max


def _min_affine(A: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    if A.shape[1] == 0:
        return np.zeros(A.shape[0])
    return np.maximum(A, 0) @ lo + np.minimum(A, 0) @ hi


def _first_layer_expr(milp: MILP, inputs: InputVars | np.ndarray, Wl, Wu, bl, bu, plain: bool,
                      aux: dict[str, Any]) -> tuple[_Expr, np.ndarray | None]:
    if not isinstance(inputs, InputVars):
        x = np.asarray(inputs, dtype=np.float64).reshape(-1)
        if x.shape[0] != Wl.shape[1]:
            raise ValidationError(f"input point has {x.shape[0]} entries, the network takes {Wl.shape[1]}")
        if not np.isfinite(x).all():
            raise ValidationError("input point contains NaN or infinite values")
        xp, xn = np.maximum(x, 0), np.minimum(x, 0)
        m = Wl.shape[0]
        empty = np.zeros((m, 0))
        return _Expr(np.zeros(0, dtype=np.int64), empty, Wl @ xp + Wu @ xn + bl, empty,
                     Wu @ xp + Wl @ xn + bu, np.zeros(0), np.zeros(0)), None
    idx, lo, hi = inputs.index, inputs.lower, inputs.upper
    if idx.shape[0] != Wl.shape[1]:
        raise ValidationError(f"{idx.shape[0]} input variables given, the network takes {Wl.shape[1]}")
    return _signed_expr(milp, idx, lo, hi, Wl, Wu, bl, bu, plain, aux, "sign_split"), idx


def _signed_expr(milp: MILP, idx: np.ndarray, lo: np.ndarray, hi: np.ndarray, Wl, Wu, bl, bu,
                 plain: bool, aux: dict[str, Any], key: str) -> _Expr:
    """The lower-/upper-end pre-activations of a layer over variables ``idx`` in the box
    [lo, hi] of any sign: x >= 0 -> (W⁻, W⁺); x <= 0 -> (W⁺, W⁻); a column whose box
    straddles 0 and whose weights can move is split exactly, x = p - n with a binary choosing
    the side (a fixed column, W⁻ = W⁺, needs no split). The split is recorded in
    ``aux[key]`` (the input layer's under ``"sign_split"``, later ones appended to a list)."""
    if plain or np.all(lo >= 0):
        return _Expr(idx, Wl, bl.copy(), Wu, bu.copy(), lo, hi)
    nonneg, nonpos = lo >= 0, hi <= 0
    moving = (Wl != Wu).any(axis=0)
    mixed = ~(nonneg | nonpos) & moving
    A_lo = np.where(nonneg[None, :], Wl, Wu)
    A_hi = np.where(nonneg[None, :], Wu, Wl)
    cols, box_lo, box_hi = idx.copy(), lo.copy(), hi.copy()
    if mixed.any():
        k = int(mixed.sum())
        mlo, mhi = lo[mixed], hi[mixed]
        pos = milp.add_vars(k, 0.0, mhi)
        neg = milp.add_vars(k, 0.0, -mlo)
        sgn = milp.add_vars(k, 0.0, 1.0, "B")
        r = np.arange(k)
        # x - p + n = 0;  p - hi*s <= 0;  n - lo*s <= -lo  (n <= -lo (1 - s))
        milp.add_constrs_coo(np.concatenate([r, r, r]),
                             np.concatenate([idx[mixed], pos, neg]),
                             np.concatenate([np.ones(k), -np.ones(k), np.ones(k)]), k, 0.0, 0.0)
        milp.add_constrs_coo(np.concatenate([r, r]), np.concatenate([pos, sgn]),
                             np.concatenate([np.ones(k), -mhi]), k, -np.inf, 0.0)
        milp.add_constrs_coo(np.concatenate([r, r]), np.concatenate([neg, sgn]),
                             np.concatenate([np.ones(k), -mlo]), k, -np.inf, -mlo)
        A_lo = np.concatenate([np.where(mixed[None, :], 0.0, A_lo), Wl[:, mixed], -Wu[:, mixed]], axis=1)
        A_hi = np.concatenate([np.where(mixed[None, :], 0.0, A_hi), Wu[:, mixed], -Wl[:, mixed]], axis=1)
        cols = np.concatenate([cols, pos, neg])
        box_lo = np.concatenate([np.where(mixed, 0.0, box_lo), np.zeros(2 * k)])
        box_hi = np.concatenate([np.where(mixed, 0.0, box_hi), mhi, -mlo])
        aux["n_sign_binaries"] = int(aux.get("n_sign_binaries", 0)) + k
        split = (np.flatnonzero(mixed), pos, neg, sgn)
        if key == "sign_split":
            aux[key] = split
        else:
            aux.setdefault(key, []).append(split)
    return _Expr(cols, A_lo, bl.copy(), A_hi, bu.copy(), box_lo, box_hi)


class _RowBuffer:
    """Rows collected in order and added to a model in one :meth:`MILP.add_constrs_coo`
    call (:meth:`flush`): the same rows, in the same order, as adding them one group at a
    time, with a fraction of the per-call overhead."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.n = 0

    def add_constrs_coo(self, rows: Any, cols: Any, vals: Any, n_rows: int, lb: Any = -np.inf,
                        ub: Any = np.inf) -> None:
        n_rows = int(n_rows)
        self.parts.append((np.asarray(rows, dtype=np.int64) + self.n,
                           np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64),
                           np.broadcast_to(np.asarray(lb, dtype=np.float64), (n_rows,)),
                           np.broadcast_to(np.asarray(ub, dtype=np.float64), (n_rows,))))
        self.n += n_rows

    def flush(self, milp: MILP) -> None:
        if self.n:
            r, c, v, lb, ub = (np.concatenate(x) for x in zip(*self.parts, strict=True))
            milp.add_constrs_coo(r, c, v, self.n, lb, ub)
        self.parts, self.n = [], 0


def _rows_with_diag(milp: Any, diag_vars: np.ndarray, A: np.ndarray, cols: np.ndarray,
                    extra: tuple[np.ndarray, np.ndarray] | None, lb, ub) -> None:
    """Rows ``lb <= v_i - A_i x[cols] (+ extra_i s_i) <= ub`` for all i, built in one batch."""
    m, k = A.shape
    r_diag = np.arange(m)
    rr = [r_diag, np.repeat(r_diag, k)]
    cc = [diag_vars, np.tile(cols, m)]
    vv = [np.ones(m), -A.ravel()]
    if extra is not None:
        evars, evals = extra
        rr.append(r_diag)
        cc.append(evars)
        vv.append(evals)
    milp.add_constrs_coo(np.concatenate(rr), np.concatenate(cc), np.concatenate(vv), m, lb, ub)


def encode_interval_network(milp: MILP, inn: IntervalNetwork, inputs: InputVars | np.ndarray, *,
                            bounds: list[tuple[np.ndarray, np.ndarray]] | None = None,
                            plain: bool = False,
                            upper_min: list[np.ndarray] | None = None,
                            last_side: np.ndarray | None = None) -> NetworkEncoding:
    """Encode an interval network (or, with ``plain=True`` and ``W⁻ = W⁺``, a plain one).

    ``inputs``: :class:`InputVars` (variables over a box) or a fixed point (1-D array).
    ``bounds``: per-layer pre-activation bounds ``(lo, hi)`` for this input (as returned by
    :meth:`IntervalNetwork.layer_bounds` for one row); computed when not given.
    ``upper_min``: optional per-layer lower bounds of the upper-end pre-activation ``hi(v)``
    (e.g. from :func:`robustce.solvers.tightening.lp_tighten_bounds`); they only shrink the
    big-M constants and the set of neurons that need a binary.
    ``last_side``: per neuron of the last hidden ReLU layer (interval networks only), ``+1``
    where the objective can only gain from a *smaller* activation (keep only
    ``v ≥ relu(lo(x))``: the upper side, and its binary, is dropped), ``-1`` where it can only
    gain from a *larger* one (keep only ``v ≤ relu(hi(x))``), ``0`` both sides. Exact for that
    objective: at an optimum of the reduced model the neuron can be moved to the kept side's
    end, which satisfies the dropped side too (``relu(lo) ≤ relu(hi)``) and feeds nothing but
    the objective (:mod:`robustce.robustness.delta_milp`).
    """
    layers = inn.layers
    aux: dict[str, Any] = {}
    if bounds is None:
        if isinstance(inputs, InputVars):
            bounds = inn.layer_bounds(inputs.lower, inputs.upper)
        else:
            bounds = inn.layer_bounds(np.asarray(inputs, dtype=np.float64).reshape(1, -1))
    bounds = [(np.asarray(lo).reshape(-1), np.asarray(hi).reshape(-1)) for lo, hi in bounds]
    if len(bounds) != len(layers):
        raise ValidationError(f"bounds has {len(bounds)} layers, the network {len(layers)}")

    Wl, Wu, bl, bu = layers[0]
    acts = inn.activations
    if inn.input_map is not None:  # a fixed affine map z = A x + c before layer 1
        A, c = inn.input_map
        if isinstance(inputs, InputVars):
            zlo, zhi = inn.map_bounds(inputs.lower[None, :], inputs.upper[None, :])
            z = milp.add_vars(A.shape[0], zlo[0], np.maximum(zhi[0], zlo[0]))
            _rows_with_diag(milp, z, A, inputs.index, None, c, c)
            expr, _ = _first_layer_expr(milp, InputVars(z, zlo[0], np.maximum(zhi[0], zlo[0])),
                                        Wl, Wu, bl, bu, plain, aux)
            input_idx: np.ndarray | None = inputs.index
        else:
            x = np.asarray(inputs, dtype=np.float64).reshape(-1)
            if x.shape[0] != A.shape[1]:
                raise ValidationError(f"input point has {x.shape[0]} entries, the network "
                                      f"takes {A.shape[1]}")
            expr, input_idx = _first_layer_expr(milp, A @ x + c, Wl, Wu, bl, bu, plain, aux)
    else:
        expr, input_idx = _first_layer_expr(milp, inputs, Wl, Wu, bl, bu, plain, aux)
    hidden: list[LayerEncoding] = []
    rows = _RowBuffer()  # every row of the network, added in one call at the end
    last = len(layers) - 1
    for li in range(len(layers)):
        L, U = bounds[li]
        lo_min, lo_max, hi_min, hi_max = expr.ranges()
        L = np.maximum(L, lo_min) if expr.cols.size else lo_min
        U = np.minimum(U, hi_max) if expr.cols.size else hi_max
        hi_min = np.maximum(hi_min, L)
        if upper_min is not None and li < len(upper_min):
            hi_min = np.maximum(hi_min, upper_min[li])
        lo_max = np.minimum(lo_max, U)
        m = L.shape[0]
        if li == last:
            if plain:
                y = milp.add_vars(m, L, np.maximum(U, L))
                _rows_with_diag(rows, y, expr.A_lo, expr.cols, None, expr.c_lo, expr.c_lo)
                rows.flush(milp)
                return NetworkEncoding(input_idx, hidden, y, y, (L, U), True, aux)
            y_lo = milp.add_vars(m, L, np.maximum(lo_max, L))
            y_hi = milp.add_vars(m, np.minimum(hi_min, U), U)
            _rows_with_diag(rows, y_lo, expr.A_lo, expr.cols, None, expr.c_lo, expr.c_lo)
            _rows_with_diag(rows, y_hi, expr.A_hi, expr.cols, None, expr.c_hi, expr.c_hi)
            rows.flush(milp)
            return NetworkEncoding(input_idx, hidden, y_lo, y_hi, (L, U), False, aux)

        if acts[li] == "identity":
            # no activation: the neuron takes any value between its two ends (linear rows,
            # no binary); values of any sign feed the next layer, split where they straddle 0
            v = milp.add_vars(m, L, np.maximum(U, L))
            if expr.cols.size:
                if plain:
                    _rows_with_diag(rows, v, expr.A_lo, expr.cols, None, expr.c_lo, expr.c_lo)
                else:
                    _rows_with_diag(rows, v, expr.A_lo, expr.cols, None, expr.c_lo, np.inf)
                    _rows_with_diag(rows, v, expr.A_hi, expr.cols, None, -np.inf, expr.c_hi)
            hidden.append(LayerEncoding(v, np.full(m, -1, dtype=np.int64), L, U, hi_min, lo_max))
            Wl, Wu, bl, bu = layers[li + 1]
            expr = _signed_expr(milp, v, L, np.maximum(U, L), Wl, Wu, bl, bu, plain, aux,
                                "hidden_sign_split")
            continue
        v_lo, v_hi = np.maximum(L, 0.0), np.maximum(U, 0.0)
        side = (np.zeros(m, dtype=np.int64) if last_side is None or plain or li != last - 1
                else np.asarray(last_side, dtype=np.int64).reshape(-1))
        if side.shape[0] != m:
            raise ValidationError(f"last_side has {side.shape[0]} entries, the layer {m}")
        v = milp.add_vars(m, v_lo, v_hi)
        binary = np.full(m, -1, dtype=np.int64)
        if expr.cols.size:
            dead = U <= 0.0
            # v >= lo(x) is implied by v >= 0 where lo_max <= 0; dropped where side = -1
            need_lo_row = ~dead & (lo_max > 0) & (side >= 0)
            if plain:
                active = ~dead & (L >= 0)
                need_lo_row &= ~active
                if active.any():
                    _rows_with_diag(rows, v[active], expr.A_lo[active], expr.cols, None,
                                    expr.c_lo[active], expr.c_lo[active])
            else:
                active = np.zeros(m, dtype=bool)
            if need_lo_row.any():
                s = need_lo_row
                _rows_with_diag(rows, v[s], expr.A_lo[s], expr.cols, None, expr.c_lo[s], np.inf)
            dead |= side > 0  # the upper side is dropped: no row, no binary
            hi_pos = ~dead & ~active & (hi_min >= 0)
            if hi_pos.any():
                s = hi_pos
                _rows_with_diag(rows, v[s], expr.A_hi[s], expr.cols, None, -np.inf, expr.c_hi[s])
            unstable = ~dead & ~active & (hi_min < 0)
            if unstable.any():
                s = unstable
                k = int(s.sum())
                b = milp.add_vars(k, 0.0, 1.0, "B")
                binary[s] = b
                Lh = hi_min[s]
                # v - hi(x) - Lh*b <= -Lh      (v <= hi(x) - Lh (1 - b))
                _rows_with_diag(rows, v[s], expr.A_hi[s], expr.cols, (b, -Lh), -np.inf,
                                expr.c_hi[s] - Lh)
                # v - U b <= 0
                r = np.arange(k)
                rows.add_constrs_coo(np.concatenate([r, r]), np.concatenate([v[s], b]),
                                     np.concatenate([np.ones(k), -U[s]]), k, -np.inf, 0.0)
        hidden.append(LayerEncoding(v, binary, L, U, hi_min, lo_max))
        Wl, Wu, bl, bu = layers[li + 1]
        expr = _Expr(v, Wl, bl.copy(), Wu, bu.copy(), v_lo, v_hi)
    raise AssertionError("unreachable")  # pragma: no cover


# --- input domains ----------------------------------------------------------------------------


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


# --- distances -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistanceObjective:
    """A linear expression Σ coefs·vars + constant over a MILP's variables: the encoded
    distance (plus any tie-break), ready for ``milp.set_objective(cols, coefs, constant=...)``.
    ``abs_vars`` (per column, −1 where none): the variable e_j ≥ |x_j − q_j| of a column that
    is not a 0/1 column at a 0/1 query value; ``changed_vars`` (``l0``, per column, −1 where
    none): the binary that must be 1 for the column to move. Encodings may tighten them."""

    cols: np.ndarray
    coefs: np.ndarray
    constant: float
    abs_vars: np.ndarray | None = None
    changed_vars: np.ndarray | None = None

    def set_as_objective(self, milp: MILP) -> None:
        """Minimise this expression."""
        milp.set_objective(self.cols, self.coefs, constant=self.constant)


def encode_distance(milp: MILP, domain: InputDomain, query: np.ndarray, distance: Distance,
                    encoder: Any = None, *, tie_break: float = 0.0) -> DistanceObjective:
    """Encode ``distance(x, query)`` over the input variables of ``domain`` (Mohammadi et al.).

    Per column, |x_j − q_j| is linear for a 0/1 column with q_j ∈ {0, 1} (``x_j`` or
    ``1 − x_j``) and otherwise a new variable e_j ≥ ±(x_j − q_j); fixed columns (zero-width
    box) contribute nothing. The column terms carry the distance's column weights w_j and add
    up per unit (:meth:`Distance.units`: columns, or raw features in raw space):

    * ``l1``: Σ_j w_j |x_j − q_j|;
    * ``linf``: t with t ≥ Σ_{j∈u} w_j |x_j − q_j| for every unit u;
    * ``l0``: Σ_u c_u with binaries c_u that must be 1 for any column of u (of positive
      weight) to move (big-M from the column's box: q_j − (q_j − lo_j) c_u ≤ x_j ≤ q_j +
      (hi_j − q_j) c_u).

    ``l0`` and ``linf`` add ``tie_break`` times the ``l1`` expression so that the optimum does
    not move more than it must. ``l2`` is not linear and raises ValidationError. Raw space
    needs the model's ``encoder``. Returns the objective; the caller sets it (or adds to it).
    """
    if distance.norm == "l2":
        raise ValidationError("an l2 distance is not linear; a MILP objective supports l0, l1, linf")
    if not (np.isfinite(tie_break) and tie_break >= 0):
        raise ValidationError(f"tie_break must be a finite number >= 0, got {tie_break}")
    x, lo, hi = domain.index, domain.lower, domain.upper
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    d = len(x)
    if q.shape[0] != d:
        raise ValidationError(f"query must have {d} model-space values, got {q.shape[0]}")
    w = distance.column_weights(encoder, d=d)
    owner = distance.units(encoder, d=d)
    # per column, |x_j - q_j| as a_j * var_j + c_j
    movable = hi > lo
    is_bin = (domain.column_kind == "binary") & np.isin(q, (0.0, 1.0))
    lin = movable & is_bin
    gen = movable & ~is_bin
    dvar = np.full(d, -1, dtype=np.int64)
    acoef = np.zeros(d)
    const = np.zeros(d)
    dvar[lin], acoef[lin], const[lin] = x[lin], np.where(q[lin] == 0.0, 1.0, -1.0), q[lin]
    g = np.flatnonzero(gen)
    if g.size:
        dv = milp.add_vars(g.size, 0.0, np.maximum(hi[g] - q[g], q[g] - lo[g]))
        rr = np.arange(g.size)
        # e - x >= -q ; e + x >= q
        milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([dv, x[g]]),
                             np.concatenate([np.ones(g.size), -np.ones(g.size)]), g.size, -q[g], np.inf)
        milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([dv, x[g]]),
                             np.concatenate([np.ones(g.size), np.ones(g.size)]), g.size, q[g], np.inf)
        dvar[g], acoef[g] = dv, 1.0
    cols = np.flatnonzero(movable)
    l1_cols, l1_coef = dvar[cols], w[cols] * acoef[cols]
    l1_const = float((w[cols] * const[cols]).sum())
    abs_vars = np.where(gen, dvar, -1)
    if distance.norm == "l1":
        return DistanceObjective(l1_cols, l1_coef, l1_const, abs_vars)
    units = np.unique(owner[cols])
    if distance.norm == "linf":
        tvar = milp.add_vars(1, 0.0, np.inf)
        uidx = {u: i for i, u in enumerate(units)}
        rows = np.array([uidx[u] for u in owner[cols]], dtype=np.int64)
        rhs = np.zeros(len(units))
        np.add.at(rhs, rows, w[cols] * const[cols])
        # t - sum_j w_j a_j var_j >= sum_j w_j c_j
        milp.add_constrs_coo(np.concatenate([np.arange(len(units)), rows]),
                             np.concatenate([np.full(len(units), tvar[0]), dvar[cols]]),
                             np.concatenate([np.ones(len(units)), -w[cols] * acoef[cols]]),
                             len(units), rhs, np.inf)
        return DistanceObjective(np.concatenate([tvar, l1_cols]),
                                 np.concatenate([[1.0], tie_break * l1_coef]), tie_break * l1_const,
                                 abs_vars)
    # l0: a column of zero weight never counts, so it moves freely
    cols = cols[w[cols] > 0]
    units = np.unique(owner[cols])
    cvar = milp.add_vars(len(units), 0.0, 1.0, "B")
    umap = dict(zip(units.tolist(), cvar.tolist(), strict=True))
    cu = np.array([umap[u] for u in owner[cols]], dtype=np.int64)
    n = cols.size
    rr = np.arange(n)
    # x_j - (hi_j - q_j) c_u <= q_j ;  -x_j - (q_j - lo_j) c_u <= -q_j
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([np.ones(n), -(hi[cols] - q[cols])]), n, -np.inf, q[cols])
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([-np.ones(n), -(q[cols] - lo[cols])]), n, -np.inf, -q[cols])
    changed = np.full(d, -1, dtype=np.int64)
    changed[cols] = cu
    return DistanceObjective(np.concatenate([cvar, l1_cols]),
                             np.concatenate([np.ones(len(cvar)), tie_break * l1_coef]),
                             tie_break * l1_const, abs_vars, changed)


def encode_constraints(milp: MILP, domain: InputDomain, query: np.ndarray | None,
                       constraints: Any) -> np.ndarray:
    """Encode model-space constraints (:class:`robustce.data.constraints.CompiledConstraints`:
    rows ``lower <= A x <= upper`` and ``max_changes`` over ``feature_of_column``) on the
    input variables of ``domain``. Relations are added as they are (exact: the encoder's
    scaled columns are affine in the raw values). ``max_changes`` (needs the ``query``): one
    binary ``c_f`` per raw feature with a movable column, which must be 1 for any of its
    columns to move (``q_j − (q_j − lo_j) c_f <= x_j <= q_j + (hi_j − q_j) c_f``, big-M from
    the domain's box; a one-hot or thermometer group has one binary), and ``Σ_f c_f <= k``.
    Returns the changed binaries per feature (−1 where none or without ``max_changes``)."""
    x, lo, hi = domain.index, domain.lower, domain.upper
    A = np.asarray(constraints.A, dtype=np.float64)
    rows = np.flatnonzero(np.any(A != 0, axis=1))
    if rows.size:
        r, c = np.nonzero(A[rows])
        milp.add_constrs_coo(r, x[c], A[rows][r, c], rows.size,
                             np.asarray(constraints.lower)[rows],
                             np.asarray(constraints.upper)[rows])
    if getattr(constraints, "conditionals", ()):  # if-then rows (issue 34)
        from robustce.solvers.conditional_encoding import encode_conditionals

        if query is None:
            raise ValidationError("conditional constraints need the query")
        encode_conditionals(milp, domain, query, constraints.conditionals)
    if getattr(constraints, "groups", ()):  # none or all of a group's features change
        from robustce.solvers.group_encoding import encode_groups

        if query is None:
            raise ValidationError("feature groups need the query")
        encode_groups(milp, domain, query, constraints.groups)
    owner = np.asarray(constraints.feature_of_column)
    changed = np.full(int(constraints.n_features), -1, dtype=np.int64)
    k = constraints.max_changes
    if k is None:
        return changed
    if query is None:
        raise ValidationError("max_changes needs the query to count changed features")
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    cols = np.flatnonzero(hi > lo)
    if cols.size == 0:
        return changed
    feats = np.unique(owner[cols])
    cvar = milp.add_vars(len(feats), 0.0, 1.0, "B")
    changed[feats] = cvar
    cu = changed[owner[cols]]
    n = cols.size
    rr = np.arange(n)
    up = np.maximum(hi[cols] - q[cols], 0.0)
    down = np.maximum(q[cols] - lo[cols], 0.0)
    # x_j - (hi_j - q_j) c_f <= q_j ;  -x_j - (q_j - lo_j) c_f <= -q_j
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([np.ones(n), -up]), n, -np.inf, q[cols])
    milp.add_constrs_coo(np.concatenate([rr, rr]), np.concatenate([x[cols], cu]),
                         np.concatenate([-np.ones(n), -down]), n, -np.inf, -q[cols])
    milp.add_constrs_coo(np.zeros(len(cvar), dtype=np.int64), cvar, np.ones(len(cvar)), 1,
                         -np.inf, float(k))
    return changed


# --- convex-hull regions -------------------------------------------------------------------------


@dataclass
class HullRegion:
    """Convex-combination weights of an encoded hull: ``x = Σ_l λ_l v_l``, ``λ ≥ 0``, ``Σ λ = 1``."""

    weights: np.ndarray  # λ variables, one per vertex
    vertices: np.ndarray  # (n_vertices, d)
    rows: np.ndarray  # the columns j tied to the hull (``x_j = Σ_l λ_l v_lj``)


def encode_hull_region(milp: MILP, vertices: np.ndarray, inputs: InputVars | np.ndarray, *,
                       columns: np.ndarray | None = None) -> HullRegion:
    """Restrict input variables to the convex hull of ``vertices`` (PROPLACE Def. 10, MILP (5g)).

    Adds λ ∈ [0, 1]^n with ``Σ λ = 1`` and, for each column ``j`` in ``columns`` (default all),
    ``x_j − Σ_l λ_l v_lj = 0``. Columns left out (e.g. ones fixed to a value every vertex shares)
    are not tied. ``inputs``: :class:`InputVars` or the input variables' indices.
    """
    V = np.asarray(vertices, dtype=np.float64)
    idx = inputs.index if isinstance(inputs, InputVars) else np.asarray(inputs, dtype=np.int64).reshape(-1)
    if V.ndim != 2 or V.shape[0] < 1 or V.shape[1] != idx.shape[0]:
        raise ValidationError(f"vertices must have shape (n >= 1, {idx.shape[0]}), got {V.shape}")
    if not np.isfinite(V).all():
        raise ValidationError("vertices contain NaN or infinite values")
    cols = np.arange(V.shape[1]) if columns is None else np.asarray(columns, dtype=np.int64).reshape(-1)
    n = V.shape[0]
    lam = milp.add_vars(n, 0.0, 1.0)
    milp.add_constrs_coo(np.zeros(n, dtype=np.int64), lam, np.ones(n), 1, 1.0, 1.0)
    k = cols.size
    if k:
        r = np.arange(k)
        # x_j - Σ_l v_lj λ_l = 0
        milp.add_constrs_coo(np.concatenate([r, np.repeat(r, n)]),
                             np.concatenate([idx[cols], np.tile(lam, k)]),
                             np.concatenate([np.ones(k), -V[:, cols].T.ravel()]), k, 0.0, 0.0)
    return HullRegion(lam, V, cols)
