"""Global recourse summary (AReS, Rawal & Lakkaraju 2020; GLOBE-CE, Ley et al. 2023): a few
actions that together give recourse to the largest share of the declined applicants.

An *action* is a small set of raw-feature changes applied to everyone: ``increase f by a``,
``decrease f by a`` (numeric; clipped to the feature's bounds) or ``set f to v`` (levels).
Candidates come from the individual counterfactuals (quantiles 50/75/90 % of their numeric
changes, their three most frequent new levels), plus pairs of the best eight. An action
*covers* an applicant when it respects the applicant's actionability (immutable and
protected features are never in an action; increase-/decrease-only is checked per applicant)
and the **model, applied to the changed row, gives the favourable class** — coverage is
always checked by applying the action with the model. Greedy selection adds the action with
the largest gain in joint coverage (ties: lower mean cost) until ``max_actions`` or no gain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from robustce.data.schema import Actionability
from robustce.evaluation.metrics import raw_distance

__all__ = ["Action", "apply_action", "candidate_actions", "frame_from_columns",
           "global_actions"]


@dataclass(frozen=True)
class Action:
    """A tuple of atomic changes ``(feature, op, value)``, op in ``add`` / ``set``.

    Attributes
    ----------
    changes : the atomic changes ``(feature, op, value)``: ``add`` moves a numeric feature by
        ``value`` (clipped to its bounds), ``set`` gives a feature the level ``value``.
    Examples
    --------
    >>> from robustce.audits import Action
    >>> Action((("income", "add", 20000.0), ("housing", "set", "own"))).describe()
    'increase income by 20000 and set housing to own'
    >>> Action((("debt", "add", -5000.0),)).describe()
    'decrease debt by 5000'
    """

    changes: tuple[tuple[str, str, Any], ...]

    def describe(self) -> str:
        parts = []
        for f, op, v in self.changes:
            if op == "add":
                parts.append(f"{'increase' if v > 0 else 'decrease'} {f} by {abs(v):g}")
            else:
                parts.append(f"set {f} to {v}")
        return " and ".join(parts)


def frame_from_columns(sample: pd.DataFrame, prefix: str, schema: Any) -> pd.DataFrame:
    """The raw frame stored as ``<prefix><name>`` columns, with each level restored to the
    schema's own value (partition files keep levels as strings)."""
    out = {}
    for f in schema.features:
        col = sample[f"{prefix}{f.name}"]
        if f.kind.is_numeric:
            vals = col.to_numpy(dtype=float)
            out[f.name] = np.round(vals) if f.kind.value == "integer" else vals
        else:
            keys = [str(c) for c in f.categories]
            values = list(f.categories)
            for c in f.categories:  # a numeric level may have been stored as "1.0"
                if isinstance(c, int | float) and not isinstance(c, bool) and str(float(c)) not in keys:
                    keys.append(str(float(c)))
                    values.append(c)
            pos = pd.Index(keys).get_indexer(col.astype(object).where(col.notna(), None))
            raw = col.to_numpy(dtype=object)
            out[f.name] = np.where(pos >= 0, np.asarray(values + [None], dtype=object)[pos], raw)
    return pd.DataFrame(out, index=sample.index)


def apply_action(action: Action, X: pd.DataFrame, schema: Any) -> tuple[pd.DataFrame, np.ndarray]:
    """``X`` with the action applied, and per row whether it is allowed (actionability).

    Parameters
    ----------
    action : the :class:`Action` to apply.
    X : raw rows.
    schema : the :class:`~robustce.data.Schema` of ``X`` (bounds, levels, actionability).
    Examples
    --------
    >>> from robustce.audits import Action, apply_action
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> X = data.frame[data.schema.names].head(3)
    >>> new, allowed = apply_action(Action((("years_employed", "add", -2.0),)), X, data.schema)
    >>> X["years_employed"].tolist(), new["years_employed"].tolist()
    ([14, 2, 20], [12.0, 0.0, 18.0])
    >>> allowed  # years employed may only increase
    array([False, False, False])
    """
    new = X.copy()
    ok = np.ones(len(X), dtype=bool)
    for name, op, v in action.changes:
        f = schema[name]
        old = X[name]
        if op == "add":
            val = np.clip(old.to_numpy(dtype=float) + v, f.lower, f.upper)
            if f.kind.value == "integer":
                val = np.round(val)
            new[name] = val
            delta = val - old.to_numpy(dtype=float)
        else:
            new[name] = np.full(len(X), v, dtype=object)
            if f.kind.value == "ordinal":
                cats = list(f.categories)
                rank = {c: i for i, c in enumerate(cats)}
                delta = rank[v] - old.map(rank).to_numpy(dtype=float)
            else:
                delta = np.where(old.to_numpy() == v, 0.0, np.nan)
        if f.actionability is Actionability.INCREASE:
            ok &= ~(delta < 0)
        elif f.actionability is Actionability.DECREASE:
            ok &= ~(delta > 0)
    return new, ok


def candidate_actions(X: pd.DataFrame, CF: pd.DataFrame, found: np.ndarray, schema: Any
                      ) -> list[Action]:
    """Atomic actions read off the individual CEs (see the module docstring)."""
    out: list[Action] = []
    for f in schema.features:
        if f.immutable or f.protected:
            continue
        x, c = X.loc[found, f.name], CF.loc[found, f.name]
        if f.kind.is_numeric:
            d = c.to_numpy(dtype=float) - x.to_numpy(dtype=float)
            for sign in (1, -1):
                part = d[sign * d > 0]
                if len(part) == 0:
                    continue
                for q in (50, 75, 90):
                    a = float(np.percentile(np.abs(part), q))
                    a = float(np.ceil(a)) if f.kind.value == "integer" else float(f"{a:.4g}")
                    act = Action(((f.name, "add", sign * a),))
                    if a > 0 and act not in out:
                        out.append(act)
        else:
            changed = c[c.to_numpy() != x.to_numpy()]
            for v in changed.value_counts().index[:3]:
                out.append(Action(((f.name, "set", v),)))
    return out


def _coverage(model: Any, action: Action, X: pd.DataFrame, schema: Any, target: int
              ) -> tuple[np.ndarray, np.ndarray]:
    new, ok = apply_action(action, X, schema)
    covered = ok & (model.predict(new[schema.names]) == target)
    enc = model.encoder
    cost = raw_distance(enc, enc.transform(X[schema.names]), enc.transform(new[schema.names]))
    return covered, cost


def global_actions(model: Any, sample: pd.DataFrame, groups: Sequence[str], target: int, *,
                   max_actions: int = 5, pair_pool: int = 8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Greedy global actions on a sample of declined applicants.

    Parameters
    ----------
    model : the audited model.
    sample : declined applicants with ``x:``/``cf:`` columns, ``found`` and group columns.
    groups : group columns to break coverage and cost down by.
    target : the favourable class.
    max_actions : at most this many actions (≤ 5 by default).
    pair_pool : pairs of the ``pair_pool`` best single actions are also candidates.

    Returns
    -------
    (actions, by_group): per chosen action its coverage alone, the cumulative coverage and
    the mean cost over the applicants it covers; and the same per group level.

    Examples
    --------
    >>> import pandas as pd
    >>> from robustce.audits import global_actions
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> names = train.schema.names
    >>> cf = expl.counterfactuals.set_index("query_id").loc[declined.index, names]  # all found
    >>> sample = pd.concat([declined[names].add_prefix("x:"), cf.add_prefix("cf:")], axis=1)
    >>> sample["found"], sample["housing"] = True, declined["housing"]
    >>> actions, by_group = global_actions(model, sample, ["housing"], 1, max_actions=2)
    >>> actions[["action", "coverage", "cumulative_coverage"]].round(3)
                   action  coverage  cumulative_coverage
    0  set housing to own       1.0                  1.0
    """
    schema = model.encoder.schema
    if len(sample) == 0:
        return pd.DataFrame(), pd.DataFrame()
    X = frame_from_columns(sample, "x:", schema)
    CF = frame_from_columns(sample, "cf:", schema)
    found = sample["found"].to_numpy(dtype=bool)
    singles = candidate_actions(X, CF, found, schema)
    evaluated = {a: _coverage(model, a, X, schema, target) for a in singles}
    best = sorted(singles, key=lambda a: -evaluated[a][0].mean())[:pair_pool]
    for a, b in combinations(best, 2):
        if a.changes[0][0] != b.changes[0][0]:
            ab = Action(a.changes + b.changes)
            evaluated[ab] = _coverage(model, ab, X, schema, target)
    chosen: list[Action] = []
    covered = np.zeros(len(X), dtype=bool)
    for _ in range(max_actions):
        def gain(a: Action, covered: np.ndarray = covered) -> tuple[int, float]:
            cov, cost = evaluated[a]
            new = int((cov & ~covered).sum())
            return new, -float(cost[cov].mean()) if cov.any() else 0.0
        options = [a for a in evaluated if a not in chosen]
        if not options:
            break
        top = max(options, key=gain)
        if gain(top)[0] == 0:
            break
        chosen.append(top)
        covered |= evaluated[top][0]
    rows, by_group = [], []
    cum = np.zeros(len(X), dtype=bool)
    for rank, a in enumerate(chosen, 1):
        cov, cost = evaluated[a]
        cum |= cov
        rows.append({"rank": rank, "action": a.describe(), "coverage": cov.mean(),
                     "cumulative_coverage": cum.mean(),
                     "mean_cost": float(cost[cov].mean()) if cov.any() else np.nan,
                     "n_sample": len(X)})
        for g in groups:
            labels = sample[g].astype(str).to_numpy()
            for lv in np.unique(labels):
                sel = labels == lv
                c = cov & sel
                by_group.append({"rank": rank, "action": a.describe(), "group": g, "level": lv,
                                 "n": int(sel.sum()), "coverage": c.sum() / sel.sum(),
                                 "mean_cost": float(cost[c].mean()) if c.any() else np.nan})
    return pd.DataFrame(rows), pd.DataFrame(by_group)
