"""The small numeric sets of the AAAI-24 and APΔS papers: diabetes, no2, spambase, spam."""

from __future__ import annotations

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _codes, _finish, _read
from robustce.data.schema import infer_schema

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
