"""UCI Student Performance with ROAR's label (Portuguese and maths courses)."""

from __future__ import annotations

import numpy as np

from robustce.data.dataset import Dataset
from robustce.data.loaders._common import PathLike, _finish, _levels, _read
from robustce.data.schema import infer_schema

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
