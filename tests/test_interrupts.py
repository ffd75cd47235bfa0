"""Interrupts (a KeyboardInterrupt, what SIGINT raises, injected at random points) leave either
the previous state or the complete new one: ``Explanations.save`` at every file write, the
benchmark at every atomic write and explanation save (then it resumes to the same table).
``explain --out`` is covered in ``test_cli_reliability.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
import robustce.evaluation.runner as runner_mod
import robustce.explanations as expl_mod
from robustce.evaluation.runner import run_benchmark
from robustce.explanations import Explanations, QueryResult


def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _explanations(scale: float) -> Explanations:
    df = pd.DataFrame({"income": [1000.5, 2000.25, 3000.0], "city": ["Paris", "Rome", "Oslo"]})
    enc = rc.data.Encoder(rc.data.infer_schema(df)).fit(df)
    X = enc.transform(df)
    results = [QueryResult("found", X[1:2] * scale, {"distance": scale}, 0.25),
               QueryResult("timeout", None, {"distance": np.nan}, 1.0, "time limit"),
               QueryResult("found", X[0:1], {"distance": 0.5}, 0.125)]
    return Explanations(queries=df, queries_encoded=X, target_class=[1, 1, 0], results=results,
                        feature_names=list(df.columns), decode=enc.inverse_transform,
                        meta={"method": "toy"})


class _InterruptAt:
    """Wraps ``fn``; its k-th call raises KeyboardInterrupt (before or after doing its work)."""

    def __init__(self, fn, k: int, after: bool = False):
        self.fn, self.k, self.after, self.calls = fn, k, after, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.k and not self.after:
            raise KeyboardInterrupt
        out = self.fn(*args, **kwargs)
        if self.calls == self.k:
            raise KeyboardInterrupt
        return out

    @property
    def func(self):
        """A plain function calling the wrapper (binds as a method when set on a class)."""
        def call(*args, **kwargs):
            return self(*args, **kwargs)
        return call


#: the file writes inside Explanations.save: meta.json (write_text) and three CSVs (to_csv)
SAVE_WRITES = [("write_text", 1), ("to_csv", 1), ("to_csv", 2), ("to_csv", 3)]


@pytest.mark.parametrize("fresh", [True, False], ids=["new-path", "replace"])
@pytest.mark.parametrize("write, k", SAVE_WRITES)
@pytest.mark.parametrize("after", [False, True], ids=["before-write", "after-write"])
def test_explanations_save_interrupted_at_any_write(tmp_path, monkeypatch, fresh, write, k, after):
    path = tmp_path / "expl"
    if not fresh:
        _explanations(0.3).save(path)
    before = _snapshot(tmp_path)
    owner = pd.DataFrame if write == "to_csv" else expl_mod.Path
    monkeypatch.setattr(owner, write, _InterruptAt(getattr(owner, write), k, after).func)
    with pytest.raises(KeyboardInterrupt):
        _explanations(0.7).save(path)
    monkeypatch.undo()
    assert _snapshot(tmp_path) == before  # the previous state, nothing half-written beside it
    if not fresh:
        assert Explanations.load(path).certificates["distance"].iloc[0] == pytest.approx(0.3)


def test_explanations_save_interrupted_at_the_rename_keeps_one_complete_state(tmp_path,
                                                                              monkeypatch):
    path = tmp_path / "expl"
    _explanations(0.3).save(path)
    monkeypatch.setattr(expl_mod, "replace_dir",
                        _InterruptAt(expl_mod.replace_dir, 1, True).func)
    with pytest.raises(KeyboardInterrupt):
        _explanations(0.7).save(path)
    monkeypatch.undo()
    # the rename happened: the complete new state, and no temporary left behind
    assert Explanations.load(path).certificates["distance"].iloc[0] == pytest.approx(0.7)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expl"]


# --- the benchmark --------------------------------------------------------------------------------
CONFIG = {
    "name": "interrupts",
    "seeds": [0, 1],
    "datasets": [{"name": "moons", "params": {"n_samples": 200}}],
    "methods": [{"name": "nearest_neighbour"}],
    "model": {"hidden_layers": [6], "epochs": 10, "lr": 0.01},
    "queries": {"n": 3},
    "metrics": ["validity", "proximity_l1"],
}


def _comparable(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns=["time", "time_s"], level=0, errors="ignore")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return run_benchmark(CONFIG, tmp_path_factory.mktemp("ref"), progress=False)


def _count_calls(monkeypatch, tmp_path):
    """How often the benchmark calls each interruptible function in one run."""
    counts = {}
    for name, owner in (("atomic_write", runner_mod), ("save", Explanations)):
        spy = _InterruptAt(getattr(owner, name), 0)
        monkeypatch.setattr(owner, name, spy.func)
        counts[name] = spy
    run_benchmark(CONFIG, tmp_path / "count", progress=False)
    monkeypatch.undo()
    return {k: v.calls for k, v in counts.items()}


@pytest.mark.parametrize("seed", range(4))
def test_benchmark_interrupted_at_a_random_write_resumes_to_the_same_table(
        reference, tmp_path, monkeypatch, seed):
    counts = _count_calls(monkeypatch, tmp_path)
    rng = np.random.default_rng(seed)
    name = ["atomic_write", "save"][int(rng.integers(2))]
    k, after = int(rng.integers(1, counts[name] + 1)), bool(rng.integers(2))
    owner = runner_mod if name == "atomic_write" else Explanations
    monkeypatch.setattr(owner, name, _InterruptAt(getattr(owner, name), k, after).func)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(CONFIG, out, progress=False)
    monkeypatch.undo()
    assert not list(out.rglob("*.tmp"))
    assert not [p for p in out.rglob(".*") if "tmp-" in p.name or "old-" in p.name]
    result = run_benchmark(CONFIG, out, progress=False)
    pd.testing.assert_frame_equal(_comparable(result.table()), _comparable(reference.table()))
