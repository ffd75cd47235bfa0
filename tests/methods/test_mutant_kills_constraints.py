"""A ``>=`` relation (the lower side of a compiled row ``lower <= A x <= upper``) in the exact
methods: the older tests' relations were all ``<=``, so reading a lower bound backwards in one
backend went unseen (issue 47, mutant ``smt_relation_lower_sense_flipped``). Checked by the
constraint's own evaluator on the raw CEs, and shown binding: unconstrained CEs break it."""

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


@pytest.mark.parametrize("backend", ["smt", "milp"])
def test_mace_honours_a_greater_or_equal_relation(loan, backend):  # noqa: F811
    data, mlp, _ = loan
    c = Constraints(LOWER)
    queries = _queries(data, mlp, n=5)
    free = rc.methods.MACE(mlp, data, backend=backend, epsilon=1e-3, time_limit=60).explain(queries)
    fc = free.counterfactuals
    assert not c.satisfied(fc[queries.columns].reset_index(drop=True),
                           queries.loc[fc["query_id"].to_numpy()].reset_index(drop=True)).all()
    res = rc.methods.MACE(mlp, data, backend=backend, epsilon=1e-3, constraints=c,
                          time_limit=60).explain(queries)
    assert set(res.status) <= {"found", "infeasible"}, res.to_frame()["message"]
    assert (res.status == "found").sum() >= 3
    _assert_all_satisfy(res, queries, c)
