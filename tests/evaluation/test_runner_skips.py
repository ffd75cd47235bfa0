"""Runner data options (``rows``, ``all_free``) and clean skips: an ``optional`` dataset whose
file is unavailable and a method whose optional extra is missing are skipped with the reason,
not failed; and the ``diversity-table1`` configuration carries the paper's protocol."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import robustce.data.download as download_mod
import robustce.evaluation.runner as runner_mod
from robustce.cli import main
from robustce.errors import ConfigError, DatasetUnavailableError
from robustce.evaluation.config import parse_config, resolve_config
from robustce.evaluation.runner import load_entry, run_benchmark
from robustce.methods.base import Explainer
from robustce.methods.nearest_neighbour import NearestNeighbour
from robustce.methods.registry import register_method, unregister_method

CONFIG = {
    "name": "skips",
    "seeds": [0],
    "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 300}}],
    "methods": [{"name": "nearest_neighbour"}],
    "model": {"hidden_layers": [8], "epochs": 10, "lr": 0.01},
    "queries": {"n": 3},
    "metrics": ["validity", "proximity_l1"],
}
REASON = "Missing needs the optional extra 'nothing' (pip install 'robustce[nothing]')"


class _Missing(NearestNeighbour):
    """A method whose optional dependency is not installed."""

    name = "missing"

    @classmethod
    def missing_dependency(cls) -> str | None:
        return REASON


@pytest.fixture
def missing_method():
    register_method("missing", _Missing)
    yield "missing"
    unregister_method("missing")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network (every download fails) and an empty data folder."""
    def no_network(url, timeout=60.0):
        raise OSError("network is unreachable (test)")

    monkeypatch.setattr(download_mod, "fetch_url", no_network)
    monkeypatch.setenv("ROBUSTCE_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty"
    empty.mkdir()
    return empty


# --- data options ----------------------------------------------------------------------------
def test_rows_subsample_with_the_seed_and_all_free_drops_every_constraint():
    cfg = parse_config({**CONFIG, "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 300},
                                                "rows": 120, "all_free": True}]})
    entry = cfg.datasets[0]
    a, b, c = load_entry(cfg, entry, 0), load_entry(cfg, entry, 0), load_entry(cfg, entry, 1)
    assert len(a) == 120 and a.frame.equals(b.frame) and not a.frame.equals(c.frame)
    full = load_entry(parse_config(CONFIG), parse_config(CONFIG).datasets[0], 0)
    assert full.schema.immutable == ["age", "prior_default"]  # the loader's constraints ...
    assert a.schema.immutable == []  # ... all gone
    assert {str(f.actionability.value) for f in a.schema.features} == {"free"}
    assert a.frame.index.isin(full.frame.index).all()  # a subset of the same rows
    # the options are part of the group: another subsample is another model
    assert cfg.group_fingerprint(entry, 0) != parse_config(CONFIG).group_fingerprint(
        parse_config(CONFIG).datasets[0], 0)


@pytest.mark.parametrize(("entry", "message"), [
    ({"rows": 1}, "datasets[0].rows: expected an integer >= 2"),
    ({"rows": 10.5}, "datasets[0].rows: expected an integer >= 2"),
    ({"all_free": "yes"}, "datasets[0].all_free: expected true/false"),
    ({"optional": 1}, "datasets[0].optional: expected true/false"),
])
def test_bad_data_options_name_their_key(entry, message):
    cfg = {**CONFIG, "datasets": [{"name": "synthetic_loan", **entry}]}
    with pytest.raises(ConfigError) as info:
        parse_config(cfg)
    assert message in str(info.value)


# --- clean skips -----------------------------------------------------------------------------
def test_an_optional_dataset_without_its_file_is_skipped_with_the_reason(tmp_path, offline):
    cfg = copy.deepcopy(CONFIG)
    cfg["data_home"] = str(offline)
    cfg["datasets"].append({"name": "diabetes", "optional": True})
    result = run_benchmark(cfg, tmp_path / "out", progress=False)
    assert result.errors == []
    (cell,) = result.skipped
    assert cell["cell"] == "diabetes__seed0__nearest_neighbour" and not cell["ok"]
    assert "dataset 'diabetes' is unavailable" in cell["error"]
    assert "diabetes/diabetes.csv" in cell["error"] and "offline" in cell["error"]
    table = result.table()
    assert list(table.index) == [("synthetic_loan", "nearest_neighbour")]  # no row for it
    # without `optional` the same missing file stops the run before any work (issue 30) ...
    cfg["datasets"][1]["optional"] = False
    with pytest.raises(DatasetUnavailableError, match="diabetes/diabetes.csv"):
        run_benchmark(cfg, tmp_path / "out2", progress=False)
    assert not (tmp_path / "out2").exists()
    # ... and, past the check, it is an error whose cause is recorded
    result = run_benchmark(cfg, tmp_path / "out2", progress=False, check=False)
    assert [e["dataset"] for e in result.errors] == ["diabetes"] and result.skipped == []
    assert "group preparation failed: DatasetUnavailableError" in result.errors[0]["error"]
    assert result.errors[0]["cause"] == "missing_data"


def test_a_method_whose_extra_is_missing_is_skipped_and_retried_on_the_next_run(
        tmp_path, missing_method, monkeypatch):
    cfg = copy.deepcopy(CONFIG)
    cfg["methods"].append({"name": missing_method})
    result = run_benchmark(cfg, tmp_path, progress=False)
    assert result.errors == [] and [c["method"] for c in result.skipped] == ["missing"]
    assert result.skip_reasons() == {REASON: ["synthetic_loan__seed0__missing"]}
    assert list(result.table().index) == [("synthetic_loan", "nearest_neighbour")]
    per_cell = result.per_cell().set_index("method")
    assert per_cell.loc["missing", "skipped"] and not per_cell.loc["nearest_neighbour", "skipped"]

    built = []
    real_build = Explainer.__init__

    def counting_init(self, *args, **kwargs):
        built.append(type(self).__name__)
        real_build(self, *args, **kwargs)

    monkeypatch.setattr(Explainer, "__init__", counting_init)
    cells = []
    real_run_cell = runner_mod.run_cell
    monkeypatch.setattr(runner_mod, "run_cell",
                        lambda *a, **k: cells.append(a[2].label) or real_run_cell(*a, **k))
    run_benchmark(cfg, tmp_path, progress=False)
    assert cells == ["missing"]  # the finished cell is kept, the skipped one looked at again
    assert built == []  # and never built while its extra is missing


def test_cli_reports_skips_as_notes_and_exits_zero(tmp_path, missing_method, capsys):
    path = tmp_path / "c.toml"
    path.write_text(
        'seeds = [0]\nmetrics = ["validity"]\n[model]\nhidden_layers = [8]\nepochs = 10\nlr = 0.01\n'
        '[queries]\nn = 2\n[[datasets]]\nname = "moons"\nparams = { n_samples = 150 }\n'
        '[[methods]]\nname = "nearest_neighbour"\n[[methods]]\nname = "missing"\n')
    code = main(["benchmark", str(path), "--out", str(tmp_path / "o"), "--no-progress",
                 "--no-report"])
    captured = capsys.readouterr()
    assert code == 0
    assert f"note: skipped 1 cell (moons__seed0__missing): {REASON}" in captured.err
    assert "failed" not in captured.err
    assert "missing" not in captured.out.split("results:")[0]  # no table row for it


# --- the named configuration -----------------------------------------------------------------
def test_diversity_table1_has_the_papers_protocol():
    for quick in (False, True):
        cfg = resolve_config("diversity-table1", quick=quick)
        by = {d.label: d for d in cfg.datasets}
        assert list(by) == ["diabetes", "no2", "gmc", "spambase", "news"]
        assert [d.name for d in cfg.datasets][2:] == ["give_me_some_credit", "spambase", "online_news"]
        assert all(d.all_free for d in cfg.datasets)
        assert by["gmc"].rows == 2000 and [d.label for d in cfg.datasets if d.optional] == ["news"]
        assert cfg.model["hidden_layers"] == [20, 10]
        assert (cfg.model["epochs"], cfg.model["batch_size"]) == (100, 8)
        perturb = by["diabetes"].evaluation["perturb"]
        assert perturb["scale"] == 0.0008
        assert (cfg.queries["n"], perturb["n_repeats"]) == ((5, 1) if quick else (20, 3))
        diverse = [m for m in cfg.methods if m.name == "diverse_robust"]
        assert sorted((m.params["norm"], m.params["minimise"]) for m in diverse) == [
            ("l1", False), ("l1", True), ("l2", False), ("l2", True)]
        for label, d in by.items():
            for m in diverse:
                p = cfg.method_params(d, m)
                assert p["alpha"] == (50 if label in ("diabetes", "no2") else 1000)
                assert (p["filter"], p["beta"], p["gamma"], p["n_counterfactuals"]) == \
                    ("angle", 0.5, 0.1, 5)
        others = {m.label: m for m in cfg.methods if m.name != "diverse_robust"}
        assert others["dice_genetic"].params == {"n_counterfactuals": 5, "method": "genetic"}
        assert {others["nearest_neighbour_l1"].params["norm"],
                others["nearest_neighbour_l2"].params["norm"]} == {"l1", "l2"}
        assert others["milp_nearest"].params["norm"] == "l1"
        assert {"k_distance_l1", "k_diversity_l2", "set_distance_sum_l1",
                "set_distance_max_l2", "validity", "time"} <= set(cfg.metrics)
    assert np.isclose(resolve_config("diversity-table1").datasets[0].evaluation["perturb"]["scale"],
                      0.08 / 100)  # the authors' code: var = 0.08 · range / 100
