"""The Explainer base: target classes, already-target status, re-validation of CEs."""

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.methods.base import Explainer, QueryResult
from robustce.models import NetworkModel


@pytest.fixture()
def setup():
    df = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [0.0, 1.0, 0.0, 1.0],
                       "age": [20, 30, 40, 50]})
    schema = rc.data.infer_schema(df, immutable=["age"])
    enc = rc.data.Encoder(schema).fit(df)
    # class 1 iff a/3 + b > 1
    model = NetworkModel([(np.array([[1.0, 1.0, 0.0]]), np.array([-1.0]))], enc)
    return df, enc, model


class Returns(Explainer):
    """Returns fixed encoded CEs for every query."""

    name = "returns"

    def __init__(self, model, data=None, *, cfs=None, status="found", **kw):
        super().__init__(model, data, **kw)
        self.cfs = cfs
        self.status = status

    def _explain_one(self, x, target):
        return QueryResult(self.status, None if self.cfs is None else self.cfs.copy(), {"k": 1})


def test_already_target_queries_get_a_status_not_a_call(setup):
    df, enc, model = setup
    calls = []

    class Spy(Returns):
        def _explain_one(self, x, target):
            calls.append(target)
            return QueryResult("not_found")

    res = Spy(model, target_class=1).explain(df)
    pred = model.predict(df)
    assert list(res.status[pred == 1]) == ["already_target"] * int(pred.sum())
    assert len(calls) == int((pred == 0).sum())
    assert all(t == 1 for t in calls)


def test_invalid_ces_are_dropped_by_the_forward_pass_check(setup):
    df, enc, model = setup
    q = df.iloc[[0]]  # a=0, b=0: class 0
    good = enc.transform(pd.DataFrame({"a": [3.0], "b": [1.0], "age": [20]}))
    bad = enc.transform(pd.DataFrame({"a": [0.0], "b": [0.0], "age": [20]}))
    res = Returns(model, cfs=np.vstack([bad, good])).explain(q)
    assert res.status.iloc[0] == "found"
    assert len(res.counterfactuals) == 1
    np.testing.assert_allclose(res.counterfactuals_encoded[0], good[0])
    assert "forward-pass" in res.messages.iloc[0]
    only_bad = Returns(model, cfs=bad).explain(q)
    assert only_bad.status.iloc[0] == "error"
    assert len(only_bad.counterfactuals) == 0


def test_ces_changing_immutable_features_are_dropped(setup):
    df, enc, model = setup
    q = df.iloc[[0]]
    moved_age = enc.transform(pd.DataFrame({"a": [3.0], "b": [1.0], "age": [50]}))
    res = Returns(model, cfs=moved_age).explain(q)
    assert res.status.iloc[0] == "error"
    assert "actionability" in res.messages.iloc[0]


def test_query_ids_are_index_labels_and_counterfactuals_are_decoded(setup):
    df, enc, model = setup
    q = df.iloc[[0, 2]].set_axis(["alice", "bob"])
    cf = enc.transform(pd.DataFrame({"a": [3.0], "b": [1.0], "age": [20]}))
    res = Returns(model, cfs=cf).explain(q)
    assert list(res.counterfactuals["query_id"]) == ["alice"]  # bob's age differs -> dropped
    assert res.status["bob"] == "error"
    row = res.counterfactuals.iloc[0]
    assert row["a"] == 3.0 and row["b"] == 1 and row["age"] == 20
    assert res.counterfactuals["age"].dtype == np.int64


def test_bad_queries_and_parameters_raise_clear_errors(setup):
    df, enc, model = setup
    with pytest.raises(ValidationError, match="missing values"):
        Returns(model).explain(df.assign(a=[np.nan, 1, 2, 3]))
    with pytest.raises(ValidationError, match="unexpected columns"):
        Returns(model).explain(df.assign(zzz=1))
    with pytest.raises(ValidationError, match="target_class"):
        Returns(model, target_class=5)
    with pytest.raises(ValidationError, match="time_limit"):
        Returns(model, time_limit=0)
    with pytest.raises(ValidationError, match="shape"):
        Returns(model).explain(np.zeros((2, 7)))


def test_binary_default_target_is_the_other_class(setup):
    df, enc, model = setup
    res = Returns(model, status="not_found").explain(df)
    np.testing.assert_array_equal(res.target_class.to_numpy(), 1 - model.predict(df))
    assert (res.status == "not_found").all()


def test_unknown_status_is_rejected():
    with pytest.raises(ValidationError, match="unknown status"):
        QueryResult("robust-ish")


def test_param_names_come_from_the_constructor():
    assert Returns.param_names() == ["cfs", "status", "target_class", "time_limit",
                                     "random_state", "n_jobs", "constraints"]
    assert Explainer.param_names() == ["target_class", "time_limit", "random_state", "n_jobs",
                                       "constraints"]


def test_revalidation_handles_mixed_batches(setup):
    """Queries with no CE, all-valid CEs and partly invalid CEs in one batch (the last CE of the
    batch invalid, followed by a query without CEs)."""
    df, enc, model = setup
    good = enc.transform(pd.DataFrame({"a": [3.0], "b": [1.0], "age": [20]}))[0]
    bad = enc.transform(pd.DataFrame({"a": [0.0], "b": [0.0], "age": [20]}))[0]
    plan = {0: np.vstack([good, bad]), 1: None, 2: np.vstack([good])}

    class Planned(Explainer):
        name = "planned"

        def _explain_batch(self, X, targets):
            return [QueryResult("found" if plan[i] is not None else "not_found", plan[i])
                    for i in range(len(X))]

    q = pd.DataFrame({"a": [0.0, 0.0, 0.0], "b": [0.0, 0.0, 0.0], "age": [20, 20, 20]})
    res = Planned(model, target_class=1).explain(q)
    assert list(res.status) == ["found", "not_found", "found"]
    assert list(res.counterfactuals["query_id"]) == [0, 2]
    assert "1 CE(s) failed" in res.messages[0] and res.messages[2] == ""
