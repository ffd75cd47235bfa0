"""Named benchmark configurations, per-dataset overrides and the [quick] scale."""

from __future__ import annotations

import inspect
import json
import tomllib

import pytest

from robustce.cli import main
from robustce.errors import ConfigError
from robustce.evaluation.config import (
    CONFIG_DIR,
    apply_quick,
    named_configs,
    parse_config,
    resolve_config,
)
from robustce.evaluation.part_shift import parse_part_shift
from robustce.evaluation.results import load_results
from robustce.evaluation.runner import run_benchmark

TWO_DATASETS = {
    "name": "overrides",
    "seeds": [0],
    "metrics": ["validity", "proximity_l1"],
    "model": {"hidden_layers": [6], "epochs": 10, "lr": 0.01},
    "queries": {"n": 3},
    "evaluation": {"lof_neighbors": 5},
    "methods": [{"name": "nearest_neighbour", "params": {"n_neighbours": 1}}],
    "datasets": [
        {"name": "moons", "params": {"n_samples": 200}},
        {"name": "moons", "label": "moons_big", "params": {"n_samples": 200},
         "model": {"hidden_layers": [12, 4]}, "evaluation": {"lof_neighbors": 7},
         "methods": {"nearest_neighbour": {"n_neighbours": 2}}},
    ],
    "quick": {"seeds": [3], "queries": {"n": 2}, "datasets": ["moons_big"],
              "evaluation": {"lof_neighbors": 4}},
}


def test_dataset_entries_override_model_evaluation_and_method_params():
    cfg = parse_config(TWO_DATASETS)
    plain, big = cfg.datasets
    assert plain.model == cfg.model and plain.evaluation == cfg.evaluation
    assert big.model == {**cfg.model, "hidden_layers": [12, 4]}  # merged: epochs, lr kept
    assert big.evaluation["lof_neighbors"] == 7
    method = cfg.methods[0]
    assert cfg.method_params(plain, method) == {"n_neighbours": 1}
    assert cfg.method_params(big, method) == {"n_neighbours": 2}
    assert cfg.group_fingerprint(plain, 0) != cfg.group_fingerprint(big, 0)
    again = parse_config(json.loads(json.dumps(cfg.raw)))  # config.json round-trips
    assert [d.model for d in again.datasets] == [plain.model, big.model]
    assert again.cell_fingerprint(again.datasets[1], 0, again.methods[0]) == \
        cfg.cell_fingerprint(big, 0, method)


def test_the_runner_uses_each_datasets_overrides(tmp_path):
    result = run_benchmark(TWO_DATASETS, tmp_path, progress=False)
    cells = {c["dataset"]: c for c in result.cells}
    assert cells["moons"]["params"] == {"n_neighbours": 1}
    assert cells["moons_big"]["params"] == {"n_neighbours": 2}
    import robustce as rc

    expl = rc.Explanations.load(tmp_path / "explanations" / "moons_big__seed0__nearest_neighbour")
    assert expl.meta["params"]["n_neighbours"] == 2


@pytest.mark.parametrize(("override", "message"), [
    ({"model": {"hidden": [3]}}, "datasets[0].model.hidden: unknown parameter"),
    ({"evaluation": {"delta": -1.0}}, "datasets[0].evaluation.delta: must be a positive number"),
    ({"methods": {"wachter": {"lam": 1}}}, "datasets[0].methods.wachter: no method labelled 'wachter'"),
    ({"methods": {"nearest_neighbour": {"k": 1}}},
     "datasets[0].methods.nearest_neighbour.k: unknown parameter"),
    ({"colour": "red"}, "datasets[0].colour: unknown key"),
])
def test_bad_dataset_overrides_name_their_key(override, message):
    cfg = {**TWO_DATASETS, "datasets": [{"name": "moons", **override}]}
    with pytest.raises(ConfigError) as info:
        parse_config(cfg)
    assert message in str(info.value)


def test_metric_needs_hold_for_every_dataset():
    cfg = {**TWO_DATASETS, "metrics": ["v_delta"],
           "datasets": [{"name": "moons", "evaluation": {"delta": 0.01}}, {"name": "moons", "label": "m2"}]}
    with pytest.raises(ConfigError, match="metric 'v_delta' needs evaluation.delta"):
        parse_config(cfg)
    cfg["datasets"][1]["evaluation"] = {"delta": 0.02}
    assert [d.evaluation["delta"] for d in parse_config(cfg).datasets] == [0.01, 0.02]


def test_quick_is_the_same_protocol_at_a_smaller_scale():
    full, quick = parse_config(TWO_DATASETS), parse_config(TWO_DATASETS, quick=True)
    assert quick.quick and not full.quick and quick.name == "overrides (quick)"
    assert quick.seeds == [3] and quick.queries == {"n": 2, "from_class": 0}
    assert [d.label for d in quick.datasets] == ["moons_big"]
    big = quick.datasets[0]
    assert big.model == full.datasets[1].model  # same network
    assert big.evaluation["lof_neighbors"] == 7  # the dataset's own override still wins
    assert quick.method_params(big, quick.methods[0]) == {"n_neighbours": 2}
    assert "quick" not in quick.raw and "quick" not in full.raw
    no_quick = {k: v for k, v in TWO_DATASETS.items() if k != "quick"}
    with pytest.raises(ConfigError, match="has no \\[quick\\] table"):
        apply_quick(no_quick)
    with pytest.raises(ConfigError, match="quick.methods: unknown key"):
        parse_config({**TWO_DATASETS, "quick": {"methods": []}})
    with pytest.raises(ConfigError, match="quick.datasets\\[0\\]: no dataset labelled 'iris'"):
        parse_config({**TWO_DATASETS, "quick": {"datasets": ["iris"]}}, quick=True)


@pytest.mark.parametrize("name", sorted(named_configs()))
def test_every_named_config_is_valid_at_both_scales(name):
    raw = tomllib.loads((CONFIG_DIR / f"{name}.toml").read_text())
    assert raw.get("description"), f"{name}: needs a one-line description for --list"
    if raw.get("protocol") == "parts":  # RoCourseNet's shift protocol: its own schema
        full, quick = parse_part_shift(raw), parse_part_shift(raw, quick=True)
        assert [m.label for m in quick.methods] == [m.label for m in full.methods]
        assert len(quick.cells()) < len(full.cells())
        return
    full, quick = resolve_config(name), resolve_config(name, quick=True)
    assert full.datasets and full.methods and quick.seeds
    assert [m.label for m in quick.methods] == [m.label for m in full.methods]
    assert len(quick.seeds) * quick.queries["n"] <= len(full.seeds) * full.queries["n"]


def test_proplace_table1_has_the_per_dataset_protocol():
    cfg = resolve_config("proplace-table1")
    by = {d.label: d for d in cfg.datasets}
    assert list(by) == ["adult", "compas", "gmc", "heloc"]
    # the authors' notebooks: δ, network, k, MILP-R's own δ (their run_milpr calls)
    for label, delta, layers, epochs, milpr in [
            ("adult", 0.035, [10, 10], 20, 0.05), ("compas", 0.025, [20, 20], 50, 0.03),
            ("gmc", 0.045, [20, 20], 3, 0.08), ("heloc", 0.025, [20, 20], 50, 0.04)]:
        d = by[label]
        assert d.evaluation["delta"] == delta
        assert (d.model["hidden_layers"], d.model["epochs"]) == (layers, epochs)
        assert d.all_continuous and d.all_free  # their MILP's domain
        for m in cfg.methods:
            if m.name in ("proplace", "robust_nearest_neighbour") or m.label == "milp_robust_default":
                assert cfg.method_params(d, m)["shift"] == delta  # certified at the evaluated δ
            if m.label == "milp_robust":
                assert cfg.method_params(d, m)["shift"] == milpr
            if m.name == "proplace":  # the authors' k and outer margin
                assert cfg.method_params(d, m)["k"] == (23 if label == "heloc" else 20)
                assert cfg.method_params(d, m)["sigma"] == 0.01
    assert {"proplace", "robust_nearest_neighbour", "milp_robust", "wachter"} <= {m.name for m in cfg.methods}
    assert cfg.seeds == [0, 1] and cfg.queries["n"] == 50
    # their get_test_data: D1 rows rejected by the model and all retrained models, drawn at random
    assert cfg.queries | {"n": 50} == {"n": 50, "from_class": 0, "source": "train",
                                       "order": "random", "family_agrees": True}
    assert all(d.evaluation["retrain"]["method_data"] == "d1" for d in cfg.datasets)


def test_rocoursenet_table1_has_the_authors_settings():
    cfg = parse_part_shift(tomllib.loads((CONFIG_DIR / "rocoursenet-table1.toml").read_text()))
    by = {d.label: d for d in cfg.datasets}
    assert list(by) == ["german", "student", "covariate", "label", "loan"]
    methods = {m.label: m for m in cfg.methods}
    rcn = methods["RoCourseNet"]
    default = {k: v.default for k, v in inspect.signature(rcn.cls.__init__).parameters.items()}
    # scripts/utils_configs.py of BirkhoffG/RoCourseNet: network, lr, batch, λ, epochs, T
    for label, hidden, lr, batch, lambdas, epochs, steps in [
            ("german", [[100, 50], [20], [20]], 0.003, 256, [1.0, 1.0, 0.1], 100, 10),
            ("student", [[50, 10], [10], [10]], 0.01, 128, [1.0, 0.2, 0.1], 100, 7),
            ("covariate", [[50, 10], [10], [10]], 0.01, 128, [1.0, 0.2, 0.1], 50, 7),
            ("label", [[50, 10], [10], [10]], 0.01, 128, [1.0, 0.2, 0.1], 50, 7),
            ("loan", [[50, 10], [10], [50, 50]], 0.003, 128, [1.0, 0.2, 0.1], 5, 7)]:
        p = cfg.method_params(by[label], rcn)
        assert (p["hidden"], p["lr"], p["batch_size"], p["lambdas"], p["epochs"]) == (
            hidden, lr, batch, lambdas, epochs)
        assert p.get("n_steps", default["n_steps"]) == steps  # T
        assert p.get("epsilon", default["epsilon"]) == 0.1 and p.get("k", default["k"]) == 2
        assert p.get("inner_lr", default["inner_lr"]) == 0.03
    assert cfg.method_params(by["german"], methods["RoCourseNet-softmax"])["shift_features"] == \
        "softmax"
    assert by["loan"].params["years"] == list(range(1994, 2010)) and by["loan"].seeds == [0]
    assert all(d.all_free for d in cfg.datasets if d.label in ("german", "student", "loan"))
    assert cfg.test_size == 0.25 and cfg.seeds == [0, 1, 2]
    # post-hoc rows are too slow for loan's 112 290 queries; the trained methods run everywhere
    assert [lab for lab, m in methods.items() if m.datasets is None] == ["CounterNet", "RoCourseNet"]


def test_list_shows_each_named_config_on_one_line(capsys):
    assert main(["benchmark", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(named_configs())
    line = next(s for s in lines if s.startswith("proplace-table1 "))
    assert "PROPLACE Table 1" in line


def test_unknown_name_and_missing_quick_are_user_errors(tmp_path, capsys):
    assert main(["benchmark", "proplace-table9"]) == 2
    err = capsys.readouterr().err
    assert "no benchmark configuration named 'proplace-table9'" in err and "proplace-table1" in err
    assert main(["benchmark"]) == 2
    assert "robustce benchmark --list" in capsys.readouterr().err
    path = tmp_path / "c.toml"
    path.write_text('seeds = [0]\ndatasets = ["moons"]\nmethods = ["nearest_neighbour"]\n')
    assert main(["benchmark", str(path), "--quick", "--out", str(tmp_path / "o")]) == 2
    assert "no [quick] table" in capsys.readouterr().err


def test_quick_file_config_runs_into_its_own_directory(tmp_path, capsys, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text(
        'seeds = [0, 1]\nmetrics = ["validity"]\n[model]\nhidden_layers = [8]\nepochs = 30\nlr = 0.01\n'
        '[queries]\nn = 4\n[quick]\nseeds = [0]\nqueries = { n = 2 }\n'
        '[[datasets]]\nname = "moons"\nparams = { n_samples = 150 }\n'
        '[[methods]]\nname = "nearest_neighbour"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["benchmark", str(path), "--quick", "--no-progress", "--no-report"]) == 0
    out = tmp_path / "results" / "c-quick"
    assert sorted(p.name for p in (out / "cells").iterdir()) == ["moons__seed0__nearest_neighbour.json"]
    result = load_results(out)
    assert result.config.name == "benchmark (quick)" and result.per_cell()["n_queries"].tolist() == [2]
    assert "results: results/c-quick" in capsys.readouterr().out


# --- protocol variants (issue 31) ---------------------------------------------------------------
WITH_VARIANT = {**TWO_DATASETS, "variants": {"other": {
    "description": "another construction",
    "queries": {"order": "random", "replace": True},
    "model": {"epochs": 4},
    "datasets": {"moons_big": {"evaluation": {"lof_neighbors": 3}, "model": {"hidden_layers": [5]}}},
}}}


def test_a_variant_changes_the_protocol_and_keeps_the_rest():
    plain, other = parse_config(WITH_VARIANT), parse_config(WITH_VARIANT, variant="other")
    assert plain.datasets == parse_config(TWO_DATASETS).datasets and plain.variant is None
    assert other.variant == "other" and other.name == "overrides (other variant)"
    assert other.description == "another construction"
    assert other.queries == {"n": 3, "from_class": 0, "order": "random", "replace": True}
    small, big = other.datasets
    assert small.model == {**plain.datasets[0].model, "epochs": 4}
    assert big.model == {**plain.datasets[1].model, "epochs": 4, "hidden_layers": [5]}
    assert big.evaluation["lof_neighbors"] == 3 and small.evaluation == plain.datasets[0].evaluation
    assert [m.params for m in other.methods] == [m.params for m in plain.methods]
    assert other.seeds == plain.seeds
    assert other.group_fingerprint(big, 0) != plain.group_fingerprint(plain.datasets[1], 0)
    # then the quick scale of that protocol
    both = parse_config(WITH_VARIANT, variant="other", quick=True)
    assert both.name == "overrides (other variant) (quick)" and both.queries["n"] == 2
    assert [d.label for d in both.datasets] == ["moons_big"] and both.datasets[0].model == big.model
    assert "variants" not in other.raw and "variants" not in plain.raw
    again = parse_config(json.loads(json.dumps(other.raw)))  # config.json round-trips
    assert again.cell_fingerprint(again.datasets[1], 0, again.methods[0]) == \
        other.cell_fingerprint(big, 0, other.methods[0])


@pytest.mark.parametrize(("variants", "name", "message"), [
    ({"other": {}}, "authors", "variant 'authors': this config has no [variants.authors] table "
                               "(variants: other)"),
    ({"other": {"methods": []}}, "other", "variants.other.methods: unknown key"),
    ({"other": {"seeds": [1]}}, None, "variants.other.seeds: unknown key"),
    ({"other": {"datasets": {"iris": {}}}}, "other",
     "variants.other.datasets.iris: no dataset labelled 'iris'"),
    ({"other": {"datasets": {"moons": {"rows": 5}}}}, "other",
     "variants.other.datasets.moons.rows: unknown key"),
])
def test_bad_variants_are_config_errors(variants, name, message):
    with pytest.raises(ConfigError) as info:
        parse_config({**TWO_DATASETS, "variants": variants}, variant=name)
    assert message in str(info.value)


def test_proplace_table1_authors_variant_is_the_authors_construction():
    plain = resolve_config("proplace-table1")
    cfg = resolve_config("proplace-table1", variant="authors")
    assert cfg.name == "PROPLACE Table 1 (authors variant)"
    assert [m.label for m in cfg.methods] == [m.label for m in plain.methods]
    assert cfg.seeds == plain.seeds
    # get_test_data: 50 rows of D1's training part, np.random.choice with replacement
    assert cfg.queries == {"n": 50, "from_class": 0, "source": "d1", "order": "random",
                           "family_agrees": True, "replace": True}
    by = {d.label: d for d in cfg.datasets}
    # clfutils.py: torch seeds — base ADULT 5, COMPAS 101, GMC 0, HELOC 101 (the notebooks);
    # retrain_models 101..110, retrain_models_leave_some_out 3..12 with one drop set
    same = {"adult": ([], [3]), "compas": ([1], []), "gmc": ([], []), "heloc": ([1], [])}
    for label, d in by.items():
        r = d.evaluation["retrain"]
        assert r["shared_drop"] and r["method_data"] == "d1_all"  # run_rnnce / eval_ces: d.X1
        assert (r.get("same_init_retrain", []), r.get("same_init_drop", [])) == same[label]
        assert d.model == plain.datasets[list(by).index(label)].model  # the base network
        members = {**d.model, **r.get("member_model", {})}
        assert members["hidden_layers"] == ([50, 50] if label == "compas" else d.model["hidden_layers"])
    quick = resolve_config("proplace-table1", variant="authors", quick=True)
    assert quick.queries["replace"] and quick.datasets[0].evaluation["retrain"]["n_drop"] == 2


def test_variant_runs_into_its_own_directory(tmp_path, capsys, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text(
        'seeds = [0]\nmetrics = ["validity"]\n[model]\nhidden_layers = [8]\nepochs = 30\nlr = 0.01\n'
        '[queries]\nn = 3\n[quick]\nqueries = { n = 2 }\n'
        '[variants.wide]\nmodel = { hidden_layers = [16] }\n'
        '[[datasets]]\nname = "moons"\nparams = { n_samples = 150 }\n'
        '[[methods]]\nname = "nearest_neighbour"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["benchmark", str(path), "--variant", "wide", "--quick", "--no-progress",
                 "--no-report"]) == 0
    out = tmp_path / "results" / "c-wide-quick"
    result = load_results(out)
    assert result.config.name == "benchmark (wide variant) (quick)"
    assert result.config.datasets[0].model["hidden_layers"] == [16]
    assert "results: results/c-wide-quick" in capsys.readouterr().out
    assert main(["benchmark", str(path), "--variant", "narrow", "--out", str(tmp_path / "o")]) == 2
    assert "no [variants.narrow] table (variants: wide)" in capsys.readouterr().err
