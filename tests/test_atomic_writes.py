"""Writes that fail half-way leave the previous file or directory intact and nothing partial.

Each test makes the writer fail *during* the write (a serializer raising after it has written
part of its output, or the final rename raising) and then checks that the old content is still
there, byte for byte, and that no partial or temporary file remains. Writing straight into the
target (no temporary file) fails these tests.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.evaluation import results, runner
from robustce.explanations import Explanations, QueryResult
from robustce.utils import atomic_write


class _Boom(RuntimeError):
    pass


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


def _tree(folder):
    """Every file under ``folder`` with its bytes (to compare directory states exactly)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- utils.atomic_write -------------------------------------------------------------------
def test_atomic_write_keeps_the_old_file_when_the_writer_fails_half_way(tmp_path):
    target = tmp_path / "table.csv"
    target.write_text("old contents\n")
    with pytest.raises(_Boom), atomic_write(target) as fh:
        fh.write("new first half, ")
        fh.flush()
        raise _Boom("serializer failed half-way")
    assert target.read_text() == "old contents\n"
    assert _listing(tmp_path) == ["table.csv"]


def test_atomic_write_creates_nothing_when_the_first_write_fails(tmp_path):
    target = tmp_path / "new.json"
    with pytest.raises(_Boom), atomic_write(target) as fh:
        fh.write('{"a": ')
        raise _Boom("half a JSON document")
    assert _listing(tmp_path) == []


def test_atomic_write_keeps_the_old_file_when_the_rename_fails(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    target.write_text("old")

    def failing_replace(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="rename failed"), atomic_write(target) as fh:
        fh.write("new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert _listing(tmp_path) == ["out.txt"]


def test_atomic_write_replaces_the_file_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with atomic_write(target) as fh:
        fh.write("new")
    assert target.read_text() == "new"
    assert _listing(tmp_path) == ["out.txt"]


# --- Explanations.save -----------------------------------------------------------------------
def _explanations(value: float) -> Explanations:
    df = pd.DataFrame({"income": [1000.0 + value, 2000.0], "kids": [0, 2]})
    schema = rc.data.infer_schema(pd.DataFrame({"income": [0.5, 5000.0], "kids": [0, 4]}))
    enc = rc.data.Encoder(schema).fit(df)
    X = enc.transform(df)
    results = [QueryResult("found", X[1:2] * 0.5 + 0.1, {"distance": value}, 0.1),
               QueryResult("infeasible", None, {"distance": np.nan}, 0.2, "none")]
    return Explanations(queries=df, queries_encoded=X, target_class=[1, 1], results=results,
                        feature_names=schema.names, decode=enc.inverse_transform,
                        meta={"method": "toy"})


def test_explanations_save_failing_mid_write_keeps_the_previous_directory(tmp_path, monkeypatch):
    path = tmp_path / "expl"
    _explanations(0.125).save(path)
    before = _tree(path)
    real_to_csv = pd.DataFrame.to_csv
    calls = {"n": 0}

    def to_csv_failing_on_second_file(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            # write a partial file first, as a crashing serializer would
            target = args[0] if args else kwargs["path_or_buf"]
            with open(target, "w") as fh:
                fh.write("query_id,inc")
            raise _Boom("disk full half-way")
        return real_to_csv(self, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv_failing_on_second_file)
    with pytest.raises(_Boom):
        _explanations(0.75).save(path)
    monkeypatch.undo()
    assert calls["n"] == 2
    assert _tree(path) == before
    assert _listing(tmp_path) == ["expl"]
    assert Explanations.load(path).certificates["distance"].iloc[0] == 0.125


def test_explanations_save_failing_on_a_new_path_leaves_nothing(tmp_path, monkeypatch):
    def failing(self, *args, **kwargs):
        raise _Boom("no space")

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing)
    with pytest.raises(_Boom):
        _explanations(0.5).save(tmp_path / "expl")
    monkeypatch.undo()
    assert _listing(tmp_path) == []


# --- saved models -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def two_models():
    data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=3)
    a = rc.models.MLP(hidden_layers=(4,), epochs=2, random_state=0).fit(data)
    b = rc.models.MLP(hidden_layers=(4,), epochs=2, random_state=1).fit(data)
    return data, a, b


def test_model_save_failing_mid_write_keeps_the_previous_model(tmp_path, monkeypatch, two_models):
    import robustce.models.persistence as persistence

    data, a, b = two_models
    path = tmp_path / "model"
    a.save(path)
    before = _tree(path)
    real_dump = json.dump

    def dump_half_then_fail(obj, fh, *args, **kwargs):
        fh.write('{"format": "robu')
        raise _Boom("serializer crashed")

    monkeypatch.setattr(persistence.json, "dump", dump_half_then_fail)
    with pytest.raises(_Boom):
        b.save(path, overwrite=True)
    monkeypatch.setattr(persistence.json, "dump", real_dump)
    assert _tree(path) == before
    assert _listing(tmp_path) == ["model"]
    loaded = rc.models.load(path)
    X = a.encoder.transform(data.frame)
    np.testing.assert_array_equal(loaded.predict_proba(X), a.predict_proba(X))


# --- benchmark cell files -------------------------------------------------------------------
def test_benchmark_cell_file_is_never_half_written(tmp_path, monkeypatch):
    out = tmp_path / "bench"
    record = {"format": results.CELL_FORMAT, "cell": "diabetes__nn__s0", "ok": True, "value": 1.5}
    runner._write_cell(out, dict(record), None)
    cell = out / "cells" / "diabetes__nn__s0.json"
    before = cell.read_bytes()

    def dump_half_then_fail(obj, fh, *args, **kwargs):
        fh.write('{"cell": "diabetes__nn')
        raise _Boom("killed while writing")

    monkeypatch.setattr(runner.json, "dump", dump_half_then_fail)
    with pytest.raises(_Boom):
        runner._write_cell(out, dict(record, value=2.5), None)
    monkeypatch.undo()
    assert cell.read_bytes() == before
    assert _listing(out / "cells") == ["diabetes__nn__s0.json"]
    assert results.read_cell(cell)["value"] == 1.5
