"""The walk of ``docs/own_data.md``: a CSV of loan decisions (``approved`` / ``rejected``, an
immutable ``age``) -> ``rc.datasets.from_frame`` -> model -> robust CEs for the rejected
applicants, toward approval.

``python docs/examples/own_data_loans.py my_loans.csv`` writes the CSV (if it is not there)
and runs the walk on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

import robustce as rc


def make_loans(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """Loan decisions that depend on income, debt and education (not on age)."""
    rng = np.random.default_rng(seed)
    income = rng.normal(42_000, 12_000, n).clip(12_000, 120_000).round(2)
    debt = rng.gamma(2.0, 4_000, n).round(2)
    education = rng.choice(["high_school", "bachelor", "master"], n, p=[0.5, 0.35, 0.15])
    score = ((income - 40_000) / 10_000 - debt / 8_000 + (education != "high_school") * 0.8
             + rng.normal(0, 0.5, n))
    return pd.DataFrame({"age": rng.integers(21, 70, n), "income": income, "debt": debt,
                         "education": education,
                         "decision": np.where(score > 0, "approved", "rejected")})


def main(path: str = "my_loans.csv") -> rc.Explanations:
    if not Path(path).exists():
        make_loans().to_csv(path, index=False)
    df = pd.read_csv(path)
    data = rc.datasets.from_frame(
        df, "decision",
        ordinal={"education": ["high_school", "bachelor", "master"]},  # ordered levels
        bounds={"income": (10_000, 120_000), "debt": (0, 60_000)},     # declared domains
        immutable=["age"], increasing=["education"],
        favourable="approved",  # read from the labels anyway; say it where labels are unclear
    )
    print(data.class_mapping())
    print(data.schema.describe().to_string(index=False))

    train, test = data.split(test_size=0.2, random_state=0)
    model = rc.models.MLP(hidden_layers=(16, 8), epochs=100, random_state=0).fit(train)
    rejected = test.frame[model.predict(test.frame) == data.class_index("rejected")].head(3)
    shift = rc.robustness.ParameterShift(delta=0.02)
    result = rc.methods.MILPRobust(model, train, shift=shift,
                                   target_class="approved").explain(rejected)
    for query_id in rejected.index:
        result.show(query_id)
    print(rc.robustness.is_delta_robust(model, result, shift,
                                        target_class=data.class_index("approved")))
    return result


if __name__ == "__main__":  # pragma: no cover
    main(*sys.argv[1:2])
