"""RoCourseNet's benchmark files: the German credit and student shift pairs and the SBA
national loans by approval year."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from robustce.data.dataset import Dataset
from robustce.data.download import LOAN_YEARS
from robustce.data.loaders._common import PathLike, _codes, _finish, _levels, _read, _whole_to_int
from robustce.data.loaders.student import _STUDENT_ORDINAL, _YES_NO
from robustce.data.schema import infer_schema
from robustce.errors import ValidationError

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
