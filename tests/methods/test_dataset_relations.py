"""Issue 53 (8): the relations a dataset ships hold by default, in every method.

``synthetic_loan`` ships ``debt <= income`` and ``years_employed <= age - 16``
(``data.meta["constraints"]``). On the README's model and 20 of its test rows (both
directions: rows 60–79, where MILPNearest broke the relations in 2 CEs and MILP-R in 7 before
the default changed), every method's CEs satisfy them with default arguments;
``constraints=None`` (or ``"none"``) switches them off and the result's meta says which applied.
Relations are checked with ``pandas.eval`` of each side, not the library's parser.
"""

from __future__ import annotations

import pandas as pd
import pytest

import robustce as rc
from robustce.methods.base import Explainer, QueryResult
from robustce.methods.registry import convert_params

QUERIES = slice(60, 80)


@pytest.fixture(scope="module")
def readme():
    data = rc.datasets.load("synthetic_loan")
    train, test = data.split(test_size=0.2, random_state=0)
    model = rc.models.MLP(hidden_layers=(20, 10), random_state=0).fit(train)
    return data, train, model, test.frame.iloc[QUERIES]


def broken(frame: pd.DataFrame, relations: list[str]) -> int:
    """CE rows that break any relation (by more than 1e-6 of its scale), by pandas.eval."""
    bad = pd.Series(False, index=frame.index)
    for text in relations:
        op = next(o for o in ("<=", ">=", "==") if o in text)
        lhs, rhs = (frame.eval(side.strip()).astype(float) for side in text.split(op))
        tol = 1e-6 * (1 + rhs.abs() + lhs.abs())
        bad |= {"<=": lhs > rhs + tol, ">=": lhs < rhs - tol, "==": (lhs - rhs).abs() > tol}[op]
    return int(bad.sum())


def shipped(data) -> list[str]:
    return list(data.meta["constraints"]["relations"])


@pytest.mark.parametrize("cls, params", [
    (rc.methods.MILPNearest, {}),
    pytest.param(rc.methods.MILPRobust, {"shift": 0.01}, marks=pytest.mark.slow),
])
def test_exact_methods_keep_the_shipped_relations_by_default(readme, cls, params):
    data, train, model, queries = readme
    res = cls(model, train, **params).explain(queries)
    assert (res.status == "found").all()
    assert broken(res.counterfactuals, shipped(data)) == 0
    meta = res.meta["constraints"]
    assert meta["source"] == "dataset" and meta["dataset"] == "synthetic_loan"
    assert meta["relations"] == shipped(data) and meta["support"] == "exact"


@pytest.mark.parametrize("off", [None, "none"])
def test_opting_out_restores_the_unconstrained_ces(readme, off):
    data, train, model, queries = readme
    res = rc.methods.MILPRobust(model, train, shift=0.01, constraints=off).explain(queries)
    assert broken(res.counterfactuals, shipped(data)) >= 1  # what main returned by default
    meta = res.meta["constraints"]
    assert meta["source"] == "off"
    assert meta["not_applied"]["relations"] == shipped(data)
    assert "support" not in meta and "active" not in meta


@pytest.mark.parametrize("cls, params", [
    (rc.methods.NearestNeighbour, {}),
    (rc.methods.Wachter, {"random_state": 0}),
    (rc.methods.RBR, {"random_state": 0}),
])
def test_filter_methods_filter_by_the_shipped_relations_by_default(readme, cls, params):
    data, train, model, queries = readme
    res = cls(model, train, **params).explain(queries)
    assert broken(res.counterfactuals, shipped(data)) == 0
    assert res.meta["constraints"]["source"] == "dataset"
    assert res.meta["constraints"]["support"] == "filter"
    assert "constraints_removed" in res.to_frame().columns


def test_given_constraints_replace_the_shipped_ones(readme):
    data, train, model, queries = readme
    res = rc.methods.MILPNearest(model, train, constraints=["debt <= 0.5 * income"]
                                 ).explain(queries.head(3))
    meta = res.meta["constraints"]
    assert meta["source"] == "argument" and meta["relations"] == ["debt <= 0.5 * income"]
    assert meta["not_applied"]["relations"] == shipped(data)
    assert broken(res.counterfactuals, ["debt <= 0.5 * income"]) == 0


def test_without_data_nothing_is_applied(readme):
    _, _, model, queries = readme
    res = rc.methods.MILPNearest(model).explain(queries.head(2))
    assert "constraints" not in res.meta


def test_a_method_without_constraint_support_skips_the_shipped_ones(readme):
    _, train, model, queries = readme

    class Identity(Explainer):  # declares no constraint support
        name = "identity"

        def _explain_one(self, x, target):
            return QueryResult("not_found")

    res = Identity(model, train).explain(queries.head(2))
    meta = res.meta["constraints"]
    assert meta["source"] == "off" and "cannot honour" in meta["reason"]
    with pytest.raises(rc.errors.UnsupportedConstraintsError):
        Identity(model, train, constraints=["debt <= income"])


def test_unknown_constraints_word_is_a_clear_error(readme):
    _, train, model, _ = readme
    with pytest.raises(rc.errors.ValidationError, match="'datset'.*'dataset'"):
        rc.methods.MILPNearest(model, train, constraints="datset")


def test_configs_can_say_dataset_or_none():
    cls = rc.methods.MILPNearest
    assert convert_params(cls, {"constraints": "none"}) == {"constraints": "none"}
    assert convert_params(cls, {"constraints": "dataset"}) == {"constraints": "dataset"}
    with pytest.raises(rc.errors.ConfigError, match='"none"'):
        convert_params(cls, {"constraints": "off"})
