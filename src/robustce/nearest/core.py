"""The core of the nearest-CE search: its results (:class:`Incumbent`, :class:`_Nearest`),
the model's margins (a network's forward pass and linear region, a tree ensemble's leaves)
and :class:`NearestCore`, the part of the search that the network MILP
(:mod:`robustce.nearest.network`), the tree MILP (:mod:`robustce.nearest.trees`) and the
incumbents (:mod:`robustce.nearest.incumbents`) share: the distance's weights and objective,
the column kinds, the input domain with the fixed costs, and the dispatch of one query to the
network or the tree search.

The search is a mixin of an explainer (its *host*, :class:`~robustce.methods.MILPNearest`
and the methods built on it). The host provides, besides
:class:`~robustce.methods.base.Explainer`'s ``encoder``, ``model``, ``data``,
``constraints_``, ``actionable`` and ``causal_children``: the parameters ``norm``,
``tie_break``, ``mip_gap``, ``threads``, ``warm_start``, ``box_from_incumbent``,
``bound_tightening`` and ``relax_first``; set in its ``_check_params``: ``solver_``,
``distance_`` and ``_l1_`` (the distance minimised and its L1 part), ``_network`` or
``_ensemble_`` with ``_tree_kind_``, and the caches ``_candidates_``, ``_ranked_``, ``_w_``,
``_template_``, ``_kinds_`` (None or empty); the hooks :meth:`NearestCore._tweaker` and
:meth:`NearestCore._feasible_set`; and ``_action_tol``, its actionability tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from robustce.models.network import class_margin
from robustce.nearest.domains import causal_input_domain
from robustce.solvers.encodings import InputDomain, encode_input_domain
from robustce.solvers.milp import MILP
from robustce.solvers.tree_encoding import TreeEnsemble

__all__ = ["Incumbent", "NearestCore"]


@dataclass(frozen=True)
class Incumbent:
    """A feasible CE known before the search: ``x`` (model space) with MILP objective value
    ``objective`` (the distance plus any tie-break term)."""

    x: np.ndarray
    objective: float


@dataclass
class _Nearest:
    status: str  # found / infeasible / timeout / error
    cf: np.ndarray | None
    objective: float = math.nan
    bound: float = math.nan
    gap: float = math.nan
    optimal: bool = False
    solver_status: str = ""
    time: float = 0.0
    message: str = ""


def _jacobian(net: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Jacobian (k, d) of the logits of a ReLU network at ``x`` (its linear region) and the
    logits (k,)."""
    J = np.eye(len(x))
    h = x
    last = len(net.weights) - 1
    for i, (W, b) in enumerate(net.weights):
        z = W @ h + b
        J = W @ J
        if i < last:
            on = z > 0
            J = J * on[:, None]
            h = np.where(on, z, 0.0)
        else:
            h = z
    return J, h




def _leaves(ens: TreeEnsemble, X: np.ndarray) -> np.ndarray:
    """(n, n_trees) global node ids of the leaves each row of ``X`` reaches in ``ens``
    (its float64 routing ``x[f] <= threshold``, all trees at once)."""
    node = np.repeat(ens.roots[None, :], len(X), axis=0)
    rows = np.arange(len(X))[:, None]
    while True:
        inner = ~ens.is_leaf[node]
        if not inner.any():
            return node
        f = np.where(inner, ens.feature[node], 0)
        go_left = X[rows, f] <= ens.threshold[node]
        node = np.where(inner, np.where(go_left, ens.left[node], ens.right[node]), node)



class NearestCore:
    """What the network search, the tree search and the incumbents share (module
    docstring: the host's attributes it reads)."""

    #: the tolerance of the host's actionability check (``Explainer.actionable``'s default)
    _action_tol: ClassVar[float]

    def _tweaker(self) -> Any:
        """Feature tweaking over the model (the host's; a tree model's multi-feature
        incumbents, :func:`robustce.nearest.incumbents.tree_candidates`)."""
        raise NotImplementedError

    def _feasible_set(self) -> Any:
        """The encoder's actionability as a feasible set with ``bounds(q)`` (the host's)."""
        raise NotImplementedError

    def _weights(self) -> np.ndarray:
        """The distance's column weights (computed once; read-only)."""
        if self._w_ is None:
            w = np.asarray(self.distance_.column_weights(self.encoder), dtype=np.float64).copy()
            w.flags.writeable = False
            self._w_ = w
        return self._w_

    def _margins(self, X: np.ndarray, target: int) -> np.ndarray:
        """Per row of ``X`` (model space), the target margin: a network's
        :func:`~robustce.models.network.class_margin` of its logits; a tree model's summed
        vote (:meth:`TreeEnsemble.votes` over the leaves reached) of the target minus its
        strongest rival's (a single tree: +1 if its leaf's argmax is the target, else −1)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self._ensemble_ is None:
            return class_margin(self._network.forward(X), int(target))
        ens = self._ensemble_
        leaves = _leaves(ens, X)
        if not ens.forest:
            return np.where(ens.votes(int(target))[leaves[:, 0], 0] > 0.5, 1.0, -1.0)
        v = ens.votes(int(target))[leaves].sum(axis=1)  # (n, rivals): target − rival
        return v.min(axis=1)

    def _objective_values(self, q: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The MILP objective of each row of ``X``: the distance plus ``tie_break`` · L1 for
        ``l0`` / ``linf``."""
        z = self.distance_.rowwise(q, X, self.encoder)
        if self.norm != "l1" and self.tie_break > 0:
            z = z + self.tie_break * self._l1_.rowwise(q, X, self.encoder)
        return z

    def _column_kinds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per column, its kind and grid steps in the encoded domain (computed once)."""
        if getattr(self, "_kinds_", None) is None:
            dom = encode_input_domain(MILP(self.solver_), self.encoder)
            self._kinds_ = (dom.column_kind, dom.grid_steps)
        return self._kinds_

    def _continuous_columns(self, with_grid: bool = False) -> np.ndarray:
        """Columns of continuous kind (with ``with_grid``, integer-grid columns too)."""
        kind = self._column_kinds()[0]
        ok = (kind == "continuous") | ((kind == "grid") if with_grid else False)
        return np.flatnonzero(ok)

    def _input_domain(self, m: MILP, q: np.ndarray, integer_grid: bool = True) -> InputDomain:
        """The query's actionable input domain in ``m``. With a causal model, its children's
        columns span their whole box whatever their actionability (MINT: a child is not acted
        upon; it moves with its parents by the structural equations, which the constraint
        rows encode). Raises ValidationError when the box is empty."""
        return causal_input_domain(m, self.encoder, q, self.causal_children(), self.solver_,
                                   integer_grid=integer_grid)

    def _under_constraints(self) -> str:
        """The words that infeasibility messages add when constraints were encoded."""
        return "" if self.constraints_ is None else " that satisfies the constraints"

    def _with_fixed_costs(self, m: MILP, dom: InputDomain, q: np.ndarray, obj: Any) -> Any:
        """The objective plus the fixed costs of changed features (``fixed_costs``;
        :func:`robustce.solvers.fixed_cost_encoding.add_fixed_costs`), if any."""
        if self.distance_.fixed is None:
            return obj
        from robustce.solvers.fixed_cost_encoding import add_fixed_costs

        return add_fixed_costs(m, dom, q, self.distance_.fixed, self.encoder.feature_of_column_,
                               obj)

    def _nearest(self, q: np.ndarray, target: int, tau: float, time_limit: float,
                 seeds: np.ndarray | None = None) -> _Nearest:
        """Solve the nearest-CE MILP for one query with validity margin ``tau`` (``seeds``:
        see :meth:`incumbent`)."""
        if self._ensemble_ is not None:
            return self._nearest_trees(q, target, time_limit)
        return self._nearest_network(q, target, tau, time_limit, seeds)
