"""Decoding takes each categorical column's labels from the feature's categories restored to
its dtype once (``Encoder._restored_levels``): the result must equal restoring every decoded
column, for every kind of label dtype."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from robustce.data.encoder import Encoder, _restore_dtype
from robustce.data.schema import infer_schema


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 40
    return pd.DataFrame({
        "x": rng.uniform(0, 10, n),
        "colour": pd.Series(rng.choice(["red", "green", "blue"], n), dtype="string"),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], n), categories=["S", "M", "L"],
                               ordered=True),
        "shape": pd.Categorical(rng.choice(["a", "b"], n)),
        "code": pd.Series(rng.choice([3, 7, 11], n), dtype=object),
        "flag": rng.choice([True, False], n),
        "word": pd.Series(rng.choice(["ünï", "x y", ""], n), dtype=object),
    })


@pytest.mark.parametrize("ordinal", ["thermometer", "integer"])
def test_decoded_labels_equal_restoring_each_column(ordinal):
    frame = _frame()
    schema = infer_schema(frame, kinds={"code": "categorical", "word": "categorical"},
                          ordinal={"size": ["S", "M", "L"]})
    enc = Encoder(schema, ordinal_encoding=ordinal).fit(frame)
    X = enc.transform(frame)
    got = enc.inverse_transform(X)
    idx = enc.level_indices(X)
    for i, b in enumerate(enc.blocks_):
        f = b.feature
        if f.kind.is_numeric:
            continue
        cats = np.empty(f.n_levels, dtype=object)
        cats[:] = list(f.categories)
        want = _restore_dtype(pd.Series(cats[idx[:, i].astype(np.int64)], dtype=object), f)
        pd.testing.assert_series_equal(got[f.name], want, check_names=False)
    # and the decoded frame re-encodes to the same rows (the round trip explainers rely on)
    np.testing.assert_array_equal(enc.transform(got), X)
    assert enc.inverse_transform(X[:0]).shape == (0, len(schema))
