"""§7.2 metrics: sampled δ_max and max provable δ per CE."""

import numpy as np

from robustce.evaluation.apas_metrics import SPECS, apas_delta_max, provable_delta_max
from robustce.models import ReLUNetwork
from robustce.robustness import max_provable_delta


def _net(seed=0, sizes=(3, 5, 1)):
    rng = np.random.default_rng(seed)
    return ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                        for i, o in zip(sizes[:-1], sizes[1:], strict=True)])


def test_sampled_is_at_least_provable_per_ce_and_invalid_rows_get_zero_or_nan():
    net = _net()
    C = np.random.default_rng(1).normal(size=(8, 3))
    t = net.predict(C)
    t[0] = 1 - t[0]  # row 0: the model does not give it its target class
    C[1] = np.nan
    sampled = apas_delta_max(net, C, t, delta_init=1e-3)
    proven = provable_delta_max(net, C, t, delta_init=1e-3)
    assert sampled[0] == 0.0 and proven[0] == 0.0
    assert np.isnan(sampled[1]) and np.isnan(proven[1])
    assert (sampled[2:] >= proven[2:]).all() and (sampled[2:] > proven[2:]).any()
    # provable_delta_max is max_provable_delta's δ
    ref = max_provable_delta(net, C[2:], t[2:], delta_init=1e-3).delta
    np.testing.assert_array_equal(proven[2:], ref)
    assert set(SPECS) == {"apas_delta_max", "max_provable_delta"}


def test_scalar_target_and_seed():
    net = _net(2)
    C = np.random.default_rng(3).normal(size=(4, 3))
    C = C[net.predict(C) == 1]
    assert len(C) >= 1
    a = apas_delta_max(net, C, 1, random_state=5)
    b = apas_delta_max(net, C, 1, random_state=5)
    np.testing.assert_array_equal(a, b)


def test_registered_metrics_and_the_named_config():
    from robustce.evaluation import METRICS, evaluate
    from robustce.evaluation.apas_metrics import register_apas_metrics
    from robustce.evaluation.config import resolve_config
    from robustce.evaluation.metrics import unregister_metric

    assert "apas_delta_max" not in METRICS  # opt-in: not among the default metrics
    register_apas_metrics()
    try:
        _check_registered_metrics(evaluate)
    finally:
        unregister_metric("apas_delta_max")
        unregister_metric("max_provable_delta")
    for quick in (False, True):
        cfg = resolve_config("apas-table1", quick=quick)
        assert [d.evaluation["delta"] for d in cfg.datasets] == [0.11, 0.02, 0.11, 0.05]
        assert [m.name for m in cfg.methods] == ["apas", "milp_robust", "wachter", "roar",
                                                    "wachter_robust", "proto_robust"]
        assert cfg.queries["n"] == (10 if quick else 50)


def _check_registered_metrics(evaluate):
    import pandas as pd

    import robustce as rc
    from robustce.data import Feature, Schema

    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11)})
    enc = rc.data.Encoder(Schema([Feature("x", "continuous", lower=0.0, upper=1.0)])).fit(frame)
    model = rc.models.NetworkModel([(np.array([[2.0]]), np.array([0.0])),
                                    (np.array([[1.0]]), np.array([-1.0]))], enc)
    res = rc.methods.MILPRobust(model, shift=0.15, tau=0.55, time_limit=20).explain(
        pd.DataFrame({"x": [0.0]}, index=["q"]))
    table = evaluate(res, model, metrics=["apas_delta_max", "max_provable_delta"])
    sampled, proven = table["apas_delta_max"].iloc[0], table["max_provable_delta"].iloc[0]
    assert sampled >= proven >= 0.15  # MILP-R's CE is proven at δ = 0.15
