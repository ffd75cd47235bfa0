"""Fixtures for the metric tests: a hand-made mixed schema and a diabetes MLP."""

from __future__ import annotations

import pytest

import robustce as rc


@pytest.fixture(scope="session")
def diabetes_setup():
    """(train, test, model) on diabetes: a 20-10 ReLU MLP."""
    try:
        data = rc.datasets.load("diabetes")
    except rc.errors.DatasetUnavailableError as exc:  # pragma: no cover - offline copy missing
        pytest.skip(f"dataset 'diabetes' unavailable: {exc}")
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((20, 10), epochs=60, random_state=0).fit(train)
    return train, test, model


TINY_PARTS_TOML = """
name = "tiny-parts"
protocol = "parts"
seeds = [0]

[[datasets]]
name = "covariate_shift"
label = "cov"
params = { n_samples = 120 }
queries = 8
trained = { hidden = [[8], [4], [4]], epochs = 3, lr = 0.01, batch_size = 32 }

[[methods]]
name = "counternet"
label = "CounterNet"
"""


@pytest.fixture
def tiny_parts_toml(tmp_path):
    """Write a two-part covariate-shift config (CounterNet, 8 queries per part) plus ``extra``
    TOML tables to ``tmp_path/parts.toml``; returns the path."""

    def write(extra: str = ""):
        path = tmp_path / "parts.toml"
        path.write_text(TINY_PARTS_TOML + extra)
        return path

    return write
