"""The worker packs a batch's results column by column (``frame_records``): the records must
be exactly what :func:`plain` makes of ``to_dict("records")`` — numbers as Python numbers,
NaN/inf as None, numpy and other objects as JSON values — and which raw features a CE
changed is read against its own query."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from robustce.data.schema import Feature, Schema
from robustce.serve.worker import changed_matrix, frame_records, plain


def test_frame_records_equal_plain_to_dict():
    frame = pd.DataFrame({
        "i": np.array([1, -2, 3], dtype=np.int64),
        "u": np.array([1, 2, 3], dtype=np.uint8),
        "f": [0.5, math.nan, math.inf],
        "f32": np.array([0.1, 2.5, -1.0], dtype=np.float32),
        "b": [True, False, True],
        "s": pd.Series(["a", "ü", ""], dtype="str"),
        "o": pd.Series([np.int64(4), "x", None], dtype=object),
        "nested": pd.Series([{"k": np.float64(1.5)}, [np.nan, 2], (3,)], dtype=object),
        "cat": pd.Categorical(["lo", "hi", "lo"]),
        "nullable": pd.array([1, None, 3], dtype="Int64"),
        3: [7, 8, 9],  # a non-string column name: a string key, as plain gives
    })
    names = list(frame.columns)
    want = [plain(r) for r in frame.to_dict("records")]
    got = frame_records(frame, names)
    assert got == want
    assert [type(v) for v in got[1].values()] == [type(v) for v in want[1].values()]
    assert got[1]["f"] is None and got[2]["f"] is None  # NaN and inf: null in JSON


def test_changed_marks_each_ce_against_its_own_query():
    schema = Schema([Feature("x", "continuous", lower=0.0, upper=10.0),
                     Feature("c", "categorical", categories=("a", "b"))])
    queries = pd.DataFrame({"x": [1.0, 5.0], "c": ["a", "b"]})
    cfs = pd.DataFrame({"x": [1.0, 2.0, 5.0], "c": ["b", "a", "b"]})
    owner = np.array([0, 0, 1])
    got = changed_matrix(schema, queries, owner, cfs)
    assert got.tolist() == [[False, True], [True, False], [False, False]]
