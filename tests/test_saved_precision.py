"""Saved explanations keep full precision: a reload certifies exactly as the CEs in memory.

The values here are deliberately not round (MILP optima sit on the decision boundary, raw
incomes have many digits), so a writer that keeps fewer than 17 significant digits changes
them and these tests fail.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.cli import main
from robustce.explanations import Explanations
from robustce.robustness import ParameterShift, exact_worst_case, is_delta_robust


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    data = rc.datasets.load("synthetic_loan", n_samples=400, random_state=0)
    model = rc.models.MLP(hidden_layers=(8, 4), epochs=30, random_state=0).fit(data)
    rejected = data.frame[model.predict(data.frame) == 0].head(6)
    expl = rc.methods.MILPNearest(model, data, time_limit=20).explain(rejected)
    assert (expl.status == "found").sum() >= 3
    out = tmp_path_factory.mktemp("saved") / "expl"
    expl.save(out)
    model.save(out / "model")
    return model, expl, out


def test_encoded_values_are_not_round(saved):
    _, expl, _ = saved
    cfs = expl.counterfactuals_encoded
    # the premise of the precision tests: values that 8 significant digits would change
    assert np.any(np.abs(cfs - np.round(cfs, 7)) > 0)


def test_reload_is_bit_exact_on_non_round_values(saved):
    _, expl, out = saved
    back = Explanations.load(out)
    np.testing.assert_array_equal(back.counterfactuals_encoded, expl.counterfactuals_encoded)
    np.testing.assert_array_equal(back.queries_encoded, expl.queries_encoded)
    pd.testing.assert_frame_equal(back.counterfactuals, expl.counterfactuals)
    pd.testing.assert_frame_equal(back.certificates, expl.certificates, check_dtype=False)


def test_reloaded_ces_certify_exactly_as_in_memory(saved):
    model, expl, out = saved
    back = Explanations.load(out)
    targets = expl.target_class.loc[expl.counterfactuals["query_id"]].to_numpy()
    shift = ParameterShift(delta=0.01)
    here = exact_worst_case(model, expl.counterfactuals_encoded, shift, targets, precheck=False)
    there = exact_worst_case(model, back.counterfactuals_encoded, shift, targets, precheck=False)
    np.testing.assert_array_equal(there.value, here.value)
    assert list(there.status) == list(here.status)
    # the forward-pass margin too: a rounded CE on the boundary would move
    net = model.network()
    np.testing.assert_array_equal(net.forward(back.counterfactuals_encoded),
                                  net.forward(expl.counterfactuals_encoded))


def test_cli_certify_on_saved_ces_agrees_with_is_delta_robust(saved, tmp_path, capsys):
    model, expl, out = saved
    csv = tmp_path / "cert.csv"
    assert main(["certify", str(out), "--delta", "0.002", "--out", str(csv)]) == 0
    capsys.readouterr()
    table = pd.read_csv(csv)
    targets = expl.target_class.loc[expl.counterfactuals["query_id"]].to_numpy()
    robust = is_delta_robust(model, expl.counterfactuals_encoded, ParameterShift(delta=0.002),
                             targets)
    assert len(table) == len(robust)
    np.testing.assert_array_equal((table["status"] == "robust").to_numpy(), robust)
    assert table["valid"].all()
