"""robustce.distance: one distance for methods, MILP objectives and metrics."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.spatial.distance import cdist

import robustce as rc
from robustce.distance import Distance, check_norm, raw_column_weights
from robustce.errors import ValidationError
from robustce.evaluation import evaluate
from robustce.evaluation import metrics as M
from robustce.methods.milp_nearest import MILPNearest
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.methods.wachter import Wachter
from robustce.solvers import MILP
from robustce.solvers.encodings import encode_distance, encode_input_domain

# ---------------------------------------------------------------------------------------------
# the object
# ---------------------------------------------------------------------------------------------


def test_model_space_norms_equal_numpy():
    rng = np.random.default_rng(0)
    A, B = rng.random((7, 5)), rng.random((7, 5))
    B[2] = A[2]
    B[3, :2] = A[3, :2]
    for norm, order in (("l1", 1), ("l2", 2), ("linf", np.inf)):
        np.testing.assert_allclose(Distance(norm).rowwise(A, B),
                                   np.linalg.norm(A - B, ord=order, axis=1), rtol=1e-12)
    np.testing.assert_array_equal(Distance("l0").rowwise(A, B), np.count_nonzero(A - B, axis=1))
    assert Distance("l0").rowwise(A, B)[3] == 3


def test_pairwise_equals_scipy_cdist_and_weights_scale_columns():
    rng = np.random.default_rng(1)
    A, B = rng.random((4, 3)), rng.random((6, 3))
    for norm, metric in (("l1", "cityblock"), ("l2", "euclidean"), ("linf", "chebyshev")):
        np.testing.assert_allclose(Distance(norm).pairwise(A, B), cdist(A, B, metric), rtol=1e-12)
    w = np.array([2.0, 0.5, 0.0])
    np.testing.assert_allclose(Distance("l1", weights=w).pairwise(A, B),
                               cdist(A * w, B * w, "cityblock"), rtol=1e-12)
    np.testing.assert_allclose(Distance("l2", weights=w).rowwise(A[0], B),
                               np.linalg.norm((B - A[0]) * w, axis=1), rtol=1e-12)
    # l0 counts weighted changes: a zero-weight column never counts
    assert Distance("l0", weights=w).rowwise([0, 0, 0], [1, 1, 1]).tolist() == [2.0]
    # the l0 tolerance
    assert Distance("l0").rowwise([0.0, 0.0], [1e-12, 0.1]).tolist() == [1.0]
    assert Distance("l0", tol=0.0).rowwise([0.0, 0.0], [1e-12, 0.1]).tolist() == [2.0]


@pytest.fixture()
def mixed():
    """integer n ∈ [0, 10], continuous r ∈ [−5, 5], ordinal o (4 levels), categorical c, binary b."""
    df = pd.DataFrame({"n": [0, 10, 2], "r": [-5.0, 5.0, 0.0],
                       "o": ["low", "mid", "high"], "c": ["a", "b", "c"], "b": [0, 1, 0]})
    schema = rc.data.Schema([
        rc.data.Feature("n", "integer", lower=0, upper=10),
        rc.data.Feature("r", "continuous", lower=-5.0, upper=5.0),
        rc.data.Feature("o", "ordinal", categories=("low", "mid", "high", "top")),
        rc.data.Feature("c", "categorical", categories=("a", "b", "c")),
        rc.data.Feature("b", "binary", categories=(0, 1)),
    ])
    return schema, df


def test_raw_space_by_hand_on_mixed_types(mixed):
    schema, df = mixed
    q_raw = pd.DataFrame({"n": [2], "r": [-1.0], "o": ["low"], "c": ["a"], "b": [0]})
    c_raw = pd.DataFrame({"n": [7], "r": [1.0], "o": ["high"], "c": ["c"], "b": [1]})
    # by hand: n 5/10, r 2/10, o 2 levels of 3 steps, c changed, b changed
    hand = np.array([0.5, 0.2, 2 / 3, 1.0, 1.0])
    for ordinal in ("thermometer", "integer"):
        enc = rc.data.Encoder(schema, ordinal_encoding=ordinal).fit(df)
        q, c = enc.transform(q_raw), enc.transform(c_raw)
        raw = Distance("l1", space="raw")
        np.testing.assert_allclose(raw.deltas(q, c, enc), [hand], rtol=1e-12)
        assert raw.rowwise(q, c, enc)[0] == pytest.approx(hand.sum())
        assert Distance("l2", space="raw").rowwise(q, c, enc)[0] == pytest.approx(np.sqrt((hand**2).sum()))
        assert Distance("linf", space="raw").rowwise(q, c, enc)[0] == pytest.approx(1.0)
        assert Distance("l0", space="raw").rowwise(q, c, enc)[0] == 5
        # per-feature weights enter as column weights: doubling the one-hot columns doubles c's δ
        w = raw.column_weights(enc)
        w2 = w * np.where(enc.feature_of_column_ == 3, 2.0, 1.0)
        assert Distance("l1", weights=w2, space="raw").rowwise(q, c, enc)[0] == pytest.approx(hand.sum() + 1)
        # model space sees columns: the one-hot change moves two columns by 1
        assert Distance("l1").rowwise(q, c)[0] > hand.sum()


def test_raw_space_equals_mace_on_random_valid_encodings(mixed):
    """δ from the model-space columns equals MACE's per-type definition on decoded raw rows."""
    schema, df = mixed
    enc = rc.data.Encoder(schema).fit(df)
    rng = np.random.default_rng(0)
    n = 200

    def sample() -> pd.DataFrame:
        return pd.DataFrame({"n": rng.integers(0, 11, n), "r": rng.uniform(-5, 5, n),
                             "o": rng.choice(["low", "mid", "high", "top"], n),
                             "c": rng.choice(list("abc"), n), "b": rng.integers(0, 2, n)})

    a, b = sample(), sample()
    level = {"low": 0, "mid": 1, "high": 2, "top": 3}
    mace = np.column_stack([
        np.abs(a["n"] - b["n"]) / 10, np.abs(a["r"] - b["r"]) / 10,
        np.abs(a["o"].map(level) - b["o"].map(level)) / 3,
        (a["c"] != b["c"]).astype(float), (a["b"] != b["b"]).astype(float)])
    got = Distance("l1", space="raw").deltas(enc.transform(a), enc.transform(b), enc)
    np.testing.assert_allclose(got, mace, rtol=1e-12, atol=1e-15)


def test_column_weights_units_and_checks(mixed):
    schema, df = mixed
    enc = rc.data.Encoder(schema).fit(df)
    # columns: n, r, o>=mid, o>=high, o>=top, c=a, c=b, c=c, b
    np.testing.assert_allclose(raw_column_weights(enc), [1, 1, 1 / 3, 1 / 3, 1 / 3, .5, .5, .5, 1])
    np.testing.assert_array_equal(Distance(space="raw").units(enc), [0, 1, 2, 2, 2, 3, 3, 3, 4])
    np.testing.assert_array_equal(Distance().units(d=3), [0, 1, 2])
    np.testing.assert_array_equal(Distance().column_weights(enc), np.ones(9))
    assert check_norm("inf") == "linf" and check_norm("L1") == "l1"
    assert Distance("max").norm == "linf"
    for bad in (dict(norm="l3"), dict(space="feature"), dict(weights=[1.0, np.nan]),
                dict(weights=[-1.0]), dict(tol=np.nan), dict(tol=-1.0)):
        with pytest.raises(ValidationError):
            Distance(**bad)
    with pytest.raises(ValidationError, match="Encoder"):
        Distance(space="raw").rowwise(np.zeros(9), np.ones(9))
    with pytest.raises(ValidationError, match="column weights"):
        Distance(weights=[1.0, 2.0]).rowwise(np.zeros(3), np.ones(3))
    with pytest.raises(ValidationError):
        Distance().rowwise(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValidationError, match="Minkowski"):
        _ = Distance("l1", space="raw").minkowski_p
    assert Distance("linf").minkowski_p == np.inf


def test_serialisation_round_trip():
    for d in (Distance(), Distance("linf", weights=[0.5, 2.0], space="raw", tol=1e-6),
              Distance("l0", space="raw")):
        spec = json.loads(json.dumps(d.to_dict()))
        assert Distance.from_dict(spec) == d
        assert hash(Distance.from_dict(spec)) == hash(d)
    assert Distance("l1", weights=[1.0]).name == "weighted_l1"
    assert Distance("l0", space="raw").name == "raw_l0"
    with pytest.raises(ValidationError, match="unknown"):
        Distance.from_dict({"norm": "l1", "p": 2})


@pytest.mark.parametrize("norm", ["l0", "l1", "l2", "linf"])
@pytest.mark.parametrize("space", ["model", "raw"])
def test_torch_agrees_with_numpy(mixed, norm, space):
    schema, df = mixed
    enc = rc.data.Encoder(schema).fit(df)
    rng = np.random.default_rng(2)
    A, B = rng.random((5, 9)), rng.random((5, 9))
    w = rng.random(9) + 0.1
    dist = Distance(norm, weights=w, space=space)
    got = dist.torch(torch.as_tensor(A), torch.as_tensor(B), enc).numpy()
    np.testing.assert_allclose(got, dist.rowwise(A, B, enc), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# the MILP objective
# ---------------------------------------------------------------------------------------------


def _milp_value(enc, q, c, distance) -> float:
    """The encoded distance's optimum with the input fixed to c (independent of rowwise)."""
    m = MILP(time_limit=10)
    dom = encode_input_domain(m, enc, q, actionability=False)
    encode_distance(m, dom, q, distance, enc).set_as_objective(m)
    m.set_var_bounds(dom.index, c, c)
    res = m.solve()
    assert res.is_optimal
    return float(res.objective)


@pytest.mark.parametrize("norm", ["l0", "l1", "linf"])
@pytest.mark.parametrize("space", ["model", "raw"])
def test_encode_distance_value_at_a_fixed_point(mixed, norm, space):
    schema, df = mixed
    enc = rc.data.Encoder(schema).fit(df)
    q = enc.transform(pd.DataFrame({"n": [2], "r": [-1.0], "o": ["low"], "c": ["a"], "b": [0]}))[0]
    c = enc.transform(pd.DataFrame({"n": [7], "r": [1.0], "o": ["high"], "c": ["c"], "b": [1]}))[0]
    dist = Distance(norm, space=space)
    assert _milp_value(enc, q, c, dist) == pytest.approx(dist.rowwise(q, c, enc)[0], abs=1e-7)
    with pytest.raises(ValidationError, match="l2"):
        encode_distance(MILP(), encode_input_domain(MILP(), enc), q, Distance("l2"), enc)
    # column weights enter the objective; a zero-weight column never counts, in l0 too
    w = np.linspace(0.5, 2.0, len(q))
    w[enc.feature_of_column_ == 3] = 0.0  # the categorical c
    dist = Distance(norm, weights=w, space=space)
    assert _milp_value(enc, q, c, dist) == pytest.approx(dist.rowwise(q, c, enc)[0], abs=1e-7)


# ---------------------------------------------------------------------------------------------
# one value from every method and the metrics
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def continuous_world():
    """Three continuous features with different raw ranges, a hand-made ReLU network."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.uniform(0, 10, 300), "b": rng.uniform(-1, 1, 300),
                          "c": rng.uniform(100, 200, 300)})
    schema = rc.data.Schema([rc.data.Feature("a", "continuous", lower=0.0, upper=10.0),
                             rc.data.Feature("b", "continuous", lower=-1.0, upper=1.0),
                             rc.data.Feature("c", "continuous", lower=100.0, upper=200.0)])
    enc = rc.data.Encoder(schema).fit(frame)
    W1 = np.array([[1.0, 1.0, -0.5], [0.5, -1.0, 1.0]])
    model = rc.models.NetworkModel([(W1, np.array([-0.3, -0.2])),
                                    (np.array([[2.0, 1.5]]), np.array([-1.6]))], enc)
    y = model.predict(frame)
    data = rc.data.Dataset(frame, pd.Series(y, index=frame.index, name="y"), schema)
    queries = frame[y == 0].iloc[:8]
    return data, model, queries


def test_same_distance_from_every_method_for_one_pair(continuous_world):
    data, model, queries = continuous_world
    enc = model.encoder
    nn = NearestNeighbour(model, data, norm="l1")
    res = nn.explain(queries)
    assert (res.status == "found").all()
    q = enc.transform(queries)
    c = res.counterfactuals_encoded  # one CE per query, in query order
    reported = res.certificates["distance"].to_numpy(dtype=float)
    # the metrics
    table = evaluate(res, model, metrics=["proximity_l1", "raw_l1"])
    np.testing.assert_allclose(table["proximity_l1"], reported, rtol=1e-12)
    np.testing.assert_allclose(table["raw_l1"], reported, rtol=1e-12)
    np.testing.assert_allclose(M.proximity(q, c, "l1"), reported, rtol=1e-12)
    # MILPNearest: the distance it reports and the value of its encoded objective
    milp = MILPNearest(model, data, norm="l1")
    np.testing.assert_allclose(milp.distance_.rowwise(q, c, enc), reported, rtol=1e-12)
    for i in range(2):
        assert _milp_value(enc, q[i], c[i], milp.distance_) == pytest.approx(reported[i], abs=1e-7)
    # Wachter: the proximity term of its loss (torch) and the distance it reports
    wachter = Wachter(model, data)
    loss_term = wachter.distance_.torch(torch.as_tensor(c), torch.as_tensor(q)).numpy()
    np.testing.assert_allclose(loss_term, reported, rtol=1e-12)
    np.testing.assert_allclose(wachter.distance_.rowwise(c, q), reported, rtol=1e-12)


@pytest.mark.parametrize("norm", ["l1", "linf"])
def test_each_method_reports_the_metric_value_of_its_own_ces(continuous_world, norm):
    data, model, queries = continuous_world
    methods = [MILPNearest(model, data, norm=norm, mip_gap=1e-9, time_limit=10)]
    if norm == "l1":
        methods += [NearestNeighbour(model, data, norm=norm),
                    Wachter(model, data, lam_init=2.0, max_iter=100, max_lambda_steps=3)]
    for method in methods:
        # Wachter: the first four queries (it finds their CEs in a few dozen steps)
        res = method.explain(queries.iloc[:4] if isinstance(method, Wachter) else queries)
        found = res.status == "found"
        assert found.sum() >= 4, type(method).__name__
        table = evaluate(res, model, metrics=[f"proximity_{norm}", f"raw_{norm}"])
        reported = res.certificates.loc[table.index, "distance"].to_numpy(dtype=float)
        # continuous features: model-space and raw-space distances coincide
        np.testing.assert_allclose(table[f"proximity_{norm}"], reported, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(table[f"raw_{norm}"], reported, rtol=1e-9, atol=1e-12)
    # the MILP optimum is no farther than the nearest neighbour's CE
    if norm == "l1":
        nn = NearestNeighbour(model, data).explain(queries).certificates["distance"]
        mi = MILPNearest(model, data, mip_gap=1e-9).explain(queries).certificates["distance"]
        assert (mi <= nn + 1e-7).all()


def test_explanations_name_the_distance(continuous_world, tmp_path):
    data, model, queries = continuous_world
    res = MILPNearest(model, data, norm="linf").explain(queries.iloc[:2])
    assert Distance.from_dict(res.meta["distance"]) == Distance("linf", space="raw")
    res.save(tmp_path / "e")
    loaded = rc.Explanations.load(tmp_path / "e")
    assert Distance.from_dict(loaded.meta["distance"]) == Distance("linf", space="raw")
    res = NearestNeighbour(model, data, norm="l2").explain(queries.iloc[:2])
    assert Distance.from_dict(res.meta["distance"]) == Distance("l2")
