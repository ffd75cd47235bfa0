"""Why PROPLACE's ℓ1 and coverage on ADULT differ from the paper's: the feature domain.

robustce keeps ADULT's binary features 0/1 and its five immutable features (age, marital
status, race, sex, native country) fixed, so PROPLACE's hull can only mix the query with robust
neighbours that share those values and never splits a binary. The authors' MILP treats every
column as continuous in [0, 1] and (as far as their code shows) fixes nothing. This script runs
PROPLACE (δ = 0.035, k = 20, the Table 1 network, D1 of seed 0) on the first ``n`` rejected test
rows under three domains built from the *same* model-space data (binaries 0/1 and min-max
scaled integers give identical columns, so the trained network is the same):

* ``typed`` — robustce's ADULT (the ``proplace-table1`` rows);
* ``relaxed`` — every feature continuous, immutables kept;
* ``relaxed_free`` — every feature continuous and free.

and prints coverage, ℓ1 = model-space L1 / d, and the share of CEs with a fractional binary.

    ROBUSTCE_DATA=../shared/datasets python benchmarks/proplace_adult_types.py [--n 50]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

import robustce as rc
from robustce.evaluation.runner import as_continuous
from robustce.methods import PROPLACE
from robustce.models.families import split_halves


def domains() -> dict[str, Any]:
    """ADULT three ways: typed (the loader's), relaxed (all continuous), relaxed and free."""
    data = rc.datasets.load("adult")
    relaxed = as_continuous(data)
    return {"typed": data, "relaxed": relaxed, "relaxed_free": relaxed.all_free()}


def run(n: int = 50, seed: int = 0) -> list[dict[str, Any]]:
    all_domains = domains()
    binary = [i for i, f in enumerate(all_domains["typed"].schema.features) if f.kind == "binary"]
    rows = []
    for label, data in all_domains.items():
        train, test = data.split(test_size=0.2, random_state=seed)
        d1, _ = split_halves(train, random_state=seed)
        model = rc.models.MLP((10, 10), epochs=20, batch_size=32, lr=0.01, weight_decay=2e-4,
                              random_state=seed).fit(d1)
        X = model.encoder.transform(test.frame)
        queries = test.frame.iloc[np.flatnonzero(model.predict(X) == 0)[:n]]
        t0 = time.perf_counter()
        res = PROPLACE(model, train, shift=0.035, k=20, time_limit=60.0).explain(queries)
        seconds = time.perf_counter() - t0
        C = res.counterfactuals_encoded
        Q = model.encoder.transform(queries.loc[res.counterfactuals["query_id"].to_numpy()])
        fractional = (C[:, binary] > 1e-6) & (C[:, binary] < 1 - 1e-6)
        rows.append({"domain": label, "queries": len(queries),
                     "coverage": float((res.status == "found").mean()),
                     "l1_mean": float(np.abs(C - Q).sum(axis=1).mean() / C.shape[1]) if len(C) else np.nan,
                     "fractional_binary_share": float(fractional.any(axis=1).mean()) if len(C) else np.nan,
                     "statuses": res.status.value_counts().to_dict(), "seconds": seconds})
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="rejected test rows explained")
    print(pd.DataFrame(run(ap.parse_args().n)).to_string(index=False))
