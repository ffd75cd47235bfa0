"""RetrainRobust: CEs certified (δ, α)-robust to the user's retrain procedure — each one valid
on the user's model (its own estimator's forward pass), each certified, and kept by fresh
retrains (models neither the search nor the certificate used) at a share ≥ δ on average."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import robustce as rc
from robustce.errors import UnsupportedModelError
from robustce.models import RetrainProcedure


@pytest.fixture(scope="module")
def world():
    data = rc.datasets.load("moons", n_samples=300, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    est = LogisticRegression().fit(enc.transform(data.frame), data.y)
    model = rc.models.wrap(est, enc, class_names=data.class_names)
    queries = data.frame[model.predict(data.frame) == 0].iloc[::7].head(8)
    return data, enc, est, model, queries


@pytest.fixture(scope="module")
def explained(world):
    data, _, _, model, queries = world
    ex = rc.methods.RetrainRobust(model, data, share=0.9, confidence=0.9, random_state=0)
    return ex, ex.explain(queries)


def test_every_ce_is_certified_and_valid_on_the_users_model(world, explained):
    data, enc, est, _, _ = world
    ex, res = explained
    found = res.status == "found"
    assert found.sum() >= 6
    cert = res.certificates[found]
    assert (cert["verdict"] == "certified").all()
    assert (cert["share_lower"] > 0.9).all()
    cf = res.counterfactuals
    assert est.predict(enc.transform(cf[data.schema.names])).tolist() == [1] * len(cf)
    # the certificate recounts: the models it names accept the CE k times of n
    for q in cert.index:
        x = enc.transform(res.for_query(q))
        n, k = int(cert.loc[q, "n"]), int(cert.loc[q, "k"])
        models = ex.procedure_.models(range(ex.n_search, ex.n_search + n))
        assert sum(int(m.predict(x)[0] == 1) for m in models) == k


def test_fresh_retrains_keep_the_ces_at_least_at_the_share(world, explained):
    data, _, _, _, _ = world
    ex, res = explained
    cf = res.counterfactuals
    fresh = ex.procedure_.family(60, start=10_000)    # never used to search or certify
    shares = fresh.validity(cf[data.schema.names], 1).per_ce
    assert shares.mean() >= 0.9, shares


def test_the_base_ce_is_milp_nearests_and_costs_are_l1_to_the_query(world, explained):
    data, enc, _, _, queries = world
    ex, res = explained
    assert type(ex.base_) is rc.methods.MILPNearest     # an open model: the nearest CE, proven
    base = ex.base_.explain(queries)
    b = enc.transform(base.counterfactuals[data.schema.names])
    x = enc.transform(queries.loc[base.counterfactuals["query_id"]])
    np.testing.assert_allclose(res.certificates.loc[base.counterfactuals["query_id"],
                                                    "base_distance"], np.abs(b - x).sum(axis=1))
    found = res.status == "found"
    d = np.abs(enc.transform(res.counterfactuals[data.schema.names])
               - enc.transform(queries[found.to_numpy()])).sum(axis=1)
    np.testing.assert_allclose(res.certificates.loc[found, "distance"], d, atol=1e-9)


def test_retrains_are_cached_and_counted_in_meta(world, explained):
    _, _, _, _, queries = world
    ex, res = explained
    meta = res.meta["retrain"]
    assert meta["n_fitted"] >= ex.n_search and meta["search_models"] == [0, ex.n_search]
    assert meta["confidence_per_try"] == pytest.approx(1 - 0.1 / ex.max_tries)
    again = ex.explain(queries)
    assert again.meta["retrain"]["n_fitted"] == 0
    pd.testing.assert_frame_equal(again.counterfactuals, res.counterfactuals)


def test_a_procedure_no_candidate_can_meet_gives_not_found(world):
    data, enc, _, model, queries = world

    def flipped(seed: int):  # every retrain rejects everything the model accepts
        est = LogisticRegression().fit(enc.transform(data.frame), 1 - data.y)
        return rc.models.wrap(est, enc)

    res = rc.methods.RetrainRobust(model, data, procedure=flipped, n_search=4,
                                   max_models=60).explain(queries.head(3))
    assert (res.status == "not_found").all()
    assert res.messages.str.contains("passed the screen").all()
    assert len(res.counterfactuals) == 0


def test_a_black_box_with_its_own_procedure(world):
    data, _, _, _, _ = world

    class OnlyProba:
        __slots__ = ("shift",)

        def __init__(self, shift: float):
            self.shift = shift

        def predict_proba(self, frame):
            z = 4.0 * (frame["x1"].to_numpy() - 0.3 + self.shift) - 3.0 * frame["x2"].to_numpy()
            p1 = 1.0 / (1.0 + np.exp(-z))
            return np.column_stack([1.0 - p1, p1])

    model = rc.models.black_box(OnlyProba(0.0), data)
    proc = RetrainProcedure(lambda s: OnlyProba(np.random.default_rng(s).normal(0, 0.05)),
                            encoder=model.encoder)
    queries = data.frame[model.predict(data.frame) == 0].head(4)
    ex = rc.methods.RetrainRobust(model, data, procedure=proc, share=0.8, max_models=60)
    assert type(ex.base_) is rc.methods.NearestNeighbour    # MILPNearest cannot open it
    res = ex.explain(queries)
    found = res.status == "found"
    assert found.sum() >= 3
    cf = res.counterfactuals[data.schema.names]
    assert (OnlyProba(0.0).predict_proba(cf).argmax(axis=1) == 1).all()
    fresh = [OnlyProba(np.random.default_rng(1000 + i).normal(0, 0.05)) for i in range(100)]
    share = np.mean([(s.predict_proba(cf).argmax(axis=1) == 1) for s in fresh], axis=0)
    assert share.mean() >= 0.8
    with pytest.raises(UnsupportedModelError, match="cannot refit a black-box"):
        rc.methods.RetrainRobust(model, data)          # no procedure: robustce cannot refit it
