"""Loaders for the benchmark datasets of the robust-recourse literature.

Each loader reads its file(s) through :func:`robustce.data.download.ensure_file` (local copy
verified by checksum, else downloaded), builds the raw feature frame, integer labels
0..K-1 and a :class:`~robustce.data.schema.Schema` (kinds from the source catalogues, the
usual immutable features marked), and returns a :class:`~robustce.data.dataset.Dataset`.

Label conventions follow the papers that use each file; every description says which label
is class 1 (``Dataset.class_names[1]``) and which is favourable (``Dataset.favourable``: the
outcome recourse asks for; class 1 unless a loader says otherwise). Numeric bounds are the
observed range of the rows a loader reads (for CARLA ``split=`` loads: of train and test
together, so both splits share one schema). Nothing is scaled here; the
:class:`~robustce.data.encoder.Encoder` does that.

``CATALOG`` lists the file datasets; :mod:`robustce.data.registry` registers them;
:func:`files_for` names the files one call of a loader reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset, encode_labels
from robustce.data.download import LOAN_YEARS, ensure_file
from robustce.data.schema import Schema, infer_schema
from robustce.errors import DatasetUnavailableError, ValidationError

__all__ = ["CATALOG", "LoaderInfo", "files_for"]

PathLike = str | os.PathLike | None


class LoaderInfo(NamedTuple):
    loader: Callable[..., Dataset]
    description: str
    files: tuple[str, ...]


# ----------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------


def _read(relpath: str, data_home: PathLike, **kw: Any) -> pd.DataFrame:
    path = ensure_file(relpath, data_home)
    try:
        return pd.read_csv(path, **kw)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DatasetUnavailableError(f"cannot parse {path}: {exc}") from None


def _codes(labels: pd.Series, order: Sequence[Any]) -> pd.Series:
    """Raw labels -> 0..K-1 following ``order`` (``order[k]`` becomes class k)."""
    codes, _ = encode_labels(labels, class_names=order)
    return codes


def _kinds(**groups: Iterable[str]) -> dict[str, str]:
    return {name: kind for kind, names in groups.items() for name in names}


def _levels(col: pd.Series, documented: Iterable[Any] = ()) -> tuple[Any, ...]:
    """Documented levels plus any others present in ``col``, sorted."""
    vals = {v.item() if isinstance(v, np.generic) else v for v in pd.unique(col)}
    return tuple(sorted(vals | set(documented)))


def _whole_to_int(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    for c in columns:
        frame[c] = frame[c].astype(np.int64)
    return frame


def _finish(
    name: str,
    frame: pd.DataFrame,
    y: pd.Series | np.ndarray,
    schema: Schema,
    class_names: tuple[Any, ...],
    description: str,
    *,
    groups: pd.Series | np.ndarray | None = None,
    group_name: str = "group",
    meta: dict[str, Any] | None = None,
    favourable: int | None = 1,
) -> Dataset:
    frame = frame[schema.names].reset_index(drop=True)
    target = pd.Series(np.asarray(y, dtype=np.int64), index=frame.index, name="target")
    grp = None
    if groups is not None:
        grp = pd.Series(np.asarray(groups), index=frame.index, name=group_name)
    schema = schema.with_dtypes(frame)
    schema.validate(frame)
    return Dataset(frame, target, schema, name=name, class_names=class_names,
                   description=description, groups=grp, meta=dict(meta or {}),
                   favourable=favourable)


# ----------------------------------------------------------------------------------------
# CARLA (cf-data)
# ----------------------------------------------------------------------------------------

_CARLA_SPLITS = (None, "train", "test")


def _carla_split_files(name: str, split: str | None) -> tuple[str, ...]:
    """The files a CARLA loader reads: the whole set (``split=None``), else train and test."""
    if split not in _CARLA_SPLITS:
        raise ValidationError(f"split must be None, 'train' or 'test', got {split!r}")
    if split is None:
        return (f"carla/{name}.csv",)
    return (f"carla/{name}_train.csv", f"carla/{name}_test.csv")


def _carla(
    name: str,
    data_home: PathLike,
    split: str | None,
    target: str,
    class_names: tuple[Any, ...],
    description: str,
    **schema_kw: Any,
) -> Dataset:
    files = list(_carla_split_files(name, split))
    if split is None:
        df = _read(files[0], data_home)
        ref = df
    else:
        train, test = (_read(f, data_home) for f in files)
        ref = pd.concat([train, test], ignore_index=True)
        df = train if split == "train" else test
    if target not in df.columns:
        raise DatasetUnavailableError(f"{files[0]} has no target column {target!r}")
    schema = infer_schema(ref.drop(columns=[target]), **schema_kw)
    y = _codes(df[target], (0, 1))
    return _finish(name, df.drop(columns=[target]), y, schema, class_names, description,
                   meta={"files": files, "split": split, "target": target})


_ADULT_BINARY = {
    "workclass": ("Non-Private", "Private"),
    "marital-status": ("Non-Married", "Married"),
    "occupation": ("Other", "Managerial-Specialist"),
    "relationship": ("Non-Husband", "Husband"),
    "race": ("Non-White", "White"),
    "sex": ("Female", "Male"),
    "native-country": ("Non-US", "US"),
}
ADULT_DESCRIPTION = (
    "UCI Adult census income, CARLA pre-processing (48 832 rows; categoricals collapsed to 2 "
    "levels). Class 1 = income >50K, class 0 = <=50K. Immutable: age, sex, race, "
    "marital-status, native-country (CARLA marks age and sex)."
)


def load_adult(data_home: PathLike = None, split: str | None = None) -> Dataset:
    """CARLA ``adult``: UCI Adult, 48 832 rows (train 36 624 / test 12 208).

    Class 1 = income > 50K. Features: 6 integer (age, fnlwgt, education-num, capital-gain,
    capital-loss, hours-per-week) and 7 binary string columns (CARLA collapsed each
    categorical to 2 levels). Immutable: age, sex, race, marital-status, native-country.
    """
    return _carla(
        "adult", data_home, split, "income", ("<=50K", ">50K"), ADULT_DESCRIPTION,
        kinds={**dict.fromkeys(_ADULT_BINARY, "binary"),
               **dict.fromkeys(["age", "fnlwgt", "education-num", "capital-gain",
                                "capital-loss", "hours-per-week"], "integer")},
        categories=_ADULT_BINARY,
        immutable=["age", "sex", "race", "marital-status", "native-country"],
    )


COMPAS_DESCRIPTION = (
    "ProPublica COMPAS two-year recidivism, CARLA pre-processing (6 172 rows). Class 1 = "
    "COMPAS score Low/Medium (favourable), class 0 = High. Immutable: age, race, sex."
)


def load_compas(data_home: PathLike = None, split: str | None = None) -> Dataset:
    """CARLA ``compas``: 6 172 rows (4 629 / 1 543). Class 1 = score not "High"."""
    return _carla(
        "compas", data_home, split, "score", ("High", "Low/Medium"), COMPAS_DESCRIPTION,
        kinds={"age": "integer", "two_year_recid": "binary", "c_charge_degree": "binary",
               "race": "binary", "sex": "binary", "priors_count": "integer",
               "length_of_stay": "integer"},
        categories={"two_year_recid": (0, 1), "c_charge_degree": ("M", "F"),
                    "race": ("African-American", "Other"), "sex": ("Female", "Male")},
        immutable=["age", "race", "sex"],
    )


GMSC_DESCRIPTION = (
    "Kaggle Give Me Some Credit, CARLA pre-processing (115 527 rows, 10 numeric features). "
    "Class 1 = no serious delinquency within 2 years (favourable; flipped vs Kaggle). "
    "Immutable: age."
)


def load_give_me_some_credit(data_home: PathLike = None, split: str | None = None) -> Dataset:
    """CARLA ``give_me_some_credit``: 115 527 rows (86 645 / 28 882). Class 1 = no
    serious delinquency (favourable). Whole-valued columns are integer, the rest continuous."""
    return _carla("give_me_some_credit", data_home, split, "SeriousDlqin2yrs",
                  ("delinquent", "not_delinquent"), GMSC_DESCRIPTION, immutable=["age"])


HELOC_DESCRIPTION = (
    "FICO HELOC, CARLA pre-processing (9 871 rows, 21 numeric features, special codes "
    "imputed upstream). Class 1 = RiskPerformance Good, class 0 = Bad. No immutable features."
)


def load_heloc(data_home: PathLike = None, split: str | None = None) -> Dataset:
    """CARLA ``heloc``: 9 871 rows (7 403 / 2 468). Class 1 = "Good"."""
    return _carla("heloc", data_home, split, "RiskPerformance", ("Bad", "Good"),
                  HELOC_DESCRIPTION)


# ----------------------------------------------------------------------------------------
# Small numeric sets (AAAI-24 / APAS)
# ----------------------------------------------------------------------------------------

DIABETES_DESCRIPTION = (
    "Pima Indians diabetes (768 rows, 8 numeric features; zeros in Glucose, BloodPressure, "
    "SkinThickness, Insulin, BMI mean missing and are kept as 0). Class 1 = diabetic "
    "(as in the AAAI-24 and APAS papers), class 0 = not diabetic (favourable). Immutable: Pregnancies, "
    "DiabetesPedigreeFunction, Age."
)


def load_diabetes(data_home: PathLike = None) -> Dataset:
    """Pima Indians diabetes, 768 rows. Class 1 = diabetic (the papers' convention)."""
    df = _read("diabetes/diabetes.csv", data_home)
    X = df.drop(columns=["Outcome"])
    schema = infer_schema(
        X,
        kinds={"BMI": "continuous", "DiabetesPedigreeFunction": "continuous"},
        immutable=["Pregnancies", "DiabetesPedigreeFunction", "Age"],
    )
    return _finish("diabetes", X, _codes(df["Outcome"], (0, 1)), schema,
                   ("not_diabetic", "diabetic"), DIABETES_DESCRIPTION,
                   meta={"files": ["diabetes/diabetes.csv"], "target": "Outcome"}, favourable=0)


NO2_DESCRIPTION = (
    "NO2 air pollution, Oslo (OpenML binarised StatLib data, 500 rows, 7 numeric features; "
    "concentration and car counts are logs). Class 1 = 'P', class 0 = 'N' (OpenML's "
    "binarisation; P is the positive class in the papers). No immutable features."
)


def load_no2(data_home: PathLike = None) -> Dataset:
    """OpenML ``no2`` (binarised), 500 rows. Class 1 = ``P``."""
    df = _read("no2/no2.csv", data_home)
    X = df.drop(columns=["binaryClass"])
    schema = infer_schema(X, kinds={"hour_of_day": "integer"})
    return _finish("no2", X, _codes(df["binaryClass"], ("N", "P")), schema, ("N", "P"),
                   NO2_DESCRIPTION, meta={"files": ["no2/no2.csv"], "target": "binaryClass"})


def _spam(name: str, relpath: str, target: str, description: str, data_home: PathLike
          ) -> Dataset:
    df = _read(relpath, data_home)
    X = df.drop(columns=[target])
    schema = infer_schema(X, kinds=dict.fromkeys(X.columns[:-3], "continuous"))
    return _finish(name, X, _codes(df[target], (0, 1)), schema, ("not_spam", "spam"),
                   description, meta={"files": [relpath], "target": target}, favourable=0)


SPAMBASE_DESCRIPTION = (
    "UCI Spambase, complete (4 601 rows, 57 numeric features with UCI names). "
    "Class 1 = spam (the papers' convention), class 0 = not spam (favourable)."
)
SPAM_DESCRIPTION = (
    "Spambase as used by the AAAI-24 paper and APAS (4 600 rows, features F1..F57, rows "
    "shuffled, first UCI row missing). Class 1 = spam, class 0 = not spam (favourable)."
)


def load_spambase(data_home: PathLike = None) -> Dataset:
    """UCI Spambase, all 4 601 rows. Class 1 = spam."""
    return _spam("spambase", "spambase/spambase.csv", "spam_or_not", SPAMBASE_DESCRIPTION,
                 data_home)


def load_spam(data_home: PathLike = None) -> Dataset:
    """Spambase, AAAI-24/APAS version with 4 600 rows. Class 1 = spam."""
    return _spam("spam", "spambase/spam.csv", "Outcome", SPAM_DESCRIPTION, data_home)


# ----------------------------------------------------------------------------------------
# German credit
# ----------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------
# SBA (ROAR's loan data)
# ----------------------------------------------------------------------------------------

SBA_ROAR_DROP = ("Selected", "State", "Name", "BalanceGross", "LowDoc", "BankState",
                 "LoanNr_ChkDgt", "MIS_Status", "Default", "Bank", "City")
SBA_LEAKS = ("ChgOffDate", "ChgOffPrinGr")
SBA_DESCRIPTION = (
    "SBA loans case study (California, NAICS 53; 2 102 rows), ROAR's version. Class 1 = "
    "NoDefault = 1 - Default (loan paid in full, favourable). Groups: 'pre' = ApprovalFY < "
    "2006, 'post' otherwise. ROAR's ID/leaking columns dropped, plus the charge-off "
    "columns ChgOffDate and ChgOffPrinGr (drop_leaks=False keeps them). Immutable: Zip, "
    "NAICS, ApprovalDate, ApprovalFY, NewExist, New, Recession."
)


def load_sba(data_home: PathLike = None, drop_leaks: bool = True) -> Dataset:
    """SBA case-study loans as in ROAR, 2 102 rows. Class 1 = no default.

    ROAR drops ``Selected, State, Name, BalanceGross, LowDoc, BankState, LoanNr_ChkDgt,
    MIS_Status, Default, Bank, City``. ``ChgOffDate`` (empty unless charged off) and
    ``ChgOffPrinGr`` (amount charged off) also reveal the label almost perfectly, so they are
    dropped too unless ``drop_leaks=False``. Missing values (a handful of rows) are filled:
    NewExist -> 0 (the file's "undefined" code), RevLineCr -> "0" (likewise),
    DisbursementDate -> ApprovalDate, xx -> DisbursementDate + daysterm (its definition),
    ChgOffDate -> 0 (never charged off). Groups: ``"pre"`` (ApprovalFY < 2006) / ``"post"``.
    """
    relpath = "sba/SBAcase.11.13.17.csv"
    df = _read(relpath, data_home, encoding="utf-8-sig")
    y = 1 - df["Default"].astype(np.int64)
    groups = np.where(df["ApprovalFY"] < 2006, "pre", "post")
    drop = list(SBA_ROAR_DROP) + (list(SBA_LEAKS) if drop_leaks else [])
    X = df.drop(columns=drop)
    X["NewExist"] = X["NewExist"].fillna(0)
    X["RevLineCr"] = X["RevLineCr"].fillna("0")
    X["DisbursementDate"] = X["DisbursementDate"].fillna(X["ApprovalDate"])
    X["xx"] = X["xx"].fillna(X["DisbursementDate"] + X["daysterm"])
    whole = ["NewExist", "DisbursementDate", "xx"]
    if not drop_leaks:
        X["ChgOffDate"] = X["ChgOffDate"].fillna(0)
        whole.append("ChgOffDate")
    X = _whole_to_int(X, whole)
    kinds = _kinds(
        categorical=["NAICS", "NewExist", "FranchiseCode", "UrbanRural", "RevLineCr"],
        binary=["New", "RealEstate", "Recession"],
        continuous=["Portion"],
    )
    kinds.update({c: "integer" for c in X.columns if c not in kinds})
    schema = infer_schema(
        X, kinds=kinds,
        categories={"NewExist": _levels(X["NewExist"], (0, 1, 2)),
                    "UrbanRural": _levels(X["UrbanRural"], (0, 1, 2)),
                    "New": (0, 1), "RealEstate": (0, 1), "Recession": (0, 1)},
        immutable=["Zip", "NAICS", "ApprovalDate", "ApprovalFY", "NewExist", "New",
                   "Recession"],
    )
    return _finish("sba", X, y, schema, ("default", "no_default"), SBA_DESCRIPTION,
                   groups=groups, group_name="period",
                   meta={"files": [relpath], "target": "NoDefault = 1 - Default",
                         "drop_leaks": drop_leaks})


# ----------------------------------------------------------------------------------------
# Taiwan credit card default
# ----------------------------------------------------------------------------------------

TAIWAN_DESCRIPTION = (
    "Default of credit card clients, Taiwan (UCI; 30 000 rows, ID dropped). Class 1 = no "
    "default next month (favourable; = 1 - Y), class 0 = default. SEX, EDUCATION, MARRIAGE "
    "categorical (undocumented codes kept), PAY_* ordinal -2..8. Immutable: SEX, MARRIAGE, AGE."
)
TAIWAN_PROCESSED_DESCRIPTION = (
    "Default of credit card clients, processed as in Ustun et al. 2019 'Actionable "
    "Recourse' (30 000 rows, 17 features). Class 1 = NoDefaultNextMonth (favourable). "
    "Immutable: Married, Single and the four age-band indicators."
)


def load_taiwan_credit(data_home: PathLike = None) -> Dataset:
    """UCI credit card default (``credit_card.csv``), 30 000 rows. Class 1 = no default
    (the favourable outcome; the file's ``Y`` is 1 = default)."""
    relpath = "credit_default_taiwan/credit_card.csv"
    df = _read(relpath, data_home, encoding="utf-8-sig")
    X = df.drop(columns=["ID", "Y"])
    pay = [c for c in X.columns if c.startswith("PAY_") and not c.startswith("PAY_AMT")]
    schema = infer_schema(
        X,
        kinds={"SEX": "binary", "EDUCATION": "categorical", "MARRIAGE": "categorical",
               **dict.fromkeys(pay, "ordinal")},
        ordinal={c: _levels(X[c], range(-2, 9)) for c in pay},
        categories={"SEX": (1, 2), "EDUCATION": _levels(X["EDUCATION"], range(1, 5)),
                    "MARRIAGE": _levels(X["MARRIAGE"], range(1, 4))},
        immutable=["SEX", "MARRIAGE", "AGE"],
    )
    return _finish("taiwan_credit", X, _codes(df["Y"], (1, 0)), schema,
                   ("default", "no_default"), TAIWAN_DESCRIPTION,
                   meta={"files": [relpath], "target": "1 - Y"})


def load_taiwan_credit_processed(data_home: PathLike = None) -> Dataset:
    """Ustun et al.'s processed credit data, 30 000 rows. Class 1 = no default."""
    relpath = "credit_default_taiwan/credit_processed.csv"
    df = _read(relpath, data_home)
    X = df.drop(columns=["NoDefaultNextMonth"])
    onehots = ["Married", "Single", "Age_lt_25", "Age_in_25_to_40", "Age_in_40_to_59",
               "Age_geq_60"]
    kinds = {c: "integer" for c in X.columns}
    kinds.update(dict.fromkeys([*onehots, "HistoryOfOverduePayments"], "binary"))
    schema = infer_schema(
        X, kinds=kinds,
        categories=dict.fromkeys([*onehots, "HistoryOfOverduePayments"], (0, 1)),
        immutable=onehots,
    )
    return _finish("taiwan_credit_processed", X, _codes(df["NoDefaultNextMonth"], (0, 1)),
                   schema, ("default", "no_default"), TAIWAN_PROCESSED_DESCRIPTION,
                   meta={"files": [relpath], "target": "NoDefaultNextMonth"})


# ----------------------------------------------------------------------------------------
# Student performance (ROAR)
# ----------------------------------------------------------------------------------------

_YES_NO = ("no", "yes")
_STUDENT_BINARY = {
    "sex": ("F", "M"), "address": ("R", "U"), "famsize": ("LE3", "GT3"), "Pstatus": ("A", "T"),
    **dict.fromkeys(["schoolsup", "famsup", "paid", "activities", "nursery", "higher",
                     "internet", "romantic"], _YES_NO),
}
_STUDENT_ORDINAL = {
    "Medu": tuple(range(5)), "Fedu": tuple(range(5)), "traveltime": tuple(range(1, 5)),
    "studytime": tuple(range(1, 5)), "failures": tuple(range(4)),
    **dict.fromkeys(["famrel", "freetime", "goout", "Dalc", "Walc", "health"],
                    tuple(range(1, 6))),
}
STUDENT_DESCRIPTION = (
    "UCI Student Performance, {course} course ({rows} rows), ROAR's binarisation: class 1 = "
    "final grade G3 < 10 (ROAR's 'Outcome'; note: the failing grade), class 0 = G3 >= 10 "
    "(favourable). "
    "G1, G2, G3 and school dropped; groups = school (GP = ROAR's pre-shift data, MS). "
    "Immutable: sex, age, Pstatus, Medu, Fedu, Mjob, Fjob, failures, nursery."
)


def _student(name: str, relpath: str, course: str, data_home: PathLike) -> Dataset:
    df = _read(relpath, data_home, sep=";")
    X = df.drop(columns=["school", "G1", "G2", "G3"])
    ordinal = {c: _levels(X[c], lv) for c, lv in _STUDENT_ORDINAL.items()}
    schema = infer_schema(
        X,
        kinds={**dict.fromkeys(_STUDENT_BINARY, "binary"),
               **dict.fromkeys(["Mjob", "Fjob", "reason", "guardian"], "categorical"),
               "age": "integer", "absences": "integer"},
        categories=_STUDENT_BINARY, ordinal=ordinal,
        immutable=["sex", "age", "Pstatus", "Medu", "Fedu", "Mjob", "Fjob", "failures",
                   "nursery"],
    )
    y = (df["G3"] < 10).astype(np.int64)
    return _finish(name, X, y, schema, ("G3>=10", "G3<10"),
                   STUDENT_DESCRIPTION.format(course=course, rows=len(df)),
                   groups=df["school"].astype(str), group_name="school",
                   meta={"files": [relpath], "target": "G3 < 10"}, favourable=0)


def load_student(data_home: PathLike = None) -> Dataset:
    """UCI student-por (Portuguese), 649 rows, ROAR's label (class 1 = G3 < 10)."""
    return _student("student", "student/student-por.csv", "Portuguese", data_home)


def load_student_math(data_home: PathLike = None) -> Dataset:
    """UCI student-mat (maths), 395 rows, ROAR's label (class 1 = G3 < 10)."""
    return _student("student_math", "student/student-mat.csv", "maths", data_home)


# ----------------------------------------------------------------------------------------
# RoCourseNet benchmark files
# ----------------------------------------------------------------------------------------

ROCOURSENET_GERMAN_DESCRIPTION = (
    "RoCourseNet German credit pair (2 000 rows): 'original' = Statlog (org.csv), "
    "'corrected' = South German Credit (upt.csv), 9 features. Class 1 = good customer. "
    "Immutable: Age."
)


def load_rocoursenet_german(data_home: PathLike = None) -> Dataset:
    """RoCourseNet's German credit shift pair, 1 000 + 1 000 rows; groups
    ``"original"``/``"corrected"``. Class 1 = good customer."""
    files = ["rocoursenet/german_credit/org.csv", "rocoursenet/german_credit/upt.csv"]
    org, upt = (_read(f, data_home) for f in files)
    df = pd.concat([org, upt], ignore_index=True)
    groups = np.repeat(["original", "corrected"], [len(org), len(upt)])
    target = "GoodCustomer (label)"
    X = _whole_to_int(df.drop(columns=[target]), [c for c in df.columns if c != target])
    schema = infer_schema(
        X,
        kinds={"Duration": "integer", "Credit amount": "integer", "Installment rate": "ordinal",
               "Age": "integer", "Existing credits": "ordinal", "Number people": "integer",
               "Present residence": "ordinal", "Status": "categorical",
               "History": "categorical"},
        ordinal={"Installment rate": _levels(X["Installment rate"], range(1, 5)),
                 "Existing credits": _levels(X["Existing credits"], range(1, 5)),
                 "Present residence": _levels(X["Present residence"], range(1, 5))},
        immutable=["Age"],
    )
    return _finish("rocoursenet_german", X, _codes(df[target], (0, 1)), schema,
                   ("bad", "good"), ROCOURSENET_GERMAN_DESCRIPTION, groups=groups,
                   group_name="version", meta={"files": files, "target": target})


ROCOURSENET_STUDENT_DESCRIPTION = (
    "RoCourseNet student pair from student-por (649 rows: school GP 423, MS 226; 15 "
    "features, G1/G2 binned A-F). Class 1 = final grade G3 >= 14 (inferred from the "
    "counts). Groups = school. Immutable: age, Medu, Fedu, Mjob, Fjob, failures, G1, G2."
)


def load_rocoursenet_student(data_home: PathLike = None) -> Dataset:
    """RoCourseNet's student files (gp + ms), 649 rows; groups ``"GP"``/``"MS"``.
    Class 1 = G3 >= 14."""
    files = ["rocoursenet/student/gp.csv", "rocoursenet/student/ms.csv"]
    gp, ms = (_read(f, data_home) for f in files)
    df = pd.concat([gp, ms], ignore_index=True)
    groups = np.repeat(["GP", "MS"], [len(gp), len(ms)])
    X = df.drop(columns=["G3"])
    letters = ("F", "E", "D", "C", "B", "A")
    grade_levels = {c: tuple(g for g in letters if g != "E" or (X[c] == "E").any())
                    for c in ("G1", "G2")}
    ordinal = {**grade_levels,
               **{c: _levels(X[c], _STUDENT_ORDINAL[c])
                  for c in ("goout", "health", "freetime", "Walc", "famrel", "Medu", "Fedu")}}
    schema = infer_schema(
        X,
        kinds={"failures": "integer", "age": "integer", "absences": "integer",
               "higher": "binary", "Mjob": "categorical", "Fjob": "categorical"},
        categories={"higher": _YES_NO}, ordinal=ordinal,
        immutable=["age", "Medu", "Fedu", "Mjob", "Fjob", "failures", "G1", "G2"],
    )
    return _finish("rocoursenet_student", X, _codes(df["G3"], (0, 1)), schema,
                   ("G3<14", "G3>=14"), ROCOURSENET_STUDENT_DESCRIPTION, groups=groups,
                   group_name="school", meta={"files": files, "target": "G3"})


US_STATES = (
    "AK", "AL", "AR", "AZ", "CA", "CO", "CT", "DC", "DE", "FL", "GA", "HI", "IA", "ID", "IL",
    "IN", "KS", "KY", "LA", "MA", "MD", "ME", "MI", "MN", "MO", "MS", "MT", "NC", "ND", "NE",
    "NH", "NJ", "NM", "NV", "NY", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT",
    "VA", "VT", "WA", "WI", "WV", "WY",
)
LOAN_DESCRIPTION = (
    "U.S. SBA national loans, RoCourseNet's per-approval-year files 1988-2012 (514 850 rows "
    "in all; the paper uses 1994-2009), 12 features, money columns already log-transformed. "
    "Class 1 = Approve (presumably paid in full / should approve). Groups = approval year. "
    "Immutable: State, Sector_Points."
)


def _check_years(years: int | Iterable[int] | None) -> tuple[int, ...]:
    if years is None:
        return LOAN_YEARS
    if isinstance(years, int | np.integer):
        years = [years]
    try:
        out = tuple(int(y) for y in years)
    except (TypeError, ValueError):
        raise ValidationError(f"years must be an int or a list of ints, got {years!r}") from None
    bad = [y for y in out if y not in LOAN_YEARS]
    if bad or not out:
        raise ValidationError(
            f"years must be within {LOAN_YEARS[0]}-{LOAN_YEARS[-1]}, got {list(out) or 'none'}"
        )
    return tuple(sorted(set(out)))


def _loan_files(years: Iterable[int]) -> tuple[str, ...]:
    return tuple(f"rocoursenet/loan/year={y}.csv.gz" for y in years)


def load_loan(data_home: PathLike = None, years: int | Iterable[int] | None = None) -> Dataset:
    """RoCourseNet's SBA loan data, one file per approval year (default: all 25 files,
    1988-2012, 514 850 rows; ``years=range(1994, 2010)`` gives the paper's 449 152).
    Class 1 = ``Approve``; groups = year (int)."""
    years = _check_years(years)
    files = _loan_files(years)
    frames = [_read(f, data_home) for f in files]
    df = pd.concat(frames, ignore_index=True)
    groups = np.repeat(np.asarray(years, dtype=np.int64), [len(f) for f in frames])
    X = _whole_to_int(df.drop(columns=["Approve"]), ["NewExist"])
    schema = infer_schema(
        X,
        kinds={"State": "categorical", "Term": "integer", "NoEmp": "integer",
               "NewExist": "categorical", "CreateJob": "integer", "RetainedJob": "integer",
               "UrbanRural": "categorical", "LowDoc": "categorical",
               "DisbursementGross": "continuous", "GrAppv": "continuous",
               "SBA_Appv": "continuous", "Sector_Points": "ordinal"},
        categories={"State": _levels(X["State"], US_STATES),
                    "NewExist": _levels(X["NewExist"], (0, 1, 2)),
                    "UrbanRural": _levels(X["UrbanRural"], (0, 1, 2)),
                    "LowDoc": _levels(X["LowDoc"], ("0", "A", "C", "N", "R", "S", "Y"))},
        ordinal={"Sector_Points": _levels(X["Sector_Points"], range(6))},
        immutable=["State", "Sector_Points"],
    )
    return _finish("loan", X, _codes(df["Approve"], (0, 1)), schema, ("reject", "approve"),
                   LOAN_DESCRIPTION, groups=groups, group_name="year",
                   meta={"files": list(files),
                         "years": list(years), "target": "Approve"})


# ----------------------------------------------------------------------------------------
# Online News Popularity (not in the offline copy)
# ----------------------------------------------------------------------------------------

ONLINE_NEWS_DESCRIPTION = (
    "UCI Online News Popularity (Mashable, 39 644 rows, 58 features; url and timedelta "
    "dropped). Class 1 = popular (shares >= 1400, the median used by Fernandes et al.), "
    "class 0 = unpopular. Not in the offline copy: downloaded from UCI (no recorded checksum)."
)


def load_online_news(data_home: PathLike = None, threshold: float = 1400) -> Dataset:
    """UCI Online News Popularity; class 1 = ``shares >= threshold`` (default 1400).

    The file (``online_news/OnlineNewsPopularity.csv``) is not part of the offline copy; it
    is extracted from UCI's zip archive on first use.
    """
    relpath = "online_news/OnlineNewsPopularity.csv"
    df = _read(relpath, data_home, skipinitialspace=True)
    df.columns = [str(c).strip() for c in df.columns]
    if "shares" not in df.columns:
        raise DatasetUnavailableError(f"{relpath} has no 'shares' column; columns: "
                                      f"{list(df.columns)[:8]}...")
    y = (df["shares"].to_numpy() >= threshold).astype(np.int64)
    X = df.drop(columns=[c for c in ("url", "timedelta", "shares") if c in df.columns])
    schema = infer_schema(X)
    return _finish("online_news", X, y, schema, ("unpopular", "popular"),
                   ONLINE_NEWS_DESCRIPTION,
                   meta={"files": [relpath], "target": f"shares >= {threshold}"})


# ----------------------------------------------------------------------------------------
# Catalogue
# ----------------------------------------------------------------------------------------


def _carla_files(name: str) -> tuple[str, ...]:
    return _carla_split_files(name, None) + _carla_split_files(name, "train")


#: the catalogue's CARLA sets (loaders with a ``split`` parameter)
_CARLA_NAMES = ("adult", "compas", "give_me_some_credit", "heloc")


CATALOG: dict[str, LoaderInfo] = {
    "adult": LoaderInfo(load_adult, ADULT_DESCRIPTION, _carla_files("adult")),
    "compas": LoaderInfo(load_compas, COMPAS_DESCRIPTION, _carla_files("compas")),
    "give_me_some_credit": LoaderInfo(load_give_me_some_credit, GMSC_DESCRIPTION,
                                      _carla_files("give_me_some_credit")),
    "heloc": LoaderInfo(load_heloc, HELOC_DESCRIPTION, _carla_files("heloc")),
    "diabetes": LoaderInfo(load_diabetes, DIABETES_DESCRIPTION, ("diabetes/diabetes.csv",)),
    "no2": LoaderInfo(load_no2, NO2_DESCRIPTION, ("no2/no2.csv",)),
    "german": LoaderInfo(load_german, GERMAN_DESCRIPTION, ("german_credit/german.csv",)),
    "german_corrected": LoaderInfo(load_german_corrected, GERMAN_CORRECTED_DESCRIPTION,
                                   ("german_credit/corrected_german.csv",)),
    "german_raw": LoaderInfo(load_german_raw, GERMAN_RAW_DESCRIPTION,
                             ("german_credit/german.data",)),
    "apas_credit": LoaderInfo(load_apas_credit, APAS_CREDIT_DESCRIPTION,
                              ("german_credit/german.data",)),
    "apas_credit_shift": LoaderInfo(load_apas_credit_shift, APAS_CREDIT_SHIFT_DESCRIPTION,
                                    ("german_credit/corrected_german.csv",)),
    "spambase": LoaderInfo(load_spambase, SPAMBASE_DESCRIPTION, ("spambase/spambase.csv",)),
    "spam": LoaderInfo(load_spam, SPAM_DESCRIPTION, ("spambase/spam.csv",)),
    "sba": LoaderInfo(load_sba, SBA_DESCRIPTION, ("sba/SBAcase.11.13.17.csv",)),
    "taiwan_credit": LoaderInfo(load_taiwan_credit, TAIWAN_DESCRIPTION,
                                ("credit_default_taiwan/credit_card.csv",)),
    "taiwan_credit_processed": LoaderInfo(load_taiwan_credit_processed,
                                          TAIWAN_PROCESSED_DESCRIPTION,
                                          ("credit_default_taiwan/credit_processed.csv",)),
    "student": LoaderInfo(load_student,
                          STUDENT_DESCRIPTION.format(course="Portuguese", rows=649),
                          ("student/student-por.csv",)),
    "student_math": LoaderInfo(load_student_math,
                               STUDENT_DESCRIPTION.format(course="maths", rows=395),
                               ("student/student-mat.csv",)),
    "rocoursenet_german": LoaderInfo(load_rocoursenet_german, ROCOURSENET_GERMAN_DESCRIPTION,
                                     ("rocoursenet/german_credit/org.csv",
                                      "rocoursenet/german_credit/upt.csv")),
    "rocoursenet_student": LoaderInfo(load_rocoursenet_student,
                                      ROCOURSENET_STUDENT_DESCRIPTION,
                                      ("rocoursenet/student/gp.csv",
                                       "rocoursenet/student/ms.csv")),
    "loan": LoaderInfo(load_loan, LOAN_DESCRIPTION, _loan_files(LOAN_YEARS)),
    "online_news": LoaderInfo(load_online_news, ONLINE_NEWS_DESCRIPTION,
                              ("online_news/OnlineNewsPopularity.csv",)),
}


def files_for(name: str, params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The files the catalogue's loader ``name`` reads when called with ``params`` (its
    keyword arguments): ``years`` of ``loan``, ``split`` of the CARLA sets; every file of
    its entry for the others. Bad ``years`` or ``split`` raise as the loader does."""
    params = params or {}
    if name == "loan":
        return _loan_files(_check_years(params.get("years")))
    if name in _CARLA_NAMES:
        return _carla_split_files(name, params.get("split"))
    return CATALOG[name].files
