"""Promises kept across retraining (issue 49, "Measured"): issue recourse under model version t
with nearest and robust CE methods, record it in a :class:`~robustce.ledger.Ledger` (SQLite in a
temporary folder), check it with :func:`robustce.ledger.check` under t+1 ... t+k, and report

* the honour rate by method and by certificate kind, with the ledger's 95 % Poisson-bootstrap
  intervals (the papers' "vr", measured the way a lender lives it);
* the cost of robustness: mean extra L1 (model space) of each robust method over
  ``MILPNearest`` on the same applicants (those both gave a valid CE), against the honour rate
  gained on those applicants;
* checks per second of ``check`` (serial, one process) on the run's ledger, without and with
  the repairs of the broken promises.

Sequences (a *line* is one model class retrained along the sequence; each line has its own
ledger):

* ``synthetic_loan`` — built in. v_t: an MLP trained on window 0; v_{t+j}: v_{t+j-1} trained on
  for a few epochs on the next window of fresh rows (:func:`incremental_family`, one member,
  the whole window). ``--quick`` runs this sequence alone, small (under a minute).
* ``german`` — German credit (offline data), retrained with new seeds on 90 % of the rows
  (:func:`seed_family`, ``drop_fraction=0.1``): t+1 ... t+k are k independent retrains. Two
  lines: an MLP (NN, MILPNearest, MILP-R, APΔS) and a random forest (MILPNearest,
  EnsembleRobust).
* ``loan`` — RoCourseNet's SBA loan by year (offline data): v_t is trained on year Y, v_{t+j}
  on year Y+j (:func:`group_family`, one model space; up to ``--loan-rows`` rows per year).

Applicants: the first ``--n`` held-out rows v_t declines (class 0), target class 1. Every
method's valid CEs (a forward pass of v_t, :meth:`Ledger.record_explanations`) are recorded.
Δ of MILP-R and APΔS: ``--delta`` (default 0.035, the PROPLACE authors' δ for adult, the one
this project's model-shift benchmark uses); EnsembleRobust: δ = ε = 0.005 (the booster table's
shift).

Each cell (sequence, line) is written to ``OUT/<sequence>-<line>.json`` (atomically) as soon as
it is done; a rerun skips the cells already there (``--force`` redoes them). The table
``OUT/table.md`` is rewritten (atomically) after every cell.

    python benchmarks/ledger_honour.py --quick                   # synthetic_loan, < 1 min
    python benchmarks/ledger_honour.py synthetic_loan german loan --n 150
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

import robustce as rc
from robustce.ledger import Ledger, check
from robustce.models import group_family, incremental_family, seed_family

ROOT = Path(__file__).resolve().parent.parent
NEAREST = "milp_nearest"
#: δ of MILP-R / APΔS (PROPLACE authors' adult δ, benchmarks/model_shifts.py PAPER)
DELTA = 0.035
#: the booster table's (δ, ε) of EnsembleRobust
TREE_SHIFT = (0.005, 0.005)
SEQUENCES = ("synthetic_loan", "german", "loan")


# --- sequences ------------------------------------------------------------------------------
def synthetic_sequence(quick: bool, horizons: int, seed: int = 0) -> dict[str, Any]:
    """Built-in ``synthetic_loan``: a pool of applicants, window 0 for v_t and one window of
    fresh rows per later version, each version the previous one trained on (incremental)."""
    window = 400 if quick else 1000
    pool = 150 if quick else 600
    data = rc.datasets.load("synthetic_loan", n_samples=pool + window * (horizons + 1),
                            random_state=seed)
    idx = np.random.default_rng(seed).permutation(len(data))
    applicants = data.subset(idx[:pool])
    windows = [data.subset(idx[pool + j * window: pool + (j + 1) * window])
               for j in range(horizons + 1)]
    params = dict(hidden_layers=(10, 10), epochs=60 if quick else 80, lr=0.01,
                  random_state=seed)
    models = [rc.models.MLP(**params).fit(windows[0])]
    for j in range(1, horizons + 1):
        fam = incremental_family(models[-1], windows[j], fraction=1.0, epochs=5, n_models=1,
                                 random_state=seed + j)
        models.append(fam.models[0])
    return {"train": windows[0], "applicants": applicants,
            "lines": {"mlp": models},
            "protocol": f"v_t: MLP (10, 10) on window 0 ({window} rows); v_t+j: v_t+j-1 "
                        f"trained on for 5 epochs on window j ({window} fresh rows, "
                        "incremental_family)"}


def german_sequence(quick: bool, horizons: int, seed: int = 0) -> dict[str, Any]:
    """German credit: v_t trained on 75 % of the rows, t+j a retrain with a new seed on a
    random 90 % of them (seed_family); an MLP line and a random-forest line."""
    from sklearn.ensemble import RandomForestClassifier

    data = rc.datasets.load("german")
    train, test = data.split(test_size=0.25, random_state=seed)
    params = dict(hidden_layers=(20, 10), epochs=60, lr=0.005, batch_size=32)
    base, fam = seed_family(train, params, n_models=horizons, drop_fraction=0.1,
                            random_state=seed)
    forest = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=seed)
    fbase, ffam = seed_family(train, forest, n_models=horizons, drop_fraction=0.1,
                              random_state=seed)
    return {"train": train, "applicants": test,
            "lines": {"mlp": [base, *fam.models], "forest": [fbase, *ffam.models]},
            "protocol": "v_t: trained on 75 % of German credit; t+j: retrained with a new seed "
                        "on a random 90 % of those rows (seed_family, drop_fraction 0.1); "
                        "MLP (20, 10) and random forest (20 trees, depth 4)"}


def loan_sequence(quick: bool, horizons: int, seed: int = 0, first_year: int = 2000,
                  rows: int = 4000) -> dict[str, Any]:
    """SBA loan by year: v_t on year ``first_year``, v_t+j on year ``first_year + j`` (each on
    up to ``rows`` rows of its year, group_family, one model space)."""
    years = list(range(first_year, first_year + horizons + 1))
    data = rc.datasets.load("loan", years=years)
    rng = np.random.default_rng(seed)
    keep = np.concatenate([rng.permutation(np.flatnonzero(data.groups == y))[:rows]
                           for y in years])
    data = data.subset(np.sort(keep))
    fam = group_family(data, dict(hidden_layers=(20, 10), epochs=20, lr=0.003, batch_size=128,
                                  random_state=seed), test_size=0.25, random_state=seed)
    parts = data.by_group()
    test_first = data.subset(fam.meta["test_index"][0])  # index labels
    train_first = parts[years[0]].subset(
        ~np.isin(parts[years[0]].frame.index, fam.meta["test_index"][0]))
    return {"train": train_first, "applicants": test_first, "lines": {"mlp": list(fam.models)},
            "accuracies": [float(a) for a in fam.accuracies],
            "protocol": f"v_t: MLP (20, 10) on year {years[0]}; v_t+j on year {years[0]}+j "
                        f"(up to {rows} rows per year, 75 % train; group_family)"}


# --- methods --------------------------------------------------------------------------------
def explainers(line: str, model: Any, train: Any, delta: float, with_apas: bool,
               time_limit: float) -> dict[str, Callable[[], Any]]:
    """The methods of a line, built lazily (name -> factory)."""
    m = rc.methods
    kw = {"time_limit": time_limit, "random_state": 0}
    if line == "forest":
        return {"milp_nearest": lambda: m.MILPNearest(model, train, **kw),
                "ensemble_robust": lambda: m.EnsembleRobust(
                    model, train, delta=TREE_SHIFT[0], epsilon=TREE_SHIFT[1], **kw)}
    out = {"nearest_neighbour": lambda: m.NearestNeighbour(model, train, random_state=0),
           "milp_nearest": lambda: m.MILPNearest(model, train, **kw),
           "milp_robust": lambda: m.MILPRobust(model, train, shift=delta, **kw)}
    if with_apas:  # an int random_state: every test's draws are seeded
        out["apas"] = lambda: m.APAS(model, train, delta=delta, **kw)
    return out


def _l1(expl: Any) -> dict[str, float]:
    """query_id (as text) -> model-space L1 of its first CE."""
    pos, cfs = expl.first_counterfactuals()
    d = np.abs(cfs - expl.queries_encoded[pos]).sum(axis=1)
    return {str(q): float(v) for q, v in zip(expl.queries.index[pos], d, strict=True)}


# --- one cell -------------------------------------------------------------------------------
def run_cell(seq: dict[str, Any], line: str, n: int, delta: float, with_apas: bool,
             time_limit: float, n_boot: int, keep: Path | None, name: str) -> dict[str, Any]:
    """Issue under v_t, record, check under every later version; the cell's result."""
    from robustce.notices.record import model_hash

    models = seq["lines"][line]
    v_t = models[0]
    pool = seq["applicants"].frame
    applicants = pool[v_t.predict(pool) == 0].head(n)
    out: dict[str, Any] = {"sequence": name, "line": line, "protocol": seq["protocol"],
                           "applicants": len(applicants), "versions": len(models),
                           "model_hashes": [model_hash(mv) for mv in models],
                           "delta": delta, "tree_shift": list(TREE_SHIFT), "methods": {}}
    if "accuracies" in seq:
        out["accuracies"] = seq["accuracies"]
    l1: dict[str, dict[str, float]] = {}
    folder = tempfile.mkdtemp(prefix="ledger_honour_")
    try:
        path = os.path.join(folder, "ledger.sqlite3")
        book = Ledger(path)
        for method, make in explainers(line, v_t, seq["train"], delta, with_apas,
                                       time_limit).items():
            t0 = time.perf_counter()
            expl = make().explain(applicants)
            ids = book.record_explanations(v_t, expl)
            l1[method] = _l1(expl) if ids else {}
            out["methods"][method] = {"explain_s": time.perf_counter() - t0,
                                      "recorded": len(ids), "certificates": _kinds(expl),
                                      "coverage": len(ids) / max(len(applicants), 1)}
        out["records"] = book.count()
        out["horizons"] = []
        for j, v in enumerate(models[1:], start=1):
            t0 = time.perf_counter()
            rep = check(book, v, repair=False, n_boot=n_boot, seed=0)
            t_check = time.perf_counter() - t0
            kept = _kept_by_applicant(rep)
            h = {"j": j, "model_hash": rep.model_hash, "outstanding": rep.outstanding,
                 "honoured": rep.honoured, "honour_rate": rep.honour_rate,
                 "honour_rate_ci": rep.honour_rate_ci, "by_method": rep.by_method,
                 "by_certificate": rep.by_certificate, "check_s": t_check,
                 "checks_per_s": rep.outstanding / t_check if t_check > 0 else None,
                 "cost": _cost(l1, kept)}
            if j == 1:  # the check with repairs of every broken promise (serial)
                t0 = time.perf_counter()
                fixed = check(book, v, repair=True, n_boot=n_boot, seed=0)
                h["check_repair_s"] = time.perf_counter() - t0
                h["repaired_valid"] = sum(
                    bool(b["repair"]["from_promised"].get("valid")) for b in fixed.broken)
            out["horizons"].append(h)
        book.close()
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, keep / f"{name}-{line}.sqlite3")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def _kinds(expl: Any) -> list[str]:
    """The certificate kinds of the found queries' certificates (as the ledger files them)."""
    from robustce.ledger.certificates import certificate_of

    found = expl.status[expl.status == "found"].index
    certs = expl.certificates.to_dict("index") if len(expl.certificates.columns) else {}
    return sorted({certificate_of(certs.get(q))["kind"] for q in found})


def _kept_by_applicant(rep: Any) -> dict[tuple[str, str], bool]:
    """(method, applicant key) -> honoured, for every broken promise (False); others absent."""
    return {(b["method"], str(b["applicant_key"])): False for b in rep.broken}


def _cost(l1: dict[str, dict[str, float]], broken: dict[tuple[str, str], bool]
          ) -> dict[str, dict[str, Any]]:
    """Each other method against MILPNearest on the applicants both gave a valid CE: mean
    L1 of each, and the honour rate of each on those applicants."""
    base = l1.get(NEAREST, {})
    out = {}
    for method, dist in l1.items():
        if method == NEAREST:
            continue
        common = sorted(set(base) & set(dist))
        if not common:
            out[method] = {"n": 0}
            continue
        a = np.array([base[q] for q in common])
        b = np.array([dist[q] for q in common])
        ha = np.mean([broken.get((NEAREST, q), True) for q in common])
        hb = np.mean([broken.get((method, q), True) for q in common])
        out[method] = {"n": len(common), "l1_nearest": float(a.mean()), "l1": float(b.mean()),
                       "extra_l1": float((b - a).mean()),
                       "extra_l1_ratio": float(b.mean() / a.mean()) if a.mean() > 0 else None,
                       "honour_nearest": float(ha), "honour": float(hb),
                       "honour_gain": float(hb - ha)}
    return out


# --- the table ------------------------------------------------------------------------------
def _ci(e: dict[str, Any]) -> str:
    lo, hi = e["ci"]
    return "—" if lo is None else f"[{lo:.2f}, {hi:.2f}]"


def headline(cells: list[dict[str, Any]]) -> str:
    """One row per (sequence, line, method): certificate, promises, the honour rate under each
    later version with its interval, and the extra L1 over milp_nearest."""
    k = max((len(c["horizons"]) for c in cells), default=1)
    head = " | ".join(f"honoured under t+{j}" for j in range(1, k + 1))
    lines = [f"| sequence | model | method | certificate | promises / applicants | {head} | "
             "extra L1 vs milp_nearest (same applicants) |",
             "|---|---|---|---|---|" + "---|" * k + "---|"]
    for c in cells:
        for method, m in c["methods"].items():
            rates = []
            for h in c["horizons"]:
                e = h["by_method"].get(method)
                rates.append("—" if e is None else f"{e['honour_rate']:.2f} {_ci(e)}")
            rates += [""] * (k - len(rates))
            cost = c["horizons"][0]["cost"].get(method, {}) if c["horizons"] else {}
            extra = (f"{cost['extra_l1']:+.3f} ({cost['l1']:.3f} vs {cost['l1_nearest']:.3f}, "
                     f"n={cost['n']})" if cost.get("n") else "—")
            lines.append(f"| {c['sequence']} | {c['line']} | {method} | "
                         f"{', '.join(m.get('certificates', [])) or '—'} | {m['recorded']} / "
                         f"{c['applicants']} | {' | '.join(rates)} | {extra} |")
    return "\n".join(lines) + "\n"


def table(cells: list[dict[str, Any]]) -> str:
    """The markdown tables of the cells: the headline, honour by method, by certificate,
    cost, throughput."""
    lines = ["### Headline: honour rate [95 % CI] of promises issued under v_t", "",
             headline(cells),
             "### Honour rate by method (promises issued under v_t, checked under v_t+j)", "",
             "| sequence | line | method | recorded / applicants | j | honoured | honour rate "
             "| 95 % CI |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for h in c["horizons"]:
            for method, e in h["by_method"].items():
                rec = c["methods"].get(method, {}).get("recorded", e["n"])
                lines.append(f"| {c['sequence']} | {c['line']} | {method} | {rec} / "
                             f"{c['applicants']} | {h['j']} | {e['honoured']} / {e['n']} | "
                             f"{e['honour_rate']:.3f} | {_ci(e)} |")
    lines += ["", "### Honour rate by certificate kind", "",
              "| sequence | line | certificate | j | honoured | honour rate | 95 % CI |",
              "|---|---|---|---|---|---|---|"]
    for c in cells:
        for h in c["horizons"]:
            for kind, e in h["by_certificate"].items():
                lines.append(f"| {c['sequence']} | {c['line']} | {kind} | {h['j']} | "
                             f"{e['honoured']} / {e['n']} | {e['honour_rate']:.3f} | "
                             f"{_ci(e)} |")
    lines += ["", "### Cost of robustness (same applicants, against milp_nearest)", "",
              "| sequence | line | method | j | applicants | L1 milp_nearest | L1 method | "
              "extra L1 | honour milp_nearest | honour method | gain |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for h in c["horizons"]:
            for method, e in h["cost"].items():
                if not e.get("n"):
                    continue
                lines.append(f"| {c['sequence']} | {c['line']} | {method} | {h['j']} | "
                             f"{e['n']} | {e['l1_nearest']:.3f} | {e['l1']:.3f} | "
                             f"{e['extra_l1']:+.3f} | {e['honour_nearest']:.3f} | "
                             f"{e['honour']:.3f} | {e['honour_gain']:+.3f} |")
    lines += ["", "### check (serial) on the run's ledgers", "",
              "| sequence | line | records | j | check s (no repair) | checks/s | "
              "broken repaired (valid) | check s (with repairs) |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for h in c["horizons"]:
            rep = (f"{h['outstanding'] - h['honoured']} ({h['repaired_valid']}) | "
                   f"{h['check_repair_s']:.2f}" if "check_repair_s" in h else "— | —")
            lines.append(f"| {c['sequence']} | {c['line']} | {c['records']} | {h['j']} | "
                         f"{h['check_s']:.3f} | {h['checks_per_s']:.0f} | {rep} |")
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Write atomically (a temporary file in the same folder, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run(names: list[str], out: Path, quick: bool = False, n: int = 150, horizons: int = 2,
        delta: float = DELTA, with_apas: bool = True, time_limit: float = 20.0,
        n_boot: int = 200, force: bool = False, keep: Path | None = None,
        loan_rows: int = 4000, first_year: int = 2000) -> list[dict[str, Any]]:
    """Run the cells of ``names`` not yet in ``out`` and write the table; the cells."""
    out.mkdir(parents=True, exist_ok=True)
    builders = {"synthetic_loan": lambda: synthetic_sequence(quick, horizons),
                "german": lambda: german_sequence(quick, horizons),
                "loan": lambda: loan_sequence(quick, horizons, first_year=first_year,
                                              rows=loan_rows)}
    lines_of = {"synthetic_loan": ("mlp",), "german": ("mlp", "forest"), "loan": ("mlp",)}
    for name in names:
        todo = [ln for ln in lines_of[name]
                if force or not (out / f"{name}-{ln}.json").exists()]
        if not todo:
            print(f"{name}: done already (skipped)")
            continue
        t0 = time.perf_counter()
        seq = builders[name]()
        print(f"{name}: {seq['protocol']} ({time.perf_counter() - t0:.1f} s)", flush=True)
        for ln in todo:
            t0 = time.perf_counter()
            cell = run_cell(seq, ln, n, delta, with_apas, time_limit, n_boot, keep, name)
            cell.update(seconds=time.perf_counter() - t0, quick=quick, n=n,
                        date=datetime.now(UTC).strftime("%Y-%m-%d"),
                        machine=f"{platform.machine()}, {os.cpu_count()} cores",
                        robustce=rc.__version__)
            _write(out / f"{name}-{ln}.json", json.dumps(cell, indent=1, default=str))
            print(f"  {ln}: {cell['seconds']:.1f} s, {cell['records']} promises", flush=True)
            _write(out / "table.md", table(_cells(out)))
    cells = _cells(out)
    _write(out / "table.md", table(cells))
    return cells


def _cells(out: Path) -> list[dict[str, Any]]:
    order = {s: i for i, s in enumerate(SEQUENCES)}
    cells = [json.loads(p.read_text(encoding="utf-8")) for p in out.glob("*.json")]
    return sorted(cells, key=lambda c: (order.get(c["sequence"], 99), c["line"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sequences", nargs="*", help=f"of {', '.join(SEQUENCES)} (default: all)")
    ap.add_argument("--quick", action="store_true",
                    help="synthetic_loan only, 25 applicants, one later version (< 1 min)")
    ap.add_argument("--n", type=int, default=None, help="applicants per sequence (150)")
    ap.add_argument("--horizons", type=int, default=None, help="later versions k (2)")
    ap.add_argument("--delta", type=float, default=DELTA, help="Δ of MILP-R and APΔS")
    ap.add_argument("--no-apas", action="store_true", help="leave APΔS out")
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per query")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--loan-rows", type=int, default=4000, help="rows per loan year")
    ap.add_argument("--first-year", type=int, default=2000, help="loan: year of v_t")
    ap.add_argument("--out", type=Path, default=None,
                    help="results folder (default results/ledger_honour[_quick])")
    ap.add_argument("--keep-ledgers", type=Path, default=None,
                    help="copy each cell's SQLite ledger into this folder")
    ap.add_argument("--force", action="store_true", help="redo cells already in --out")
    a = ap.parse_args()
    names = list(a.sequences or (["synthetic_loan"] if a.quick else list(SEQUENCES)))
    if set(names) - set(SEQUENCES):
        ap.error(f"unknown sequences {sorted(set(names) - set(SEQUENCES))}; choose from "
                 f"{', '.join(SEQUENCES)}")
    out = a.out or ROOT / "results" / ("ledger_honour_quick" if a.quick else "ledger_honour")
    t0 = time.perf_counter()
    run(names, out, quick=a.quick, n=a.n or (25 if a.quick else 150),
        horizons=a.horizons or (1 if a.quick else 2), delta=a.delta,
        with_apas=not a.no_apas, time_limit=a.time_limit, n_boot=a.n_boot, force=a.force,
        keep=a.keep_ledgers, loan_rows=a.loan_rows, first_year=a.first_year)
    print((out / "table.md").read_text(encoding="utf-8"))
    print(f"total {time.perf_counter() - t0:.1f} s; cells in {out}")


if __name__ == "__main__":
    main()
