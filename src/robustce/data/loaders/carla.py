"""CARLA's pre-processed sets (cf-data): adult, compas, give_me_some_credit, heloc; each
whole or as CARLA's train / test split (``split=``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _codes, _finish, _read
from robustce.data.schema import infer_schema
from robustce.errors import DatasetUnavailableError, ValidationError

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
