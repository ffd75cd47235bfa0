"""The allow-list of client parameters (``robustce.serve.client_params``) against the methods
themselves: every allowed name is a real parameter of its method, no execution setting is
allowed, every served method has an entry, and the page's shift parameter is allowed."""

from __future__ import annotations

import math

import pytest

from robustce.methods.registry import get_method, param_annotations
from robustce.serve.client_params import CLIENT_PARAMS, check_client_params
from robustce.serve.registry import SERVED_METHODS

#: parameters that set how (not what) a method computes: never the client's
EXECUTION = {"n_jobs", "threads", "solver", "backend", "mip_gap", "time_limit", "random_state",
             "certifier", "constraints", "certify_time_limit", "delta_time_limit", "sat_timeout",
             "device", "progress", "dice_params", "weights", "distance_weights", "fixed_costs"}


def test_every_served_method_has_an_entry_of_real_parameters_and_no_execution_setting():
    assert set(CLIENT_PARAMS) == set(SERVED_METHODS)
    for method, spec in CLIENT_PARAMS.items():
        real = param_annotations(get_method(method))
        assert set(spec) <= set(real), (method, set(spec) - set(real))
        assert not set(spec) & EXECUTION, (method, set(spec) & EXECUTION)


def test_the_shift_parameter_the_page_sends_is_allowed():
    from robustce.serve.app import _shift_params

    for method, name in _shift_params(list(SERVED_METHODS)).items():
        assert name in CLIENT_PARAMS[method]
        assert check_client_params(method, {name: 0.03}) == []


@pytest.mark.parametrize("value", [math.nan, math.inf, -0.1, 0, 10.5, 1e300, "0.03", True, None, [0.03]])
def test_a_shift_outside_0_10_or_not_a_number_is_refused(value):
    errors = check_client_params("milp_robust", {"shift": value})
    assert [e["loc"] for e in errors] == [["body", "params", "shift"]]


def test_integers_are_strict():
    assert check_client_params("nearest_neighbour", {"n_neighbours": 3}) == []
    for value in (3.0, True, "3", 0, 51):
        assert check_client_params("nearest_neighbour", {"n_neighbours": value}), value
