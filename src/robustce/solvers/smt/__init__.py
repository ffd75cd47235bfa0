"""SMT (z3) encodings for MACE (Karimi et al., AISTATS 2020): characteristic formulae of fitted
models, raw feature variables linked to model space, and the distance formula (eq. 3).

**Variables per raw feature** (:class:`SMTInput`), linked to the model's input exactly as the
:class:`~robustce.data.Encoder` defines it:

* continuous — one real ``x`` in ``[0, 1]``, the min-max scaled value (raw ``lower + x·R``);
* integer — one int ``k`` in ``[0, R]``, the raw value minus ``lower``; model input ``k / R``;
* binary — one bool; model input ``If(b, 1, 0)``;
* categorical — one int ``c`` in ``[0, K)``, the level index; one-hot column ``j`` is ``c == j``;
* ordinal — one int ``c`` in ``[0, K)`` in order; thermometer column ``j`` is ``c >= j + 1``
  (integer-coded ordinals: ``c / (K - 1)``).

**Characteristic formulae** ``φ_f(x, t)``, true iff the model predicts class ``t`` at ``x``:

* a tree: the disjunction over the leaves predicting ``t`` of the conjunction of their path
  conditions (paper Fig. 2); the conditions are shared along the tree as a DAG;
* a forest (scikit-learn's soft vote): per tree a real ``v_k`` fixed by the reached leaf
  (``path_l ⇒ v_k = value_l``, exactly one leaf reached), and the vote of the target class
  beats every other class with scikit-learn's tie rule (the first maximum wins);
* a ReLU network (logistic regression is the one-layer case; sklearn ``MLPClassifier`` and our
  ``MLP`` through ``model.network()``): one real per hidden neuron, ``h = If(z >= 0, z, 0)``
  (paper Fig. 3), neurons that interval bounds prove stable written without the ``If``; the
  target logit beats the others by at least ``tau``.

Exactness against float64. Tree thresholds ``t`` (already adjusted by :class:`TreeView` so that
``x <= t`` reproduces scikit-learn's float32 routing) are compared exactly for the floats the
model will see: a grid column ``k / R`` by the exact set of grid points whose float64 value is
``<= t``, 0/1 columns by their two values, and a real column with the split margin ``m``
(:class:`~robustce.models.trees.SplitMargins`: 2^-40 of the feature's magnitude, plus 2^-21 of
the raw threshold on a float32 raw column) — left iff ``x <= t − m``, right iff ``x >= t + m`` —
so that the raw row the user receives, decoded and scored again (re-encoded, or by the user's
own pipeline), is routed the same way (a column that the query box fixes, an immutable value,
is routed exactly). Every counterfactual satisfying the formula is therefore routed to the
same leaf; the lower bounds of MACE are proven for CEs that clear every split by its margin
(points within ``m`` of a threshold are not considered). Network logits are real arithmetic;
``tau > 0`` keeps the float64 forward pass on the same side.

**Distance** (:meth:`SMTInput.distance`): per raw feature ``δ_j = |Δ| / R_j`` (numeric),
``|Δ level| / (K_j - 1)`` (ordinal), ``𝕀[≠]`` (categorical, binary; a one-hot group counts
once); ``d = (α‖δ‖₀ + β‖δ‖₁ + γ‖δ‖∞) / J`` with ``α + β + γ = 1`` so that ``d ∈ [0, 1]`` (the
division of ‖δ‖∞ by the number of features J follows the authors' code). Absolute values are
slack reals (``e_j >= ±Δ``) and ‖δ‖₀ uses one bool per feature, so every formula stays in
linear real/integer arithmetic.

The package, by part: :mod:`~robustce.solvers.smt.terms` (exact numerals, fast term builders),
:mod:`~robustce.solvers.smt.domain` (:class:`SMTInput`: the variables, their domain, the
column tests, the distance), :mod:`~robustce.solvers.smt.constraints` (user constraints as
formulas), :mod:`~robustce.solvers.smt.trees` (trees, forests, boosted ensembles),
:mod:`~robustce.solvers.smt.network` (ReLU networks and logistic regression, with their
neuron bounds) and :mod:`~robustce.solvers.smt.oracle` (one satisfiability call, :func:`check`).
"""

from robustce.solvers.smt.constraints import constraint_formulas
from robustce.solvers.smt.domain import DIFFER_RESOLUTION as DIFFER_RESOLUTION
from robustce.solvers.smt.domain import SMTInput
from robustce.solvers.smt.domain import _grid_kmax as _grid_kmax
from robustce.solvers.smt.network import interval_bounds, network_formula
from robustce.solvers.smt.network import l1_ball_bounds as l1_ball_bounds
from robustce.solvers.smt.oracle import SMTResult, check
from robustce.solvers.smt.terms import assert_all, fresh_context, rational
from robustce.solvers.smt.trees import _leaf_paths_all as _leaf_paths_all
from robustce.solvers.smt.trees import additive_formula as additive_formula
from robustce.solvers.smt.trees import forest_formula, tree_formula

__all__ = [
    "SMTInput",
    "SMTResult",
    "assert_all",
    "check",
    "constraint_formulas",
    "forest_formula",
    "fresh_context",
    "interval_bounds",
    "network_formula",
    "rational",
    "tree_formula",
]
