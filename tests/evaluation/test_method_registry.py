"""methods.registry: names → classes, plain values → constructor arguments by annotation,
and build_explainer, the one constructor the runner, the CLI and the demo share."""

from __future__ import annotations

import pytest

import robustce as rc
from robustce.distance import Distance
from robustce.errors import ConfigError
from robustce.evaluation.config import parse_config
from robustce.methods.base import Explainer, Trainable
from robustce.methods.registry import (
    build_explainer,
    convert_params,
    get_method,
    param_annotations,
    register_method,
    unregister_method,
)
from robustce.robustness.shift import ParameterShift


class _Typed(Trainable, Explainer):
    """A test double: one ParameterShift-typed parameter *not* called shift, and a parameter
    called shift that is a plain float."""

    name = "typed"

    def __init__(self, model, data=None, *, band: ParameterShift | None = None, shift: float = 0.5,
                 **kwargs):
        super().__init__(model, data, **kwargs)
        self.band, self.shift, self.fitted_on = band, shift, None

    def _fit(self, data):
        self.fitted_on = data


@pytest.fixture(scope="module")
def moons_model():
    data = rc.datasets.load("moons", n_samples=60)
    return data, rc.models.MLP((4,), epochs=2, random_state=0).fit(data)


@pytest.fixture
def typed():
    register_method("typed", _Typed)
    yield "typed"
    unregister_method("typed")


def test_the_annotation_not_the_name_decides_the_conversion(typed):
    out = convert_params(_Typed, {"band": 0.02, "shift": 0.25})
    assert out["band"] == ParameterShift(0.02) and isinstance(out["band"], ParameterShift)
    assert out["shift"] == 0.25 and type(out["shift"]) is float
    table = convert_params(_Typed, {"band": {"delta": 0.1, "biases": False}})["band"]
    assert table == ParameterShift(0.1, biases=False)
    given = ParameterShift(0.3)
    assert convert_params(_Typed, {"band": given})["band"] is given
    assert convert_params(_Typed, {"band": None})["band"] is None


def test_config_checks_typed_parameters_by_converting_them(typed):
    base = {"seeds": [0], "datasets": ["moons"]}
    cfg = parse_config({**base, "methods": [{"name": "typed", "params": {"band": 0.05, "shift": 1.0}}]})
    assert cfg.methods[0].params == {"band": 0.05, "shift": 1.0}
    for params, msg in [({"band": "big"}, "methods[0].params.band: wrong type"),
                        ({"band": -1.0}, "methods[0].params.band: delta must be a finite number > 0"),
                        ({"shift": {"delta": 0.1}}, "methods[0].params.shift: wrong type")]:
        with pytest.raises(ConfigError) as info:
            parse_config({**base, "methods": [{"name": "typed", "params": params}]})
        assert msg in str(info.value)


def test_param_annotations_follow_param_names():
    cls = get_method("milp_robust")
    info = param_annotations(cls)
    assert list(info) == cls.param_names()
    assert info["time_limit"][1] == 60.0  # inherited from Explainer.__init__


def test_build_explainer_converts_seeds_and_fits(typed, moons_model):
    data, model = moons_model
    ex = build_explainer("typed", model, data, seed=3, band=0.01, time_limit=2.0)
    assert isinstance(ex, _Typed) and ex.band == ParameterShift(0.01)
    assert ex.random_state == 3 and ex.time_limit == 2.0
    assert ex.fitted_on is data  # trainable explainers come back fitted
    assert build_explainer("typed", model, data, seed=3, random_state=9).random_state == 9
    nn = build_explainer("nearest_neighbour", model, data, seed=1)
    assert type(nn).__name__ == "NearestNeighbour"
    with pytest.raises(ConfigError, match="lam: unknown parameter of Wachter"):
        build_explainer("wachter", model, data, lam=0.1)


def test_robust_method_gets_its_shift_from_a_number(moons_model):
    data, model = moons_model
    ex = build_explainer("milp_robust", model, data, shift=0.02)
    assert ex.shift == ParameterShift(0.02)


class _Dist(Explainer):
    def __init__(self, model, data=None, *, distance: Distance | None = None, **kwargs):
        super().__init__(model, data, **kwargs)
        self.distance = distance


def test_a_distance_typed_parameter_takes_a_norm_name_or_a_table():
    assert convert_params(_Dist, {"distance": "l2"})["distance"] == Distance("l2")
    table = convert_params(_Dist, {"distance": {"norm": "l1", "space": "raw"}})["distance"]
    assert table == Distance("l1", space="raw")
    with pytest.raises(ConfigError, match="distance: "):
        convert_params(_Dist, {"distance": "l3"})
    with pytest.raises(ConfigError, match="distance: wrong type"):
        convert_params(_Dist, {"distance": 1.0})
