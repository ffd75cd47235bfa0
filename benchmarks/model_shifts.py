"""How far do retrained models move? Retraining families on diabetes and adult.

For each dataset (80/20 train/test split, seed 0) this builds

* the PROPLACE family (train halves D1/D2; base on D1; 10 models on D1 ∪ D2 with new seeds,
  10 on D1 minus a random 1 %), reported per kind;
* an incremental family (the base fine-tuned for 5 epochs on a random 10 % of D2, 10 seeds);
* a continued-training family (the base fine-tuned on all of D1 ∪ D2 for 1 epoch, 5 seeds) —
  the closest to the single "retrained on D1 ∪ D2" model of APΔS/Jiang et al. whose δ_e they
  report;

and prints, per protocol: test accuracies (mean ± std, min), the validity of the base model's
test-set predictions under the family (mean fraction of models that agree with the base, and the
share of test points on which all agree), and the empirical shift δ_e = max‖θ − θ'‖∞ between
the base and each model (min / median / max). The header line of each dataset gives the base
accuracy, the paper's δ and the share of test points whose base prediction the interval
abstraction already certifies at that δ (a sound lower bound on Δ-robustness).

    python benchmarks/model_shifts.py              # full protocol (several minutes)
    python benchmarks/model_shifts.py --quick      # adult subsampled to 5 000 rows, fewer epochs

Needs the datasets (``ROBUSTCE_DATA`` or ``--data-home``, e.g. ../shared/datasets).
``run(quick)`` returns one dict per (dataset, protocol) row.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

import robustce as rc
from robustce.models import ModelFamily, incremental_family, proplace_family
from robustce.robustness import ParameterShift

# δ the papers use for these datasets, and the empirical δ_e APΔS reports (Table 1)
PAPER = {
    "diabetes": {"delta": 0.11, "delta_e": 0.27, "source": "APΔS Table 1 (δ of Jiang et al. 2023)"},
    "adult": {"delta": 0.035, "delta_e": None, "source": "PROPLACE authors' runs (k=20)"},
}

CONFIGS = {
    False: {  # full
        "diabetes": {"rows": None, "params": {"hidden_layers": (20, 10), "epochs": 50, "batch_size": 32,
                                              "lr": 3e-3},
                     "continue_epochs": 5},
        "adult": {"rows": None, "params": {"hidden_layers": (20, 10), "epochs": 10, "batch_size": 32,
                                           "lr": 1e-3},
                  "continue_epochs": 1},
    },
    True: {  # quick
        "diabetes": {"rows": None, "params": {"hidden_layers": (20, 10), "epochs": 40, "batch_size": 64,
                                              "lr": 5e-3},
                     "continue_epochs": 5},
        "adult": {"rows": 5_000, "params": {"hidden_layers": (20, 10), "epochs": 8, "batch_size": 64,
                                            "lr": 5e-3},
                  "continue_epochs": 1},
    },
}


def _row(dataset: str, protocol: str, fam: ModelFamily, base: Any, test: rc.datasets.Dataset,
         base_pred: np.ndarray, seconds: float) -> dict[str, Any]:
    acc = fam.score(test)
    v = fam.validity(test.frame, base_pred)
    deltas = fam.empirical_deltas(base)
    return {
        "dataset": dataset,
        "protocol": protocol,
        "n_models": len(fam),
        "acc_mean": float(acc.mean()),
        "acc_std": float(acc.std()),
        "acc_min": float(acc.min()),
        "validity": v.mean,
        "unanimous": float(np.mean(v.per_ce == 1.0)),
        "delta_min": float(deltas.min()),
        "delta_median": float(np.median(deltas)),
        "delta_max": float(deltas.max()),
        "seconds": seconds,
    }


def run_dataset(name: str, quick: bool = False, n_jobs: int = 1, seed: int = 0,
                data_home: str | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cfg = CONFIGS[quick][name]
    data = rc.datasets.load(name, data_home=data_home)
    if cfg["rows"] is not None and cfg["rows"] < len(data):
        rng = np.random.default_rng(seed)
        data = data.subset(np.sort(rng.choice(len(data), cfg["rows"], replace=False)))
    train, test = data.split(test_size=0.2, random_state=seed)
    params = cfg["params"]

    t0 = time.perf_counter()
    base, fam = proplace_family(train, params, test=test, random_state=seed, n_jobs=n_jobs)
    t_proplace = time.perf_counter() - t0
    base_pred = base.predict(test.frame)
    d2 = train.subset(fam.meta["d2_index"])

    rows = []
    kinds = np.array(fam.meta["kinds"])
    for kind, label in (("retrain_full", "PROPLACE: D1∪D2, new seed"),
                        ("drop_subset", "PROPLACE: D1 minus 1%, new seed")):
        idx = np.flatnonzero(kinds == kind)
        sub = ModelFamily([fam[i] for i in idx], fam.protocol, [fam.seeds[i] for i in idx])
        rows.append(_row(name, label, sub, base, test, base_pred, t_proplace * len(idx) / len(fam)))
    rows.append(_row(name, "PROPLACE: all 20", fam, base, test, base_pred, t_proplace))

    t0 = time.perf_counter()
    inc = incremental_family(base, d2, fraction=0.1, epochs=5, n_models=10, random_state=seed,
                             n_jobs=n_jobs)
    rows.append(_row(name, "incremental: 10% of D2, 5 epochs", inc, base, test, base_pred,
                     time.perf_counter() - t0))

    t0 = time.perf_counter()
    ep = cfg["continue_epochs"]
    cont = incremental_family(base, train, fraction=1.0, epochs=ep, n_models=5, random_state=seed,
                              n_jobs=n_jobs)
    rows.append(_row(name, f"continued: D1∪D2, {ep} epoch{'s' if ep > 1 else ''}", cont, base, test,
                     base_pred, time.perf_counter() - t0))

    paper = PAPER[name]
    shift = ParameterShift(paper["delta"])
    X = base.encoder.transform(test.frame)
    certified = float(np.mean(shift.interval(base).margin_lower_bound(X, base_pred) > 0))
    header = {
        "dataset": name,
        "rows": len(data),
        "train": len(train),
        "test": len(test),
        "params": params,
        "base_accuracy": fam.meta["base_accuracy"],
        "paper_delta": paper["delta"],
        "paper_delta_e": paper["delta_e"],
        "paper_source": paper["source"],
        "ibp_certified_at_paper_delta": certified,
        "base_layers": base.network().layer_sizes,
    }
    return header, rows


def run(quick: bool = False, datasets: tuple[str, ...] = ("diabetes", "adult"), n_jobs: int = 1,
        data_home: str | None = None) -> list[dict[str, Any]]:
    out = []
    for name in datasets:
        header, rows = run_dataset(name, quick=quick, n_jobs=n_jobs, data_home=data_home)
        for r in rows:
            out.append({**r, "base_accuracy": header["base_accuracy"], "paper_delta": header["paper_delta"],
                        "ibp_certified_at_paper_delta": header["ibp_certified_at_paper_delta"]})
    return out


def _print(header: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    p = header["params"]
    print(f"\n### {header['dataset']} — {header['rows']} rows (train {header['train']}, "
          f"test {header['test']}), MLP {'-'.join(map(str, header['base_layers']))}, "
          f"epochs {p['epochs']}, batch {p['batch_size']}, lr {p['lr']}")
    de = header["paper_delta_e"]
    print(f"base accuracy (trained on D1) {header['base_accuracy']:.3f}; paper δ = {header['paper_delta']}"
          f"{'' if de is None else f', paper δ_e = {de}'} ({header['paper_source']}); test points whose "
          "base prediction interval bounds certify at paper δ: "
          f"{header['ibp_certified_at_paper_delta']:.1%}\n")
    print("| protocol | models | accuracy mean ± std (min) | validity of base predictions | all agree "
          "| δ_e min / median / max | time |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['protocol']} | {r['n_models']} | {r['acc_mean']:.3f} ± {r['acc_std']:.3f} "
              f"({r['acc_min']:.3f}) | {r['validity']:.3f} | {r['unanimous']:.1%} | "
              f"{r['delta_min']:.3f} / {r['delta_median']:.3f} / {r['delta_max']:.3f} | "
              f"{r['seconds']:.0f} s |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="adult subsampled, fewer epochs")
    parser.add_argument("--datasets", nargs="+", default=["diabetes", "adult"], choices=sorted(PAPER))
    parser.add_argument("--n-jobs", type=int, default=1, help="joblib workers (results do not change)")
    parser.add_argument("--data-home", default=None, help="dataset folder (default: ROBUSTCE_DATA)")
    args = parser.parse_args()
    if args.data_home is None and "ROBUSTCE_DATA" not in os.environ:
        shared = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"
        if shared.is_dir():
            args.data_home = str(shared.resolve())
    t_all = time.perf_counter()
    for name in args.datasets:
        _print(*run_dataset(name, quick=args.quick, n_jobs=args.n_jobs, data_home=args.data_home))
    print(f"\n(total {time.perf_counter() - t_all:.0f} s, n_jobs={args.n_jobs}, seed 0)")
