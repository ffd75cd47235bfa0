"""Default of credit card clients, Taiwan: the UCI file and Ustun et al.'s processed one."""

from __future__ import annotations

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _codes, _finish, _levels, _read
from robustce.data.schema import infer_schema

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
