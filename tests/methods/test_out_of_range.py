"""Applicants outside the training range (issue 29, finding 4).

A model built from a user's DataFrame (``from_frame``) knows each number's *observed* range,
not a declared domain. An applicant beyond it must be scored and explained by every method —
found, or another honest status, never a ValidationError — with a warning naming the
features; the query's own out-of-range values stay reachable (immutable ones are kept), and
Δ-certificates stay sound for encoded inputs outside [0, 1]."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import OutOfRangeWarning, ValidationError
from robustce.methods.registry import available_methods, build_explainer, trains_own_model
from robustce.models.network import class_margin
from robustce.robustness import ParameterShift, exact_worst_case

#: a solver's wall-clock guard against a hang, not a measurement: far above any solve here
#: on a host at load 20 (issue 53), so that no result depends on the host's load
GUARD_S = 600

SHIFT = 0.01
#: small, fast settings per registry name (defaults elsewhere)
PARAMS: dict[str, dict] = {
    "retrain_robust": {"n_search": 2, "max_models": 10, "share": 0.5, "confidence": 0.8,
                       "n_looks": 1, "max_tries": 1},
    "milp_robust": dict(shift=SHIFT, time_limit=20),
    "robust_nearest_neighbour": dict(shift=SHIFT),
    "wachter_robust": dict(shift=SHIFT, max_iter=200, time_limit=20),
    "proto_robust": dict(shift=SHIFT, max_iter=200, time_limit=20),
    "proplace": dict(shift=SHIFT, k=10, time_limit=GUARD_S),
    "apas": dict(delta=SHIFT, n=200, time_limit=20),
    "roar": dict(max_iter=100, lime_samples=200),
    "rbr": dict(max_iter=100, n_samples=100),
    "wachter": dict(max_iter=300),
    "diverse_robust": dict(n_counterfactuals=2, max_candidates=100),
    "mace": dict(time_limit=GUARD_S),
    "counternet": dict(epochs=20, hidden=[[16, 8], [8], [8]], progress=False),
    "rocoursenet": dict(epochs=5, hidden=[[16, 8], [8], [8]], n_steps=2, progress=False),
}
#: methods whose ``found`` CEs carry an exact Δ-robustness claim at SHIFT
CERTIFIED = {"milp_robust", "robust_nearest_neighbour", "wachter_robust", "proto_robust",
             "proplace"}
#: need another model class (tested below on a logistic regression and a forest)
NOT_ON_MLP = {"ar", "pft", "ensemble_robust"}
HONEST = {"found", "infeasible", "not_found", "timeout", "no_robust_point"}
#: methods that search the query's own box (no candidate set from the data, nothing trained):
#: a CE exists for every applicant of the world (income, debts and age are free), so each must
#: be found — never `not_found` because the query lies beyond a unit-box domain
SEARCH_THE_BOX = {"mace", "milp_nearest", "dice"}


def _frame(n: int, rng: np.random.Generator) -> pd.DataFrame:
    frame = pd.DataFrame({"income": rng.uniform(10, 90, n), "debts": rng.integers(0, 6, n),
                          "age": rng.uniform(20, 60, n), "tenure": rng.integers(0, 4, n)})
    frame["y"] = ((frame.income - 8 * frame.debts + 0.2 * frame.age
                   + rng.normal(0, 4, n)) > 40).astype(int)
    return frame


@pytest.fixture(scope="module")
def world():
    """(train, model, applicants): an MLP on a from_frame table (observed ranges: income
    [10, 90], debts 0..5, age [20, 60], tenure 0..3, tenure immutable), and rejected applicants
    beyond them (one with an immutable tenure no training row has)."""
    data = rc.datasets.from_frame(_frame(400, np.random.default_rng(0)), "y", immutable=["tenure"])
    assert set(data.schema.observed) == {"income", "debts", "age", "tenure"}
    model = rc.models.MLP((12, 6), epochs=150, lr=1e-2, random_state=0).fit(data)
    applicants = pd.DataFrame({"income": [5.0, 60.0, 40.0], "debts": [1, 8, 4],
                               "age": [70.0, 35.0, 15.0], "tenure": [1, 5, 0]},
                              index=[101, 102, 103])
    with pytest.warns(OutOfRangeWarning, match=r"\['income', 'debts', 'age', 'tenure'\]"):
        pred = model.predict(applicants)
    assert (pred == 0).all()
    return data, model, applicants


def test_declared_bounds_stay_hard():
    frame = _frame(50, np.random.default_rng(1))
    data = rc.datasets.from_frame(frame, "y", bounds={"income": (0.0, 100.0)})
    assert data.schema.observed == ["debts", "age", "tenure"]
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    bad = data.frame.head(1).assign(income=120.0)
    with pytest.raises(ValidationError, match="column 'income' has values outside its bounds"):
        enc.transform(bad)
    schema = rc.data.Schema.from_dict(data.schema.to_dict())  # the distinction round-trips
    assert schema == data.schema and schema.observed == ["debts", "age", "tenure"]


def test_out_of_range_values_encode_beyond_the_unit_box_and_decode_back(world):
    _, model, applicants = world
    enc = model.encoder
    with pytest.warns(OutOfRangeWarning):
        X = enc.transform(applicants)
    assert X.min() < 0 and X.max() > 1
    pd.testing.assert_frame_equal(enc.inverse_transform(X, index=applicants.index), applicants,
                                  check_dtype=False)
    lo, hi = enc.domain(X)
    assert (lo <= X).all() and (X <= hi).all() and (lo <= 0).all() and (hi >= 1).all()
    np.testing.assert_array_equal(enc.project(X, lo, hi), X)  # the query is a valid point
    assert enc.project(X).min() >= 0  # the plain unit box clips, as before
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfRangeWarning)
        model.predict(world[0].frame)  # training rows: no warning


def _methods() -> list[str]:
    try:
        import dice_ml  # noqa: F401
    except ImportError:
        skip = {"dice"}
    else:
        skip = set()
    return [m for m in available_methods() if m not in NOT_ON_MLP | skip]


@pytest.mark.parametrize("method", _methods())
def test_every_method_explains_an_applicant_beyond_the_training_range(method, world):
    data, model, applicants = world
    params = dict(PARAMS.get(method, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        if trains_own_model(method):
            explainer = build_explainer(method, None, data, seed=0, **params)
            model = explainer.model
        else:
            explainer = build_explainer(method, model, data, seed=0, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = explainer.explain(applicants)
    once = [w for w in caught if issubclass(w.category, OutOfRangeWarning)]
    assert len(once) == 1  # one warning per call, naming the features
    assert "['income', 'debts', 'age', 'tenure']" in str(once[0].message)
    status = res.status.to_dict()
    assert set(status.values()) <= HONEST | {"already_target"}, res.to_frame()[["status", "message"]]
    messages = res.to_frame()["message"].fillna("").astype(str)
    assert not messages.str.contains("beyond the .* domain", regex=True).any(), messages
    if method in SEARCH_THE_BOX:
        assert set(status.values()) == {"found"}, res.to_frame()[["status", "message"]]
    cfs = res.counterfactuals
    if len(cfs) == 0:
        return
    owner = cfs["query_id"].to_numpy()
    raw = cfs[data.schema.names].set_axis(range(len(cfs)))
    targets = res.target_class.loc[owner].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        assert (model.predict(raw) == targets).all()  # the raw row the user receives
    np.testing.assert_array_equal(raw["tenure"].to_numpy(), applicants.loc[owner, "tenure"].to_numpy())
    if method in CERTIFIED:
        _check_sampled(model, res, ParameterShift(SHIFT))


def _check_sampled(model, res, shift, n: int = 3000) -> None:
    """No sampled network of Δ flips a CE certified Δ-robust (evidence independent of the
    MILP, for inputs outside [0, 1])."""
    C = res.counterfactuals_encoded
    owner = res.counterfactuals["query_id"].to_numpy()
    t = res.target_class.loc[owner].to_numpy()
    z = shift.sample(model.network(), n, random_state=0).forward(C)
    for j in range(len(C)):
        assert (class_margin(z[:, j], int(t[j])) > 0).all(), f"a sampled network flips CE {j}"


def test_mace_on_a_tree_explains_an_applicant_beyond_the_training_range(world):
    from sklearn.tree import DecisionTreeClassifier

    data, model, applicants = world
    enc = model.encoder
    tree = DecisionTreeClassifier(max_depth=4, random_state=0).fit(enc.transform(data.frame), data.y)
    wrapped = rc.models.wrap(tree, enc)
    with pytest.warns(OutOfRangeWarning):
        res = rc.methods.MACE(wrapped, data, time_limit=GUARD_S).explain(applicants)
        pred = wrapped.predict(applicants)
    assert set(res.status) <= HONEST | {"already_target"}
    found = res.status.index[res.status == "found"]
    assert len(found) == int((pred == 0).sum())  # a tree's regions are boxes: always reachable
    cfs = res.counterfactuals
    # the encoded CEs; the raw round trip of a CE placed on a split threshold is finding 1's
    assert (wrapped.predict(res.counterfactuals_encoded) == 1).all()
    np.testing.assert_array_equal(cfs["tenure"].to_numpy(),
                                  applicants.loc[cfs["query_id"].to_numpy(), "tenure"].to_numpy())


@pytest.mark.parametrize("method", ["nearest_neighbour", "robust_nearest_neighbour", "robx"])
def test_neighbour_search_keeps_the_group_of_a_far_applicant(method, world):
    """Encoded far beyond [-1, 2] the KD-tree's group coordinate no longer separates the
    immutable groups (under ℓ∞ a neighbour of another group is nearer); the group's own
    candidates are searched instead."""
    data, model, _ = world
    far = pd.DataFrame({"income": [-5000.0], "debts": [2], "age": [30.0], "tenure": [2]},
                       index=[7])
    params = {**PARAMS.get(method, {}), "norm": "linf"}
    with pytest.warns(OutOfRangeWarning):
        res = build_explainer(method, model, data, seed=0, **params).explain(far)
    assert res.status[7] == "found"
    assert (res.counterfactuals["tenure"] == 2).all()


@pytest.fixture(scope="module")
def sklearn_models(world):
    """A logistic regression and a 5-tree forest on the world's encoder."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    data, model, _ = world
    X = model.encoder.transform(data.frame)
    rf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, data.y)
    return {"lr": rc.models.wrap(LogisticRegression().fit(X, data.y), model.encoder),
            "forest": rc.models.wrap(rf, model.encoder)}


@pytest.mark.parametrize("method,kind", [("ar", "lr"), ("pft", "forest"), ("mace", "lr"),
                                         ("mace", "forest"), ("milp_nearest", "lr"),
                                         ("minimum_observable", "forest"),
                                         ("ensemble_robust", "forest")])
def test_methods_for_other_model_classes_answer_honestly(method, kind, world, sklearn_models):
    """Every one searches the query's domain; AR's integer program ranges over the query's
    box (it answered ``not_found``, "beyond the integer program's domain", before)."""
    data, _, applicants = world
    model = sklearn_models[kind]
    with pytest.warns(OutOfRangeWarning):
        res = build_explainer(method, model, data, seed=0).explain(applicants)
    status = res.status
    assert set(status) <= HONEST | {"already_target"}
    if method in ("ar", "mace", "milp_nearest", "ensemble_robust"):  # a CE exists for every applicant (the
        # forest's MACE: backend "auto" picks z3, which searches the query's box too)
        assert (status == "found").all()  # the LR's first incumbent once emptied the box of 102
    cfs = res.counterfactuals
    if len(cfs):
        np.testing.assert_array_equal(cfs["tenure"].to_numpy(),
                                      applicants.loc[cfs["query_id"].to_numpy(), "tenure"].to_numpy())
        assert (model.predict(res.counterfactuals_encoded) == 1).all()


def test_mace_smt_backend_searches_beyond_the_training_range(world):
    """The z3 encoding ranges over each query's box (Encoder.domain): an applicant beyond the
    training range gets a CE from the SMT backend too (it answered `not_found`, "beyond the
    SMT backend's domain", before), accepted by the raw model, its immutable value kept."""
    data, model, applicants = world
    with pytest.warns(OutOfRangeWarning):
        res = rc.methods.MACE(model, data, backend="smt", time_limit=GUARD_S).explain(applicants)
    assert (res.status == "found").all(), res.to_frame()[["status", "message"]]
    raw = res.counterfactuals
    owner = raw["query_id"].to_numpy()
    with pytest.warns(OutOfRangeWarning):
        assert (model.predict(raw[data.schema.names].set_axis(range(len(raw)))) == 1).all()
    np.testing.assert_array_equal(raw["tenure"].to_numpy(), applicants.loc[owner, "tenure"].to_numpy())


#: applicants for the tree ensembles: beyond the range on income, debts, age and the immutable
#: tenure, and one far beyond on a free feature (income 400: its nearest CE lies beyond d = 1)
_TREE_APPLICANTS = pd.DataFrame({"income": [5.0, 60.0, 40.0, 400.0], "debts": [1, 8, 4, 9],
                                 "age": [70.0, 35.0, 15.0, 30.0], "tenure": [1, 5, 0, 2]},
                                index=[101, 102, 103, 104])


@pytest.mark.parametrize("kind", ["tree", "forest"])
@pytest.mark.parametrize("norm", ["l1", "linf", "l0"])
def test_mace_smt_and_milp_backends_agree_beyond_the_training_range(kind, norm, world):
    """Both backends search the query's box: their optima agree within ε, z3's bracket
    [δ_min, δ_max] holds the MILP's optimum, every CE is accepted by the raw model and by the
    user's own scikit-learn estimator (on the encoding of the raw row), immutables are kept —
    and δ_min is a lower bound by brute force: no sampled point of the query's box that the
    model puts in the target class and that keeps the immutable value lies nearer."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from robustce.methods.minimum_observable import mace_distance

    data, mlp, _ = world
    enc = mlp.encoder
    X = enc.transform(data.frame)
    est = (DecisionTreeClassifier(max_depth=4, random_state=0) if kind == "tree"
           else RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)).fit(X, data.y)
    model = rc.models.wrap(est, enc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        Q = enc.transform(_TREE_APPLICANTS)
        todo = _TREE_APPLICANTS[model.predict(Q) == 0]
        assert len(todo) >= 3
        res = {b: rc.methods.MACE(model, data, backend=b, norm=norm, time_limit=GUARD_S,
                                  target_class=1).explain(todo) for b in ("smt", "milp")}
    eps = 1e-3
    smt_, milp_ = res["smt"].to_frame(), res["milp"].to_frame()
    assert (smt_["status"] == "found").all() and (milp_["status"] == "found").all(), smt_
    for q in todo.index:
        lo, hi, opt = smt_.loc[q, "delta_min"], smt_.loc[q, "delta_max"], milp_.loc[q, "delta_max"]
        assert lo <= opt + 1e-9 and opt <= hi + 1e-9 and hi - lo <= eps + 1e-12, (q, lo, hi, opt)
    rng = np.random.default_rng(0)
    for r in res.values():
        raw = r.counterfactuals
        owner = raw["query_id"].to_numpy()
        rows = raw[data.schema.names].set_axis(range(len(raw)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OutOfRangeWarning)
            assert (model.predict(rows) == 1).all()
            assert (est.predict(enc.transform(rows)) == 1).all()  # the user's own estimator
        np.testing.assert_array_equal(rows["tenure"].to_numpy(), todo.loc[owner, "tenure"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        Qt = enc.transform(todo)
    tenure = enc.blocks_[data.schema.names.index("tenure")].start
    for i, q in enumerate(todo.index):
        lo, hi = enc.domain(Qt[i])
        S = enc.project(rng.uniform(lo, hi, size=(20000, len(lo))), lo, hi)
        S[:, tenure] = Qt[i, tenure]
        hit = model.predict(S) == 1
        assert hit.any()
        d = mace_distance(enc, Qt[i], S[hit], {norm: 1.0})
        assert d.min() >= smt_.loc[q, "delta_min"] - 1e-9, (q, d.min(), smt_.loc[q, "delta_min"])


@pytest.mark.parametrize("seed", range(4))
def test_exact_certificates_are_sound_beyond_the_unit_box(seed):
    """Inputs of any sign and size: every `robust` verdict survives sampled weight shifts;
    every `not_robust` witness lies in Δ and flips."""
    rng = np.random.default_rng(seed)
    net = rc.models.ReLUNetwork([(rng.normal(size=(6, 3)), rng.normal(size=6)),
                                 (rng.normal(size=(4, 6)), rng.normal(size=4)),
                                 (rng.normal(size=(1, 4)), rng.normal(size=1))])
    X = rng.uniform(-2.0, 3.0, size=(40, 3))
    shift = ParameterShift(0.1)
    res = exact_worst_case(net, X, shift, target_class=None)
    z = shift.sample(net, 2000, random_state=seed).forward(X)
    for i in np.flatnonzero(res.robust):
        assert (class_margin(z[:, i], int(res.target_class[i])) > 0).all()
        assert res.value[i] > 0
    for i in np.flatnonzero(res.not_robust):
        w = res.witness[i]
        assert shift.contains(net, w, atol=1e-9)
        assert w.predict(X[i:i + 1])[0] != res.target_class[i]
    assert res.robust.any()


def test_a_pipeline_imported_with_its_training_frame_scores_and_explains_beyond_its_range():
    """``from_sklearn(pipe, X_train)`` reads each numeric column's range from ``X_train``: an
    observed range (soft), as ``from_frame``'s — so an applicant beyond it is scored and
    explained, and the user's own pipeline accepts the CE."""
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"income": rng.uniform(10, 100, 300), "debt": rng.uniform(0, 50, 300)})
    y = (X.income - X.debt > 40).astype(int)
    pipe = Pipeline([("s", StandardScaler()),
                     ("m", MLPClassifier((8,), max_iter=2000, random_state=0))]).fit(X, y)
    model = rc.models.from_sklearn(pipe, X)
    assert set(model.encoder.schema.observed) == {"income", "debt"}
    applicant = pd.DataFrame({"income": [5.0], "debt": [80.0]})  # both beyond the data
    with pytest.warns(OutOfRangeWarning, match=r"\['income', 'debt'\]"):
        assert model.predict(applicant)[0] == pipe.predict(applicant)[0] == 0
    data = rc.datasets.from_frame(X.assign(y=y), "y")
    with pytest.warns(OutOfRangeWarning):
        result = rc.methods.MILPRobust(model, data, shift=0.01, target_class=1).explain(applicant)
    assert result.status.tolist() == ["found"]
    assert (pipe.predict(result.counterfactuals[["income", "debt"]]) == 1).all()


def test_ar_searches_the_box_of_an_applicant_beyond_the_training_range(world, sklearn_models):
    """AR's answer beyond the range is the cheapest combination of its grid actions and stays:
    no cheaper than MACE's certified optimum (δ_min), the out-of-range values it does not act
    on kept, accepted by the raw model and the user's own LogisticRegression."""
    data, _, applicants = world
    model = sklearn_models["lr"]
    enc = model.encoder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        ar = rc.methods.ActionableRecourse(model, data).explain(applicants)
        mace = rc.methods.MACE(model, data, backend="smt", time_limit=GUARD_S).explain(applicants)
        X = enc.transform(applicants)
    assert (ar.status == "found").all(), ar.to_frame()[["status", "message"]]
    assert (ar.to_frame()["distance"] >= mace.to_frame()["delta_min"] - 1e-9).all()
    C = ar.counterfactuals_encoded
    owner = ar.counterfactuals["query_id"].to_numpy()
    pos = applicants.index.get_indexer(owner)
    outside = (C < 0) | (C > 1)  # AR's grid lies in the training range: only stays out there
    assert outside.any()
    np.testing.assert_array_equal(C[outside], X[pos][outside])
    rows = ar.counterfactuals[data.schema.names].set_axis(range(len(C)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        assert (model.predict(rows) == 1).all()
        assert (model.estimator.predict(enc.transform(rows)) == 1).all()
    np.testing.assert_array_equal(rows["tenure"].to_numpy(), applicants.loc[owner, "tenure"].to_numpy())


def test_diverse_robust_line_search_keeps_an_out_of_range_immutable_value(world):
    """A candidate that shares the query's immutable value beyond the training range (the data
    given to the explainer reaches further than the model's training frame): the bisection's
    midpoints are projected into the query's box, so the value is kept and the point returned
    lies on the segment (it was clipped to the unit box, and the CE lost to actionability)."""
    data, model, applicants = world
    wide = _frame(200, np.random.default_rng(5)).assign(tenure=5)
    data2 = rc.datasets.from_frame(pd.concat([_frame(400, np.random.default_rng(0)), wide],
                                             ignore_index=True), "y", immutable=["tenure"])
    enc = model.encoder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        explainer = rc.methods.DiverseRobust(model, data2, n_counterfactuals=2, max_candidates=100)
        x = enc.transform(applicants.loc[[102]])
        W = enc.transform(wide.drop(columns="y"))
    C = W[model.predict(W) == 1][:5]
    assert len(C)
    X = np.repeat(x, len(C), axis=0)
    out = explainer.line_search(X, C, np.ones(len(C), dtype=np.int64))
    tenure = enc.blocks_[data.schema.names.index("tenure")].start
    np.testing.assert_array_equal(out[:, tenure], X[:, tenure])
    assert (model.predict(out) == 1).all()
    assert (explainer.distance_(out, X) <= explainer.distance_(C, X) + 1e-12).all()


def test_dice_keeps_an_out_of_range_value_when_it_checks_its_answer(world):
    """DiCE's answer keeps the query's income beyond the range and is accepted only there: its
    check projects into the query's box (it clipped to the unit box: `not_found`)."""
    pytest.importorskip("dice_ml")
    from types import SimpleNamespace

    from sklearn.linear_model import LogisticRegression

    data, mlp, _ = world
    enc = mlp.encoder
    lr = LogisticRegression().fit(enc.transform(data.frame), data.y)
    # target iff 5·income − debts − 6 > 0 (model space): never at income <= 1
    lr.coef_, lr.intercept_ = np.array([[5.0, -1.0, 0.0, 0.0]]), np.array([-6.0])
    applicant = pd.DataFrame({"income": [110.0], "debts": [5], "age": [40.0], "tenure": [1]},
                             index=[7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfRangeWarning)
        m = rc.models.wrap(lr, enc)
        x = enc.transform(applicant)[0]
    assert x[0] > 1.2 and m.predict(x[None])[0] == 0
    cf = x.copy()
    cf[1] = 0.0  # no debts
    assert m.predict(cf[None])[0] == 1 and m.predict(enc.project(cf[None]))[0] == 0
    explainer = rc.methods.DiCE(m, data, n_counterfactuals=1)
    answer = pd.DataFrame(cf[None], columns=explainer._columns)
    fake = SimpleNamespace(generate_counterfactuals=lambda *a, **k: SimpleNamespace(
        cf_examples_list=[SimpleNamespace(final_cfs_df=answer, final_cfs_df_sparse=None)]))
    explainer._explainer = fake
    with pytest.warns(OutOfRangeWarning):
        res = explainer.explain(applicant)
    assert res.status[7] == "found", res.to_frame()[["status", "message"]]
    assert res.counterfactuals["income"].iloc[0] == pytest.approx(110.0)


def test_torch_projector_is_the_numpy_projection():
    """:meth:`FeasibleSet.projector` (the gradient methods' in-place projection, the queries'
    boxes computed once per loop) agrees with :meth:`FeasibleSet.project_np`: box widened to
    each query's own out-of-range value, one-sided columns, immutables fixed."""
    import torch

    from robustce.methods.feasible import FeasibleSet

    data = rc.datasets.from_frame(_frame(100, np.random.default_rng(0)), "y",
                                  bounds={"age": (0.0, 100.0)}, immutable=["tenure"],
                                  increasing=["age"], decreasing=["debts"])
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    feasible = FeasibleSet(enc)
    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 1.5, (20, enc.n_features_out_))
    X[:, enc.block("age").start] = rng.uniform(0, 1, 20)  # declared bounds: inside
    project = feasible.projector(torch.as_tensor(X))
    for _ in range(2):  # the same projector, step after step
        Z = rng.uniform(-1.0, 2.0, X.shape)
        var = torch.tensor(Z)
        project(var)
        np.testing.assert_array_equal(var.numpy(), feasible.project_np(Z.copy(), X))
