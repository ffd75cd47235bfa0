"""Built-in datasets that need no download: synthetic loan data (the demo's default)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.schema import Feature, FeatureKind, Schema
from robustce.errors import ValidationError
from robustce.utils import check_random_state

__all__ = ["EDUCATION_LEVELS", "synthetic_loan"]

EDUCATION_LEVELS = ("none", "high_school", "bachelor", "master", "doctorate")
HOUSING = ("mortgage", "own", "rent")


def synthetic_loan(n_samples: int = 2000, random_state: int | np.random.Generator | None = 0
                   ) -> Dataset:
    """Synthetic loan applications with every feature kind.

    Generative process (all draws independent given the listed parents):

    * ``age`` ~ round(N(40, 12)) clipped to [18, 75] — integer, immutable;
    * ``education`` ~ Categorical(0.10, 0.35, 0.35, 0.15, 0.05) over
      none < high_school < bachelor < master < doctorate — ordinal, increase-only;
    * ``years_employed`` ~ round(U(0, 1) · min(age − 18, 40)) — integer, increase-only;
    * ``income`` = exp(9.9 + 0.18·edu + 0.012·years_employed + N(0, 0.35)), clipped to
      [8 000, 250 000] — continuous;
    * ``housing`` ∈ {rent (0.45), mortgage (0.35), own (0.20)} — categorical;
    * ``debt`` = income · Gamma(2, 0.15) (× 1.6 with a mortgage), clipped to [0, 150 000] —
      continuous;
    * ``has_guarantor`` ~ Bernoulli(0.3) — binary 0/1;
    * ``prior_default`` ∈ {"no", "yes"}, "yes" with probability 0.12 — binary, immutable.

    Label ``approved`` ~ Bernoulli(sigmoid(s)) with
    s = 2.2·(log income − 10.6) − 3.5·debt/income + 0.35·edu + 0.04·years_employed
    + 0.5·[own] − 0.3·[rent] + 0.8·has_guarantor − 2.0·[prior_default] + 0.01·(age − 40).
    """
    if int(n_samples) < 10:
        raise ValidationError(f"n_samples must be at least 10, got {n_samples}")
    n = int(n_samples)
    rng = check_random_state(random_state)
    age = np.clip(np.round(rng.normal(40, 12, n)), 18, 75).astype(np.int64)
    edu = rng.choice(5, size=n, p=[0.10, 0.35, 0.35, 0.15, 0.05])
    years = np.round(rng.uniform(0, 1, n) * np.minimum(age - 18, 40)).astype(np.int64)
    income = np.clip(np.exp(9.9 + 0.18 * edu + 0.012 * years + rng.normal(0, 0.35, n)),
                     8_000, 250_000)
    housing_idx = rng.choice([2, 0, 1], size=n, p=[0.45, 0.35, 0.20])
    debt = income * rng.gamma(2.0, 0.15, n) * np.where(housing_idx == 0, 1.6, 1.0)
    debt = np.clip(debt, 0, 150_000)
    guarantor = (rng.uniform(size=n) < 0.3).astype(np.int64)
    prior = rng.uniform(size=n) < 0.12
    score = (
        2.2 * (np.log(income) - 10.6)
        - 3.5 * debt / income
        + 0.35 * edu
        + 0.04 * years
        + 0.5 * (housing_idx == 1)
        - 0.3 * (housing_idx == 2)
        + 0.8 * guarantor
        - 2.0 * prior
        + 0.01 * (age - 40)
    )
    approved = (rng.uniform(size=n) < 1 / (1 + np.exp(-score))).astype(np.int64)
    frame = pd.DataFrame(
        {
            "age": age,
            "education": np.asarray(EDUCATION_LEVELS, dtype=object)[edu],
            "years_employed": years,
            "income": np.round(income, 2),
            "housing": np.asarray(HOUSING, dtype=object)[housing_idx],
            "debt": np.round(debt, 2),
            "has_guarantor": guarantor,
            "prior_default": np.where(prior, "yes", "no").astype(object),
        }
    )
    schema = Schema(
        [
            Feature("age", FeatureKind.INTEGER, 18, 75, actionability="immutable"),
            Feature("education", FeatureKind.ORDINAL, categories=EDUCATION_LEVELS,
                    actionability="increase"),
            Feature("years_employed", FeatureKind.INTEGER, 0, 57, actionability="increase"),
            Feature("income", FeatureKind.CONTINUOUS, 8_000, 250_000),
            Feature("housing", FeatureKind.CATEGORICAL, categories=HOUSING),
            Feature("debt", FeatureKind.CONTINUOUS, 0, 150_000),
            Feature("has_guarantor", FeatureKind.BINARY, categories=(0, 1)),
            Feature("prior_default", FeatureKind.BINARY, categories=("no", "yes"),
                    actionability="immutable"),
        ]
    ).with_dtypes(frame)
    target = pd.Series(approved, name="approved")
    return Dataset(frame, target, schema, name="synthetic_loan",
                   class_names=("rejected", "approved"),
                   description="Synthetic loan applications (built in, see the docstring).",
                   meta={"n_samples": n})
