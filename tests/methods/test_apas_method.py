"""APAS (APΔS Algorithm 2): MILP-R's loop with the sampled Δ-test; APASCertifier."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema
from robustce.errors import ValidationError
from robustce.methods import APAS, MILPRobust
from robustce.models import ReLUNetwork
from robustce.models.network import class_margin
from robustce.robustness import (
    APASCertifier,
    CertStatus,
    ParameterShift,
    apas_certify,
    is_delta_robust,
)

RELU_2X_MINUS_1 = [(np.array([[2.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0]))]


def _toy():
    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    enc = rc.data.Encoder(Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    return rc.models.NetworkModel(RELU_2X_MINUS_1, enc), pd.DataFrame({"x": [0.0]}, index=["q"])


def test_certifier_follows_the_protocol_and_apas_certify():
    rng = np.random.default_rng(0)
    net = ReLUNetwork([(rng.normal(size=(5, 3)), rng.normal(size=5)), (rng.normal(size=(1, 5)), [0.1])])
    X = rng.normal(size=(10, 3))
    t = net.predict(X)
    t[0] = 1 - t[0]  # invalid on the network itself
    X[1] = np.nan
    cert = APASCertifier(0.1, alpha=0.99, R=0.95, random_state=3)
    c = cert.certify(net, X, t)
    assert len(c) == 10 and c.certifier == "apas"
    assert c.params == {"delta": 0.1, "p": "inf", "biases": True, "alpha": 0.99, "R": 0.95, "n": 90,
                        "fixed_draws": False}
    assert c.status[0] is CertStatus.NOT_ROBUST and c.status[1] is CertStatus.ERROR
    ref = apas_certify(net, X, 0.1, alpha=0.99, R=0.95, target_class=t,
                       random_state=cert.rng_for(np.where(np.isnan(X), 0.0, X), t))
    np.testing.assert_array_equal(c.robust, ref.passed)
    np.testing.assert_array_equal(c.columns["min_sampled_margin"], ref.min_margin)
    assert np.isnan(c.lower[~c.robust]).all() and (c.lower[c.robust] > 0).all()
    nominal = class_margin(net.forward(np.nan_to_num(X)), t)
    assert (c.upper[2:] <= nominal[2:] + 1e-12).all()  # the evidence is a concrete network
    assert c.robust.any() and c.not_robust[2:].any()
    again = APASCertifier(0.1, alpha=0.99, R=0.95, random_state=3).certify(net, X, t)
    np.testing.assert_array_equal(again.upper, c.upper)  # same seed and rows, same draws
    assert "min_sampled_margin" in c.to_frame().columns


def test_certifier_bad_parameters():
    for kwargs, match in [({"alpha": 1.0}, "alpha"), ({"R": 0.0}, "R"), ({"n": 0}, "n"),
                          ({"random_state": "x"}, "random_state")]:
        with pytest.raises(ValidationError, match=match):
            APASCertifier(0.1, **kwargs)
    with pytest.raises(ValidationError, match="shift"):
        APASCertifier(-0.1)


def test_apas_finds_a_nearer_ce_than_milp_r_that_keeps_the_class_on_fresh_draws():
    # z = relu(2x) − 1 on x ∈ [0, 1]; under δ = 0.15 only x > 0.8124 is Δ-robust in the worst
    # case (MILP-R's CE is x = 0.9125). The sampled test accepts nearer points whose flipping
    # share of Δ is tiny; fresh draws confirm a robust share of at least R (up to sampling error).
    model, q = _toy()
    shift = ParameterShift(0.15)
    milp_r = MILPRobust(model, shift=shift, tau=0.55, time_limit=20).explain(q)
    res = APAS(model, delta=0.15, tau=0.55, time_limit=20, random_state=0).explain(q)
    assert res.status["q"] == "found"
    cert = res.certificates.loc["q"]
    cf = res.counterfactuals_encoded
    assert cert["delta_status"] == "robust" and cert["min_sampled_margin"] > 0
    assert (cert["alpha"], cert["R"], cert["n"], cert["delta"]) == (0.999, 0.995, 1379, 0.15)
    assert cert["distance"] < milp_r.certificates.loc["q", "distance"]
    draws = shift.sample(model.network(), 200_000, random_state=1)
    robust_share = (class_margin(draws.forward(cf)[:, 0], 1) > 0).mean()
    assert robust_share >= 0.99
    assert not is_delta_robust(model, cf, shift, 1, precheck=False)[0]  # average case only
    assert cert["delta_max"] > 0.1


def test_apas_same_seed_same_result_and_delta_max_can_be_skipped():
    model, q = _toy()
    a = APAS(model, delta=0.15, tau=0.55, time_limit=20, random_state=4).explain(q)
    b = APAS(model, delta=0.15, tau=0.55, time_limit=20, random_state=4).explain(q)
    np.testing.assert_array_equal(a.counterfactuals_encoded, b.counterfactuals_encoded)
    assert a.certificates.loc["q", "delta_max"] == b.certificates.loc["q", "delta_max"]
    c = APAS(model, delta=0.15, tau=0.55, time_limit=20, random_state=4,
             report_delta_max=False).explain(q)
    assert np.isnan(c.certificates.loc["q", "delta_max"])
    assert list(c.certificates.columns) == list(APAS.certificate_columns)


def test_apas_parameters_are_checked_and_reported():
    model, _ = _toy()
    with pytest.raises(ValidationError, match="alpha"):
        APAS(model, alpha=1.5)
    with pytest.raises(ValidationError, match="delta_init"):
        APAS(model, delta_init=0)
    with pytest.raises(ValidationError, match="MILPRobust"):
        APAS(model, certifier=APASCertifier(0.1))
    with pytest.raises(ValidationError, match="same shift set"):
        APAS(model, delta=0.2, shift=0.3)
    assert APAS(model, shift=ParameterShift(0.3, biases=False)).shift.biases is False
    ex = APAS(model, delta=0.2, R=0.9, random_state=0)
    p = ex.get_params()
    assert p["delta"] == 0.2 and p["R"] == 0.9 and p["shift"] == ParameterShift(0.2)
    assert ex.certifier_.n == 66 and ex.certifier_.params()["alpha"] == 0.999
    again = APAS(model, **p)  # get_params round-trips
    assert again.shift == ex.shift and again.certifier_.params() == ex.certifier_.params()
