"""Benchmark tables count consistently (issue 30): a CE whose query did not end ``found`` (a
MACE query that hit its time limit returns its best point) is in ``n`` and the metrics but not
in coverage; the table shows it as ``uncertified`` and the notes name it. A method with no CE at
all says why (the queries' statuses and messages)."""

from __future__ import annotations

import numpy as np

from robustce.evaluation.runner import run_benchmark
from robustce.explanations import QueryResult
from robustce.methods.nearest_neighbour import NearestNeighbour

CONFIG = {
    "name": "counts", "seeds": [0], "metrics": ["validity", "proximity_l1"],
    "model": {"hidden_layers": [8], "epochs": 40, "lr": 0.01},
    "queries": {"n": 4},
    "methods": [{"name": "nearest_neighbour"}],
    "datasets": [{"name": "moons", "params": {"n_samples": 300}}],
}


def test_a_timeout_with_a_ce_is_counted_as_uncertified(tmp_path, monkeypatch):
    real = NearestNeighbour._explain_batch

    def first_times_out(self, X, targets):
        out = real(self, X, targets)
        out[0] = QueryResult("timeout", out[0].cfs, time=1.0, message="time limit")
        return out

    monkeypatch.setattr(NearestNeighbour, "_explain_batch", first_times_out)
    result = run_benchmark(CONFIG, tmp_path, progress=False)
    table = result.table()
    row = table.loc[("moons", "nearest_neighbour")]
    assert row[("n", "mean")] == 4 and row[("uncertified", "mean")] == 1
    assert np.isclose(row[("coverage", "mean")], 0.75)  # 4 queries: 3 found + 1 uncertified
    unc = result.uncertified()
    assert len(unc) == 1 and unc["status"].iloc[0] == "timeout"
    (note,) = result.notes()
    assert "uncertified: 1 CE" in note and f"query {unc['query_id'].iloc[0]} (timeout)" in note
    assert "uncertified" in result.format()


def test_no_uncertified_column_when_every_ce_is_certified(tmp_path):
    result = run_benchmark(CONFIG, tmp_path, progress=False)
    assert "uncertified" not in result.table().columns.get_level_values(0)
    assert result.notes() == []


def test_zero_coverage_says_why(tmp_path, monkeypatch):
    def nothing(self, X, targets):
        return [QueryResult("not_found", message="the explainer head's CE does not reach the "
                                                  "target class") for _ in X]

    monkeypatch.setattr(NearestNeighbour, "_explain_batch", nothing)
    result = run_benchmark(CONFIG, tmp_path, progress=False)
    (note,) = result.notes()
    assert note.startswith("moons nearest_neighbour: no query got a CE — 4 not_found: "
                           "the explainer head's CE does not reach the target class")


def test_reports_name_the_classes_by_label(tmp_path):
    cfg = {**CONFIG, "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 400}}]}
    result = run_benchmark(cfg, tmp_path, progress=False)
    assert result.class_notes() == ["synthetic_loan: rows predicted rejected, explained toward "
                                    "approved"]


def _cell(coverage, seed, reasons=None):
    return {"ok": True, "dataset": "moons", "method": "mace", "seed": seed, "coverage": coverage,
            "reasons": reasons or {}}


def test_zero_coverage_reasons_need_every_cell_at_zero_in_any_order():
    from robustce.evaluation.results import BenchmarkResult

    zero = _cell(0.0, 0, {"timeout: time limit": 3})
    covered = _cell(0.5, 1)
    for cells in ([zero, covered], [covered, zero], [zero, covered, zero], [covered, zero, zero]):
        assert BenchmarkResult(None, cells).coverage_reasons() == {}, cells
    both = BenchmarkResult(None, [zero, _cell(0.0, 1, {"timeout: time limit": 2})])
    assert both.coverage_reasons() == {("moons", "mace"): {"timeout: time limit": 5}}
