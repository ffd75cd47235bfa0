"""Retraining families on real data (diabetes, adult), as in PROPLACE §5 and APΔS §7.2.

Accuracies and shifts are printed (``pytest -s`` shows them). The default run subsamples adult
to 5 000 rows; ``-m slow`` runs the full protocol on all of adult.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import robustce as rc
from robustce.models import group_family, incremental_family, proplace_family


def _families(name: str, params: dict, n_rows: int | None = None, seed: int = 0, n_jobs: int = 1,
              inc_epochs: int = 5):
    data = rc.datasets.load(name)
    if n_rows is not None:
        rng = np.random.default_rng(seed)
        data = data.subset(np.sort(rng.choice(len(data), n_rows, replace=False)))
    train, test = data.split(test_size=0.2, random_state=seed)
    t0 = time.perf_counter()
    base, fam = proplace_family(train, params, test=test, random_state=seed, n_jobs=n_jobs)
    t1 = time.perf_counter()
    d2 = train.subset(fam.meta["d2_index"])
    inc = incremental_family(base, d2, fraction=0.1, epochs=inc_epochs, n_models=10, test=test,
                             random_state=seed, n_jobs=n_jobs)
    t2 = time.perf_counter()
    base_pred = base.predict(test.frame)
    report = {
        "base": fam.meta["base_accuracy"],
        "proplace_acc": fam.accuracies,
        "incremental_acc": inc.accuracies,
        "proplace_validity": fam.validity(test.frame, base_pred),
        "incremental_validity": inc.validity(test.frame, base_pred),
        "proplace_delta": fam.empirical_deltas(base),
        "incremental_delta": inc.meta["empirical_deltas"],
    }
    print(f"\n[{name}{'' if n_rows is None else f' ({n_rows} rows)'}] train {len(train)} test {len(test)} "
          f"params {params}  (proplace {t1 - t0:.1f} s, incremental {t2 - t1:.1f} s)")
    print(f"  base accuracy (D1)        {report['base']:.3f}")
    for key in ("proplace", "incremental"):
        acc, v, d = report[f"{key}_acc"], report[f"{key}_validity"], report[f"{key}_delta"]
        print(f"  {key:<12} accuracy {acc.mean():.3f} ± {acc.std():.3f} (min {acc.min():.3f})  "
              f"validity of base predictions {v.mean:.3f}  "
              f"empirical δ min/median/max {d.min():.3f}/{np.median(d):.3f}/{d.max():.3f}")
    return base, fam, inc, report, (train, test)


def _check(report: dict, base_floor: float, family_floor: float, inc_lr: float, inc_steps: int) -> None:
    assert report["base"] > base_floor
    assert report["proplace_acc"].mean() > family_floor
    assert report["incremental_acc"].mean() > base_floor
    # most test predictions survive retraining, but not all (that is the point of robust CEs)
    for key in ("proplace_validity", "incremental_validity"):
        assert 0.7 < report[key].mean < 1.0
    # retraining from a new seed moves weights far more than a few fine-tuning steps;
    # Adam moves every weight by at most about lr per step
    assert np.median(report["proplace_delta"]) > 0.3
    assert np.all(report["incremental_delta"] <= inc_lr * inc_steps * 1.5)
    assert np.median(report["incremental_delta"]) < np.min(report["proplace_delta"])


def test_diabetes_families(shared_datasets):
    params = {"hidden_layers": (20, 10), "epochs": 40, "batch_size": 64, "lr": 5e-3}
    base, fam, inc, report, (train, _) = _families("diabetes", params)
    assert len(fam) == 20 and len(inc) == 10
    n_inc_rows = round(0.1 * len(fam.meta["d2_index"]))
    steps = 5 * int(np.ceil(n_inc_rows / params["batch_size"]))
    _check(report, base_floor=0.68, family_floor=0.72, inc_lr=params["lr"], inc_steps=steps)


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_adult_families_subsampled(shared_datasets):
    params = {"hidden_layers": (20, 10), "epochs": 8, "batch_size": 64, "lr": 5e-3}
    base, fam, inc, report, _ = _families("adult", params, n_rows=5_000)
    assert len(fam) == 20 and len(inc) == 10
    n_inc_rows = round(0.1 * len(fam.meta["d2_index"]))
    steps = 5 * int(np.ceil(n_inc_rows / params["batch_size"]))
    _check(report, base_floor=0.8, family_floor=0.8, inc_lr=params["lr"], inc_steps=steps)


@pytest.mark.slow
def test_adult_families_full_protocol(shared_datasets):
    params = {"hidden_layers": (20, 10), "epochs": 10, "batch_size": 32, "lr": 1e-3}
    base, fam, inc, report, (train, test) = _families("adult", params, n_jobs=2)
    assert len(train) > 39_000 and len(fam) == 20
    n_inc_rows = round(0.1 * len(fam.meta["d2_index"]))
    steps = 5 * int(np.ceil(n_inc_rows / params["batch_size"]))
    _check(report, base_floor=0.82, family_floor=0.82, inc_lr=params["lr"], inc_steps=steps)


def test_group_family_german_original_vs_corrected(shared_datasets):
    """RoCourseNet's data shift: German credit original vs corrected labels, one model each."""
    data = rc.datasets.load("rocoursenet_german")
    params = {"hidden_layers": (20, 10), "epochs": 30, "batch_size": 32, "lr": 3e-3}
    fam = group_family(data, params, random_state=0)
    assert fam.meta["groups"] == ["corrected", "original"] and fam.meta["sizes"] == [1000, 1000]
    assert np.all(fam.accuracies > 0.65)
    original_test = data.subset(fam.meta["test_index"][1])
    cross = float((fam[0].predict(original_test.frame) == original_test.y).mean())
    agree = fam.validity(original_test.frame, fam[1].predict(original_test.frame)).per_model[0]
    print(f"\n[rocoursenet_german] in-group accuracies {fam.accuracies.round(3).tolist()}; "
          f"corrected-model accuracy on original test {cross:.3f}; agreement with the original model "
          f"{agree:.3f}; empirical δ between the two {fam.empirical_deltas(fam[0])[1]:.3f}")
    # the shift is real: the other group's model is much worse on this group's data
    assert cross < fam.accuracies[1] - 0.1
    assert agree < 0.8
