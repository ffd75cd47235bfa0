"""German credit: Statlog (original, corrected, raw symbolic) and the APΔS authors' credit
data and shift data (Statlog recoded into the South German codes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _codes, _finish, _kinds, _levels, _read
from robustce.data.schema import Schema, infer_schema
from robustce.errors import DatasetUnavailableError

GERMAN_COLUMNS = (
    "status", "duration", "credit_history", "purpose", "amount", "savings",
    "employment_duration", "installment_rate", "personal_status_sex", "other_debtors",
    "present_residence", "property", "age", "other_installment_plans", "housing",
    "number_credits", "job", "people_liable", "telephone", "foreign_worker",
)
_GERMAN_KINDS = _kinds(
    categorical=["status", "credit_history", "purpose", "savings", "personal_status_sex",
                 "other_debtors", "property", "other_installment_plans", "housing"],
    ordinal=["employment_duration", "installment_rate", "present_residence",
             "number_credits", "job"],
    binary=["people_liable", "telephone", "foreign_worker"],
    integer=["duration", "amount", "age"],
)
# Grömping's code sets (UCI South German Credit); observed extra codes are added.
_GERMAN_CODES = {
    "status": range(1, 5), "credit_history": range(0, 5), "purpose": range(0, 11),
    "savings": range(1, 6), "employment_duration": range(1, 6),
    "installment_rate": range(1, 5), "personal_status_sex": range(1, 5),
    "other_debtors": range(1, 4), "present_residence": range(1, 5), "property": range(1, 5),
    "other_installment_plans": range(1, 4), "housing": range(1, 4),
    "number_credits": range(1, 5), "job": range(1, 5), "people_liable": (1, 2),
    "telephone": (1, 2), "foreign_worker": (1, 2),
}
_GERMAN_IMMUTABLE = ["age", "personal_status_sex", "foreign_worker"]


def _german_schema(X: pd.DataFrame) -> Schema:
    levels = {c: _levels(X[c], _GERMAN_CODES[c]) for c in _GERMAN_CODES}
    ordinal = {c: v for c, v in levels.items() if _GERMAN_KINDS[c] == "ordinal"}
    cats = {c: v for c, v in levels.items() if _GERMAN_KINDS[c] != "ordinal"}
    return infer_schema(X, kinds=_GERMAN_KINDS, ordinal=ordinal, categories=cats,
                        immutable=_GERMAN_IMMUTABLE)


def _german(name: str, relpath: str, description: str, data_home: PathLike) -> Dataset:
    df = _read(relpath, data_home)
    X = df[list(GERMAN_COLUMNS)]
    return _finish(name, X, _codes(df["credit_risk"], (0, 1)), _german_schema(X),
                   ("bad", "good"), description,
                   meta={"files": [relpath], "target": "credit_risk"})


GERMAN_DESCRIPTION = (
    "Statlog German credit, original (uncorrected) version as in ROAR (1 000 rows, 20 "
    "features as integer codes). Class 1 = good credit, class 0 = bad. Immutable: age, "
    "personal_status_sex, foreign_worker."
)
GERMAN_CORRECTED_DESCRIPTION = (
    "South German Credit (Groemping 2019 correction; ROAR's 'correction shift'), 1 000 rows, "
    "20 features as integer codes. Class 1 = good credit, class 0 = bad. Immutable: age, "
    "personal_status_sex, foreign_worker."
)
GERMAN_RAW_DESCRIPTION = (
    "UCI Statlog german.data in its raw symbolic form (1 000 rows; codes A11..A202 as "
    "categoricals, 7 numeric attributes). Class 1 = good (raw label 1), class 0 = bad "
    "(raw label 2). Immutable: age, personal_status_sex, foreign_worker."
)


def load_german(data_home: PathLike = None) -> Dataset:
    """Statlog German credit (original), 1 000 rows. Class 1 = good credit."""
    return _german("german", "german_credit/german.csv", GERMAN_DESCRIPTION, data_home)


def load_german_corrected(data_home: PathLike = None) -> Dataset:
    """South German Credit (corrected), 1 000 rows. Class 1 = good credit."""
    return _german("german_corrected", "german_credit/corrected_german.csv",
                   GERMAN_CORRECTED_DESCRIPTION, data_home)


def load_german_raw(data_home: PathLike = None) -> Dataset:
    """UCI ``german.data`` (space-separated, no header), 1 000 rows. Class 1 = good."""
    relpath = "german_credit/german.data"
    df = _read(relpath, data_home, sep=" ", header=None,
               names=[*GERMAN_COLUMNS, "credit_risk"])
    X = df[list(GERMAN_COLUMNS)]
    numeric = ["duration", "amount", "installment_rate", "present_residence", "age",
               "number_credits", "people_liable"]
    kinds = {c: ("integer" if c in numeric else "categorical") for c in GERMAN_COLUMNS}
    schema = infer_schema(X, kinds=kinds, immutable=_GERMAN_IMMUTABLE)
    return _finish("german_raw", X, _codes(df["credit_risk"], (2, 1)), schema,
                   ("bad", "good"), GERMAN_RAW_DESCRIPTION,
                   meta={"files": [relpath], "target": "credit_risk"})


# --- the APΔS authors' German credit (Marzari et al. 2024, exp_sec7/credit.ipynb) -----------
# Statlog's symbolic codes -> the South German codes of corrected_german.csv (Groemping 2019),
# as the authors' utilcredit.py maps them; Statlog's numeric codes (installment_rate,
# present_residence, number_credits, people_liable) are already South German codes. Note A92
# and A93 (female / male, divorced or separated) both become 2, as in the authors' map.
_STATLOG_TO_SOUTH_GERMAN = {
    "status": {"A14": 1, "A11": 2, "A12": 3, "A13": 4},
    "credit_history": {"A33": 0, "A34": 1, "A30": 2, "A32": 3, "A31": 4},
    "purpose": {"A410": 0, "A40": 1, "A41": 2, "A42": 3, "A43": 4, "A44": 5, "A45": 6,
                "A46": 7, "A47": 8, "A48": 9, "A49": 10},
    "savings": {"A65": 1, "A61": 2, "A62": 3, "A63": 4, "A64": 5},
    "employment_duration": {"A71": 1, "A72": 2, "A73": 3, "A74": 4, "A75": 5},
    "personal_status_sex": {"A91": 1, "A92": 2, "A93": 2, "A94": 3, "A95": 4},
    "other_debtors": {"A101": 1, "A102": 2, "A103": 3},
    "property": {"A124": 1, "A123": 2, "A122": 3, "A121": 4},
    "other_installment_plans": {"A141": 1, "A142": 2, "A143": 3},
    "housing": {"A153": 1, "A151": 2, "A152": 3},
    "job": {"A171": 1, "A172": 2, "A173": 3, "A174": 4},
    "telephone": {"A191": 1, "A192": 2},
    "foreign_worker": {"A201": 1, "A202": 2},
}
# the authors' feature types: ordinal (thermometer), discrete (one-hot), continuous (min-max)
_APAS_CREDIT_ORDINAL = {"status": range(1, 5), "savings": range(1, 6),
                        "employment_duration": range(1, 6), "installment_rate": range(1, 5),
                        "other_debtors": range(1, 4), "present_residence": range(1, 5),
                        "property": range(1, 5), "housing": range(1, 4),
                        "number_credits": range(1, 5), "job": range(1, 5),
                        "people_liable": range(1, 3)}
_APAS_CREDIT_DISCRETE = {"credit_history": range(0, 5), "purpose": range(0, 11),
                         "personal_status_sex": range(1, 5),
                         "other_installment_plans": range(1, 4), "telephone": range(1, 3),
                         "foreign_worker": range(1, 3)}
_APAS_CREDIT_D2_ROWS = "apas_credit_d2_rows.json"


def _apas_credit_schema(X: pd.DataFrame) -> Schema:
    kinds = _kinds(ordinal=_APAS_CREDIT_ORDINAL, categorical=_APAS_CREDIT_DISCRETE,
                   continuous=["duration", "amount", "age"])
    return infer_schema(X, kinds=kinds, ordinal={c: tuple(v) for c, v in _APAS_CREDIT_ORDINAL.items()},
                        categories={c: tuple(v) for c, v in _APAS_CREDIT_DISCRETE.items()})


def load_apas_credit(data_home: PathLike = None) -> Dataset:
    """Statlog German credit (``german.data``) in the South German codes, typed as the APΔS
    authors type it (their "credit": the model's data). Class 1 = good credit."""
    relpath = "german_credit/german.data"
    df = _read(relpath, data_home, sep=" ", header=None, names=[*GERMAN_COLUMNS, "credit_risk"])
    X = df[list(GERMAN_COLUMNS)].copy()
    for col, codes in _STATLOG_TO_SOUTH_GERMAN.items():
        unknown = sorted(set(X[col]) - set(codes))
        if unknown:
            raise DatasetUnavailableError(f"{relpath}: column {col!r} has codes {unknown} that "
                                          "Statlog's documentation does not define")
        X[col] = X[col].map(codes).astype(np.int64)
    X[["duration", "amount", "age"]] = X[["duration", "amount", "age"]].astype(float)
    return _finish("apas_credit", X, _codes(df["credit_risk"], (2, 1)), _apas_credit_schema(X),
                   ("bad", "good"), APAS_CREDIT_DESCRIPTION,
                   meta={"files": [relpath], "target": "credit_risk"})


def load_apas_credit_shift(data_home: PathLike = None, *, authors_alignment: bool = False) -> Dataset:
    """The APΔS authors' shift data: their 800 rows of South German credit (Kaggle's training
    file, found by content in ``corrected_german.csv``), in their order, typed as
    :func:`load_apas_credit`. Class 1 = good credit.

    ``authors_alignment=True`` rebuilds the rows their notebook trains on: its preprocessing
    concatenates each one-hot / thermometer block (index 0..799) to a frame indexed 1..800, so
    every ordinal and discrete feature of row k comes from row k + 1 while duration, amount,
    age and the label stay; ``dropna`` then leaves 799 rows."""
    import json
    from importlib import resources

    relpath = "german_credit/corrected_german.csv"
    df = _read(relpath, data_home)
    spec = json.loads(resources.files("robustce.data").joinpath(_APAS_CREDIT_D2_ROWS).read_text())
    rows = np.asarray(spec["rows"], dtype=np.int64)
    if len(df) != 1000 or rows.max() >= len(df):
        raise DatasetUnavailableError(f"{relpath}: expected the 1 000 rows of South German "
                                      f"credit, got {len(df)}")
    df = df.iloc[rows].reset_index(drop=True)
    X = df[list(GERMAN_COLUMNS)].copy()
    X[["duration", "amount", "age"]] = X[["duration", "amount", "age"]].astype(float)
    y = df["credit_risk"]
    if authors_alignment:
        coded = [*_APAS_CREDIT_ORDINAL, *_APAS_CREDIT_DISCRETE]
        X.loc[: len(X) - 2, coded] = X[coded].iloc[1:].to_numpy()
        X, y = X.iloc[:-1], y.iloc[:-1]
    return _finish("apas_credit_shift", X, _codes(y, (0, 1)), _apas_credit_schema(X),
                   ("bad", "good"), APAS_CREDIT_SHIFT_DESCRIPTION,
                   meta={"files": [relpath], "target": "credit_risk",
                         "authors_alignment": bool(authors_alignment)})


APAS_CREDIT_DESCRIPTION = (
    "Statlog German credit (german.data, 1 000 rows) recoded into the South German codes and "
    "typed as the APΔS authors do (11 ordinal, 6 discrete, 3 continuous features; no "
    "actionability): the data of their 'credit' model. Class 1 = good credit."
)
APAS_CREDIT_SHIFT_DESCRIPTION = (
    "The APΔS authors' shift data for 'credit': their 800 rows of South German credit "
    "(Kaggle's training file, located by content in corrected_german.csv), typed as "
    "apas_credit. Class 1 = good credit."
)
