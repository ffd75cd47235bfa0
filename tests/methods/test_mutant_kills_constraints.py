"""A ``>=`` relation (the lower side of a compiled row ``lower <= A x <= upper``) in the exact
methods: the older tests' relations were all ``<=``, so reading a lower bound backwards in one
backend went unseen (issue 47, mutants ``smt_relation_lower_sense_flipped`` and
``milp_relation_lower_dropped``). Checked by the constraint's own evaluator on the raw CEs,
and shown binding: unconstrained CEs break it."""

from __future__ import annotations

import pytest
from test_constraints_methods import (  # tests/methods: rootdir-style import
    _assert_all_satisfy,
    _queries,
    loan,  # noqa: F401 - the module's fixture
)

import robustce as rc
from robustce.data.constraints import Constraints

#: rejected applicants get their CEs by raising income: this keeps debt up with it
LOWER = ["debt >= 0.3 * income"]


def _explainer(name: str, model, data, constraints=None):
    if name == "milp_nearest":
        return rc.methods.MILPNearest(model, data, constraints=constraints, time_limit=60)
    return rc.methods.MACE(model, data, backend=name.removeprefix("mace-"), epsilon=1e-3,
                           constraints=constraints, time_limit=60)


@pytest.mark.parametrize("name", [pytest.param("mace-smt", marks=pytest.mark.slow), "mace-milp",
                                  "milp_nearest"])
def test_exact_methods_honour_a_greater_or_equal_relation(loan, name):  # noqa: F811
    data, mlp, _ = loan
    c = Constraints(LOWER)
    queries = _queries(data, mlp, n=5)
    fc = _explainer(name, mlp, data).explain(queries).counterfactuals
    assert not c.satisfied(fc[queries.columns].reset_index(drop=True),
                           queries.loc[fc["query_id"].to_numpy()].reset_index(drop=True)).all()
    res = _explainer(name, mlp, data, c).explain(queries)
    assert set(res.status) <= {"found", "infeasible"}, res.to_frame()["message"]
    assert (res.status == "found").sum() >= 3
    _assert_all_satisfy(res, queries, c)
