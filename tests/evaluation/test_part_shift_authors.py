"""Part-shift protocol options of issue 31: median of the validity matrix, how far CEs leave
the data range, the authors' unshuffled last-25 % split, bounded CEs and [variants.NAME]."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robustce.cli import main
from robustce.datasets import load
from robustce.errors import ConfigError
from robustce.evaluation.part_shift import (
    PartCEs,
    _prepare,
    apply_part_variant,
    parse_part_shift,
    run_part_shift,
    score_parts,
    split_part,
)


def _threshold(t: float):
    return lambda C: (C[:, 0] > t).astype(int)


def _part(C, own, scaled=None):
    C = np.asarray(C, dtype=float).reshape(-1, 1) if np.ndim(C) == 1 else np.asarray(C, float)
    return PartCEs(np.zeros_like(C), np.asarray(own), C, np.asarray(own), 0.0, scaled)


def test_median_of_the_validity_matrix_beside_its_mean():
    # three parts, thresholds 0.5 / 0.6 / 0.9; every query aims at class 1
    parts = {"a": _part([0.55, 0.95], [0, 0]), "b": _part([0.65, 0.65], [0, 0]),
             "c": _part([0.95, 0.95], [0, 0])}
    s = score_parts(parts, {"a": _threshold(0.5), "b": _threshold(0.6), "c": _threshold(0.9)})
    # matrix: a→b 1/2, a→c 1/2, b→a 1, b→c 0, c→a 1, c→b 1
    assert s["validity_matrix"] == {"a": {"b": 0.5, "c": 0.5}, "b": {"a": 1.0, "c": 0.0},
                                    "c": {"a": 1.0, "b": 1.0}}
    assert s["robust_validity"] == pytest.approx(4 / 6)
    assert s["robust_validity_median"] == pytest.approx(0.75)


def test_out_of_range_share_and_excess_in_raw_units():
    # two scaled features (model columns 0 and 1), raw ranges 10 and 200
    scaled = {"jobs": (0, 10.0), "amount": (1, 200.0)}
    C = np.array([[1.5, 0.5], [-0.2, 1.1], [0.3, 0.4], [np.nan, np.nan]])
    parts = {"a": PartCEs(np.zeros((4, 2)), np.zeros(4, int), C, np.zeros(4, int), 0.0, scaled),
             "b": PartCEs(np.zeros((1, 2)), np.zeros(1, int), np.array([[0.2, 0.2]]),
                          np.zeros(1, int), 0.0, scaled)}
    s = score_parts(parts, {"a": _threshold(0.5), "b": _threshold(0.5)})
    # 4 CEs (the NaN row has none); 2 leave: excesses 0.5 and max(0.2, 0.1) ranges
    assert s["out_of_range"] == pytest.approx(2 / 4)
    assert s["excess_range_mean"] == pytest.approx((0.5 + 0.2) / 2)
    assert s["excess_range_max"] == pytest.approx(0.5)
    jobs, amount = s["out_of_range_by_feature"]["jobs"], s["out_of_range_by_feature"]["amount"]
    assert jobs["share"] == pytest.approx(2 / 4) and jobs["max_excess"] == pytest.approx(5.0)
    assert jobs["mean_excess"] == pytest.approx((5.0 + 2.0) / 2)
    assert amount["share"] == pytest.approx(1 / 4) and amount["max_excess"] == pytest.approx(20.0)
    # without scaled columns no range figures (and no crash)
    plain = {g: PartCEs(p.X, p.own, p.C, p.y, 0.0) for g, p in parts.items()}
    assert "out_of_range" not in score_parts(plain, {"a": _threshold(0.5),
                                                     "b": _threshold(0.5)})


def test_last_split_is_the_unshuffled_tail_of_each_part():
    data = load("covariate_shift", n_samples=80)
    part = next(iter(data.by_group().values()))
    train, test = split_part(part, 0.25, "last", seed=3)
    n_test = int(np.ceil(0.25 * len(part)))
    assert list(test.frame.index) == list(part.frame.index[-n_test:])
    assert list(train.frame.index) == list(part.frame.index[:-n_test])
    assert split_part(part, 0.25, "last", seed=4)[1].frame.equals(test.frame)  # seed-free
    rnd = split_part(part, 0.25, "random", seed=3)[1]
    assert list(rnd.frame.index) != list(test.frame.index)


def _config(**over):
    raw = {
        "name": "tiny-parts", "protocol": "parts", "seeds": [0], "test_size": 0.25,
        "datasets": [{"name": "covariate_shift", "label": "cov", "params": {"n_samples": 120},
                      "queries": 6,
                      "trained": {"hidden": [[8], [4], [4]], "epochs": 2, "lr": 0.01,
                                  "batch_size": 32}}],
        "methods": [{"name": "counternet", "label": "CounterNet"}],
        "variants": {"authors": {"description": "the authors'", "split": "last",
                                 "test_size": 0.3,
                                 "datasets": {"cov": {"trained": {"bounded": False,
                                                                  "grad_clip": 0.5}}}}},
    }
    return raw | over


def test_split_option_reaches_the_groups_and_the_fingerprint():
    cfg = parse_part_shift(_config(split="last"))
    assert cfg.split == "last"
    group = _prepare(cfg, cfg.datasets[0], 0)
    data = load("covariate_shift", n_samples=120)
    for g, part in data.by_group().items():
        _, test = group.splits[g]
        assert list(test.frame.index) == list(part.frame.index[-len(test):])
    d, m = cfg.datasets[0], cfg.methods[0]
    assert cfg.fingerprint(d, 0, m) != parse_part_shift(_config()).fingerprint(d, 0, m)
    with pytest.raises(ConfigError, match="split: expected one of random, last"):
        parse_part_shift(_config(split="first"))


def test_variant_merges_its_protocol_and_is_dropped_otherwise():
    plain = parse_part_shift(_config())
    assert plain.split == "random" and "bounded" not in plain.datasets[0].trained
    cfg = parse_part_shift(_config(), variant="authors")
    assert cfg.split == "last" and cfg.test_size == 0.3 and cfg.description == "the authors'"
    assert cfg.name == "tiny-parts (authors variant)"
    assert cfg.datasets[0].trained == {"hidden": [[8], [4], [4]], "epochs": 2, "lr": 0.01,
                                       "batch_size": 32, "bounded": False, "grad_clip": 0.5}
    with pytest.raises(ConfigError, match="no \\[variants.paper\\] table"):
        parse_part_shift(_config(), variant="paper")
    bad = _config(variants={"authors": {"seeds": [3]}})
    with pytest.raises(ConfigError, match="variants.authors.seeds: unknown key"):
        parse_part_shift(bad)
    with pytest.raises(ConfigError, match="no dataset labelled 'nope'"):
        apply_part_variant(_config(variants={"authors": {"datasets": {"nope": {}}}}), "authors")


def test_bounded_false_from_the_config_lets_ces_leave_the_range(tmp_path):
    # an explainer pushed far out: huge proximity weight 0, validity only, unbounded
    trained = {"hidden": [[8], [4], [4]], "epochs": 3, "lr": 0.05, "batch_size": 16,
               "lambdas": [1.0, 1.0, 0.0]}
    raw = _config(datasets=[{"name": "covariate_shift", "label": "cov",
                             "params": {"n_samples": 120}, "queries": 10, "trained": trained,
                             "methods": {"CounterNet": {"bounded": False}}}])
    free = run_part_shift(raw, tmp_path / "free", progress=False)
    bounded = run_part_shift(_config(datasets=[dict(raw["datasets"][0], methods={})]),
                             tmp_path / "bounded", progress=False)
    f, b = free.cells[0], bounded.cells[0]
    assert f["ok"] and b["ok"] and f["params"]["bounded"] is False
    assert b["out_of_range"] == 0 and b["excess_range_max"] == 0
    assert f["out_of_range"] > 0 and f["excess_range_max"] > 0


def test_cli_runs_the_authors_variant_of_a_parts_config(tmp_path, capsys, tiny_parts_toml):
    path = tiny_parts_toml("""
[variants.authors]
split = "last"
datasets = { cov = { trained = { val_size = 0.2 } } }
""")
    assert main(["benchmark", str(path), "--variant", "authors", "--out", str(tmp_path / "o"),
                 "--no-progress", "--no-report"]) == 0
    cell = json.loads((tmp_path / "o" / "cells" / "cov__seed0__CounterNet.json").read_text())
    assert cell["ok"] and cell["params"]["val_size"] == 0.2
    assert "robust_validity_median" in cell and "validity_matrix" in cell
    conf = json.loads((tmp_path / "o" / "config.json").read_text())
    assert conf["split"] == "last" and "(authors variant)" in conf["name"]
    capsys.readouterr()
    assert main(["benchmark", str(path), "--out", str(tmp_path / "p"), "--no-progress",
                 "--no-report"]) == 0  # without --variant the table is checked and dropped


def test_rocoursenet_table1_authors_variant_has_the_paper_era_setup():
    from robustce.evaluation.config import config_path, read_toml

    raw = read_toml(config_path("rocoursenet-table1"))
    plain = parse_part_shift(raw)
    cfg = parse_part_shift(raw, variant="authors")
    assert plain.split == "random" and cfg.split == "last" and cfg.test_size == 0.25
    by = {d.label: d for d in cfg.datasets}
    methods = {m.label: m for m in cfg.methods}
    for label in ("german", "student", "loan"):
        p = cfg.method_params(by[label], methods["RoCourseNet"])
        assert (p["activation"], p["dropout"], p["grad_clip"], p["epochs"], p["val_size"],
                p["bounded"]) == ("leaky_relu", 0.3, 0.5, 50, 0.1, False)
    loan = cfg.method_params(by["loan"], methods["RoCourseNet"])
    assert loan["hidden"] == [[200, 10], [10], [10]] and loan["n_steps"] == 13
    assert cfg.method_params(by["loan"], methods["CounterNet"])["hidden"] == [[200, 10], [10],
                                                                            [10]]
    # the default protocol keeps both loan rows: bounded (default) and unbounded
    pm = {m.label: m for m in plain.methods}
    ploan = {d.label: d for d in plain.datasets}["loan"]
    assert "bounded" not in plain.method_params(ploan, pm["RoCourseNet"])
    assert plain.method_params(ploan, pm["RoCourseNet-unbounded"])["bounded"] is False
    assert pm["CounterNet-unbounded"].datasets == ("loan",)
