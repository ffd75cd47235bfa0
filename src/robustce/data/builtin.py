"""Built-in datasets that need no download: synthetic loan data (the demo's default), 2-D toy
sets (``moons``, ``circles``, ``blobs``), the RoCourseNet appendix's simulated data shifts
(``covariate_shift``, ``label_shift``) and scikit-learn's bundled tables (``breast_cancer``,
``iris``, ``wine``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.schema import Feature, FeatureKind, Schema, infer_schema
from robustce.errors import ValidationError
from robustce.utils import check_random_state

__all__ = [
    "EDUCATION_LEVELS",
    "LOAN_CAUSAL",
    "LOAN_CONSTRAINTS",
    "blobs",
    "breast_cancer",
    "circles",
    "covariate_shift",
    "iris",
    "label_shift",
    "moons",
    "synthetic_loan",
    "wine",
]

EDUCATION_LEVELS = ("none", "high_school", "bachelor", "master", "doctorate")
HOUSING = ("mortgage", "own", "rent")
#: the relations every ``synthetic_loan`` row satisfies (``Dataset.meta["constraints"]``; give
#: them to an explainer as ``constraints=data.meta["constraints"]``, docs/constraints.md):
#: nobody starts work before 16 (the generator draws years_employed <= age − 18), and total
#: debt stays within one year's income (the generator caps it there)
LOAN_CONSTRAINTS = {"relations": ["years_employed <= age - 16", "debt <= income"],
                    "max_changes": None}
#: a small causal graph for MINT-style recourse (``Dataset.meta["causal"]``; give it as
#: ``Constraints(..., causal=data.meta["causal"])``): education → income. The generator's
#: effect is multiplicative (income ∝ exp(0.18 · level)); 5 500 per level is its linear
#: approximation at the median income of the default data (30 800 · 0.18 ≈ 5 500)
LOAN_CAUSAL = {"income": {"education": 5500.0}}


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
    * ``debt`` = min(clip(income · Gamma(2, 0.15) (× 1.6 with a mortgage), 0, 150 000),
      income) — continuous: lenders cap total debt at one year's income, so every row
      satisfies the shipped relation ``debt <= income`` (about 3 % of rows sit on the cap;
      the label below sees the capped debt);
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
    debt = np.minimum(np.clip(debt, 0, 150_000), income)  # the cap at one income
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
            "debt": np.round(debt, 2),  # rounding is monotone: still <= the rounded income
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
                   meta={"n_samples": n, "constraints": {
                       "relations": list(LOAN_CONSTRAINTS["relations"]), "max_changes": None},
                       "causal": {c: dict(ps) for c, ps in LOAN_CAUSAL.items()}},
                   favourable=1)


# ----------------------------------------------------------------------------------------
# 2-D toy sets
# ----------------------------------------------------------------------------------------


def _sklearn_seed(random_state: int | np.random.Generator | None) -> int:
    """An int seed for scikit-learn generators (ints pass through unchanged)."""
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).integers(2**31 - 1))


def _check_toy(n_samples: int, noise: float) -> int:
    if int(n_samples) < 4:
        raise ValidationError(f"n_samples must be at least 4, got {n_samples}")
    if not np.isfinite(noise) or noise < 0:
        raise ValidationError(f"noise must be a finite number >= 0, got {noise}")
    return int(n_samples)


def _toy(name: str, X: np.ndarray, y: np.ndarray, description: str, meta: dict) -> Dataset:
    frame = pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1]})
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.1 * np.maximum(hi - lo, 1e-9)
    schema = Schema(
        Feature(c, FeatureKind.CONTINUOUS, float(lo[i] - pad[i]), float(hi[i] + pad[i]))
        for i, c in enumerate(frame.columns)
    ).with_dtypes(frame)
    target = pd.Series(np.asarray(y, dtype=np.int64), name="target")
    classes = tuple(range(int(target.max()) + 1))
    return Dataset(frame, target, schema, name=name, class_names=classes,
                   description=description, meta=meta,
                   favourable=1 if len(classes) == 2 else None)  # the papers' class 1


_TOY_NOTE = ("Features x1, x2 continuous; bounds = observed range padded by 10% on each side "
             "(room for counterfactuals).")


def moons(n_samples: int = 500, noise: float = 0.2,
          random_state: int | np.random.Generator | None = 0) -> Dataset:
    """Two interleaving half circles (``sklearn.datasets.make_moons``). Class 1 = lower moon."""
    from sklearn.datasets import make_moons

    n = _check_toy(n_samples, noise)
    X, y = make_moons(n_samples=n, noise=float(noise), random_state=_sklearn_seed(random_state))
    return _toy("moons", X, y, f"2-D two moons (built in). {_TOY_NOTE}",
                {"n_samples": n, "noise": float(noise)})


def circles(n_samples: int = 500, noise: float = 0.1, factor: float = 0.5,
            random_state: int | np.random.Generator | None = 0) -> Dataset:
    """A small circle inside a large one (``make_circles``). Class 1 = inner circle."""
    from sklearn.datasets import make_circles

    n = _check_toy(n_samples, noise)
    if not 0 < factor < 1:
        raise ValidationError(f"factor must be in (0, 1), got {factor}")
    X, y = make_circles(n_samples=n, noise=float(noise), factor=float(factor),
                        random_state=_sklearn_seed(random_state))
    return _toy("circles", X, y, f"2-D concentric circles (built in); class 1 = inner. "
                f"{_TOY_NOTE}", {"n_samples": n, "noise": float(noise), "factor": factor})


def blobs(n_samples: int = 500, noise: float = 1.0, centers: int = 2,
          random_state: int | np.random.Generator | None = 0) -> Dataset:
    """Gaussian blobs (``make_blobs``); ``noise`` is the clusters' standard deviation and
    ``centers`` the number of classes (2 = binary)."""
    from sklearn.datasets import make_blobs

    n = _check_toy(n_samples, noise)
    if int(centers) < 2:
        raise ValidationError(f"centers must be at least 2, got {centers}")
    X, y = make_blobs(n_samples=n, centers=int(centers), n_features=2,
                      cluster_std=float(noise), random_state=_sklearn_seed(random_state))
    return _toy("blobs", X, y, f"2-D Gaussian blobs, {int(centers)} classes (built in). "
                f"{_TOY_NOTE}", {"n_samples": n, "noise": float(noise), "centers": int(centers)})


# ----------------------------------------------------------------------------------------
# simulated data shifts (RoCourseNet, Upadhyay-style appendix experiments)
# ----------------------------------------------------------------------------------------


def _two_parts(name: str, parts: dict[str, tuple[np.ndarray, np.ndarray]], description: str,
               meta: dict) -> Dataset:
    """One 2-D dataset whose ``groups`` name the parts (``"D1"``, ``"D2"``); bounds are the
    observed range over all parts, padded by 10 % (room for counterfactuals)."""
    X = np.concatenate([x for x, _ in parts.values()])
    y = np.concatenate([t for _, t in parts.values()])
    groups = np.concatenate([[g] * len(t) for g, (_, t) in parts.items()])
    data = _toy(name, X, y, description, meta)
    return dataclasses.replace(data, groups=pd.Series(groups, index=data.frame.index,
                                                      name="part"))


def covariate_shift(n_samples: int = 1000,
                    random_state: int | np.random.Generator | None = 0) -> Dataset:
    """Two parts with the same p(y | x) but different p(x) (RoCourseNet, appendix B).

    x1 ~ N(μ₁, σ₁), x2 ~ N(μ₂, σ₂) independent, y = 1[x1³ − x2 + N(−0.1, 0.1) > 0], with
    (μ₁, σ₁, μ₂, σ₂) = (0.5, 0.5, 0, 0.3) in part ``"D1"`` and (0, 0.3, 0.5, 0.5) in ``"D2"``;
    ``n_samples`` rows per part (the paper: 1000). ``groups`` holds the part.
    """
    n = _check_toy(n_samples, 0.0)
    rng = check_random_state(random_state)
    parts = {}
    for part, (mu1, sd1, mu2, sd2) in (("D1", (0.5, 0.5, 0.0, 0.3)),
                                         ("D2", (0.0, 0.3, 0.5, 0.5))):
        x1, x2 = rng.normal(mu1, sd1, n), rng.normal(mu2, sd2, n)
        y = (x1 ** 3 - x2 + rng.normal(-0.1, 0.1, n) > 0).astype(np.int64)
        parts[part] = (np.column_stack([x1, x2]), y)
    return _two_parts("covariate_shift", parts,
                      "Simulated covariate shift, parts D1 and D2 (built in, RoCourseNet "
                      f"appendix B). {_TOY_NOTE}", {"n_samples": n})


def label_shift(n_samples: int = 1000, p: tuple[float, float] = (0.6, 0.3),
                random_state: int | np.random.Generator | None = 0) -> Dataset:
    """Two parts with the same p(x | y) but different p(y) (RoCourseNet, appendix B).

    y ~ Bernoulli(p), z = 2y − 1 + N(0.1, 0.1), x1 = z³ − z + N(0, 0.3),
    x2 = z³ + z − 3y + N(0, 0.3), with p = ``p[0]`` in part ``"D1"`` and ``p[1]`` in ``"D2"``
    (the paper: 0.6 and 0.3); ``n_samples`` rows per part. ``groups`` holds the part.
    """
    n = _check_toy(n_samples, 0.0)
    if len(p) != 2 or not all(0 < float(q) < 1 for q in p):
        raise ValidationError(f"p must be two probabilities in (0, 1), got {p!r}")
    rng = check_random_state(random_state)
    parts = {}
    for part, q in zip(("D1", "D2"), p, strict=True):
        y = (rng.uniform(size=n) < float(q)).astype(np.int64)
        z = 2 * y - 1 + rng.normal(0.1, 0.1, n)
        x1 = z ** 3 - z + rng.normal(0, 0.3, n)
        x2 = z ** 3 + z - 3 * y + rng.normal(0, 0.3, n)
        parts[part] = (np.column_stack([x1, x2]), y)
    return _two_parts("label_shift", parts,
                      "Simulated label shift, parts D1 and D2 (built in, RoCourseNet appendix "
                      f"B). {_TOY_NOTE}", {"n_samples": n, "p": tuple(float(q) for q in p)})


# ----------------------------------------------------------------------------------------
# scikit-learn's bundled tables
# ----------------------------------------------------------------------------------------


def _sklearn_table(name: str, bunch, description: str, favourable: int | None = None
                   ) -> Dataset:
    """A Dataset from a scikit-learn ``as_frame`` bunch; every feature is continuous."""
    frame = bunch.data.reset_index(drop=True)
    frame.columns = [str(c) for c in frame.columns]
    target = pd.Series(np.asarray(bunch.target, dtype=np.int64), name="target")
    schema = infer_schema(frame, kinds=dict.fromkeys(frame.columns, "continuous")).with_dtypes(frame)
    return Dataset(frame, target, schema, name=name,
                   class_names=tuple(str(c) for c in bunch.target_names),
                   description=description, favourable=favourable)


def breast_cancer() -> Dataset:
    """Wisconsin diagnostic breast cancer (569 rows, 30 continuous features).
    Class 1 = benign, class 0 = malignant (scikit-learn's coding)."""
    from sklearn.datasets import load_breast_cancer

    return _sklearn_table(
        "breast_cancer", load_breast_cancer(as_frame=True),
        "Wisconsin diagnostic breast cancer (scikit-learn, 569 rows, 30 continuous "
        "features). Class 1 = benign (favourable), class 0 = malignant.", favourable=1)


def iris() -> Dataset:
    """Fisher's iris (150 rows, 4 continuous features, 3 classes)."""
    from sklearn.datasets import load_iris

    return _sklearn_table(
        "iris", load_iris(as_frame=True),
        "Fisher's iris (scikit-learn, 150 rows, 4 continuous features). Multi-class: "
        "0 = setosa, 1 = versicolor, 2 = virginica.")


def wine() -> Dataset:
    """UCI wine recognition (178 rows, 13 numeric features, 3 cultivars)."""
    from sklearn.datasets import load_wine

    return _sklearn_table(
        "wine", load_wine(as_frame=True),
        "UCI wine recognition (scikit-learn, 178 rows, 13 numeric features). Multi-class: "
        "classes 0, 1, 2 = the three cultivars.")
