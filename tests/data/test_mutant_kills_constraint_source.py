"""Which shipped constraints count as "the dataset's" (issue 47's mutants): a dataset that
ships only a ``max_changes`` limit still has it applied by default, ``constraints="dataset"``,
and switched off by ``None``; a dataset that ships an empty specification ships nothing."""

from __future__ import annotations

from types import SimpleNamespace

from robustce.data.constraint_source import resolve_constraints


def _data(spec: dict) -> SimpleNamespace:
    return SimpleNamespace(name="tiny", meta={"constraints": spec})


def test_a_shipped_max_changes_alone_is_applied_by_default():
    given, origin = resolve_constraints("dataset", _data({"max_changes": 2}))
    assert given is not None and given.max_changes == 2
    assert origin == {"source": "dataset", "dataset": "tiny"}
    off, origin = resolve_constraints(None, _data({"max_changes": 2}))
    assert off is None and origin["source"] == "off"
    assert origin["not_applied"]["max_changes"] == 2


def test_an_empty_shipped_specification_is_nothing_to_apply():
    given, origin = resolve_constraints("dataset", _data({"relations": []}))
    assert given is None and origin == {"source": "off", "dataset": "tiny"}
