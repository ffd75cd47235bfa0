"""Constraints: the relation language, validation against a schema, the raw evaluator and the
model-space translation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from robustce.data import Constraints, Encoder, Feature, Schema
from robustce.errors import ValidationError


@pytest.fixture
def schema():
    return Schema([
        Feature("age", "integer", 18, 90),
        Feature("years_employed", "integer", 0, 60),
        Feature("income", "continuous", 0.0, 200_000.0),
        Feature("debt", "continuous", 0.0, 150_000.0),
        Feature("city", "categorical", categories=("a", "b", "c")),
    ])


@pytest.fixture
def frame():
    return pd.DataFrame({"age": [30, 40, 20], "years_employed": [10, 30, 1],
                         "income": [50_000.0, 80_000.0, 10_000.0],
                         "debt": [20_000.0, 10_000.0, 9_000.0], "city": ["a", "b", "c"]})


def test_parse_linear_forms():
    c = Constraints(["debt <= 0.6 * income", "years_employed <= age - 16", "a + b == c",
                     "-x >= 2 * (y - 3) * 0.5"])
    r = {x.text: x for x in c.relations}
    assert dict(r["debt <= 0.6 * income"].coefs) == {"debt": 1.0, "income": -0.6}
    assert r["debt <= 0.6 * income"].rhs == 0.0
    assert dict(r["years_employed <= age - 16"].coefs) == {"age": -1.0, "years_employed": 1.0}
    assert r["years_employed <= age - 16"].rhs == -16.0
    assert r["a + b == c"].op == "=="
    assert dict(r["-x >= 2 * (y - 3) * 0.5"].coefs) == {"x": -1.0, "y": -1.0}
    assert r["-x >= 2 * (y - 3) * 0.5"].rhs == -3.0


@pytest.mark.parametrize("text, words", [
    ("debt * income <= 5", "not linear"),
    ("debt / income <= 5", "not allowed"),
    ("debt < income", "not allowed"),
    ("debt <= income <= 5", "exactly one comparison"),
    ("debt + 1", "exactly one comparison"),
    ("__import__('os') <= 1", "not allowed"),
    ("debt <= 'x'", "not a finite number"),
    ("debt <=", "not a relation"),
    ("", "non-empty"),
])
def test_bad_relations(text, words):
    with pytest.raises(ValidationError, match=words):
        Constraints([text])


def test_validate_against_schema(schema):
    Constraints(["debt <= 0.6 * income", "years_employed <= age - 16"]).validate(schema)
    with pytest.raises(ValidationError, match="unknown feature 'salary'"):
        Constraints(["debt <= salary"]).validate(schema)
    with pytest.raises(ValidationError, match="'city' is categorical"):
        Constraints(["city <= 1"]).validate(schema)
    with pytest.raises(ValidationError, match="holds nowhere"):
        Constraints(["age <= 10"]).validate(schema)
    with pytest.raises(ValidationError, match="max_changes"):
        Constraints(max_changes=0)
    with pytest.raises(ValidationError, match="max_changes=9 exceeds"):
        Constraints(max_changes=9).validate(schema)
    with pytest.raises(ValidationError, match="max_changes"):
        Constraints(max_changes=True)


def test_from_dict_round_trip():
    spec = {"relations": ["debt <= 0.6 * income"], "max_changes": 2}
    c = Constraints.from_dict(spec)
    assert c.to_dict() == spec and Constraints.from_dict(c.to_dict()) == c
    with pytest.raises(ValidationError, match="unknown keys"):
        Constraints.from_dict({"relation": []})
    with pytest.raises(ValidationError, match="mapping"):
        Constraints.from_dict(["x <= 1"])


def test_check_reports_violations(schema, frame):
    c = Constraints(["debt <= 0.6 * income", "years_employed <= age - 16"]).validate(schema)
    # row 2: debt 9000 > 6000; row 1: 30 > 24
    assert c.check(frame) == {"debt <= 0.6 * income": 1, "years_employed <= age - 16": 1}
    with pytest.raises(ValidationError, match=r"'debt <= 0.6 \* income' is violated by 1 of 3"):
        c.check(frame, strict=True)
    assert c.satisfied(frame).tolist() == [True, False, False]


def test_max_changes_counts_categoricals_once(schema, frame):
    c = Constraints(max_changes=1).validate(schema)
    q = frame.iloc[[0]]
    rows = pd.concat([frame.iloc[[0]]] * 3, ignore_index=True)
    rows.loc[1, "city"] = "b"
    rows.loc[2, ["city", "income"]] = ["c", 51_000.0]
    assert c.n_changed(rows, q).tolist() == [0, 1, 2]
    assert c.satisfied(rows, q).tolist() == [True, True, False]
    with pytest.raises(ValidationError, match="query_frame"):
        c.satisfied(rows)


def test_compile_is_exact(schema, frame):
    c = Constraints(["debt <= 0.6 * income", "years_employed <= age - 16",
                     "income - debt >= 5000"])
    enc = Encoder(schema).fit(frame)
    cc = c.compile(enc)
    rng = np.random.default_rng(0)
    X = enc.transform(frame)
    X = np.vstack([X] * 50)
    X[:, :4] = rng.random((len(X), 4))
    X[:, 0] = np.round(X[:, 0] * 72) / 72
    X[:, 1] = np.round(X[:, 1] * 60) / 60
    raw = enc.inverse_transform(X)
    assert (cc.satisfied(X[0], X) == c.satisfied(raw)).all()
    assert c.satisfied(raw).any() and not c.satisfied(raw).all()


@pytest.mark.parametrize("text, match", [
    ("years_employed == age + 0.5", "never equals 0.5"),
    ("2 * years_employed == 4 * age + 3", "multiple of 2"),
])
def test_units_that_cannot_match(schema, text, match):
    with pytest.raises(ValidationError, match=match):
        Constraints([text]).validate(schema)
    # the same on continuous features, or as an inequality, is fine
    Constraints(["2 * income == 4 * debt + 3", text.replace("==", "<=")]).validate(schema)


def test_infeasible_on_the_training_data_names_each_relation(schema, frame):
    c = Constraints(["debt >= income", "years_employed <= age - 16"]).validate(schema)
    with pytest.raises(ValidationError, match=r"hold on no training row: 'debt >= income' is "
                                              r"violated by 3 of 3 rows; 'years_employed <= "
                                              r"age - 16' is violated by 1 of 3 rows"):
        c.check_data(frame)
    ok = Constraints(["years_employed <= age - 16"]).validate(schema)
    assert ok.check_data(frame) == {"years_employed <= age - 16": 1}


def test_explainers_check_the_constraints_on_their_training_data():
    import robustce as rc
    from robustce.data.builtin import synthetic_loan
    from robustce.errors import ConstraintsDataWarning

    data = synthetic_loan(300, random_state=0)
    model = rc.models.MLP((4,), epochs=5, random_state=0).fit(data)
    n_bad = int((data.frame["debt"] > 0.5 * data.frame["income"]).sum())
    assert 0 < n_bad < len(data)
    with pytest.warns(ConstraintsDataWarning,
                      match=fr"'debt <= 0.5 \* income': {n_bad} of 300 rows"):
        rc.methods.MILPNearest(model, data, constraints={"relations": ["debt <= 0.5 * income"]})
    with pytest.raises(ValidationError, match="hold on no training row"):
        rc.methods.MILPNearest(model, data, constraints={"relations": ["debt >= 2 * income"]})
    import warnings
    assert "debt <= income" in data.meta["constraints"]["relations"]
    with warnings.catch_warnings():  # the shipped relations hold on every row: no warning
        warnings.simplefilter("error")
        rc.methods.MILPNearest(model, data, constraints=data.meta["constraints"])


def test_backtick_quoted_names():
    c = Constraints(["`hours-per-week` <= 60 + 0.5 * `a b`", "`x` + x >= 1"])
    r = c.relations
    assert dict(r[0].coefs) == {"hours-per-week": 1.0, "a b": -0.5} and r[0].rhs == 60.0
    assert dict(r[1].coefs) == {"x": 2.0}
    frame = pd.DataFrame({"hours-per-week": [50.0, 70.0], "a b": [0.0, 0.0], "x": [1.0, 0.0]})
    assert c.satisfied(frame).tolist() == [True, False]
    for bad in ["`hours <= 3", "`` <= 3"]:
        with pytest.raises(ValidationError, match="backtick|empty quoted"):
            Constraints([bad])


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_synthetic_loan_rows_satisfy_the_issues_relations(seed):
    """Every generated row keeps ``debt <= income`` and ``years_employed <= age - 16`` (the
    issue's demo relations), checked with pandas arithmetic, not the library's parser; the
    debt cap binds on some rows, so the relation is not vacuous."""
    from robustce.data.builtin import synthetic_loan

    data = synthetic_loan(2000, random_state=seed)
    f = data.frame
    assert set(data.meta["constraints"]["relations"]) == {"debt <= income",
                                                          "years_employed <= age - 16"}
    assert (f["debt"] <= f["income"]).all()
    assert (f["years_employed"] <= f["age"] - 16).all()
    assert (f["debt"] == f["income"]).sum() > 0  # rows on the cap
    assert Constraints.from_dict(data.meta["constraints"]).validate(data.schema).check(f) == {
        "debt <= income": 0, "years_employed <= age - 16": 0}
