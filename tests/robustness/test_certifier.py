"""The certifier protocol and its first implementation, the exact Δ-test."""

from __future__ import annotations

import numpy as np
import pytest

from robustce.errors import ValidationError
from robustce.models.network import ReLUNetwork
from robustce.robustness import (
    Certificates,
    Certifier,
    CertStatus,
    ExactDeltaCertifier,
    ParameterShift,
    exact_worst_case,
    is_delta_robust,
)


def _case(k: int = 1):
    rng = np.random.default_rng(3)
    net = ReLUNetwork([(rng.normal(size=(6, 3)), rng.normal(size=6)),
                       (rng.normal(size=(k, 6)), rng.normal(size=k))])
    X = rng.uniform(size=(30, 3))
    return net, X, net.predict(X)


@pytest.mark.parametrize(("k", "delta"), [(1, 0.3), (3, 0.1)])
def test_exact_certifier_agrees_with_the_exact_test(k, delta):
    net, X, t = _case(k)
    shift = ParameterShift(delta)
    cert = ExactDeltaCertifier(shift).certify(net, X, t)
    assert isinstance(cert, Certificates) and len(cert) == len(X)
    np.testing.assert_array_equal(cert.robust, is_delta_robust(net, X, shift, t))
    assert cert.robust.any() and cert.not_robust.any()
    full = exact_worst_case(net, X, shift, t, precheck=False)
    # lower is a proven bound of the exact worst case, upper a margin some network attains
    assert np.all(cert.lower <= full.value + 1e-6) and np.all(cert.upper >= full.value - 1e-6)
    for i in np.flatnonzero(cert.not_robust):  # evidence: a network in Δ that flips the class
        w = cert.evidence[i]
        assert shift.contains(net, w, atol=1e-9) and w.predict(X[i:i + 1])[0] != t[i]
    frame = cert.to_frame()
    assert len(frame) == len(X) and set(frame["status"]) <= {s.value for s in CertStatus}
    assert (frame["delta"] == delta).all() and (frame["certifier"] == "exact_delta").all()


def test_exact_value_option_reports_the_worst_case_of_robust_rows():
    net, X, t = _case(1)
    shift = ParameterShift(0.3)
    cert = ExactDeltaCertifier(shift, exact_value=True).certify(net, X, t)
    full = exact_worst_case(net, X, shift, t, precheck=False)
    rob = cert.robust
    assert rob.any()
    np.testing.assert_allclose(cert.lower[rob], full.value[rob], atol=1e-6)
    np.testing.assert_allclose(cert.columns["value"][rob], full.value[rob], atol=1e-6)


def test_certificates_check_their_shape_and_statuses():
    with pytest.raises(ValidationError, match="entries"):
        Certificates(["robust"], [1.0, 2.0], [1.0], [None], [0.0], [1], "toy")
    with pytest.raises(ValueError):
        Certificates(["proven"], [1.0], [1.0], [None], [0.0], [1], "toy")
    c = Certificates(["robust", "timeout"], [1.0, np.nan], [2.0, 0.5], [None, None], [0.1, 0.2],
                     [1, 0], "toy")
    assert c.robust.tolist() == [True, False] and c.status[1] is CertStatus.TIMEOUT
    assert c.to_frame()["lower"].isna().tolist() == [False, True]


def test_certifier_is_abstract_and_options_are_checked():
    with pytest.raises(TypeError):
        Certifier()
    with pytest.raises(ValidationError, match="unknown options"):
        ExactDeltaCertifier(0.1, cutoff=3)
    with pytest.raises(ValidationError, match="shift"):
        ExactDeltaCertifier("wide")
    c = ExactDeltaCertifier(0.05, time_limit=2)
    assert c.to_dict() == {"certifier": "exact_delta", "delta": 0.05, "p": "inf", "biases": True,
                           "solver": "highs", "time_limit": 2.0, "tol": 1e-6}


@pytest.mark.parametrize(("k", "delta"), [(1, 0.3), (3, 0.1)])
def test_worst_case_certifier_gives_the_argmax_network(k, delta):
    """worst_case=True: same decisions, lower = the exact worst case, and the evidence of a
    non-robust row is the network in Δ attaining it (PROPLACE's MILP (6))."""
    net, X, t = _case(k)
    shift = ParameterShift(delta)
    cert = ExactDeltaCertifier(shift, worst_case=True).certify(net, X, t)
    np.testing.assert_array_equal(cert.robust, is_delta_robust(net, X, shift, t))
    full = exact_worst_case(net, X, shift, t, precheck=False)
    np.testing.assert_allclose(cert.lower, full.value, atol=1e-6)
    for i in np.flatnonzero(cert.not_robust):
        w = cert.evidence[i]
        assert shift.contains(net, w, atol=1e-9)
        assert w.margin(X[i][None], int(t[i]))[0] == pytest.approx(full.value[i], abs=1e-6)
