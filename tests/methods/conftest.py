"""Fixtures for the explainer tests: small MLPs on diabetes and (subsampled) adult.

Datasets come from ``ROBUSTCE_DATA`` (the offline copy, set by ``tests/conftest.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import robustce as rc


def _load(name: str):
    try:
        return rc.datasets.load(name)
    except rc.errors.DatasetUnavailableError as exc:  # pragma: no cover - offline copy missing
        pytest.skip(f"dataset {name!r} unavailable: {exc}")


@pytest.fixture(scope="session")
def diabetes_setup():
    """(train, test, model) on diabetes: a 20-10 ReLU MLP, loader schema (3 immutables)."""
    data = _load("diabetes")
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((20, 10), epochs=60, random_state=0).fit(train)
    return train, test, model


@pytest.fixture(scope="session")
def adult_setup():
    """(train, test, model) on a 4 000-row subsample of CARLA adult (5 immutables)."""
    data = _load("adult")
    rows = np.random.default_rng(0).choice(len(data), size=4000, replace=False)
    small = data.subset(np.sort(rows))
    train, test = small.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((20, 10), epochs=15, random_state=0).fit(train)
    return train, test, model

