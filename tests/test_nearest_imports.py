"""Issue 48 moved the nearest-CE search out of ``methods/milp_nearest.py`` into
:mod:`robustce.nearest`: the names users imported from the method module still resolve
there, to the engine's own objects, and the method classes run the engine's search."""

from __future__ import annotations

import importlib

import pytest

import robustce.nearest as nearest
from robustce.methods import EnsembleRobust, MILPNearest, MILPRobust


@pytest.mark.parametrize("name", ["column_weights", "feature_distance", "milp_point",
                                  "tree_candidates"])
def test_milp_nearest_still_exports_its_public_names(name):
    module = importlib.import_module("robustce.methods.milp_nearest")
    assert name in module.__all__
    assert getattr(module, name) is getattr(nearest, name)


@pytest.mark.parametrize("cls", [MILPNearest, MILPRobust, EnsembleRobust])
def test_the_methods_search_with_the_engine(cls):
    """``_nearest`` and the stages it calls are the engine's, not copies in the methods."""
    for attr in ("_nearest", "incumbent", "_encode_nearest", "_tree_stage"):
        owner = next(k for k in cls.__mro__ if attr in vars(k))
        assert owner.__module__.startswith("robustce.nearest."), (cls, attr, owner)
