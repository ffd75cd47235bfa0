"""Principal reasons: each changed feature's exact share of the decision margin along the
path from the applicant ``x`` to the counterfactual ``x'``.

Let ``m(z)`` be the model's margin of the target class (> 0 iff it is predicted;
:func:`~robustce.models.network.class_margin`) and ``Δ = x' − x`` in model space. Along the
straight line ``z(s) = x + sΔ``, ``s ∈ [0, 1]``, the margin changes by
``m(x') − m(x) = Σ_j φ_j``, and ``φ_j`` is feature ``j``'s contribution:

* **ReLU networks** (``model.network()``): ``φ_j = ∫₀¹ ∂m/∂z_j(z(s)) Δ_j ds`` (the path
  integral of the margin's gradient). A ReLU network is piecewise linear, so the integral is a
  finite sum: the line is cut at every point where a neuron's pre-activation (or the order of
  the competing logits) changes sign — found layer by layer, exactly, since each layer is affine
  between the cuts of the layers before it — and on each piece ``[a, b]`` the gradient ``g`` is
  constant: ``φ_j = Σ_pieces g_j Δ_j (b − a)``. No sampling; ``Σ_j φ_j = m(x') − m(x)`` up to
  rounding.
* **Trees and forests** (``model.trees()``): the margin is piecewise constant along the line
  and jumps only where ``z_j(s)`` crosses a split threshold of feature ``j`` (the rows' leaf
  paths change there). Each jump is given to the feature whose threshold is crossed (split
  equally when several are crossed at the same ``s``): leaf-path attribution, again summing
  exactly to ``m(x') − m(x)``.

Encoded columns are summed per raw feature (a one-hot block is one feature). The reasons are
the raw features the CE changes, protected ones excluded, **ordered by** ``φ_j`` **descending**
(the largest share of the margin first; ties in schema order), at most four
(:data:`MAX_REASONS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from robustce.errors import ProtectedFeatureError, UnsupportedModelError
from robustce.models.network import class_margin

__all__ = ["MAX_REASONS", "Reason", "check_recourse_possible", "feature_contributions", "margin_change",
           "principal_reasons"]

MAX_REASONS = 4
_TOL = 1e-12


@dataclass(frozen=True)
class Reason:
    """One principal reason: the feature, its values before and after, and its share of the
    margin change (``contribution / Σ contributions``).

    Attributes
    ----------
    feature : the raw feature.
    current : its value now.
    required : its value in the counterfactual.
    contribution : its part ``φ_j`` of the change of the class margin (module docstring).
    share : ``contribution / Σ contributions``.
    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> pos, C = expl.first_counterfactuals()
    >>> reasons, _ = rc.notices.principal_reasons(model, expl.queries_encoded[pos[1]], C[1], 1)
    >>> r = reasons[0]
    >>> r.feature, r.current, round(r.required), round(r.share, 3)  # round: the CE's last digits vary by CPU
    ('income', 24323.95, 116236, 0.904)
    """

    feature: str
    current: Any
    required: Any
    contribution: float
    share: float


def check_recourse_possible(schema: Any) -> None:
    """Raise :class:`ProtectedFeatureError` when the only features not immutable would be
    protected ones (recourse would need a protected feature to change, and it never does).

    Parameters
    ----------
    schema : the :class:`~robustce.data.Schema` to check.

    Raises
    ------
    ProtectedFeatureError
        Naming the protected feature(s) when every other feature is immutable.

    Examples
    --------
    >>> from robustce.data.schema import Feature, Schema
    >>> rc.notices.check_recourse_possible(rc.datasets.load("synthetic_loan", n_samples=50).schema)
    >>> schema = Schema([Feature("age", "integer", 18, 75, actionability="immutable"),
    ...                  Feature("sex", "binary", categories=("F", "M"), actionability="protected")])
    >>> rc.notices.check_recourse_possible(schema)
    Traceback (most recent call last):
    ...
    robustce.errors.ProtectedFeatureError: protected feature(s) ['sex'] would be the only mutable ones ...
    """
    protected = list(schema.protected)
    if protected and all(f.immutable for f in schema.features):
        others = [f.name for f in schema.features if not f.protected]
        raise ProtectedFeatureError(
            f"protected feature(s) {protected} would be the only mutable ones (every other "
            f"feature, {others}, is immutable); protected features never change, so no "
            "recourse exists — make at least one other feature actionable")


def _segments(weights: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, dx: np.ndarray,
              target: int) -> np.ndarray:
    """Sorted knots in [0, 1] cutting the line x + sΔ into pieces on which the network's
    margin of ``target`` is affine."""
    knots = np.array([0.0, 1.0])
    for depth in range(len(weights)):
        Z = x[None, :] + knots[:, None] * dx[None, :]
        for i, (W, b) in enumerate(weights[: depth + 1]):
            Z = Z @ W.T + b
            if i < depth:
                Z = np.maximum(Z, 0.0)
        if depth == len(weights) - 1:  # logits: the competing class may change
            if Z.shape[1] == 1:
                continue
            others = np.delete(np.arange(Z.shape[1]), target)
            pairs = [(a, c) for ia, a in enumerate(others) for c in others[ia + 1:]]
            if not pairs:
                continue
            Z = np.stack([Z[:, a] - Z[:, c] for a, c in pairs], axis=1)
        z0, z1 = Z[:-1], Z[1:]
        cross = (z0 * z1) < 0
        if cross.any():
            seg, _ = np.nonzero(cross)
            frac = z0[cross] / (z0[cross] - z1[cross])
            new = knots[seg] + frac * (knots[seg + 1] - knots[seg])
            knots = np.unique(np.concatenate([knots, new]))
    return knots


def _network_contributions(net: Any, x: np.ndarray, xp: np.ndarray, target: int) -> np.ndarray:
    weights = net.weights
    dx = xp - x
    knots = _segments(weights, x, dx, target)
    mids = x[None, :] + ((knots[:-1] + knots[1:]) / 2)[:, None] * dx[None, :]
    masks = []
    h = mids
    for i, (W, b) in enumerate(weights):
        h = h @ W.T + b
        if i < len(weights) - 1:
            masks.append(h > 0)
            h = np.maximum(h, 0.0)
    k = h.shape[1]
    if k == 1:
        G = np.full((len(mids), 1), 1.0 if target == 1 else -1.0)
    else:
        other = h.copy()
        other[:, target] = -np.inf
        rival = other.argmax(axis=1)
        G = np.zeros((len(mids), k))
        G[:, target] = 1.0
        G[np.arange(len(mids)), rival] -= 1.0
    for i in range(len(weights) - 1, -1, -1):
        G = G @ weights[i][0]
        if i > 0:
            G = G * masks[i - 1]
    lengths = np.diff(knots)
    return (G * lengths[:, None]).sum(axis=0) * dx


def _tree_contributions(model: Any, x: np.ndarray, xp: np.ndarray, target: int) -> np.ndarray:
    dx = xp - x
    cols, thr = [], []
    for t in model.trees():
        internal = np.asarray(t.left) >= 0
        cols.append(np.asarray(t.feature)[internal])
        thr.append(np.asarray(t.threshold, dtype=np.float64)[internal])
    col = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    th = np.concatenate(thr) if thr else np.zeros(0)
    moving = np.abs(dx[col]) > _TOL
    col, th = col[moving], th[moving]
    s = (th - x[col]) / dx[col]
    keep = (s >= 0) & (s <= 1)
    col, s = col[keep], s[keep]
    knots = np.unique(np.concatenate([[0.0, 1.0], s]))
    mids = (knots[:-1] + knots[1:]) / 2
    # evaluation points alternate knot, midpoint, knot, ...: each step spans one knot
    pts = np.empty(2 * len(knots) - 1)
    pts[0::2], pts[1::2] = knots, mids
    m = model.margin(x[None, :] + pts[:, None] * dx[None, :], target)
    steps = np.diff(m)
    phi = np.zeros(len(x))
    for i, jump in enumerate(steps):
        if jump == 0:
            continue
        knot = pts[i] if i % 2 == 0 else pts[i + 1]
        at = np.unique(col[s == knot])
        if len(at) == 0:  # a jump with no threshold: give it to every moving column
            at = np.flatnonzero(np.abs(dx) > _TOL)
        phi[at] += jump / len(at)
    return phi


def feature_contributions(model: Any, x: np.ndarray, x_cf: np.ndarray, target_class: int
                          ) -> np.ndarray:
    """Per encoded column ``j``, ``φ_j`` (see the module docstring); ``Σ φ = m(x') − m(x)``.

    Parameters
    ----------
    model : a fitted robustce model with ``network()`` (ReLU network) or ``trees()``.
    x, x_cf : model-space rows (the applicant and its counterfactual).
    target_class : the class the counterfactual reaches.

    Returns
    -------
    ndarray of shape (d,).

    Raises
    ------
    UnsupportedModelError
        For a model with neither a ReLU-network view nor trees.

    Examples
    --------
    >>> import numpy as np
    >>> from robustce.notices.reasons import margin_change
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> pos, C = expl.first_counterfactuals()
    >>> x, c = expl.queries_encoded[pos[1]], C[1]
    >>> phi = rc.notices.feature_contributions(model, x, c, 1)
    >>> phi.shape, bool(np.all(phi[c == x] == 0))  # columns the CE leaves alone get 0
    ((13,), True)
    >>> bool(np.isclose(phi.sum(), margin_change(model, x, c, 1)))  # Σ φ = m(x') − m(x)
    True
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    xp = np.asarray(x_cf, dtype=np.float64).ravel()
    try:
        net = model.network()
    except UnsupportedModelError:
        net = None
    if net is not None:
        return _network_contributions(net, x, xp, int(target_class))
    if callable(getattr(model, "trees", None)):
        return _tree_contributions(model, x, xp, int(target_class))
    raise UnsupportedModelError(
        f"{type(model).__name__} has neither a ReLU-network view nor trees; principal reasons "
        "need one of them (exact path attribution)")


def principal_reasons(model: Any, x: np.ndarray, x_cf: np.ndarray, target_class: int, *,
                      max_reasons: int = MAX_REASONS) -> tuple[list[Reason], dict[str, float]]:
    """The changed, unprotected raw features of ``x → x_cf``, by contribution descending.

    Parameters
    ----------
    model : fitted robustce model (its ``encoder`` maps raw ↔ model space).
    x, x_cf : model-space rows.
    target_class : the class ``x_cf`` reaches.
    max_reasons : at most this many reasons (regulators expect up to four).

    Returns
    -------
    (reasons, contributions) — the first ``max_reasons`` reasons, and every raw feature's
    contribution ``φ`` (protected ones included: they are 0, as they never change).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> pos, C = expl.first_counterfactuals()
    >>> reasons, per_feature = rc.notices.principal_reasons(model, expl.queries_encoded[pos[1]],
    ...                                                     C[1], target_class=1)
    >>> [(r.feature, round(r.share, 3)) for r in reasons]  # most weight first
    [('income', 0.904), ('debt', 0.096)]
    >>> sorted(f for f, phi in per_feature.items() if phi != 0)
    ['debt', 'income']
    """
    enc = model.encoder
    phi = feature_contributions(model, x, x_cf, target_class)
    dx = np.asarray(x_cf, dtype=np.float64).ravel() - np.asarray(x, dtype=np.float64).ravel()
    schema = enc.schema
    raw_x = enc.inverse_transform(np.atleast_2d(x)).iloc[0]
    raw_cf = enc.inverse_transform(np.atleast_2d(x_cf)).iloc[0]
    per_feature: dict[str, float] = {}
    changed: list[tuple[float, int, str]] = []
    for order, blk in enumerate(enc.blocks_):
        per_feature[blk.name] = float(phi[blk.slice].sum())
        if np.any(np.abs(dx[blk.slice]) > 1e-9) and not schema[blk.name].protected:
            changed.append((-per_feature[blk.name], order, blk.name))
    total = float(np.sum(phi))
    reasons = [Reason(name, _plain(raw_x[name]), _plain(raw_cf[name]), -neg,
                      (-neg / total) if total else float("nan"))
               for neg, _, name in sorted(changed)[:max_reasons]]
    return reasons, per_feature


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def margin_change(model: Any, x: np.ndarray, x_cf: np.ndarray, target_class: int) -> float:
    """``m(x') − m(x)`` computed by two forward passes (what the contributions sum to)."""
    z = model.logits(np.vstack([x, x_cf]))
    m = class_margin(z, int(target_class))
    return float(m[1] - m[0])
