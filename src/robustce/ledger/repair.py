"""Repairs of broken promises: the nearest recourse under the new model, from the promised
row (what the applicant, having done what we said, must do now) and from the applicant's
original row. One explainer (a nearest-CE method, :class:`~robustce.methods.MILPNearest` by
default) is built once per check and honours the new model's schema (immutable,
increase-/decrease-only features); every repair is re-checked by a forward pass of the new
model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from robustce.ledger.promises import changed_features, plain

__all__ = ["Repairer"]


class Repairer:
    """Nearest recourse under ``model`` with the method ``method`` (a registry name), built
    once on ``data`` (None: methods that need no training data)."""

    def __init__(self, model: Any, method: str = "milp_nearest", data: Any = None,
                 params: Mapping[str, Any] | None = None, seed: int = 0):
        from robustce.methods.registry import build_explainer, get_method

        self.model = model
        self.method = get_method(method).name
        self.explainer = build_explainer(get_method(method), model, data, seed=seed,
                                         **dict(params or {}))

    def repair(self, starts: pd.DataFrame, targets: np.ndarray) -> list[dict[str, Any]]:
        """One repair per row of ``starts`` (raw rows) toward its class in ``targets``:
        ``status``, and where found ``row`` (the raw row to reach), ``changes`` (feature:
        [from, to]) and ``valid`` (the new model's forward pass)."""
        features = list(self.model.encoder.schema.names)
        starts = starts[features].reset_index(drop=True)
        targets = np.asarray(targets, dtype=np.int64)
        out: list[dict[str, Any]] = [{"status": "error"} for _ in range(len(starts))]
        for t in np.unique(targets):
            pos = np.flatnonzero(targets == t)
            expl = self.explainer.explain(starts.iloc[pos], target_class=int(t))
            first = expl.counterfactuals[expl.counterfactuals["cf_rank"] == 0]
            found = dict(zip(first["query_id"], first[features].to_dict("records"), strict=True))
            rows = [found.get(q) for q in expl.query_ids]
            have = [r for r in rows if r is not None]
            valid = (np.asarray(self.model.predict(pd.DataFrame(have, columns=features))) == t
                     if have else np.zeros(0, dtype=bool))
            k = 0
            for q, row in zip(expl.query_ids, rows, strict=True):
                entry: dict[str, Any] = {"status": str(expl.status.loc[q])}
                if row is not None:
                    start = starts.loc[q].to_dict()
                    row = {f: plain(v) for f, v in row.items()}
                    entry.update(row=row, valid=bool(valid[k]), changes={
                        f: [plain(start[f]), row[f]] for f in changed_features(start, row)})
                    k += 1
                out[int(q)] = entry
        return out
