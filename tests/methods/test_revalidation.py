"""The Explainer base projects *every* method's output onto valid encodings before it is returned.

Built-in methods project their own output, so only an explainer that does not — the test double
here, which returns CEs between one-hot vertices and between integer levels — shows whether the
base class projects. A CE comes back projected (and valid) or is dropped; never off-grid.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import robustce as rc
from robustce.data import Feature, Schema
from robustce.methods.base import Explainer, QueryResult
from robustce.models import NetworkModel


def _world():
    schema = Schema([
        Feature("n", "integer", lower=0, upper=4),
        Feature("cat", "categorical", categories=("a", "b", "c")),
        Feature("x", "continuous", lower=0.0, upper=1.0),
    ])
    frame = pd.DataFrame({"n": [0, 1, 4], "cat": ["a", "a", "c"], "x": [0.1, 0.2, 0.9]})
    enc = rc.data.Encoder(schema).fit(frame)
    # model space: [n/4, cat_a, cat_b, cat_c, x]; class 1 iff n/4 + cat_c + x > 1.2
    W = np.array([[1.0, 0.0, 0.0, 1.0, 1.0]])
    model = NetworkModel([(W, np.array([-1.2]))], enc)
    return frame, enc, model


class OffGrid(Explainer):
    """Returns the given encoded rows as they are: off the integer grid, between one-hot vertices."""

    name = "off_grid"

    def __init__(self, model, data=None, *, rows=None, **kw):
        super().__init__(model, data, **kw)
        self.rows = rows

    def _explain_one(self, x, target):
        return QueryResult("found", self.rows.copy(), {})


def test_off_grid_ces_come_back_projected_and_valid():
    frame, enc, model = _world()
    query = frame.iloc[[0]]  # n=0, cat=a, x=0.1: class 0
    assert model.predict(query)[0] == 0
    rows = np.array([
        [0.6, 0.2, 0.1, 0.7, 0.55],   # n between levels 2 and 3, cat between vertices (c wins)
        [0.9, 0.0, 0.45, 0.55, 0.4],  # n between 3 and 4, cat between b and c
    ])
    res = OffGrid(model, rows=rows).explain(query)
    cfs = res.counterfactuals_encoded
    assert len(cfs) == 2
    # on the grid: integer n in quarters, exactly one category set, x unchanged
    np.testing.assert_array_equal(cfs, enc.project(rows))
    np.testing.assert_array_equal(cfs[:, 0] * 4, np.round(cfs[:, 0] * 4))
    np.testing.assert_array_equal(cfs[:, 1:4].sum(axis=1), [1.0, 1.0])
    assert set(np.unique(cfs[:, 1:4])) == {0.0, 1.0}
    # the decoded rows are real raw rows and the model puts them in the target class
    raw = res.counterfactuals
    assert list(raw["cat"]) == ["c", "c"]
    assert list(raw["n"]) == [2, 4]
    assert (model.predict(cfs) == 1).all()


def test_off_grid_ce_invalid_after_projection_is_dropped():
    frame, enc, model = _world()
    query = frame.iloc[[0]]
    # valid as given (0.55 + 0.3 + 0.4 = 1.25 > 1.2) but the projection snaps cat_c to 0
    # (argmax picks b) and n to 0.5: 0.5 + 0 + 0.4 < 1.2, so the CE must not be returned
    rows = np.array([[0.55, 0.0, 0.35, 0.3, 0.4]])
    assert model.network().forward(rows)[0, 0] > 0
    res = OffGrid(model, rows=rows).explain(query)
    assert len(res.counterfactuals_encoded) == 0
    assert res.status.iloc[0] == "error"
    assert "forward-pass" in res.messages.iloc[0]
