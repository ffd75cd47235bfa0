"""``Encoder.encode_decoded`` (the explainers' round trip, on arrays) must give bit for bit
what re-encoding the decoded frame gives, ``_encode(inverse_transform(X))``: on every built-in
and offline dataset's schema, both ordinal encodings, for exact encodings and for arbitrary
off-grid rows (values beyond the bounds, one-hots not one-hot), and on schemas whose recorded
dtypes take the frame path (pandas extension dtypes, float32, integers stored as floats)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data.encoder import Encoder
from robustce.data.schema import Feature, Schema, infer_schema

from .test_decode_levels import _frame

NAMES = ["synthetic_loan", "breast_cancer", "iris", "adult", "compas", "german", "german_raw",
         "taiwan_credit", "apas_credit", "rocoursenet_student", "sba", "diabetes", "student"]


def _rows(enc: Encoder, X: np.ndarray, seed: int) -> np.ndarray:
    """Exact encodings, the same jittered, and uniform noise over [-0.5, 1.5]."""
    rng = np.random.default_rng(seed)
    n = min(len(X), 300)
    exact = X[rng.choice(len(X), n, replace=False)]
    jitter = exact + rng.normal(0, 0.2, exact.shape)
    noise = rng.uniform(-0.5, 1.5, (n, X.shape[1]))
    return np.vstack([exact, jitter, noise])


def _differences(enc: Encoder, rows: np.ndarray) -> list[tuple[int, int]]:
    """(row, column) positions where ``encode_decoded`` and the frame path disagree (dtype and
    shape must match first)."""
    got = enc.encode_decoded(rows)
    want = enc._encode(enc.inverse_transform(rows))
    assert got.dtype == want.dtype and got.shape == want.shape
    return [tuple(p) for p in np.argwhere(got != want).tolist()]


@pytest.mark.parametrize("ordinal", ["thermometer", "integer"])
@pytest.mark.parametrize("name", NAMES)
def test_equals_reencoding_the_decoded_frame(name, ordinal, shared_datasets):
    kwargs = {"n_samples": 400} if name == "synthetic_loan" else {}
    data = rc.datasets.load(name, **kwargs)
    enc = Encoder(data.schema, ordinal_encoding=ordinal).fit(data.frame)
    assert _differences(enc, _rows(enc, enc.transform(data.frame), seed=len(name))) == []


@pytest.mark.parametrize("ordinal", ["thermometer", "integer"])
def test_equals_reencoding_on_narrow_and_extension_dtypes(ordinal):
    frame = _frame()
    rng = np.random.default_rng(1)
    frame["narrow"] = rng.uniform(0, 1, len(frame)).astype(np.float32)  # restored to float32
    frame["whole"] = rng.integers(0, 50, len(frame)).astype(float)  # integers stored as floats
    schema = infer_schema(frame, kinds={"code": "categorical", "word": "categorical",
                                        "whole": "integer"},
                          ordinal={"size": ["S", "M", "L"]})
    assert schema["narrow"].dtype == "float32"
    enc = Encoder(schema, ordinal_encoding=ordinal).fit(frame)
    assert _differences(enc, _rows(enc, enc.transform(frame), seed=2)) == []
    # a pandas extension dtype takes the frame path for the whole call
    frame["nullable"] = pd.array(rng.integers(0, 9, len(frame)), dtype="Int64")
    schema = infer_schema(frame, kinds={"code": "categorical", "word": "categorical"},
                          ordinal={"size": ["S", "M", "L"]})
    enc = Encoder(schema, ordinal_encoding=ordinal).fit(frame)
    assert _differences(enc, _rows(enc, enc.transform(frame), seed=3)) == []


def test_labels_that_do_not_code_back_take_the_frame_path():
    """float64 labels recorded with a float32 dtype: restored, they no longer equal a level."""
    schema = Schema([Feature("x", "continuous", lower=0.0, upper=1.0),
                     Feature("level", "categorical", categories=(0.1, 0.2, 0.3), dtype="float32")])
    enc = Encoder(schema).fit()
    assert enc._level_code_map(schema["level"]) is None
    rows = np.random.default_rng(4).uniform(-0.5, 1.5, (50, enc.n_features_out_))
    assert _differences(enc, rows) == []
