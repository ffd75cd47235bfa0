"""``ActionableRecourse`` (AR): Ustun, Spangher & Liu (2019), "Actionable Recourse in Linear
Classification", as the baseline of MACE (Karimi et al. 2020, §5, Tables 1-3, Appendix B.3).

For a *linear* classifier ``f(x) = w·x + b`` and a query ``x`` AR picks, per feature, one action
``a_j`` from a finite set ``A_j(x)`` of feasible actions and solves the integer program

    min_a  cost(a)    s.t.   sign_t · (w·(x + a) + b) >= tau,    a_j ∈ A_j(x),

(for K > 2 classes one flip row per rival class ``c``: ``(w_t − w_c)·(x + a) + b_t − b_c >=
tau``). One binary per (unit, grid value) plus one "stay" binary per unit, exactly one of them
set per unit; ``tau`` (default 1e-4) is a small margin so that the plain float forward pass of
the returned CE agrees with the IP (checked with ``model.predict``).

**Grid** (the actionable-recourse package's ``ActionSet`` default, read from its source:
bounds at the 1st and 99th percentile of the training values, ``step_type="relative"`` with
``step_size=0.01``, i.e. 101 points; integer variables get an integer step
``ceil(0.01·(ub − lb))`` between ``floor(p1)`` and ``ceil(p99)``; 0/1 variables get {0, 1}).
Here, per model-space column of the training data (``data``):

* continuous (scaled) column: ``linspace(p_lo, p_hi, grid_size)`` between the ``percentiles``
  (default 1st, 99th) of the training column — ``grid_size=101`` is AR's relative step 0.01;
* integer feature (and integer-coded ordinal): in lattice units ``s`` (value − lower), from
  ``floor(p_lo(s))`` to ``ceil(p_hi(s))`` in integer steps ``max(1, ceil((ub − lb) /
  (grid_size − 1)))``, the last point clipped to ``ceil(p_hi)``;
* binary, one-hot and thermometer columns: {0, 1} (AR sees a one-hot model's columns as
  independent 0/1 variables).

The query's own value is always feasible (action 0, the "stay" binary), on the grid or not —
also beyond the training range: such a query's program ranges over its own box
(:meth:`robustce.data.Encoder.domain`), the grid staying AR's percentile grid.
Actionability (the schema's, with ``actionability`` overrides as in MACE / MO): immutable
features have only the zero action, increase-only (decrease-only) features only grid values
``>=`` (``<=``) the query's, column by column.

**Cost**: MACE's distance (:func:`robustce.methods.minimum_observable.mace_distance`), so that
"% improvement of MACE over AR" (MACE Table 3) is measured in MACE's own distance. Per raw
feature ``δ_f = Σ_{j ∈ f} ω_j |x'_j − x_j|`` with ``ω_j`` = 1 for scaled / binary / integer
columns, ½ for one-hot columns, ``1/(k − 1)`` for thermometer columns
(:func:`robustce.distance.raw_column_weights`); ``l1``: ``Σ_f δ_f / J``; ``linf``:
``max_f δ_f / J`` (an epigraph variable); ``l0``: ``#{f : δ_f > 0} / J`` (one indicator per
feature, ``y_f >= 1 − stay_u`` for each unit of the feature); a mapping ``{"l0": α, "l1": β,
"linf": γ}`` combines them as MACE's eq. 3. On the AR point the IP objective equals
``mace_distance`` (the formula above is what it computes for any row, valid or not).

**Data-type plausibility, as AR lacks it** (MACE §5 and Appendix B.3: AR "lacks support for
data-type plausibility" and returns a single CE, "with no avail if it is not plausible"). With
``plausible_types=False`` (default: the baseline as MACE ran it) every model-space column is
its own unit, so a one-hot block may end with zero or two categories set and a thermometer
block may become non-monotone. The answer is then checked against the encoder
(:meth:`robustce.data.Encoder.project` must leave it unchanged); an invalid encoding is
reported as ``not_found`` ("not plausible: not covered"), with the IP's distance and
``plausible=False`` in the certificate and no CE. ``plausible_types=True`` makes each one-hot /
thermometer block one unit whose choices are the valid codes (one category; a monotone
thermometer level), so AR always answers with a valid encoding.

One solver model per (explainer, target class) is built once; a query changes only bounds
(the query's values, disallowed actions) and the right-hand sides of the ``|x' − x|`` rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.data.schema import Actionability
from robustce.distance import raw_column_weights
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer
from robustce.methods.minimum_observable import check_actionability, mace_distance, normalise_norm
from robustce.models.base import model_name
from robustce.solvers.milp import MILP, SolveStatus, check_solver
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["ActionableRecourse", "column_grid"]

#: |value − grid point| below which a grid point counts as the query's own value
_SAME = 1e-12
#: |project(cf) − cf| above which a CE is not a valid encoding
_VALID_TOL = 1e-9


#: the largest ``grid_size``: one IP binary per grid point and column (1e18 once asked numpy
#: for an array of 7 EiB)
MAX_GRID_SIZE = 100_000


def column_grid(block: Any, values: np.ndarray, grid_size: int,
                percentiles: tuple[float, float] = (1.0, 99.0)) -> np.ndarray:
    """AR's grid of feasible values (model space) for a single-column block, from the training
    values of that column (see the module docstring)."""
    v = np.asarray(values, dtype=np.float64)
    lo_p, hi_p = percentiles
    if block.encoding in ("binary", "onehot", "thermometer"):
        return np.array([0.0, 1.0])
    n = block.n_steps
    if n is not None:  # integer feature / integer-coded ordinal: integer lattice
        if n == 0:
            return np.array([0.0])
        s = np.round(np.clip(v, 0, 1) * n)
        lb = math.floor(np.percentile(s, lo_p))
        ub = math.ceil(np.percentile(s, hi_p))
        step = max(1, math.ceil((ub - lb) / (grid_size - 1)))
        pts = np.unique(np.minimum(np.arange(lb, ub + step, step), ub))
        return pts / n
    lo, hi = float(np.percentile(v, lo_p)), float(np.percentile(v, hi_p))
    if hi <= lo:
        return np.array([lo])
    return np.linspace(lo, hi, grid_size)


@dataclass(frozen=True)
class _Unit:
    """One choice of the IP: ``cols`` (model-space columns) take one row of ``values`` or stay."""

    feature: int
    cols: np.ndarray
    values: np.ndarray  # (m, len(cols))


@dataclass
class _Program:
    milp: MILP
    z: np.ndarray  # candidate binaries, units concatenated in unit order
    stay: np.ndarray  # one per unit
    q: np.ndarray  # per column, fixed to the query's value by bounds
    abs_rows: tuple[np.ndarray, np.ndarray]  # dist − val >= −x, dist + val >= x


class ActionableRecourse(Explainer):
    """Actionable Recourse (Ustun et al. 2019): the cheapest combination of grid actions that
    flips a linear classifier, as MACE's baseline (MACE distance as the cost).

    Parameters
    ----------
    model : a logistic regression (any model whose ``network()`` view has a single layer);
        anything else raises :class:`~robustce.errors.UnsupportedModelError`.
    data : the training :class:`~robustce.data.Dataset` (required: the grid's percentiles).
    norm : "l1" (default), "l0", "linf" or a mapping ``{"l0": α, "l1": β, "linf": γ}`` summing
        to 1 — the cost, :func:`~robustce.methods.minimum_observable.mace_distance`.
    grid_size : points per continuous column between the percentiles (default 101: AR's
        relative step 0.01); integer columns step by ``ceil(range / (grid_size − 1))``; 2 to
        :data:`MAX_GRID_SIZE` (100 000: each point is a binary of the IP per column).
    percentiles : (low, high) percentiles of the training column bounding the grid (default
        (1, 99), AR's ``ActionSet`` default).
    actionability : optional ``{feature: "immutable" | "increase" | "decrease" | "free"}``
        overriding the schema's actionability.
    plausible_types : False (default) — AR as in MACE's comparison: model-space columns act
        independently, and an answer that is not a valid encoding is reported ``not_found``;
        True — actions on one-hot / thermometer blocks are valid codes only.
    tau : flip margin of the IP (> 0), so that the float forward pass agrees.
    solver : MILP backend, "highs" (default) or "gurobi".
    target_class, time_limit, random_state, n_jobs, constraints : see :class:`Explainer`; ``time_limit`` is
        the solver's per query.

    Certificate columns
    -------------------
    distance : MACE distance of AR's answer from the query (also when it is not plausible;
        NaN when the IP has no solution).
    ip_status : the solver's final status ("optimal", "infeasible", "time_limit", ...).
    plausible : whether AR's answer is a valid encoding (data-type plausible).

    Statuses: ``found`` (optimal, or the best incumbent at the time limit — the message says
    so); ``not_found`` (AR's answer is not data-type plausible: not covered, MACE §5; or its
    forward pass disagrees); ``infeasible`` (no combination of grid actions flips the model —
    a proof for the grid only); ``timeout``; ``error``.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> enc = rc.data.Encoder(train.schema).fit(train.frame)
    >>> model = rc.models.wrap(LogisticRegression().fit(enc.transform(train.frame), train.y), enc)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.ActionableRecourse(model, train).explain(rejected)
    >>> res.status.tolist()
    ['found', 'not_found', 'found']
    >>> model.predict(res.counterfactuals[res.feature_names])
    array([1, 1])
    """

    name: ClassVar[str] = "ar"
    #: constraints: CEs that violate them are removed (the base class's revalidation) and
    #: counted per query (certificate column ``constraints_removed``)
    _constraints: ClassVar[str] = "filter"
    certificate_columns: ClassVar[tuple[str, ...]] = ("distance", "ip_status", "plausible")

    def __init__(self, model: Any, data: Any = None, *, norm: str | Mapping[str, float] = "l1",
                 grid_size: int = 101, percentiles: tuple[float, float] = (1.0, 99.0),
                 actionability: Mapping[str, str] | None = None, plausible_types: bool = False,
                 tau: float = 1e-4, solver: str = "highs", **kwargs: Any):
        self.norm = norm
        self.grid_size = grid_size
        self.percentiles = percentiles
        self.actionability = actionability
        self.plausible_types = plausible_types
        self.tau = tau
        self.solver = solver
        super().__init__(model, data, **kwargs)

    # --- set-up ---------------------------------------------------------------------------
    def _check_params(self) -> None:
        super()._check_params()
        self._norm = normalise_norm(self.norm)
        check_integer(self.grid_size, "grid_size", low=2, high=MAX_GRID_SIZE)
        p = self.percentiles
        if (not isinstance(p, tuple | list) or len(p) != 2
                or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in p)
                or not 0 <= p[0] < p[1] <= 100):
            raise ValidationError(f"percentiles must be (low, high) with 0 <= low < high <= 100, "
                                  f"got {p!r}")
        check_bool(self.plausible_types, "plausible_types")
        check_number(self.tau, "tau", low=0, low_open=True)
        self.solver_ = check_solver(self.solver)
        self._acts = check_actionability(self.encoder, self.actionability)
        try:
            net = self.model.network()
        except UnsupportedModelError as exc:
            raise UnsupportedModelError(
                f"ActionableRecourse needs a linear model (logistic regression); "
                f"{model_name(self.model)} is not one ({exc})") from None
        if len(net.weights) != 1:
            raise UnsupportedModelError(
                f"ActionableRecourse needs a linear model (logistic regression); "
                f"{model_name(self.model)} has {len(net.weights)} layers")
        W, b = net.weights[0]
        self.coef_ = np.asarray(W, dtype=np.float64)
        self.intercept_ = np.asarray(b, dtype=np.float64)
        if self.data is None:
            raise ValidationError("ActionableRecourse needs the training data (data=) for its "
                                  "action grid")
        enc = self.encoder
        Xtr = enc.transform(self.data.frame)
        grids = []
        for blk in enc.blocks_:
            for j in range(blk.start, blk.stop):
                grids.append(column_grid(blk, Xtr[:, j], int(self.grid_size),
                                         (float(p[0]), float(p[1]))))
        #: per model-space column, AR's grid of feasible values (the query's own value is
        #: feasible as well)
        self.column_grids_: list[np.ndarray] = grids
        self.units_: list[_Unit] = self._build_units()
        self._programs: dict[int, _Program] = {}

    def _build_units(self) -> list[_Unit]:
        units = []
        for f, blk in enumerate(self.encoder.blocks_):
            cols = np.arange(blk.start, blk.stop)
            if self.plausible_types and blk.encoding in ("onehot", "thermometer"):
                units.append(_Unit(f, cols, blk.level_codes()))
            else:
                for j in cols:
                    units.append(_Unit(f, np.array([j]), self.column_grids_[j][:, None]))
        return units

    def __getstate__(self) -> dict[str, Any]:  # solver handles do not pickle (joblib workers)
        state = dict(self.__dict__)
        state["_programs"] = {}
        return state

    # --- the integer program -----------------------------------------------------------------
    def _flip_rows(self, target: int) -> tuple[np.ndarray, np.ndarray]:
        """(A, lb): ``A @ x >= lb`` iff the target's margin is at least ``tau``."""
        W, b = self.coef_, self.intercept_
        if W.shape[0] == 1:
            sign = 1.0 if target == 1 else -1.0
            return sign * W, np.array([self.tau - sign * b[0]])
        rivals = [c for c in range(W.shape[0]) if c != target]
        A = W[target][None, :] - W[rivals]
        return A, self.tau - (b[target] - b[rivals])

    def _program(self, target: int, lower: np.ndarray | None = None,
                 upper: np.ndarray | None = None) -> _Program:
        """The IP for ``target`` over the column box ``[lower, upper]`` (default the unit box:
        built once per target and cached; a query beyond the training range gets its own
        program over its box, :meth:`~robustce.data.Encoder.domain`, uncached)."""
        unit_box = lower is None and upper is None
        if unit_box and target in self._programs:
            return self._programs[target]
        enc = self.encoder
        d, J = enc.n_features_out_, len(enc.blocks_)
        L = np.zeros(d) if lower is None else np.minimum(0.0, np.asarray(lower, dtype=np.float64))
        U = np.ones(d) if upper is None else np.maximum(1.0, np.asarray(upper, dtype=np.float64))
        units = self.units_
        m = MILP(self.solver_, time_limit=self.time_limit)
        sizes = np.array([len(u.values) for u in units])
        z = m.add_vars(int(sizes.sum()), 0, 1, "B")
        stay = m.add_vars(len(units), 0, 1, "B")
        q = m.add_vars(d, L, U, "C")
        p = m.add_vars(d, L, U, "C")
        val = m.add_vars(d, L, U, "C")
        dist = m.add_vars(d, 0, np.inf, "C")
        unit_of_col = np.empty(d, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        r, c, v = [], [], []  # one choice per unit: Σ z + stay = 1
        for i in range(len(units)):
            r += [i] * (sizes[i] + 1)
            c += list(z[starts[i]:starts[i + 1]]) + [stay[i]]
            v += [1.0] * (sizes[i] + 1)
        m.add_constrs_coo(r, c, v, len(units), 1.0, 1.0)
        r, c, v = [], [], []  # val_j = Σ_k V[k, j] z_k + p_j,  p_j = q_j · stay_u (exact)
        for i, u in enumerate(units):
            for jj, j in enumerate(u.cols):
                unit_of_col[j] = i
                r += [j] * (sizes[i] + 2)
                c += list(z[starts[i]:starts[i + 1]]) + [p[j], val[j]]
                v += list(-u.values[:, jj]) + [-1.0, 1.0]
        m.add_constrs_coo(r, c, v, d, 0.0, 0.0)
        cols = np.arange(d)
        s_of = stay[unit_of_col]
        # McCormick envelope of p = q · stay (exact: stay binary, q in [L, U] with L <= 0 <= U;
        # on the unit box: p <= s, p <= q, p >= q + s - 1, p >= 0)
        one = np.ones(d)
        m.add_constrs_coo(np.r_[cols, cols], np.r_[p, s_of], np.r_[one, -U], d, -np.inf, 0.0)
        m.add_constrs_coo(np.r_[cols, cols], np.r_[p, s_of], np.r_[one, -L], d, 0.0, np.inf)
        m.add_constrs_coo(np.r_[cols, cols, cols], np.r_[p, q, s_of], np.r_[one, -one, -L], d,
                          -np.inf, -L)
        m.add_constrs_coo(np.r_[cols, cols, cols], np.r_[p, q, s_of], np.r_[one, -one, -U], d,
                          -U, np.inf)
        # dist_j >= |val_j − x_j|: right-hand sides set per query
        abs1 = m.add_constrs_coo(np.r_[cols, cols], np.r_[dist, val],
                                 np.r_[np.ones(d), -np.ones(d)], d, 0.0, np.inf)
        abs2 = m.add_constrs_coo(np.r_[cols, cols], np.r_[dist, val],
                                 np.r_[np.ones(d), np.ones(d)], d, 0.0, np.inf)
        A, lb = self._flip_rows(target)
        m.add_constrs(A, lb, np.inf, cols=val)
        omega = raw_column_weights(enc)
        feat = enc.feature_of_column_
        obj_cols, obj_vals = [], []
        if "l1" in self._norm:
            obj_cols.append(dist)
            obj_vals.append(self._norm["l1"] * omega / J)
        if "linf" in self._norm:
            t = m.add_vars(1, 0, np.inf, "C")
            # t >= Σ_{j ∈ f} ω_j dist_j for every raw feature f
            m.add_constrs_coo(np.r_[np.arange(J), feat], np.r_[np.full(J, t[0]), dist],
                              np.r_[np.ones(J), -omega], J, 0.0, np.inf)
            obj_cols.append(t)
            obj_vals.append(np.array([self._norm["linf"] / J]))
        if "l0" in self._norm:
            y = m.add_vars(J, 0, 1, "C")
            n_u = len(units)
            u_feat = np.array([u.feature for u in units])
            # y_f + stay_u >= 1 for every unit u of feature f (z set only for real changes)
            m.add_constrs_coo(np.r_[np.arange(n_u), np.arange(n_u)], np.r_[y[u_feat], stay],
                              np.ones(2 * n_u), n_u, 1.0, np.inf)
            obj_cols.append(y)
            obj_vals.append(np.full(J, self._norm["l0"] / J))
        m.set_objective(np.concatenate(obj_cols), np.concatenate(obj_vals))
        prog = _Program(m, z, stay, q, (abs1, abs2))
        if unit_box:
            self._programs[target] = prog
        return prog

    def allowed(self, x: np.ndarray) -> list[np.ndarray]:
        """Per unit, which grid rows are feasible actions from ``x`` (actionability; a row equal
        to ``x`` is the zero action, i.e. the unit's stay choice)."""
        out = []
        for u in self.units_:
            blk = self.encoder.blocks_[u.feature]
            act = Actionability(self._acts.get(blk.name, blk.actionability))
            cur = x[u.cols][None, :]
            ok = ~np.all(np.abs(u.values - cur) <= _SAME, axis=1)
            if act is Actionability.IMMUTABLE:
                ok[:] = False
            elif act is Actionability.INCREASE:
                ok &= np.all(u.values >= cur, axis=1)
            elif act is Actionability.DECREASE:
                ok &= np.all(u.values <= cur, axis=1)
            out.append(ok)
        return out

    def solve_ip(self, x: np.ndarray, target: int) -> tuple[np.ndarray | None, Any]:
        """AR's answer for one query (model space; None without a solution) and the solver's
        :class:`~robustce.solvers.milp.SolveResult`. A query beyond the training range is
        searched over its own box (its out-of-range values stay reachable: the stay action)."""
        x = np.asarray(x, dtype=np.float64)
        if ((x < 0.0) | (x > 1.0)).any():
            prog = self._program(int(target), *self.encoder.domain(x))
        else:
            prog = self._program(int(target))
        m = prog.milp
        ok = np.concatenate(self.allowed(x))
        m.set_var_bounds(prog.z, np.zeros(len(ok)), ok.astype(np.float64))
        m.set_var_bounds(prog.q, x, x)
        d = len(x)
        m.set_constr_bounds(prog.abs_rows[0], -x, np.full(d, np.inf))
        m.set_constr_bounds(prog.abs_rows[1], x, np.full(d, np.inf))
        res = m.solve(self.time_limit)
        if not res.has_solution:
            return None, res
        vals = res.values
        cf = np.array(x, dtype=np.float64)
        zv = vals[prog.z]
        start = 0
        for i, u in enumerate(self.units_):
            zu = zv[start:start + len(u.values)]  # the unit's candidates (units concatenated)
            start += len(u.values)
            k = int(np.argmax(zu)) if len(zu) else -1
            if k >= 0 and zu[k] > vals[prog.stay[i]]:
                cf[u.cols] = u.values[k]
        return cf, res

    # --- explain ---------------------------------------------------------------------------
    def _explain_one(self, x: np.ndarray, target: int) -> QueryResult:
        cf, res = self.solve_ip(x, target)
        status = res.status
        cert: dict[str, Any] = {"distance": math.nan, "ip_status": status.value,
                                "plausible": None}
        if cf is None:
            if status in (SolveStatus.INFEASIBLE, SolveStatus.INFEASIBLE_OR_UNBOUNDED):
                return QueryResult("infeasible", None, cert,
                                   message="no combination of feasible grid actions flips the model")
            if status is SolveStatus.TIME_LIMIT:
                return QueryResult("timeout", None, cert, message="time limit: no solution")
            return QueryResult("error", None, cert, message=f"solver: {status.value} "
                                                            f"{res.message}".strip())
        enc = self.encoder
        cert["distance"] = float(mace_distance(enc, x, cf[None], self._norm)[0])
        off = np.abs(enc.project(cf[None], *enc.domain(x))[0] - cf) > _VALID_TOL
        valid = not off.any()
        cert["plausible"] = valid
        if not valid:
            bad = [b.name for b in enc.blocks_ if off[b.slice].any()]
            return QueryResult("not_found", None, cert,
                               message="AR's answer is not a valid encoding of "
                                       f"{', '.join(bad)} (not data-type plausible): not covered")
        if int(self.model.predict(cf[None])[0]) != target:
            return QueryResult("not_found", None, cert,
                               message="the forward pass disagrees with the IP (raise tau)")
        msg = "" if status is SolveStatus.OPTIMAL else f"solver stopped: {status.value} (best " \
                                                       "incumbent, not proven optimal)"
        return QueryResult("found", cf[None], cert, message=msg)
