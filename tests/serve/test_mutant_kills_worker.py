"""The worker's answers, recounted: each CE's ``changed`` features are those where the raw CE
differs from *its own* applicant's record (mutant ``worker_changed_against_the_first_query``),
and certify's ``valid`` is the model's own prediction of the supplied record against the
target (``worker_certify_valid_not_checked``)."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def served(model_dir):
    from robustce.serve import worker
    from robustce.serve.registry import load_served_model, model_spec

    m = load_served_model(model_spec(model_dir, "loan"))
    worker.register_models([m])
    return m


def _differs(a, b) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(float(a) - float(b)) > 1e-9 * max(1.0, abs(float(a)))
    return str(a) != str(b)


def test_changed_features_are_recounted_against_each_items_own_record(served):
    from robustce.serve import worker

    records = served.applicants.iloc[:4].to_dict("records")
    out = worker.explain_task({"model_id": "loan", "method": "nearest_neighbour", "params": {},
                               "records": records, "target_class": served.favourable,
                               "time_limit_s": 10, "seed": 0})
    checked = 0
    for rec, item in zip(records, out, strict=True):
        for cf, changed in zip(item["counterfactuals"], item["changed"], strict=True):
            want = sorted(f for f in rec if _differs(rec[f], cf[f]))
            assert sorted(changed) == want
            checked += 1
    assert checked >= 3


def test_certify_validity_is_the_models_prediction_of_each_record(served):
    from robustce.serve import worker

    target = served.favourable
    denied = served.applicants.iloc[:3].to_dict("records")
    expl = worker.explain_task({"model_id": "loan", "method": "nearest_neighbour", "params": {},
                                "records": denied, "target_class": target, "time_limit_s": 10,
                                "seed": 0})
    found = [cf for item in expl for cf in item["counterfactuals"]][:3]
    records = denied + found
    out = worker.certify_task({"model_id": "loan", "records": records, "target_class": target,
                               "certify": None, "seed": 0})
    pred = served.model.predict(pd.DataFrame(records)[served.schema.names])
    assert [o["valid"] for o in out] == [bool(p == target) for p in pred]
    assert [o["prediction"] for o in out] == [int(p) for p in pred]
    assert {o["valid"] for o in out} == {True, False}
