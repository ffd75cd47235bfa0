"""The shift-by-parts protocol (RoCourseNet Table 1): scoring, configuration, resumable runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from robustce.cli import main
from robustce.errors import ConfigError
from robustce.evaluation.part_shift import (
    PartCEs,
    parse_part_shift,
    run_part_shift,
    score_parts,
)


def _threshold(t: float):
    return lambda C: (C[:, 0] > t).astype(int)


def test_score_parts_counts_each_ce_on_its_own_and_the_other_parts_models():
    # part a: model x > 0.5, part b: model x > 0.7 (1-D, one column)
    Xa = np.array([[0.1], [0.2], [0.9], [0.3]])
    Ca = np.array([[0.6], [0.8], [0.4], [np.nan]])  # no CE for the last query
    Xb = np.array([[0.75], [0.1]])
    Cb = np.array([[0.65], [0.9]])
    parts = {"a": PartCEs(Xa, np.array([0, 0, 1, 0]), Ca, np.array([0, 0, 1, 1]), 2.0),
             "b": PartCEs(Xb, np.array([1, 0]), Cb, np.array([1, 1]), 1.0)}
    s = score_parts(parts, {"a": _threshold(0.5), "b": _threshold(0.7)})
    # a: targets 1, 1, 0, 1. Own model: 0.6→1 ✓, 0.8→1 ✓, 0.4→0 ✓, none ✗  → 3/4.
    #    b's model: 0.6→0 ✗, 0.8→1 ✓, 0.4→0 ✓, none ✗ → 2/4.
    # b: targets 0, 1. Own: 0.65→0 ✓, 0.9→1 ✓ → 1. a's model: 0.65→1 ✗, 0.9→1 ✓ → 1/2.
    assert s["validity"] == pytest.approx((3 / 4 + 1) / 2)
    assert s["robust_validity"] == pytest.approx((2 / 4 + 1 / 2) / 2)
    # by target class: a → 1: {✗, ✓, ✗} = 1/3, a → 0: 1; b → 0: 0, b → 1: 1
    assert s["robust_validity_to_1"] == pytest.approx((1 / 3 + 1) / 2)
    assert s["robust_validity_to_0"] == pytest.approx((1 + 0) / 2)
    assert s["proximity_l1"] == pytest.approx(((0.5 + 0.6 + 0.5) / 3 + (0.1 + 0.8) / 2) / 2)
    assert s["coverage"] == pytest.approx((3 / 4 + 1) / 2)
    assert s["accuracy"] == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert s["time_s"] == pytest.approx(3.0 / 6) and s["n_queries"] == 6
    assert s["by_part"]["a"]["robust_validity"] == 0.5 and s["by_part"]["b"]["n_to_0"] == 1
    with pytest.raises(ConfigError, match="at least two parts"):
        score_parts({"a": parts["a"]}, {"a": _threshold(0.5)})


def _config(**over):
    raw = {
        "name": "tiny-parts", "protocol": "parts", "seeds": [0], "test_size": 0.25,
        "datasets": [{"name": "covariate_shift", "label": "cov", "params": {"n_samples": 120},
                      "queries": 8,
                      "trained": {"hidden": [[8], [4], [4]], "epochs": 3, "lr": 0.01,
                                  "batch_size": 32},
                      "predictor": {"hidden_layers": [8], "epochs": 30, "lr": 0.01},
                      "methods": {"RoCourseNet": {"n_steps": 1}}}],
        "methods": [{"name": "counternet", "label": "CounterNet"},
                    {"name": "rocoursenet", "label": "RoCourseNet", "params": {"k": 1}},
                    {"name": "wachter", "label": "VanillaCF"}],
        "quick": {"seeds": [1], "queries": 4, "epochs": 2},
    }
    return raw | over


def test_part_shift_config_merges_parameters_and_names_bad_keys():
    cfg = parse_part_shift(_config())
    d = cfg.datasets[0]
    cn, rcn, wachter = cfg.methods
    assert cn.trains_own and rcn.trains_own and not wachter.trains_own
    assert cfg.method_params(d, rcn) == {"hidden": [[8], [4], [4]], "epochs": 3, "lr": 0.01,
                                         "batch_size": 32, "k": 1, "n_steps": 1}
    assert cfg.method_params(d, wachter) == {}  # post-hoc: the predictor is the MLP
    assert [(c[1], c[2].label) for c in cfg.cells()] == [(0, "CounterNet"), (0, "RoCourseNet"),
                                                       (0, "VanillaCF")]
    quick = parse_part_shift(_config(), quick=True)
    assert quick.seeds == [1] and quick.datasets[0].queries == 4
    assert quick.method_params(quick.datasets[0], cn)["epochs"] == 2
    assert quick.datasets[0].predictor["epochs"] == 2 and quick.name == "tiny-parts (quick)"
    for bad, match in [
        ({"protocol": "groups"}, "protocol: expected 'parts'"),
        ({"colour": 1}, "config.colour: unknown key"),
        ({"test_size": 1.5}, "test_size: expected a number in"),
        ({"methods": [{"name": "no_such_method"}]}, r"methods\[0\].name: unknown method"),
        ({"methods": [{"name": "wachter"}, {"name": "wachter"}]}, "labels must be unique"),
        ({"datasets": [{"name": "covariate_shift", "queries": 0}]},
         r"datasets\[0\].queries: expected a positive integer"),
        ({"datasets": [{"name": "covariate_shift", "methods": {"MILP": {}}}]},
         r"datasets\[0\].methods.MILP: no method labelled"),
        ({"datasets": [{"name": "covariate_shift", "sedes": [0]}]},
         r"datasets\[0\].sedes: unknown key"),
        ({"seeds": "0"}, "seeds: expected a non-empty list of integers"),
        ({"datasets": []}, "at least one \\[\\[datasets\\]\\]"),
        ({"methods": [{"name": "counternet", "params": {"epoks": 3}},
                      {"name": "rocoursenet", "label": "RoCourseNet"}]},
         r"datasets\[0\] / method 'counternet': epoks: unknown parameter of CounterNet"),
        ({"datasets": [{"name": "covariate_shift", "predictor": {"layers": [4]}}]},
         r"datasets\[0\].predictor.layers: unknown parameter of MLP"),
        ({"datasets": [{"name": "covariate_shift", "kinds": {"x1": "ordinal"}}]},
         r"datasets\[0\].kinds.x1: expected 'categorical', 'integer' or 'continuous'"),
    ]:
        with pytest.raises(ConfigError, match=match):
            parse_part_shift(_config(**bad))
    with pytest.raises(ConfigError, match="quick.datasets: expected a non-empty list"):
        parse_part_shift(_config(quick={"datasets": ["german"]}), quick=True)
    with pytest.raises(ConfigError, match="has no \\[quick\\] table"):
        parse_part_shift({k: v for k, v in _config().items() if k != "quick"}, quick=True)


def test_run_part_shift_writes_cells_resumes_and_records_errors(tmp_path, monkeypatch):
    out = tmp_path / "run"
    res = run_part_shift(_config(), out, progress=False)
    assert not res.errors and len(res.cells) == 3
    table = res.table()
    assert list(table.index) == [("cov", "CounterNet"), ("cov", "RoCourseNet"), ("cov", "VanillaCF")]
    for cell in res.cells:
        assert set(cell["by_part"]) == {"D1", "D2"}
        assert cell["n_queries"] == 16  # 8 test rows of each part
        assert 0 <= cell["validity"] <= 1 and 0 <= cell["robust_validity"] <= 1
        parts = cell["by_part"].values()
        assert cell["validity"] == pytest.approx(np.mean([p["validity"] for p in parts]), abs=1e-4)
    files = sorted((out / "cells").glob("*.json"))
    assert [f.name for f in files] == ["cov__seed0__CounterNet.json", "cov__seed0__RoCourseNet.json",
                                       "cov__seed0__VanillaCF.json"]
    assert (out / "table.csv").is_file() and not list(out.rglob("*.tmp"))
    before = {f.name: f.read_text() for f in files}

    import robustce.evaluation.part_shift as ps

    def boom(*a, **k):
        raise AssertionError("a finished cell was recomputed")

    monkeypatch.setattr(ps, "_trained_cell", boom)
    monkeypatch.setattr(ps, "_posthoc_cell", boom)
    again = run_part_shift(_config(), out, progress=False)  # everything is on disk
    assert {f.name: f.read_text() for f in files} == before and not again.errors
    # a changed parameter makes that cell stale: it is recomputed (here: fails and is recorded)
    changed = _config(methods=[{"name": "counternet", "label": "CounterNet",
                                "params": {"lambdas": [1.0, 0.5, 0.1]}},
                               {"name": "rocoursenet", "label": "RoCourseNet", "params": {"k": 1}},
                               {"name": "wachter", "label": "VanillaCF"}])
    res = run_part_shift(changed, out, progress=False)
    assert [e["method"] for e in res.errors] == ["CounterNet"]
    assert "AssertionError: a finished cell was recomputed" in res.errors[0]["error"]
    assert res.table().loc[("cov", "CounterNet"), ("errors", "mean")] == 1
    assert math.isnan(res.table().loc[("cov", "CounterNet"), ("validity", "mean")])


def test_a_dataset_without_parts_fails_its_cells_with_a_clear_error(tmp_path):
    raw = _config(datasets=[{"name": "moons", "params": {"n_samples": 80}}],
                  methods=[{"name": "wachter"}])
    res = run_part_shift(raw, tmp_path / "r", progress=False)
    assert len(res.errors) == 1
    assert "dataset 'moons' has no groups" in res.errors[0]["error"]


def test_cli_runs_a_parts_config_and_refuses_parallel_flags(tmp_path, capsys, tiny_parts_toml):
    path = tiny_parts_toml("""
[quick]
seeds = [1]
queries = 4
epochs = 2
""")
    assert main(["benchmark", str(path), "--quick", "--out", str(tmp_path / "o"),
                 "--no-progress", "--no-report"]) == 0
    out = capsys.readouterr().out
    assert "robust_validity" in out and "CounterNet" in out
    cell = json.loads((tmp_path / "o" / "cells" / "cov__seed1__CounterNet.json").read_text())
    assert cell["ok"] and cell["n_queries"] == 8 and cell["params"]["epochs"] == 2  # quick
    assert main(["benchmark", str(path), "--n-jobs", "2", "--out", str(tmp_path / "p")]) == 2
    assert "--n-jobs / --backend: a parts-protocol benchmark" in capsys.readouterr().err


def test_an_interrupted_trained_cell_resumes_at_the_part_it_stopped_in(tmp_path, monkeypatch):
    """Each finished part of a trained cell is checkpointed: a cell interrupted in its second
    part trains only that part when rerun, and ends with the same record as an uninterrupted
    run; the checkpoints are removed once the cell is written."""
    import robustce.methods.registry as registry

    base = _config()
    raw = _config(methods=[{"name": "counternet", "label": "CounterNet"}],
                  datasets=[{k: v for k, v in base["datasets"][0].items() if k != "methods"}])
    clean = run_part_shift(raw, tmp_path / "clean", progress=False)
    assert not clean.errors

    real = registry.build_explainer
    calls = []

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # stands for the process being stopped mid-cell
        return real(*a, **k)

    out = tmp_path / "run"
    monkeypatch.setattr(registry, "build_explainer", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_part_shift(raw, out, progress=False)
    parts_dir = out / "cells" / "cov__seed0__CounterNet.parts"
    assert len(list(parts_dir.rglob("part_*.joblib"))) == 1 and not list(out.rglob("*.tmp"))
    assert not (out / "cells" / "cov__seed0__CounterNet.json").exists()

    counted = []
    monkeypatch.setattr(registry, "build_explainer", lambda *a, **k: counted.append(1) or real(*a, **k))
    res = run_part_shift(raw, out, progress=False)
    assert not res.errors and len(counted) == 1  # only the part that had not finished
    a, b = clean.cells[0], res.cells[0]
    for key in ("validity", "robust_validity", "proximity_l1", "by_part", "validity_matrix"):
        assert a[key] == b[key], key
    assert not parts_dir.exists()
