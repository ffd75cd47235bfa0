"""The model builder, :class:`MILP`: variables, rows and objective in numpy arrays, handed to
a backend (:mod:`~robustce.solvers.milp.highs` or :mod:`~robustce.solvers.milp.gurobi`) in one
batch call and solved under a finite time limit."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from robustce.errors import SolverError, ValidationError
from robustce.solvers.milp.common import (
    INF,
    SolveResult,
    SolveStatus,
    VarType,
    _ModelData,
    _Options,
    check_solver,
    check_time_limit,
)
from robustce.solvers.milp.gurobi import _GurobiBackend
from robustce.solvers.milp.highs import _HighsBackend

_VTYPE_CODES = ("C", "I", "B")


def _as_float_array(value: Any, n: int, name: str) -> np.ndarray:
    if isinstance(value, float | int) and not isinstance(value, bool):
        if value != value:
            raise ValidationError(f"{name} contains NaN")
        return np.full(n, float(value))
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        if np.isnan(arr):
            raise ValidationError(f"{name} contains NaN")
        return np.full(n, float(arr))
    arr = arr.reshape(-1)
    if arr.shape[0] != n:
        raise ValidationError(f"{name} must be a scalar or have {n} entries, got {arr.shape[0]}")
    if np.isnan(arr.sum()) and np.isnan(arr).any():  # the sum is NaN for inf - inf too
        raise ValidationError(f"{name} contains NaN")
    return arr.copy()


class MILP:
    """A mixed-integer linear program with a pluggable backend.

    Parameters
    ----------
    solver : "highs" (default) or "gurobi" (needs gurobipy and a licence).
    time_limit : default seconds per solve (finite, > 0); ``solve(time_limit=...)`` overrides.
        On HiGHS, CPU seconds of the solving thread with a wall-clock safety net of
        ``WALL_SLACK ×`` (:mod:`robustce.solvers.clock`); on Gurobi, wall-clock seconds.
    threads : solver threads (1 by default: tiny MILPs do not gain from more, and results
        stay deterministic).
    mip_gap, abs_gap : relative / absolute optimality gaps at which a solve counts as optimal.
    seed : the backend's random seed.
    presolve : whether the backend presolves.
    feasibility_tol : primal / integrality feasibility tolerance (backend default if None).
    options : backend-specific parameters passed through (HiGHS option names or Gurobi
        parameter names), e.g. ``{"mip_heuristic_run_feasibility_jump": False}``.

    Examples
    --------
    max 3 x₀ + x₁ subject to 2 x₀ + x₁ ≤ 7.5, x₀ integer, both in [0, 10]:

    >>> milp = MILP(time_limit=10)
    >>> x = milp.add_vars(2, lb=0, ub=10, vtype=["I", "C"])
    >>> _ = milp.add_constrs(np.array([[2.0, 1.0]]), ub=7.5, cols=x)
    >>> milp.set_objective(x, [3.0, 1.0], sense="max")
    >>> milp
    MILP(solver='highs', vars=2, constrs=1, time_limit=10.0)
    >>> milp.solve().values.tolist()
    [3.0, 1.5]
    """

    def __init__(self, solver: str = "highs", *, time_limit: float = 60.0, threads: int = 1,
                 mip_gap: float = 1e-6, abs_gap: float = 1e-9, seed: int = 0, presolve: bool = True,
                 feasibility_tol: float | None = None, options: dict[str, Any] | None = None):
        self.solver = check_solver(solver)
        self.time_limit = check_time_limit(time_limit)
        if int(threads) < 1:
            raise ValidationError(f"threads must be >= 1, got {threads}")
        if not (0 <= mip_gap < 1) or abs_gap < 0:
            raise ValidationError(f"mip_gap must be in [0, 1) and abs_gap >= 0, got {mip_gap}, {abs_gap}")
        self._options = _Options(self.time_limit, int(threads), float(mip_gap), float(abs_gap),
                                 int(seed), bool(presolve), feasibility_tol, dict(options or {}))
        self._lb: list[np.ndarray] = []
        self._ub: list[np.ndarray] = []
        self._vt: list[np.ndarray] = []
        self._n_vars = 0
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._rlb: list[np.ndarray] = []
        self._rub: list[np.ndarray] = []
        self._n_rows = 0
        self._cost = np.zeros(0)
        self._sense = 1
        self._offset = 0.0
        self._start: dict[int, float] = {}
        self._backend: _HighsBackend | _GurobiBackend | None = None
        self._data: _ModelData | None = None
        self._loaded = False
        self.last_result: SolveResult | None = None

    # -- sizes ------------------------------------------------------------------------------------
    @property
    def n_vars(self) -> int:
        return self._n_vars

    @property
    def n_constrs(self) -> int:
        return self._n_rows

    @property
    def n_integer(self) -> int:
        """Number of integer (including binary) variables."""
        return int(self._materialise().vtype.sum())

    # -- building ---------------------------------------------------------------------------------
    def add_vars(self, n: int, lb: Any = 0.0, ub: Any = INF, vtype: Any = "C") -> np.ndarray:
        """Add ``n`` variables; returns their column indices (int array). ``vtype`` is one of
        ``"C"``, ``"I"``, ``"B"`` or an array of those codes (one per variable)."""
        n = int(n)
        if n < 0:
            raise ValidationError(f"n must be >= 0, got {n}")
        if isinstance(vtype, str) and vtype in _VTYPE_CODES:  # one code for all: no object array
            is_bin = np.full(n, vtype == "B")
            is_int = np.full(n, vtype != "C", dtype=np.uint8)
        else:
            codes = np.asarray(vtype, dtype=object)
            codes = np.full(n, codes.item(), dtype=object) if codes.ndim == 0 else codes.reshape(-1)
            if codes.shape[0] != n:
                raise ValidationError(f"vtype must be a code or have {n} entries, got "
                                      f"{codes.shape[0]}")
            try:
                kinds = [VarType(c) for c in dict.fromkeys(codes.tolist())]
            except ValueError:
                raise ValidationError(f"vtype must be 'C', 'I' or 'B', got "
                                      f"{sorted(set(map(str, codes)))}") from None
            is_bin = codes == VarType.BINARY.value if VarType.BINARY in kinds \
                else np.zeros(n, dtype=bool)
            is_int = (codes != VarType.CONTINUOUS.value).astype(np.uint8)
        lo = _as_float_array(lb, n, "lb")
        hi = _as_float_array(ub, n, "ub")
        if is_bin.any():
            lo[is_bin], hi[is_bin] = np.maximum(lo[is_bin], 0.0), np.minimum(hi[is_bin], 1.0)
        if np.any(lo > hi + 1e-12):
            bad = int(np.argmax(lo > hi + 1e-12))
            raise ValidationError(f"variable bounds have lb > ub (entry {bad}: {lo[bad]} > {hi[bad]})")
        np.maximum(lo, hi, out=hi)
        self._invalidate()
        self._lb.append(lo)
        self._ub.append(hi)
        self._vt.append(is_int)
        idx = np.arange(self._n_vars, self._n_vars + n)
        self._n_vars += n
        return idx

    def add_model(self, other: MILP) -> None:
        """Append the variables and rows of ``other`` (its indices shifted by this model's
        sizes; its objective is not copied) — e.g. a part encoded once and reused in many
        models."""
        if not isinstance(other, MILP):
            raise ValidationError(f"add_model needs a MILP, got {type(other).__name__}")
        d = other._materialise()
        self._invalidate()
        n0, r0 = self._n_vars, self._n_rows
        self._lb.append(d.lb.copy())
        self._ub.append(d.ub.copy())
        self._vt.append(d.vtype.copy())
        A = d.A
        rows = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(A.indptr))
        self._rows.append(rows + r0)
        self._cols.append(A.indices.astype(np.int64) + n0)
        self._vals.append(A.data.copy())
        self._rlb.append(d.row_lb.copy())
        self._rub.append(d.row_ub.copy())
        self._n_vars += len(d.lb)
        self._n_rows += A.shape[0]

    def add_constrs(self, A: Any, lb: Any = -INF, ub: Any = INF, *, cols: Any = None) -> np.ndarray:
        """Add rows ``lb <= A @ x[cols] <= ub``; ``A`` dense (m, k) or scipy sparse. Without
        ``cols``, ``A`` spans all current variables. Returns the row indices."""
        if sp.issparse(A):
            coo = sp.coo_matrix(A)
            m, k = coo.shape
            r, c, v = coo.row, coo.col, coo.data
        else:
            arr = np.asarray(A, dtype=np.float64)
            if arr.ndim == 1:
                arr = arr[None, :]
            if arr.ndim != 2:
                raise ValidationError(f"A must be 2-D, got shape {arr.shape}")
            m, k = arr.shape
            r, c = np.nonzero(arr)
            v = arr[r, c]
        if cols is None:
            if k != self._n_vars:
                raise ValidationError(f"A has {k} columns but the model has {self._n_vars} variables")
            colmap = None
        else:
            colmap = np.asarray(cols, dtype=np.int64).reshape(-1)
            if colmap.shape[0] != k:
                raise ValidationError(f"A has {k} columns but {colmap.shape[0]} cols were given")
        return self.add_constrs_coo(r, c if colmap is None else colmap[c], v, m, lb, ub)

    def add_constrs_coo(self, rows: Any, cols: Any, vals: Any, n_rows: int, lb: Any = -INF,
                        ub: Any = INF) -> np.ndarray:
        """Add ``n_rows`` rows given as triplets (row in 0..n_rows-1, variable index, coefficient);
        duplicate entries are summed."""
        n_rows = int(n_rows)
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        c = np.asarray(cols, dtype=np.int64).reshape(-1)
        v = np.asarray(vals, dtype=np.float64).reshape(-1)
        if not (r.shape == c.shape == v.shape):
            raise ValidationError("rows, cols and vals must have the same length")
        _check_index(r, n_rows, "row")
        _check_index(c, self._n_vars, "variable")
        if not np.isfinite(v).all():
            raise ValidationError("constraint coefficients must be finite")
        lo = _as_float_array(lb, n_rows, "lb")
        hi = _as_float_array(ub, n_rows, "ub")
        if np.any(lo > hi + 1e-12):
            raise ValidationError("constraint bounds have lb > ub")
        self._invalidate()
        if not v.all():
            keep = v != 0
            r, c, v = r[keep], c[keep], v[keep]
        self._rows.append(r + self._n_rows)
        self._cols.append(c)
        self._vals.append(v)
        self._rlb.append(lo)
        self._rub.append(hi)
        idx = np.arange(self._n_rows, self._n_rows + n_rows)
        self._n_rows += n_rows
        return idx

    def set_objective(self, cols: Any = None, coefs: Any = None, *, sense: str = "min",
                      constant: float = 0.0) -> None:
        """Replace the objective by ``constant + sum coefs * x[cols]`` (duplicates summed)."""
        if sense not in ("min", "max", "minimize", "maximize"):
            raise ValidationError(f"sense must be 'min' or 'max', got {sense!r}")
        cost = np.zeros(self._n_vars)
        if cols is not None:
            c = _check_index(cols, self._n_vars, "objective variable")
            v = _as_float_array(coefs, c.shape[0], "coefs")
            np.add.at(cost, c, v)
        self._cost = cost
        self._sense = 1 if sense.startswith("min") else -1
        self._offset = float(constant)
        if self._data is not None:
            self._data.cost, self._data.sense, self._data.offset = cost, self._sense, self._offset
            if self._loaded:
                self._backend.set_costs(cost, self._sense, self._offset)

    def set_var_bounds(self, cols: Any, lb: Any, ub: Any) -> None:
        """Change bounds of existing variables (forwarded to the backend without a reload)."""
        c = _check_index(cols, self._n_vars, "variable")
        lo = _as_float_array(lb, c.shape[0], "lb")
        hi = _as_float_array(ub, c.shape[0], "ub")
        if np.any(lo > hi + 1e-12):
            raise ValidationError("variable bounds have lb > ub")
        hi = np.maximum(lo, hi)
        if self._data is None:  # still being built: change the pending bounds, no matrix yet
            if c.size == 0:
                return
            if len(self._lb) != 1:
                self._lb, self._ub = [np.concatenate(self._lb)], [np.concatenate(self._ub)]
            self._lb[0][c], self._ub[0][c] = lo, hi
            return
        data = self._data
        data.lb[c], data.ub[c] = lo, hi
        if self._loaded:
            self._backend.set_bounds(c, lo, hi)

    def set_constr_bounds(self, rows: Any, lb: Any, ub: Any) -> None:
        r = _check_index(rows, self._n_rows, "row")
        lo = _as_float_array(lb, r.shape[0], "lb")
        hi = _as_float_array(ub, r.shape[0], "ub")
        data = self._materialise()
        data.row_lb[r], data.row_ub[r] = lo, hi
        if self._loaded:
            if isinstance(self._backend, _HighsBackend):
                self._backend.set_row_bounds(r, lo, hi)
            else:
                self._loaded = False  # Gurobi splits ranged rows; reload

    def set_start(self, values: Any, cols: Any = None) -> None:
        """A warm start (full vector, or values for ``cols``); used by the next solve where the
        backend supports MIP starts (HiGHS, Gurobi). NaN entries are left undefined."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        c = np.arange(self._n_vars) if cols is None else np.asarray(cols, dtype=np.int64).reshape(-1)
        if c.shape != v.shape:
            raise ValidationError("set_start: values and cols differ in length")
        keep = np.isfinite(v)
        self._start = dict(zip(c[keep].tolist(), v[keep].tolist(), strict=True))

    def relax(self) -> None:
        """Make every variable continuous: the model becomes its LP relaxation (used by
        :mod:`robustce.solvers.tightening`; the bounds of integer variables are kept)."""
        data = self._materialise()
        if data.vtype.any():
            data.vtype = np.zeros_like(data.vtype)
            self._loaded = False

    # -- solving ----------------------------------------------------------------------------------
    def solve_relaxation(self, time_limit: float | None = None, *, cols: Any = None,
                         cutoff: float | None = None) -> SolveResult:
        """Solve a relaxation and leave the model as it was (the next :meth:`solve` is the
        full MILP again): the integer variables ``cols`` (default: all) made continuous,
        bounds kept. Its ``bound`` (the LP optimum, or the dual bound of what stays a MILP)
        bounds the full model's optimum (below when minimising); ``cutoff`` as in
        :meth:`solve`."""
        data = self._materialise()
        vtype = data.vtype
        relaxed = np.zeros_like(vtype) if cols is None else vtype.copy()
        if cols is not None:
            relaxed[_check_index(cols, self._n_vars, "variable")] = 0
        data.vtype = relaxed
        self._loaded = False
        try:
            return self.solve(time_limit, cutoff=cutoff)
        finally:
            data.vtype = vtype
            self._loaded = False

    def solve(self, time_limit: float | None = None, *, cutoff: float | None = None,
              target: float | None = None) -> SolveResult:
        """Solve under ``time_limit`` seconds (default: the model's; CPU seconds on HiGHS, see
        the class docstring). Never raises for solver
        trouble: an ``ERROR`` result says what happened.

        ``cutoff``: only solutions strictly better than it matter (below it when minimising);
        if none exists the status is ``CUTOFF`` and ``bound`` is the cutoff — a proof that the
        optimum is no better. ``target``: stop as soon as an incumbent at least as good is found
        (status ``TARGET``). Both turn an optimisation into a faster decision.
        """
        limit = self.time_limit if time_limit is None else check_time_limit(time_limit)
        data = self._materialise()
        if self._backend is None:
            self._backend = _HighsBackend(self._options) if self.solver == "highs" \
                else _GurobiBackend(self._options)
        t0 = time.perf_counter()
        if not self._loaded:
            try:
                self._backend.load(data)
            except SolverError as exc:
                return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0,
                                   solver=self.solver, message=str(exc))
            except Exception as exc:  # gurobipy errors (licence, size limits) and the like
                msg = f"{type(exc).__name__}: {exc}"
                if "size-limited" in msg or "10010" in msg:
                    msg = f"Gurobi licence limit: {msg}"
                return SolveResult(SolveStatus.ERROR, time=time.perf_counter() - t0,
                                   solver=self.solver, message=msg)
            self._loaded = True
        if self._start:
            self._backend.set_start(self._start)
        result = self._backend.solve(limit, data.sense, cutoff, target)
        self.last_result = result
        return result

    def close(self) -> None:
        """Free the backend (Gurobi environments hold a licence token)."""
        if isinstance(self._backend, _GurobiBackend):
            self._backend.close()
        self._backend = None
        self._loaded = False

    def __enter__(self) -> MILP:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"MILP(solver={self.solver!r}, vars={self._n_vars}, constrs={self._n_rows}, "
                f"time_limit={self.time_limit})")

    # -- internals -------------------------------------------------------------------------------
    def _invalidate(self) -> None:
        if self._data is not None:
            # fold the materialised arrays back so later appends extend them
            d = self._data
            self._lb, self._ub, self._vt = [d.lb], [d.ub], [d.vtype]
            coo = d.A.tocoo()
            self._rows, self._cols, self._vals = [coo.row.astype(np.int64)], \
                [coo.col.astype(np.int64)], [coo.data]
            self._rlb, self._rub = [d.row_lb], [d.row_ub]
            self._data = None
        self._loaded = False

    def _materialise(self) -> _ModelData:
        if self._data is not None:
            return self._data
        n, k = self._n_vars, self._n_rows
        lb = np.concatenate(self._lb) if self._lb else np.zeros(0)
        ub = np.concatenate(self._ub) if self._ub else np.zeros(0)
        vt = np.concatenate(self._vt) if self._vt else np.zeros(0, dtype=np.uint8)
        r = np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=np.int64)
        c = np.concatenate(self._cols) if self._cols else np.zeros(0, dtype=np.int64)
        v = np.concatenate(self._vals) if self._vals else np.zeros(0)
        A = _csr(r, c, v, k, n)
        rlb = np.concatenate(self._rlb) if self._rlb else np.zeros(0)
        rub = np.concatenate(self._rub) if self._rub else np.zeros(0)
        cost = np.zeros(n)
        cost[: len(self._cost)] = self._cost[:n]
        self._cost = cost
        self._data = _ModelData(lb, ub, cost, vt, A, rlb, rub, self._sense, self._offset)
        return self._data


def _csr(r: np.ndarray, c: np.ndarray, v: np.ndarray, k: int, n: int) -> sp.csr_matrix:
    """The (k, n) CSR matrix of triplets ``(r, c, v)``: duplicates summed, indices sorted
    (built directly: scipy's COO route costs more than the whole model on small MILPs)."""
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    if r.size > 1:
        first = np.empty(r.size, dtype=bool)
        first[0] = True
        np.not_equal(r[1:], r[:-1], out=first[1:])
        first[1:] |= c[1:] != c[:-1]
        if not first.all():
            at = np.flatnonzero(first)
            r, c, v = r[at], c[at], np.add.reduceat(v, at)
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=k), out=indptr[1:])
    A = sp.csr_matrix((v, c, indptr), shape=(k, n))
    A.has_sorted_indices = True
    A.has_canonical_format = True
    return A


def _check_index(idx: Any, size: int, what: str) -> np.ndarray:
    """``idx`` as a flat int64 array, every entry in ``0..size-1`` (else ValidationError)."""
    i = np.asarray(idx, dtype=np.int64).reshape(-1)
    if i.size and (i.min() < 0 or i.max() >= size):
        raise ValidationError(f"{what} index out of range")
    return i

