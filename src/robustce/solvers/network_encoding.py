"""MILP encodings of ReLU networks and of their interval abstractions.

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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import IntervalNetwork
from robustce.solvers.domain_encoding import InputVars
from robustce.solvers.milp import MILP


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

