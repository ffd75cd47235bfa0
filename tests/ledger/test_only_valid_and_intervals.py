"""Two promises of the ledger's own figures, pinned against independent evidence: a CE the
model does not accept is never recorded as a promise (a forward pass decides, not the
explainer's status), and every honour rate lies inside its own interval even when the
bootstrap replicates alone would leave it out (few replicates, small groups)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from robustce.ledger import Ledger
from robustce.ledger.rates import RateAccumulator


def test_a_ce_the_model_does_not_accept_is_not_recorded(tmp_path, v1, explanations):
    near = copy.deepcopy(explanations[0])  # the fixture is shared: plant into a copy
    found = near.counterfactuals
    assert len(found) >= 3
    # plant the applicant's own row (which v1 declines) as the first CE's target row
    first = found["query_id"].iloc[0]
    bad = near.queries.loc[[first], near.feature_names].to_numpy()
    assert v1.predict(near.queries.loc[[first], near.feature_names]).tolist() == [0]
    near.counterfactuals_encoded[0] = v1.encoder.transform(near.queries.loc[[first]])[0]
    near.counterfactuals.iloc[0, [near.counterfactuals.columns.get_loc(c)
                                  for c in near.feature_names]] = bad[0]
    book = Ledger(str(tmp_path / "l.sqlite3"))
    ids = book.record_explanations(v1, near)
    accepted = int((v1.predict(near.counterfactuals[near.feature_names]) == 1).sum())
    assert len(ids) == accepted == len(found) - 1
    recorded = [book.promise(i) for i in ids]
    assert all(v1.predict(pd.DataFrame([p["target_row"]]))[0] == 1 for p in recorded)


def test_every_honour_rate_lies_inside_its_interval():
    rng = np.random.default_rng(7)
    labels = np.repeat([f"g{i}" for i in range(40)], 3)  # 40 groups of 3 promises
    honoured = rng.random(len(labels)) < 0.5
    for n_boot in (2, 5, 10):
        acc = RateAccumulator(n_boot=n_boot, seed=3)
        acc.add({"group": labels}, honoured, 0)
        shown = 0
        for level, entry in acc.result("group").items():
            point = honoured[labels == level].mean()
            assert entry["honour_rate"] == point
            lo, hi = entry["ci"]
            if lo is None:  # no replicate drew any of the group's promises: no interval
                assert hi is None
                continue
            shown += 1
            assert lo <= point <= hi, (n_boot, level, entry)
        assert shown >= 30
