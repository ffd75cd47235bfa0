"""WachterRobust (Wacht-R): valid CEs; those called Δ-robust survive sampling and a weight
attack; the shared margin loop's statuses; bad parameters name themselves."""

from __future__ import annotations

import numpy as np
import pytest

import robustce as rc
from robustce.methods import WachterRobust
from robustce.methods.registry import build_explainer
from robustce.models.network import class_margin
from robustce.robustness import ExactDeltaCertifier, ParameterShift


@pytest.fixture(scope="module")
def diab(free_diabetes_setup):
    return free_diabetes_setup


def test_ces_are_valid_and_delta_robust_on_diabetes(diab, check_delta_robust):
    train, test, model = diab
    shift = ParameterShift(0.02)
    res = WachterRobust(model, train, shift=shift, max_iter=100, time_limit=30).explain(test.frame.iloc[:6])
    found = res.status == "found"
    assert found.sum() >= 2, res.messages.to_dict()
    cfs = res.counterfactuals_encoded
    owner = res.counterfactuals["query_id"].to_numpy()
    t = res.target_class.loc[owner].to_numpy()
    assert (model.predict(cfs) == t).all()
    cert = res.certificates.loc[found]
    assert (cert["delta_status"] == "robust").all() and (cert["worst_case_margin"] > 0).all()
    assert (cert["delta"] == 0.02).all()
    # the margin each CE reached is at least the last round's τ
    assert (class_margin(model.network().forward(cfs), t) >= cert["tau"].to_numpy() - 1e-9).all()
    check_delta_robust(model, res, shift)


def test_ces_are_valid_on_adult(adult_setup, check_delta_robust):
    train, test, model = adult_setup
    shift = ParameterShift(0.01)
    q = test.frame.iloc[:6]
    res = WachterRobust(model, train, shift=shift, max_iter=100, time_limit=30).explain(q)
    assert set(res.status) <= {"found", "already_target", "no_robust_point", "not_found"}
    assert (res.status == "found").any(), res.messages.to_dict()
    check_delta_robust(model, res, shift)


def test_undecided_tests_are_never_robust(diab):
    """A certifier whose every answer is a timeout: nothing is found, the status is timeout."""
    train, test, model = diab

    class Undecided(ExactDeltaCertifier):
        def certify(self, *args, **kwargs):
            res = super().certify(*args, **kwargs)
            res.status[:] = rc.robustness.CertStatus.TIMEOUT
            return res

    shift = ParameterShift(0.02)
    res = WachterRobust(model, train, shift=shift, max_rounds=2, max_iter=100, time_limit=20,
                        certifier=Undecided(shift)).explain(test.frame.iloc[:4])
    assert "found" not in set(res.status) and "no_robust_point" not in set(res.status)
    assert "timeout" in set(res.status)
    for label in res.status.index[res.status == "timeout"]:
        assert "undecided" in res.messages[label]


def test_registry_and_params(diab):
    train, _, model = diab
    ex = build_explainer("wacht-r", model, train, shift=0.03)
    assert isinstance(ex, WachterRobust) and ex.shift.delta == 0.03
    rebuilt = WachterRobust(model, train, **ex.get_params())
    assert rebuilt.get_params()["shift"] == ex.shift
    for bad, name in ((dict(tau=0), "tau"), (dict(growth=1.0), "growth"),
                      (dict(shift=-1), "shift"), (dict(max_rounds=0), "max_rounds"),
                      (dict(bisect_tol=1.5), "bisect_tol")):
        with pytest.raises(rc.errors.ValidationError, match=name):
            WachterRobust(model, train, **bad)
    with pytest.raises(rc.errors.SolverError):
        WachterRobust(model, train, solver="cplex")
    assert np.isfinite(ex.tau)
