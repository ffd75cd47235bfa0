"""The APΔS authors' generation-loop options (issue 31): a fixed set of draws for every test
(``fixed_draws``) and the additive margin schedule (``tau_step``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema
from robustce.errors import ValidationError
from robustce.methods import APAS, MILPRobust
from robustce.methods.margin_loop import MarginSchedule
from robustce.models import ReLUNetwork
from robustce.robustness import APASCertifier

# logit = relu(2x) − 1 on x ∈ [0, 1]: the largest margin towards class 1 is 1 (at x = 1)
RELU_2X_MINUS_1 = [(np.array([[2.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0]))]


def _toy():
    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    enc = rc.data.Encoder(Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    return rc.models.NetworkModel(RELU_2X_MINUS_1, enc), pd.DataFrame({"x": [0.0]}, index=["q"])


def _net() -> ReLUNetwork:
    rng = np.random.default_rng(0)
    return ReLUNetwork([(rng.normal(size=(6, 3)), rng.normal(size=6)),
                        (rng.normal(size=(1, 6)), [0.2])])


def test_fixed_draws_test_every_ce_on_the_same_networks_in_any_batch():
    net = _net()
    X = np.random.default_rng(1).normal(size=(3, 3))
    t = net.predict(X)
    fixed = APASCertifier(0.2, n=200, random_state=1, fixed_draws=True)
    alone = fixed.certify(net, X[:1], t[:1]).columns["min_sampled_margin"][0]
    in_batch = fixed.certify(net, X[::-1], t[::-1]).columns["min_sampled_margin"][-1]
    assert alone == pytest.approx(in_batch, abs=1e-12)  # same 200 networks in any batch
    keyed = APASCertifier(0.2, n=200, random_state=1)  # the default: draws keyed by the rows
    a = keyed.certify(net, X[:1], t[:1]).columns["min_sampled_margin"][0]
    b = keyed.certify(net, X[::-1], t[::-1]).columns["min_sampled_margin"][-1]
    assert abs(a - b) > 1e-6
    assert fixed.params()["fixed_draws"] is True


def test_fixed_draws_need_an_int_seed():
    with pytest.raises(ValidationError, match="fixed_draws needs an int random_state"):
        APASCertifier(0.1, n=10, fixed_draws=True)
    with pytest.raises(ValidationError, match="fixed_draws"):
        APASCertifier(0.1, n=10, random_state=1, fixed_draws="yes")


def test_apas_passes_fixed_draws_and_n_to_its_certifier():
    model, _ = _toy()
    m = APAS(model, delta=0.05, n=10_000, fixed_draws=True, random_state=1)
    m._check_params()
    assert m.certifier_.fixed_draws is True and m.certifier_.n == 10_000
    assert m.get_params()["fixed_draws"] is True
    assert APAS(model, delta=0.05, random_state=1).get_params()["fixed_draws"] is False


def test_additive_schedule_steps_by_tau_step_and_never_bisects():
    s = MarginSchedule(0.01, growth=2.0, slack=0.05, bisect_tol=1e-3, step=0.2)
    assert s.not_robust(5.0) and s.tau == pytest.approx(0.21)  # not the drop-based 5.25
    assert s.not_robust(5.0) and s.tau == pytest.approx(0.41)
    assert not s.unreachable()  # the first unreachable margin ends the search
    default = MarginSchedule(0.01, growth=2.0, slack=0.05, bisect_tol=1e-3)
    assert default.not_robust(5.0) and default.tau > 5.0


def test_milp_robust_margins_follow_the_authors_schedule():
    data = rc.datasets.load("synthetic_loan")
    train, test = data.split(test_size=0.2, random_state=0)
    model = rc.models.MLP(hidden_layers=(10,), epochs=30, random_state=0).fit(train)
    rejected = test.frame[model.predict(test.frame) == 0].head(2)
    res = MILPRobust(model, train, shift=0.05, tau=0.01, tau_step=0.2, target_class=1,
                     max_rounds=30).explain(rejected).to_frame()
    assert (res["status"] == "found").all()
    assert (res["rounds"] > 1).all()  # the schedule was exercised
    expected = 0.01 + 0.2 * (res["rounds"] - 1)
    np.testing.assert_allclose(res["tau"], expected, rtol=1e-9)


def test_additive_schedule_stops_at_the_first_unreachable_margin():
    model, q = _toy()
    # at δ = 0.3 no point of [0, 1] keeps class 1 (the worst case at x = 1 is 0.7·1.4 − 1.3 < 0)
    kw = dict(shift=0.3, tau=0.5, target_class=1, max_rounds=20)
    r = MILPRobust(model, tau_step=0.6, **kw).explain(q)
    row = r.to_frame().iloc[0]
    assert row["status"] == "no_robust_point" and row["rounds"] == 2  # 0.5 (not robust), 1.1 (out of reach)
    assert "margin step 0.6" in row["message"]
    bisecting = MILPRobust(model, **kw).explain(q).to_frame().iloc[0]
    assert bisecting["rounds"] > 2


def test_tau_step_must_be_positive():
    model, q = _toy()
    with pytest.raises(ValidationError, match="tau_step"):
        MILPRobust(model, shift=0.1, tau_step=0.0, target_class=1).explain(q)
