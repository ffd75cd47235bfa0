"""Benchmarks and missing data (issue 30): the data of every dataset is checked before any work
(one line naming the missing files and where they go); cells that failed for missing data
record that cause and heal by themselves once the data is in place; other failures say
"rerun with --retry-errors", one warning per distinct error."""

from __future__ import annotations

import shutil

import pytest

from robustce.cli import main
from robustce.evaluation.results import load_results
from robustce.evaluation.runner import MISSING_DATA, failed_for_missing_data, run_benchmark

CONFIG = """
name = "heal"
seeds = [0, 1]
metrics = ["validity", "proximity_l1"]
model = {hidden_layers = [6], epochs = 5, lr = 0.01}
queries = {n = 2}

[[methods]]
name = "nearest_neighbour"

[[datasets]]
name = "diabetes"
rows = 150
"""


@pytest.fixture
def setup(tmp_path, monkeypatch, shared_datasets):
    source = shared_datasets / "diabetes" / "diabetes.csv"
    if not source.is_file():
        pytest.skip(f"diabetes not found under {shared_datasets}")
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("ROBUSTCE_DATA", str(data))
    monkeypatch.setenv("ROBUSTCE_CACHE", str(tmp_path / "cache"))
    cfg = tmp_path / "heal.toml"
    cfg.write_text(CONFIG)
    return cfg, data, source, tmp_path / "out"


def _bench(cfg, out):
    return main(["benchmark", str(cfg), "--out", str(out), "--no-report", "--no-progress"])


def test_missing_data_stops_before_any_work_with_one_line(setup, capsys):
    cfg, data, _, out = setup
    assert _bench(cfg, out) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "diabetes/diabetes.csv" in lines[0] and "ROBUSTCE_DATA" in lines[0]
    assert str(data) in lines[0]
    assert not out.exists()


def test_a_run_without_data_then_with_data_heals_without_flags(setup, capsys):
    cfg, data, source, out = setup
    # a run that got past the check (an older robustce, or the data vanished mid-run)
    first = run_benchmark(_parsed(cfg), out, progress=False, check=False)
    assert len(first.errors) == 2
    assert all(c.get("cause") == MISSING_DATA for c in first.errors)
    (data / "diabetes").mkdir()
    shutil.copy(source, data / "diabetes" / "diabetes.csv")
    assert _bench(cfg, out) == 0  # no --retry-errors
    result = load_results(out)
    assert not result.errors and len(result.cells) == 2


def test_records_of_older_runs_count_as_missing_data():
    old = {"ok": False, "error": "group preparation failed: DatasetUnavailableError: "
                                 "diabetes/diabetes.csv is not available (you may be offline)"}
    assert failed_for_missing_data(old)
    assert not failed_for_missing_data({"ok": False, "error": "RuntimeError: boom"})
    assert not failed_for_missing_data({"ok": True, "cause": MISSING_DATA})


def test_other_failures_say_retry_errors_once_per_distinct_error(tmp_path, capsys, monkeypatch):
    from robustce.methods.nearest_neighbour import NearestNeighbour

    def boom(self, X, targets):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(NearestNeighbour, "_explain_batch", boom)
    cfg = tmp_path / "moons.toml"
    cfg.write_text(CONFIG.replace('name = "diabetes"\nrows = 150',
                                  'name = "moons"\nparams = {n_samples = 200}'))
    assert _bench(cfg, tmp_path / "out") == 1
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "2 cells failed" in warnings[0] and "boom; second line" in err
    assert "rerun with --retry-errors" in err


def _parsed(cfg):
    import tomllib

    from robustce.evaluation.config import parse_config

    return parse_config(tomllib.loads(cfg.read_text()), base_dir=cfg.parent)


def test_the_cli_run_without_data_then_with_data_heals_without_flags(setup, capsys):
    """The issue's sequence: the same command before and after the data is in place."""
    cfg, data, source, out = setup
    assert _bench(cfg, out) == 2
    (data / "diabetes").mkdir()
    shutil.copy(source, data / "diabetes" / "diabetes.csv")
    assert _bench(cfg, out) == 0
    assert "warning" not in capsys.readouterr().err


def test_config_names_classes_by_label_and_favourable(tmp_path):
    """``queries.target_class`` by label or "favourable" (each dataset's declared class)."""
    from robustce.data.registry import load
    from robustce.evaluation.runner import query_classes

    loan = load("synthetic_loan", n_samples=200)
    assert query_classes({"target_class": "favourable"}, loan) == (0, 1)
    assert query_classes({"from_class": "rejected"}, loan) == (0, 1)
    assert query_classes({"target_class": "rejected"}, loan) == (1, 0)
    cfg = _parsed_text(CONFIG.replace('name = "diabetes"\nrows = 150',
                                      'name = "synthetic_loan"\nparams = {n_samples = 300}')
                       .replace("queries = {n = 2}", 'queries = {n = 2, target_class = "approved"}')
                       .replace("epochs = 5", "epochs = 40"),
                       tmp_path)
    result = run_benchmark(cfg, tmp_path / "out", progress=False)
    assert not result.errors
    expl = __import__("robustce").Explanations.load(
        tmp_path / "out" / "explanations" / "synthetic_loan__seed0__nearest_neighbour")
    assert (expl.target_class == 1).all()


def _parsed_text(text, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    return _parsed(cfg)
