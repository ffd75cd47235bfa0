"""NearestNeighbour: exact against brute force, reachability, statuses, one tree per class."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.methods import nearest_neighbour as nn_module
from robustce.methods.nearest_neighbour import NearestNeighbour

ORD = {"l1": 1, "l2": 2, "linf": np.inf}


def queries_of(test, model, target, n):
    return test.frame[model.predict(test.frame) != target].iloc[:n]


def with_actionability(data, **acts):
    return dataclasses.replace(data, schema=data.schema.with_actionability(**acts))


def brute_force(model, train, X, target, norm="l1", k=1):
    """Per query: the distances of the k nearest distinct reachable target-class points."""
    enc = model.encoder
    C = enc.transform(train.frame)
    C = np.unique(C[model.predict(C) == target], axis=0)
    out = []
    for x in X:
        d = C - x
        ok = np.all(np.abs(d[:, enc.immutable_mask_]) <= 1e-9, axis=1)
        ok &= np.all(d[:, enc.increasing_mask_] >= -1e-7, axis=1)
        ok &= np.all(d[:, enc.decreasing_mask_] <= 1e-7, axis=1)
        dist = np.sort(np.linalg.norm(d[ok], ord=ORD[norm], axis=1))
        out.append(dist[:k])
    return out


@pytest.fixture(scope="module")
def diabetes_monotone(diabetes_setup):
    """Diabetes with only Age immutable (the loader's DiabetesPedigreeFunction is nearly unique
    per row) and Glucose, BMI decrease-only."""
    train, test, _ = diabetes_setup
    train = with_actionability(train, DiabetesPedigreeFunction="free", Pregnancies="free",
                               Glucose="decrease", BMI="decrease")
    return train, test, rc.models.MLP((20, 10), epochs=30, random_state=0).fit(train)


@pytest.fixture(scope="module")
def diabetes_free(diabetes_setup):
    """Diabetes with every feature free: the search is the tree's own k nearest."""
    train, test, _ = diabetes_setup
    train = with_actionability(train, **{n: "free" for n in train.schema.names})
    return train, test, rc.models.MLP((20, 10), epochs=30, random_state=0).fit(train)


@pytest.mark.parametrize("setup", ["diabetes_monotone", "diabetes_free"])
@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_matches_brute_force_on_diabetes(setup, norm, request):
    train, test, model = request.getfixturevalue(setup)
    if setup == "diabetes_free":
        assert not (model.encoder.immutable_mask_.any() or model.encoder.increasing_mask_.any()
                    or model.encoder.decreasing_mask_.any())
    q = queries_of(test, model, 0, 60)
    res = NearestNeighbour(model, train, target_class=0, norm=norm, n_neighbours=3).explain(q)
    want = brute_force(model, train, model.encoder.transform(q), 0, norm, k=3)
    enc = model.encoder
    for i, qid in enumerate(q.index):
        if len(want[i]) == 0:
            assert res.status[qid] == "infeasible"
            continue
        assert res.status[qid] == "found"
        pos = res.cf_positions(qid)
        got = np.linalg.norm(res.counterfactuals_encoded[pos] - enc.transform(q.loc[[qid]]),
                             ord=ORD[norm], axis=1)
        np.testing.assert_allclose(got, want[i], rtol=1e-9, atol=1e-12)
        assert res.certificates.loc[qid, "distance"] == pytest.approx(want[i][0])
    assert (res.status == "found").sum() > 10


def test_immutables_and_monotone_respected_on_adult(adult_setup):
    train, test, model = adult_setup
    train = with_actionability(train, **{"education-num": "increase"})
    model = rc.models.MLP((20, 10), epochs=15, random_state=0).fit(train)
    q = queries_of(test, model, 1, 300)
    res = NearestNeighbour(model, train).explain(q)
    enc = model.encoder
    want = brute_force(model, train, enc.transform(q), 1)
    found = res.status == "found"
    assert found.sum() > 50
    for i, qid in enumerate(q.index):
        assert res.status[qid] == ("found" if len(want[i]) else "infeasible")
        if len(want[i]):
            assert res.certificates.loc[qid, "distance"] == pytest.approx(want[i][0])
    cf = res.counterfactuals.set_index("query_id")
    for col in ["age", "sex", "race", "marital-status", "native-country"]:
        assert (cf[col] == q.loc[cf.index, col]).all()
    assert (cf["education-num"] >= q.loc[cf.index, "education-num"]).all()
    # each CE is a training row, predicted in the target class
    assert (model.predict(res.counterfactuals_encoded) == 1).all()
    rows = res.certificates.loc[found, "training_index"].astype(np.int64)
    np.testing.assert_allclose(enc.transform(train.frame.loc[rows]),
                               res.counterfactuals_encoded[res.counterfactuals["cf_rank"] == 0])


def test_infeasible_when_no_training_point_shares_the_immutables(diabetes_setup):
    train, test, model = diabetes_setup  # loader schema: DiabetesPedigreeFunction immutable
    q = queries_of(test, model, 1, 20)
    res = NearestNeighbour(model, train).explain(q)
    want = brute_force(model, train, model.encoder.transform(q), 1)
    for i, qid in enumerate(q.index):
        assert res.status[qid] == ("found" if len(want[i]) else "infeasible")
    bad = res.status == "infeasible"
    assert bad.any()
    assert res.messages[bad].str.contains("immutable").all()
    assert (res.certificates.loc[bad, "n_candidates"] == 0).all() or \
        res.messages[bad].str.contains("increase/decrease").any()


def test_tree_built_once_per_target_class(diabetes_setup, monkeypatch):
    train, test, model = diabetes_setup
    built = []
    real = nn_module.cKDTree

    def counting(*a, **kw):
        built.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(nn_module, "cKDTree", counting)
    nn = NearestNeighbour(model, train)
    nn.explain(test.frame.iloc[:50])
    nn.explain(test.frame.iloc[50:120])
    assert len(built) == 2  # one per target class (queries of both classes)


def test_array_queries_and_already_target(diabetes_setup):
    train, test, model = diabetes_setup
    X = model.encoder.transform(test.frame.iloc[:30])
    res = NearestNeighbour(model, train, target_class=1).explain(X)
    assert (res.status[model.predict(X) == 1] == "already_target").all()
    assert set(res.status) <= {"found", "infeasible", "already_target"}


def test_validation(diabetes_setup):
    train, _, model = diabetes_setup
    with pytest.raises(ValidationError, match="training data"):
        NearestNeighbour(model, None)
    with pytest.raises(ValidationError, match="n_neighbours"):
        NearestNeighbour(model, train, n_neighbours=0)
    with pytest.raises(ValidationError, match="norm"):
        NearestNeighbour(model, train, norm="l7")
    assert NearestNeighbour.certificate_columns == ("distance", "n_candidates", "training_index")
    assert {"n_neighbours", "norm", "target_class"} <= set(NearestNeighbour.param_names())


def test_tiny_example_by_hand():
    """Three training points; the query may not change ``g`` (immutable)."""
    df = pd.DataFrame({"a": [0.0, 1.0, 0.2, 0.9], "g": [0, 0, 1, 1]})
    y = pd.Series([0, 1, 1, 1])
    schema = rc.data.infer_schema(df, immutable=["g"], kinds={"g": "binary"})
    data = rc.data.Dataset(df, y, schema)
    enc = rc.data.Encoder(schema).fit(df)

    class Threshold(rc.models.Model):  # class 1 iff a > 0.5 or g = 1
        encoder = enc

        def logits(self, X):
            Z = self.encode(X)
            return (np.maximum(Z[:, 0] - 0.5, Z[:, 1] - 0.5))[:, None]

    res = NearestNeighbour(Threshold(), data).explain(pd.DataFrame({"a": [0.1], "g": [0]}))
    assert res.status.iloc[0] == "found"
    assert res.counterfactuals[["a", "g"]].iloc[0].tolist() == [1.0, 0]  # not (0.2, g=1)
    assert res.certificates["distance"].iloc[0] == pytest.approx(0.9)
