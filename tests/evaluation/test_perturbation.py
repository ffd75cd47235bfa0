"""The input-perturbation protocol (Leofante & Potyka §6): noise law, clipping, class kept,
set distances between the CEs of x and of its perturbed copies, and the runner hook."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ConfigError, ValidationError
from robustce.evaluation.config import parse_config
from robustce.evaluation.perturbation import (
    input_robustness,
    perturb_inputs,
    summarise_input_robustness,
    training_ranges,
)
from robustce.evaluation.runner import run_benchmark


def _model(threshold: float | None = None):
    """Two continuous columns in [0, 1]; class 1 iff a > threshold (None: always class 0)."""
    df = pd.DataFrame({"a": [0.0, 1.0, 0.3], "b": [0.0, 1.0, 0.7]})
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)

    class M(rc.models.Model):
        encoder = enc

        def logits(self, X):
            Z = self.encode(X)
            if threshold is None:
                return np.full((len(Z), 1), -1.0)
            return (Z[:, 0] - threshold)[:, None]

    return M()


LOWER, UPPER = np.array([0.0, 0.2]), np.array([1.0, 0.6])


def test_noise_variance_is_scale_times_range():
    model = _model()
    n = 40_000
    X = np.tile([0.5, 0.4], (n, 1))  # far from the bounds: clipping is negligible (> 7 sd)
    X2, kept = perturb_inputs(model, X, LOWER, UPPER, random_state=0)
    assert kept.all()
    var = 0.0008 * (UPPER - LOWER)  # the paper: N(x, diag(0.0008 · range)), a variance
    assert np.allclose(X2.var(axis=0), var, rtol=0.04)  # sd of the estimate ≈ 0.7 %
    assert np.allclose(X2.mean(axis=0), [0.5, 0.4], atol=4 * np.sqrt(var / n))
    assert abs(np.corrcoef(X2.T)[0, 1]) < 0.03  # diagonal covariance


def test_noise_is_clipped_to_the_training_range():
    model = _model()
    n = 20_000
    X = np.tile([0.0, 0.6], (n, 1))  # on the lower bound of a and the upper bound of b
    X2, _ = perturb_inputs(model, X, LOWER, UPPER, scale=0.0008, random_state=1)
    assert (X2 >= LOWER).all() and (X2 <= UPPER).all()
    at_bound = np.mean(X2[:, 0] == 0.0), np.mean(X2[:, 1] == 0.6)
    assert at_bound[0] == pytest.approx(0.5, abs=0.02)  # half the draws fall outside
    assert at_bound[1] == pytest.approx(0.5, abs=0.02)
    inside = X2[X2[:, 0] > 0, 0]  # the half-normal mean: sd · sqrt(2 / π)
    assert inside.mean() == pytest.approx(np.sqrt(0.0008) * np.sqrt(2 / np.pi), rel=0.03)


def test_class_is_kept_by_redrawing_and_lost_rows_are_reported():
    model = _model(threshold=0.5)
    X = np.tile([0.51, 0.4], (500, 1))  # class 1; about 36 % of the draws cross a = 0.5
    X2, kept = perturb_inputs(model, X, LOWER, UPPER, random_state=2)
    assert kept.all() and (model.predict(X2) == 1).all()
    X2, kept = perturb_inputs(model, X, LOWER, UPPER, max_tries=1, random_state=2)
    assert 0.2 < 1 - kept.mean() < 0.5
    assert np.isnan(X2[~kept]).all() and (model.predict(X2[kept]) == 1).all()
    again, _ = perturb_inputs(model, X, LOWER, UPPER, max_tries=1, random_state=2)
    assert np.array_equal(X2, again, equal_nan=True)


def test_bad_settings_are_named():
    model = _model()
    with pytest.raises(ValidationError, match="scale"):
        perturb_inputs(model, np.zeros((1, 2)), LOWER, UPPER, scale=0)
    with pytest.raises(ValidationError, match="max_tries"):
        perturb_inputs(model, np.zeros((1, 2)), LOWER, UPPER, max_tries=0)
    with pytest.raises(ValidationError, match="lower/upper"):
        perturb_inputs(model, np.zeros((1, 2)), UPPER, LOWER)


@pytest.fixture(scope="module")
def grid():
    """A 2-D dataset; class 1 iff a > 0.5; queries of class 0 near the boundary."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(size=(300, 2)), columns=["a", "b"])
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)
    model = rc.models.NetworkModel([(np.array([[1.0, 0.0]]), np.array([-0.5]))], enc)
    data = rc.data.Dataset(df, pd.Series(model.predict(df)), schema)
    queries = df[(df["a"] < 0.5) & (df["a"] > 0.35)].iloc[:8]
    return model, data, queries


def test_single_ce_set_distance_is_the_distance_between_the_two_ces(grid):
    """Lemma 1: for one CE per set both set distances equal d(c₁, c₂). Checked against a
    brute-force nearest neighbour of each perturbed copy (same seed, same draws)."""
    model, data, queries = grid
    nn = rc.methods.NearestNeighbour(model, data, norm="l1")
    table = input_robustness(nn, queries, data, n_repeats=2, scale=0.01, random_state=5)
    assert len(table) == 2 * len(queries)
    assert table["perturbed"].all() and table["valid"].all()
    X = model.encoder.transform(queries)
    lo, hi = training_ranges(model, data)
    X2, _ = perturb_inputs(model, np.tile(X, (2, 1)), lo, hi, scale=0.01, random_state=5)
    T = model.encoder.transform(data.frame)[data.y == 1]
    def nearest(P):
        return T[np.abs(P[:, None, :] - T[None, :, :]).sum(axis=2).argmin(axis=1)]
    expected = np.abs(nearest(np.tile(X, (2, 1))) - nearest(X2)).sum(axis=1)
    assert np.allclose(table["set_distance_sum_l1"], expected)
    assert np.allclose(table["set_distance_max_l1"], expected)
    assert np.allclose(table["noise_l1"], np.abs(X2 - np.tile(X, (2, 1))).sum(axis=1))
    summary = summarise_input_robustness(table)
    assert summary.loc["set_distance_max_l1", "mean"] == pytest.approx(expected.mean())
    assert summary.loc["set_distance_max_l1", "std"] == pytest.approx(expected.std())
    assert summary.loc["n_pairs", "mean"] == 16


def test_sets_of_diverse_robust(grid):
    model, data, queries = grid
    ex = rc.methods.DiverseRobust(model, data, alpha=20, beta=0.5)
    table = input_robustness(ex, queries, data, random_state=0)
    assert (table["n_cfs"] >= 1).all() and table["valid"].all()
    assert (table["set_distance_sum_l1"] <= table["set_distance_max_l1"] + 1e-12).all()  # Lemma 1


def test_runner_reports_set_distances_when_the_config_enables_perturbation(tmp_path):
    cfg = {
        "name": "perturb", "seeds": [0],
        "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 600}}],
        "methods": [{"name": "nearest_neighbour"}, {"name": "diverse_robust",
                                                     "params": {"alpha": 20}}],
        "model": {"hidden_layers": [8], "epochs": 5, "lr": 0.01},
        "queries": {"n": 3},
        "metrics": ["validity", "set_distance_sum_l1", "set_distance_max_l1"],
        "evaluation": {"perturb": {"n_repeats": 2}},
    }
    result = run_benchmark(cfg, tmp_path, progress=False)
    assert not result.errors, result.errors
    table = result.table()
    for method in ("nearest_neighbour", "diverse_robust"):
        row = table.loc[("synthetic_loan", method)]
        assert np.isfinite(row[("set_distance_max_l1", "mean")])
        assert row[("set_distance_sum_l1", "mean")] <= row[("set_distance_max_l1", "mean")] + 1e-12


def test_config_needs_the_perturb_table_for_set_distances():
    base = {"seeds": [0], "datasets": ["synthetic_loan"], "methods": ["nearest_neighbour"],
            "metrics": ["set_distance_max_l1"]}
    with pytest.raises(ConfigError, match=r"evaluation.perturb"):
        parse_config(base)
    ok = parse_config({**base, "evaluation": {"perturb": {}}})
    assert ok.evaluation["perturb"] == {"scale": 0.0008, "n_repeats": 3, "max_tries": 100}
    with pytest.raises(ConfigError, match="evaluation.perturb.*n_repeats"):
        parse_config({**base, "evaluation": {"perturb": {"n_repeats": 0}}})
    with pytest.raises(ConfigError, match="evaluation.perturb"):
        parse_config({**base, "evaluation": {"perturb": {"sigma": 0.1}}})
