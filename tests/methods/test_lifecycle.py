"""The explainer lifecycle: parameters round-trip, are validated in one place (NaN and wrong
types rejected with the parameter's name), per-call target classes, the Trainable base."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import robustce as rc
from robustce.errors import NotFittedError, RobustCEError, ValidationError
from robustce.explanations import QueryResult
from robustce.methods.base import Explainer, Trainable
from robustce.validation import check_bool, check_choice, check_integer, check_number

try:
    import dice_ml  # noqa: F401 - the DiCE adapter needs the optional extra to be built

    _NEEDS_EXTRA: set[str] = set()
except ImportError:
    _NEEDS_EXTRA = {"DiCE"}

METHODS = sorted((obj for obj in vars(rc.methods).values()
                  if inspect.isclass(obj) and issubclass(obj, Explainer) and obj is not Explainer
                  and obj.__name__ not in _NEEDS_EXTRA),
                 key=lambda c: c.__name__)

#: non-default parameters per method, so the round trip carries more than defaults
NON_DEFAULT = {
    "NearestNeighbour": dict(n_neighbours=2, norm="linf", target_class=1, time_limit=5),
    "MILPNearest": dict(norm="l0", tau=0.01, tie_break=0.0, mip_gap=1e-3, weights="ones",
                        time_limit=7.5),
    "EnsembleRobust": dict(delta=0.02, epsilon=0.01, growth=3, max_rounds=4, norm="linf"),
    "MILPRobust": dict(shift=0.02, growth=3, max_rounds=4, slack=0.1, bisect_tol=0.01,
                       delta_time_limit=5.0, norm="linf"),
    "PROPLACE": dict(shift=0.02, k=5, max_iterations=9, sigma=2e-4, t=1e-4,
                     certify_time_limit=4.0, mip_gap=1e-3, warm_start=False),
    "RobustNearestNeighbour": dict(shift=0.02, n_neighbours=2, norm="l2", tol=1e-5,
                                   certify_time_limit=3.0, target_class=1),
    "Wachter": dict(lam_init=0.5, lam_schedule=3, loss="bce", distance_weights="ones",
                    init_noise=0.01, straight_through=False, random_state=7),
    "DiverseRobust": dict(n_counterfactuals=3, selection="distance", alpha=20, epsilon=0.3,
                          filter="distance", beta=0.3, gamma=0.05, norm="l2", minimise=False,
                          max_candidates=200),
    "DiCE": dict(n_counterfactuals=2, method="genetic", dice_params={"posthoc_sparsity_param": 0.2},
                 random_state=3),
}


#: methods for one model class only: the lifecycle tests give them that model (fixture name)
ONE_MODEL_CLASS = {"PlausibleFeatureTweaking": "diabetes_forest", "EnsembleRobust": "diabetes_forest",
                   "ActionableRecourse": "diabetes_lr"}


@pytest.fixture(scope="module")
def diabetes_forest(diabetes_setup):
    from sklearn.ensemble import RandomForestClassifier

    train, _, model = diabetes_setup
    X = model.encoder.transform(train.frame)
    rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, train.y)
    return rc.models.wrap(rf, model.encoder)


@pytest.fixture(scope="module")
def diabetes_lr(diabetes_setup):
    from sklearn.linear_model import LogisticRegression

    train, _, model = diabetes_setup
    X = model.encoder.transform(train.frame)
    return rc.models.wrap(LogisticRegression().fit(X, train.y), model.encoder)


def _model_for(cls, model, request):
    """The MLP, or the model class a one-class method explains."""
    name = ONE_MODEL_CLASS.get(cls.__name__)
    return model if name is None else request.getfixturevalue(name)


def _params(cls, model):
    params = dict(NON_DEFAULT.get(cls.__name__, {}))
    for key in ("weights", "distance_weights"):
        if params.get(key) == "ones":
            params[key] = np.linspace(0.5, 1.5, model.encoder.n_features_out_)
    return params


def _make(cls, model, train, **params):
    """Post-hoc methods take (model, data); CounterNet-style ones train their own model."""
    if "model" in inspect.signature(cls.__init__).parameters:
        return cls(model, train, **params)
    return cls(**params)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def test_every_method_is_covered():
    assert {"NearestNeighbour", "MILPNearest", "MILPRobust", "Wachter"} <= {c.__name__ for c in METHODS}


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.__name__)
def test_get_params_round_trips(cls, diabetes_setup, request):
    train, _, model = diabetes_setup
    model = _model_for(cls, model, request)
    given = _params(cls, model)
    m = _make(cls, model, train, **given)
    params = m.get_params()
    assert list(params) == cls.param_names()
    for key, value in given.items():  # stored as given
        if key != "shift":  # MILPRobust keeps its shift as the ParameterShift a number stands for
            assert _same(params[key], value), key
    again = _make(cls, model, train, **params)
    params2 = again.get_params()
    assert list(params2) == list(params)
    for key in params:
        assert _same(params2[key], params[key]), key
    # a Generator is passed through as the same object
    gen = np.random.default_rng(0)
    assert _make(cls, model, train, **{**params, "random_state": gen}).get_params()["random_state"] is gen


@pytest.mark.parametrize("cls", [rc.methods.NearestNeighbour, rc.methods.MILPNearest],
                         ids=lambda c: c.__name__)
def test_rebuilt_explainer_gives_the_same_explanations(cls, diabetes_setup):
    train, test, model = diabetes_setup
    m = cls(model, train, **_params(cls, model))
    q = test.frame.iloc[:4]
    a, b = m.explain(q), cls(model, train, **m.get_params()).explain(q)
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.counterfactuals_encoded, b.counterfactuals_encoded)


def _bad_values(default):
    """Values no parameter with this default may accept."""
    if isinstance(default, bool):
        return ["yes", 1.5]
    if isinstance(default, int):
        return [2.5, "3", math.nan]
    if isinstance(default, float):
        return [math.nan, math.inf, "0.1", None]
    if isinstance(default, str):
        return ["no-such-choice", math.nan]
    if default is None:
        return [math.nan, "zzz"]
    return [math.nan]


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.__name__)
def test_bad_parameter_values_raise_an_error_naming_the_parameter(cls, diabetes_setup, request):
    train, _, model = diabetes_setup
    model = _model_for(cls, model, request)
    defaults = {}
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            for p, v in inspect.signature(klass.__init__).parameters.items():
                defaults.setdefault(p, v.default)
    checked = 0
    for name in cls.param_names():
        default = defaults[name]
        if name == "shift":
            default = 0.05
        for bad in _bad_values(default):
            with pytest.raises(RobustCEError) as info:
                _make(cls, model, train, **{name: bad})
            assert name in str(info.value), (name, bad, str(info.value))
            checked += 1
    assert checked >= 2 * len(cls.param_names())


# --- per-call target classes ------------------------------------------------------------------


@pytest.fixture(scope="module")
def iris_setup():
    data = rc.datasets.load("iris")
    train, test = data.split(test_size=0.3, random_state=0)
    model = rc.models.MLP((16,), epochs=100, lr=1e-2, random_state=0).fit(train)
    return train, test, model


def test_per_call_target_class_on_a_three_class_model(iris_setup):
    train, test, model = iris_setup
    assert model.n_classes == 3
    q = test.frame.iloc[::3]  # the test rows are grouped by class
    pred = model.predict(q)
    assert len(np.unique(pred)) == 3
    nn = rc.methods.NearestNeighbour(model, train)  # no target yet: a multi-class model needs one
    with pytest.raises(ValidationError, match="target_class"):
        nn.explain(q)
    # one class for every query
    res = nn.explain(q, target_class=2)
    assert (res.target_class == 2).all()
    assert (res.status[pred == 2] == "already_target").all()
    assert (res.status[pred != 2] == "found").all()
    # one class per query: the next class of each, so none is already there
    targets = (pred + 1) % 3
    res = rc.methods.MILPNearest(model, train, time_limit=20).explain(q, target_class=targets)
    np.testing.assert_array_equal(res.target_class, targets)
    assert (res.status == "found").all()
    owner = res.queries.index.get_indexer(res.counterfactuals["query_id"])
    np.testing.assert_array_equal(model.predict(res.counterfactuals_encoded), targets[owner])
    # the per-call target overrides the constructor's
    fixed = rc.methods.NearestNeighbour(model, train, target_class=0)
    assert (fixed.explain(q).target_class == 0).all()
    assert (fixed.explain(q, target_class=1).target_class == 1).all()
    assert fixed.target_class == 0  # the call changed nothing
    for bad in (3, -1, 1.5, "1", [0, 1], np.full(len(q), 0.5), np.full(len(q), 3)):
        with pytest.raises(ValidationError, match="target_class"):
            fixed.explain(q, target_class=bad)


# --- Trainable ----------------------------------------------------------------------------------


class MeanOfTarget(Trainable, Explainer):
    """Learns, per class, the mean encoded training row; returns it as the CE."""

    name = "mean_of_target"

    def _fit(self, data):
        X = self.encoder.transform(data.frame)
        y = self.model.predict(X)
        self.means_ = {int(k): X[y == k].mean(axis=0) for k in np.unique(y)}

    def _explain_one(self, x, target):
        return QueryResult("found", self.means_[target][None, :])


def test_trainable_is_a_type_and_must_be_fitted(diabetes_setup, request):
    train, test, model = diabetes_setup
    ex = MeanOfTarget(model, train)
    assert isinstance(ex, Trainable)
    assert not any(isinstance(c(_model_for(c, model, request), train), Trainable) for c in METHODS
                   if c.__name__ in NON_DEFAULT)
    with pytest.raises(NotFittedError, match="fit"):
        ex.explain(test.frame.iloc[:3])
    with pytest.raises(ValidationError, match="Dataset"):
        ex.fit(train.frame)
    assert ex.fit(train) is ex
    res = ex.explain(test.frame.iloc[:3])
    assert set(res.status) <= {"found", "error", "already_target"}
    assert not hasattr(Explainer, "fit") and not hasattr(Explainer, "trainable")


# --- robustce.validation ----------------------------------------------------------------------


def test_validation_helpers():
    assert check_number(0.5, "x", low=0, high=1) == 0.5
    assert check_number(1, "x", low=1) == 1
    assert check_number(None, "x", allow_none=True) is None
    assert check_number(math.inf, "x", allow_inf=True) == math.inf
    assert check_number(np.float32(2.0), "x") == 2.0
    for bad, kw in ((math.nan, {}), (math.inf, {}), (True, {}), ("1", {}), (None, {}),
                    (0.0, dict(low=0, low_open=True)), (1.0, dict(high=1, high_open=True)),
                    (-1e-9, dict(low=0)), (math.nan, dict(allow_inf=True))):
        with pytest.raises(ValidationError, match="^x must be"):
            check_number(bad, "x", **kw)
    assert check_integer(np.int64(3), "k", low=1) == 3
    for bad in (2.0, 2.5, True, "2", math.nan, 0):
        with pytest.raises(ValidationError, match="^k must be an integer >= 1"):
            check_integer(bad, "k", low=1)
    assert check_choice("a", "c", ("a", "b")) == "a"
    for bad in ("z", ["a"], np.array(["a", "b"])):
        with pytest.raises(ValidationError, match="^c must be one of 'a', 'b'"):
            check_choice(bad, "c", ("a", "b"))
    assert check_bool(np.bool_(True), "b")
    with pytest.raises(ValidationError, match="^b must be True or False"):
        check_bool(1, "b")
