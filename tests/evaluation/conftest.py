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
