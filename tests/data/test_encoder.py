"""Encoder: exact expectations on tiny data, and property tests on random schemas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from robustce.data import Encoder, Feature, FeatureKind, Schema
from robustce.errors import NotFittedError, ValidationError

# ----------------------------------------------------------------------------------------
# Tiny exact examples
# ----------------------------------------------------------------------------------------


@pytest.fixture
def mixed():
    frame = pd.DataFrame(
        {
            "income": [10.0, 20.0, 30.0],
            "age": [20, 40, 60],
            "edu": ["low", "mid", "high"],
            "housing": ["rent", "own", "rent"],
            "guarantor": [0, 1, 0],
        }
    )
    schema = Schema(
        [
            Feature("income", "continuous", 10, 30),
            Feature("age", "integer", 20, 60, actionability="immutable"),
            Feature("edu", "ordinal", categories=("low", "mid", "high"), actionability="increase"),
            Feature("housing", "categorical", categories=("own", "rent")),
            Feature("guarantor", "binary", categories=(0, 1)),
        ]
    ).with_dtypes(frame)
    return frame, schema


def test_transform_exact_values(mixed):
    frame, schema = mixed
    enc = Encoder(schema).fit(frame)
    assert enc.columns_ == ["income", "age", "edu>=mid", "edu>=high", "housing=own",
                            "housing=rent", "guarantor"]
    X = enc.transform(frame)
    np.testing.assert_array_equal(
        X,
        [[0.0, 0.0, 0, 0, 0, 1, 0],
         [0.5, 0.5, 1, 0, 1, 0, 1],
         [1.0, 1.0, 1, 1, 0, 1, 0]],
    )
    assert enc.immutable_mask_.tolist() == [False, True, False, False, False, False, False]
    assert enc.increasing_mask_.tolist() == [False, False, True, True, False, False, False]


def test_project_exact_values(mixed):
    """Clip, snap the integer to its grid (age: 40 steps), thermometer by counting entries
    ≥ 0.5, one-hot by argmax (first on a tie), binary at 0.5 — worked out by hand."""
    frame, schema = mixed
    enc = Encoder(schema).fit(frame)
    Z = np.array([[1.3, 0.5124, 0.6, 0.4, 0.2, 0.7, 0.49],
                  [-0.2, 0.9876, 0.4, 0.9, 0.6, 0.6, 0.5]])
    np.testing.assert_array_equal(enc.project(Z), [[1.0, 0.5, 1, 0, 0, 1, 0],
                                                   [0.0, 1.0, 1, 0, 1, 0, 1]])


def test_integer_ordinal_coding(mixed):
    frame, schema = mixed
    enc = Encoder(schema, ordinal_encoding="integer").fit(frame)
    assert enc.n_features_out_ == 6
    np.testing.assert_array_equal(enc.transform(frame)[:, 2], [0.0, 0.5, 1.0])
    assert enc.block("edu").n_steps == 2
    assert enc.block("age").n_steps == 40


def test_inverse_of_off_grid_rows_is_nearest_valid(mixed):
    frame, schema = mixed
    enc = Encoder(schema).fit(frame)
    out = enc.inverse_transform([[1.7, 0.26, 0.9, 0.2, 0.4, 0.3, 0.6]])
    assert out.iloc[0].to_dict() == {"income": 30.0, "age": 30, "edu": "mid",
                                     "housing": "own", "guarantor": 1}
    schema.validate(out)


def test_inverse_stays_within_bounds_despite_rounding():
    # lower + 1.0 * (upper - lower) is -1.5499999999999998 > upper in floating point
    assert -4.01 + 1.0 * (-1.55 - -4.01) > -1.55
    schema = Schema([Feature("x", "continuous", -4.01, -1.55)])
    enc = Encoder(schema).fit()
    out = enc.inverse_transform([[1.0], [0.0]])
    assert out["x"].tolist() == [-1.55, -4.01]
    schema.validate(out)


def test_continuous_feature_with_integer_dtype_rounds_not_truncates():
    frame = pd.DataFrame({"amount": np.array([3, 7, 10], dtype=np.int64)})
    schema = Schema([Feature("amount", "continuous", 0, 10)]).with_dtypes(frame)
    enc = Encoder(schema).fit(frame)
    X = enc.transform(frame) * (1 - 1e-15)  # a hair below the exact code
    back = enc.inverse_transform(X)
    assert back["amount"].dtype == np.int64
    assert back["amount"].tolist() == [3, 7, 10]


def test_unfitted_encoder_raises():
    enc = Encoder(Schema([Feature("x", "continuous", 0, 1)]))
    with pytest.raises(NotFittedError, match="not fitted"):
        enc.transform(pd.DataFrame({"x": [0.5]}))


def test_bad_ordinal_encoding_name():
    with pytest.raises(ValidationError, match="ordinal_encoding"):
        Encoder(Schema([Feature("x", "continuous", 0, 1)]), ordinal_encoding="onehot")


def test_check_array_shape_and_nan(mixed):
    frame, schema = mixed
    enc = Encoder(schema).fit(frame)
    with pytest.raises(ValidationError, match=r"shape \(n, 7\)"):
        enc.check_array(np.zeros((2, 3)))
    with pytest.raises(ValidationError, match="NaN"):
        enc.check_array(np.full((1, 7), np.nan))


def test_transform_rejects_bad_frames(mixed):
    frame, schema = mixed
    enc = Encoder(schema).fit(frame)
    with pytest.raises(ValidationError, match=r"unseen categories \['castle'\]"):
        enc.transform(frame.assign(housing=["own", "castle", "rent"]))
    with pytest.raises(ValidationError, match=r"'income' has values outside its bounds"):
        enc.transform(frame.assign(income=[5.0, 20.0, 30.0]))
    with pytest.raises(ValidationError, match=r"missing columns: \['age'\]"):
        enc.transform(frame.drop(columns=["age"]))
    with pytest.raises(ValidationError, match=r"unexpected columns not in the schema: \['x'\]"):
        enc.transform(frame.assign(x=1))
    with pytest.raises(ValidationError, match=r"missing values \(NaN\) in columns: \['income'\]"):
        enc.transform(frame.assign(income=[np.nan, 20.0, 30.0]))


def test_to_dict_round_trip(mixed):
    frame, schema = mixed
    enc = Encoder(schema, ordinal_encoding="integer").fit(frame)
    enc2 = Encoder.from_dict(enc.to_dict())
    np.testing.assert_array_equal(enc2.transform(frame), enc.transform(frame))
    pd.testing.assert_frame_equal(enc2.inverse_transform(enc.transform(frame)), frame)


# ----------------------------------------------------------------------------------------
# Property tests
# ----------------------------------------------------------------------------------------

LABELS = st.text(alphabet="abcXYZ_- 01é", min_size=1, max_size=5)


@st.composite
def feature_and_column(draw, name: str, n: int):
    """One Feature and a column of n valid raw values, in a variety of dtypes."""
    kind = draw(st.sampled_from(
        ["continuous", "integer", "ordinal", "categorical", "binary", "constant"]))
    if kind == "continuous":
        lo = draw(st.floats(-1e6, 1e6))
        width = draw(st.floats(0, 1e6))
        hi = lo + width
        vals = draw(arrays(np.float64, n, elements=st.floats(lo, hi)))
        as_int = draw(st.booleans()) and width >= 1
        if as_int:  # continuous feature stored as integers
            lo, hi = np.ceil(lo), np.floor(hi)
            vals = np.clip(np.round(vals), lo, hi).astype(np.int64)
        return Feature(name, "continuous", lo, hi), pd.Series(vals)
    if kind in ("integer", "constant"):
        lo = draw(st.integers(-1000, 1000))
        hi = lo if kind == "constant" else lo + draw(st.integers(0, 5000))
        vals = np.asarray(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)))
        dtype = draw(st.sampled_from(["int64", "int32", "float64"]))
        ftype = "integer" if kind == "integer" else draw(st.sampled_from(["integer",
                                                                          "continuous"]))
        return Feature(name, ftype, lo, hi), pd.Series(vals.astype(dtype))
    if kind == "binary":
        cats = draw(st.sampled_from([(0, 1), (1, 2), ("no", "yes"), (False, True)]))
        idx = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
        return Feature(name, "binary", categories=cats), pd.Series([cats[i] for i in idx])
    # ordinal / categorical: string or integer labels, 1..6 levels (1 = constant column)
    k = draw(st.integers(1, 6))
    if draw(st.booleans()):
        cats = tuple(draw(st.lists(LABELS, min_size=k, max_size=k, unique=True)))
    else:
        cats = tuple(draw(st.lists(st.integers(-50, 50), min_size=k, max_size=k, unique=True)))
    idx = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    col = pd.Series([cats[i] for i in idx])
    if draw(st.booleans()):  # pandas categorical dtype
        col = pd.Series(pd.Categorical(col, categories=list(cats), ordered=kind == "ordinal"))
    return Feature(name, kind, categories=cats), col


@st.composite
def schema_and_frame(draw):
    n = draw(st.integers(1, 25))
    d = draw(st.integers(1, 6))
    feats, cols = [], {}
    for j in range(d):
        f, col = draw(feature_and_column(f"f{j}", n))
        feats.append(f)
        cols[f.name] = col
    frame = pd.DataFrame(cols)
    return Schema(feats).with_dtypes(frame), frame


def _assert_round_trip(schema: Schema, frame: pd.DataFrame, back: pd.DataFrame) -> None:
    assert list(back.columns) == list(frame.columns)
    for f in schema:
        a, b = frame[f.name], back[f.name]
        assert b.dtype == a.dtype, (f, a.dtype, b.dtype)
        if f.kind is FeatureKind.CONTINUOUS and a.dtype.kind == "f":
            scale = max(1.0, abs(f.lower), abs(f.upper))
            np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), rtol=0, atol=1e-9 * scale)
        else:
            pd.testing.assert_series_equal(b, a, check_names=False)


PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=schema_and_frame(), ordinal=st.sampled_from(["thermometer", "integer"]))
def test_round_trip_bounds_and_projection(data, ordinal):
    schema, frame = data
    enc = Encoder(schema, ordinal_encoding=ordinal).fit(frame)
    X = enc.transform(frame)
    assert X.shape == (len(frame), enc.n_features_out_)
    assert X.min(initial=0.0) >= 0.0 and X.max(initial=1.0) <= 1.0
    _assert_round_trip(schema, frame, enc.inverse_transform(X))
    # transform outputs are valid encodings: project leaves them alone
    np.testing.assert_array_equal(enc.project(X), X)


def _project_block_by_block(enc, Z):
    """The nearest valid encoding written out per feature block, from the definitions."""
    X = np.clip(Z, 0.0, 1.0)
    out = X.copy()
    for b in enc.blocks_:
        x, f = X[:, b.slice], b.feature
        if b.encoding == "scaled" and f.kind is FeatureKind.INTEGER:
            n = f.upper - f.lower
            out[:, b.start] = np.round(x[:, 0] * n) / n if n else 0.0
        elif b.encoding == "scaled" and f.lower == f.upper:
            out[:, b.start] = 0.0
        elif b.encoding == "integer_levels":
            n = f.n_levels - 1
            out[:, b.start] = np.round(x[:, 0] * n) / n if n else 0.0
        elif b.encoding == "binary":
            out[:, b.start] = x[:, 0] >= 0.5
        elif b.encoding == "onehot":
            out[:, b.slice] = np.arange(b.width)[None, :] == np.argmax(x, axis=1)[:, None]
        elif b.encoding == "thermometer":
            out[:, b.slice] = (x >= 0.5).sum(axis=1)[:, None] > np.arange(b.width)[None, :]
    return out


@PROPERTY
@given(data=schema_and_frame(), ordinal=st.sampled_from(["thermometer", "integer"]),
       seed=st.integers(0, 2**32 - 1))
def test_project_is_idempotent_and_decodes_to_valid_rows(data, ordinal, seed):
    schema, frame = data
    enc = Encoder(schema, ordinal_encoding=ordinal).fit(frame)
    Z = np.random.default_rng(seed).uniform(-0.5, 1.5, size=(7, enc.n_features_out_))
    P = enc.project(Z)
    # the vectorised projection is the block-by-block definition, also after a refit
    np.testing.assert_array_equal(P, _project_block_by_block(enc, Z))
    np.testing.assert_array_equal(enc.fit(frame).project(Z), P)
    assert P.min(initial=0.0) >= 0.0 and P.max(initial=1.0) <= 1.0
    np.testing.assert_array_equal(enc.project(P), P)
    raw = enc.inverse_transform(P)
    schema.validate(raw)  # every decoded row is a valid raw row
    # re-encoding gives the projection back, except where decoding must round to the raw
    # dtype (a continuous feature stored as integers)
    lossless = np.ones(enc.n_features_out_, dtype=bool)
    tol = np.full(enc.n_features_out_, 1e-12)
    for b in enc.blocks_:
        f = b.feature
        if b.kind is FeatureKind.CONTINUOUS and frame[b.name].dtype.kind in "iu":
            lossless[b.slice] = False
        elif b.kind is FeatureKind.CONTINUOUS and f.upper > f.lower:
            # raw values carry ~eps * |value| of rounding; relative to the span in model space
            tol[b.slice] += 4 * np.finfo(float).eps * max(abs(f.lower), abs(f.upper)) / (
                f.upper - f.lower)
    err = np.abs(enc.transform(raw) - P)
    assert (err[:, lossless] <= tol[lossless]).all(), err.max(axis=0)
