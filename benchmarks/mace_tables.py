"""MACE Tables 2, 3, 4 and 6 (Karimi et al., AISTATS 2020) from a `mace-table3` run, beside the
paper's numbers.

    robustce benchmark mace-table3 [--quick]                 # writes results/mace-table3[-quick]
    python benchmarks/mace_tables.py results/mace-table3-quick [more run dirs ...]

Reads the run's cells (per-query distances ``raw_l0 / raw_l1 / raw_linf``: MACE's per-feature
distances, the normalised distance of eq. 3 times J) and the saved explanations (statuses,
raw CE values), and prints, as markdown:

* Table 2 — coverage of MACE and MO: share of queries with a CE or a proof that none exists
  (``found`` / ``infeasible``); timeouts and errors are counted and shown, never as covered;
* Table 3 — 100·E[1 − δ_MACE/δ_other] for other = MO, PFT (trees, forests), AR (LR) over
  the queries both answer with a CE, and on how many queries MACE's CE is farther (must be 0);
* Table 4 — adult forest: the share of queries whose unrestricted CE changes age and, over
  those, 100·E[δ_no-age/δ_unrestricted − 1] (MACE and MO);
* Table 6 — median and mean seconds per query.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from robustce.evaluation import load_results
from robustce.explanations import Explanations

NORMS = ("l0", "l1", "linf")
DATASETS = ("adult", "credit", "compas")
MODELS = ("tree", "forest", "lr", "mlp")
COVERED = ("found", "infeasible")

#: Table 3 of the paper, MACE vs MO: {(model, eps): [adult l0, l1, linf, credit ..., compas ...]}
PAPER_TABLE3_MO = {
    ("tree", "1e-3"): [47, 80, 70, 67, 66, 47, 1, 5, 5],
    ("tree", "1e-5"): [47, 81, 72, 67, 96, 94, 1, 5, 5],
    ("forest", "1e-3"): [51, 81, 69, 68, 61, 38, 1, 6, 6],
    ("forest", "1e-5"): [51, 82, 71, 68, 97, 96, 1, 6, 6],
    ("lr", "1e-3"): [62, 92, 86, 80, 82, 80, 3, 8, 6],
    ("lr", "1e-5"): [62, 93, 88, 80, 82, 81, 3, 6, 6],
    ("mlp", "1e-3"): [60, 92, 91, 77, 85, 91, 1, 3, 3],
    ("mlp", "1e-5"): [60, 93, 93, 77, 96, 96, 1, 3, 3],
}
#: Table 3 of the paper, MACE vs PFT (trees, forests) and vs AR (LR); None where the paper's
#: cell is shaded (PFT covers no adult query; AR has no ℓ0)
_NO = None
PAPER_TABLE3_PFT = {
    ("tree", "1e-3"): [_NO, _NO, _NO, 53, 87, 85, 14, 56, 54],
    ("tree", "1e-5"): [_NO, _NO, _NO, 53, 97, 96, 15, 55, 54],
    ("forest", "1e-3"): [_NO, _NO, _NO, 53, 84, 81, 4, 28, 27],
    ("forest", "1e-5"): [_NO, _NO, _NO, 53, 96, 96, 4, 28, 27],
}
PAPER_TABLE3_AR = {
    ("lr", "1e-3"): [_NO, 3, 89, _NO, 39, 67, _NO, 10, 38],
    ("lr", "1e-5"): [_NO, 5, 91, _NO, 42, 71, _NO, 10, 38],
}
#: Table 2 of the paper, coverage % of PFT and AR: {(model, method): [adult l0, ..., compas linf]}
PAPER_TABLE2 = {
    ("tree", "pft"): [0, 0, 0, 68, 68, 68, 74, 74, 74],
    ("forest", "pft"): [0, 0, 0, 99, 99, 99, 100, 100, 100],
    ("lr", "ar"): [_NO, 18, 0.4, _NO, 100, 100, _NO, 100, 100],
}
#: the baselines MACE is compared with, in table order
BASELINES = ("mo", "pft", "ar")
#: Table 4 of the paper (adult forest, MACE ε = 1e-5 and MO): {method: {norm: (% age change,
#: % relative distance increase)}}
PAPER_TABLE4 = {"MACE": {"l0": (13.2, 9.0), "l1": (20.4, 100.3), "linf": (84.4, 32.8)},
                "MO": {"l0": (78.8, 50.9), "l1": (92.0, 245.7), "linf": (95.6, 193.3)}}
#: Table 6 of the paper, MACE ε = 1e-3 mean seconds: {model: [adult l0, l1, linf, credit ...]}
PAPER_TABLE6_MACE = {
    "tree": [17.59, 9.58, 10.43, 15.84, 7.55, 4.44, 7.07, 5.72, 4.99],
    "forest": [69.19, 55.79, 52.31, 57.29, 40.75, 26.21, 15.05, 10.75, 8.53],
    "lr": [2.22, 3.55, 5.15, 0.87, 10.57, 6.11, 0.52, 0.31, 0.54],
    "mlp": [4187, 34101, 7094, 1703, 3304, 8689, 79, 180, 122],
}


def _label(method: str) -> tuple[str, str, str, bool]:
    """``mace_l1_e5_noage`` -> ("mace", "l1", "1e-5", True)."""
    parts = method.split("_")
    kind, norm = parts[0], parts[1]
    eps = "1e-5" if "e5" in parts[2:] else "1e-3"
    return kind, norm, eps, "noage" in parts[2:]


def per_query(*run_dirs: str | Path) -> pd.DataFrame:
    """One row per (dataset, model, method, query): status, the distance in the method's own
    norm (``raw_<norm>``; NaN without a CE), time, and whether the CE changes ``age``. With
    several run directories, a cell of a later one replaces the same cell of an earlier one."""
    cells: dict[str, tuple[Path, dict[str, Any]]] = {}
    for run_dir in map(Path, run_dirs):
        for cell in load_results(run_dir).cells:
            cells[cell["cell"]] = (run_dir, cell)
    rows: list[dict[str, Any]] = []
    for run_dir, cell in cells.values():
        if not cell.get("ok"):
            continue
        kind, norm, eps, noage = _label(cell["method"])
        dataset, _, model = cell["dataset"].partition("-")
        expl = Explanations.load(run_dir / "explanations" / cell["cell"])
        metrics = {r["query_id"]: r for r in cell["per_query"]}
        cfs = expl.counterfactuals
        first = cfs[cfs["cf_rank"] == 0].set_index("query_id") if len(cfs) else cfs
        for qid, status in expl.status.items():
            m = metrics.get(qid, {})
            age_change = math.nan
            if "age" in expl.queries.columns and qid in first.index:
                age_change = float(first.loc[qid, "age"] != expl.queries.loc[qid, "age"])
            rows.append({"dataset": dataset, "model": model, "method": kind, "norm": norm,
                         "eps": eps, "noage": noage, "query_id": qid, "status": status,
                         "distance": m.get(f"raw_{norm}", math.nan),
                         "time": float(expl.timings[qid]), "age_change": age_change,
                         "n_features": len(expl.queries.columns)})
    return pd.DataFrame(rows)


def _pivot(pq: pd.DataFrame, method: str, eps: str | None, noage: bool = False) -> pd.DataFrame:
    sel = (pq.method == method) & (pq.noage == noage)
    if eps is not None:
        sel &= pq.eps == eps
    return pq[sel].set_index(["dataset", "model", "norm", "query_id"])


def coverage_table(pq: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per (model, method, ε, dataset, norm) the covered share and the status counts."""
    out = []
    base = pq[~pq.noage]
    for (model, method, eps, dataset, norm), g in base.groupby(
            ["model", "method", "eps", "dataset", "norm"]):
        counts = g.status.value_counts().to_dict()
        out.append({"model": model, "method": method, "eps": eps if method == "mace" else "",
                    "dataset": dataset, "norm": norm, "n": len(g),
                    "coverage": 100.0 * g.status.isin(COVERED).mean(),
                    "statuses": ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))})
    return pd.DataFrame(out)


def improvement_table(pq: pd.DataFrame) -> pd.DataFrame:
    """Table 3: per baseline (MO, PFT, AR) 100·E[1 − δ_MACE/δ_other] over the queries where
    both return a CE (MACE ``found``), with N, the number of queries where MACE's CE is
    farther than the baseline's (``farther``; allowed: MACE is optimal within ε) and where it
    is farther by more than ε in the normalised distance (``beyond_eps``; must be 0)."""
    out = []
    for other in BASELINES:
        base = _pivot(pq, other, None)
        if not len(base):
            continue
        for eps in sorted(pq.loc[pq.method == "mace", "eps"].unique()):
            mace = _pivot(pq, "mace", eps)
            both = mace.join(base[["status", "distance"]].add_suffix("_o"), how="inner")
            both = both[(both.status == "found") & (both.status_o == "found")]
            for (dataset, model, norm), g in both.groupby(level=["dataset", "model", "norm"]):
                ratio = g.distance / g.distance_o
                out.append({"model": model, "eps": eps, "other": other, "dataset": dataset,
                            "norm": norm, "n": len(g),
                            "improvement": 100.0 * float(np.mean(1.0 - ratio)),
                            "farther": int((g.distance > g.distance_o * (1 + 1e-9)).sum()),
                            "beyond_eps": int(((g.distance - g.distance_o) / g.n_features
                                               > float(eps) * (1 + 1e-9) + 1e-12).sum())})
    return pd.DataFrame(out)


def age_table(pq: pd.DataFrame) -> pd.DataFrame:
    """Table 4 (adult forest): % of queries whose unrestricted CE changes age; over those with a
    restricted CE, 100·E[δ_restricted/δ_unrestricted − 1]; N of each."""
    out = []
    sub = pq[(pq.dataset == "adult") & (pq.model == "forest") & (pq.eps == "1e-3")]
    for method in ("mace", "mo"):
        free = _pivot(sub, method, "1e-3")
        fixed = _pivot(sub, method, "1e-3", noage=True)
        if not len(fixed):
            continue
        for norm in NORMS:
            have = set(free.index.get_level_values("norm")) & set(fixed.index.get_level_values("norm"))
            if norm not in have:  # a partial run: that cell is not written yet
                continue
            f = free.xs(norm, level="norm")
            f = f[f.status == "found"]
            changed = f[f.age_change == 1.0]
            r = fixed.xs(norm, level="norm")
            both = changed.join(r[["status", "distance"]].add_suffix("_r"), how="inner")
            both = both[both.status_r == "found"]
            out.append({"method": method, "norm": norm, "n": len(f),
                        "age_change": 100.0 * len(changed) / max(len(f), 1),
                        "n_restricted": len(both),
                        "infeasible_restricted": int((changed.join(r[["status"]].add_suffix("_r"))
                                                      .status_r == "infeasible").sum()),
                        "increase": 100.0 * float(np.mean(both.distance_r / both.distance - 1.0))
                        if len(both) else math.nan})
    return pd.DataFrame(out)


def time_table(pq: pd.DataFrame) -> pd.DataFrame:
    """Table 6: median and mean seconds per query of each method (unrestricted rows)."""
    base = pq[~pq.noage]
    g = base.groupby(["model", "method", "eps", "dataset", "norm"]).time
    return pd.DataFrame({"median": g.median(), "mean": g.mean(), "n": g.size()}).reset_index()


def _grid(frame: pd.DataFrame, value: Any, rows: list[tuple[str, ...]], row_keys: tuple[str, ...],
          paper: dict[Any, list[float]] | None = None, fmt: str = "{:.0f}") -> str:
    cols = [(d, n) for d in DATASETS for n in NORMS]
    head = "| " + " | ".join(row_keys) + " | " + " | ".join(f"{d} {n}" for d, n in cols) + " |"
    lines = [head, "|" + "---|" * (len(row_keys) + len(cols))]
    idx = frame.set_index([*row_keys, "dataset", "norm"]) if len(frame) else frame
    for r in rows:
        cells = []
        for j, (d, n) in enumerate(cols):
            key = (*r, d, n)
            ours = value(idx.loc[key]) if len(idx) and key in idx.index else "–"
            if paper is not None:
                p = paper.get(r if len(r) > 1 else r[0])
                if p is not None and p[j] is not None:
                    ours = f"{ours} ({fmt.format(p[j])})"
            cells.append(ours)
        lines.append("| " + " | ".join(r) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(pq: pd.DataFrame) -> str:
    """The four tables as markdown; paper values in parentheses."""
    cov, imp, age, tim = coverage_table(pq), improvement_table(pq), age_table(pq), time_table(pq)
    models = [m for m in MODELS if m in set(pq.model)]
    eps = sorted(pq.loc[pq.method == "mace", "eps"].unique())
    out = ["### Table 2: coverage % (MACE: found or proved infeasible; paper: 100 % by "
           "definition)", ""]
    present = set(zip(pq.model, pq.method, strict=True))
    rows = [(m, k, e) for m in models
            for k, e in [("mace", e) for e in eps] + [(b, "") for b in BASELINES]
            if (m, k) in present]
    paper2 = {(m, k, ""): v for (m, k), v in PAPER_TABLE2.items()}
    out.append(_grid(cov, lambda r: f"{r['coverage']:.0f}" + (
        "" if r["coverage"] == 100 else f" [{r['statuses']}]"), rows, ("model", "method", "eps"),
        paper2, fmt="{:g}"))
    out += ["", "### Table 3: % distance improvement of MACE over MO, PFT and AR, "
            "100·E[1 − δ_MACE/δ_other] (paper in parentheses); [N, MACE farther, farther by "
            "more than ε]", ""]
    rows = [(m, e, o) for m in models for o in BASELINES for e in eps if (m, o) in present]
    paper3 = {(m, e, o): v for o, table in (("mo", PAPER_TABLE3_MO), ("pft", PAPER_TABLE3_PFT),
                                             ("ar", PAPER_TABLE3_AR))
              for (m, e), v in table.items()}
    out.append(_grid(imp, lambda r: f"{r['improvement']:.0f} [{int(r['n'])}, {int(r['farther'])}, "
                     f"{int(r['beyond_eps'])}]",
                     rows, ("model", "eps", "other"), paper3))
    if len(age):
        out += ["", "### Table 4: adult, forest — % of queries whose CE changes age; relative "
                "distance increase with age immutable (paper: MACE ε = 1e-5, in parentheses)", "",
                "| method | norm | N | % age change | N restricted | infeasible | % rel. increase |",
                "|---|---|---|---|---|---|---|"]
        for _, r in age.iterrows():
            p = PAPER_TABLE4["MACE" if r.method == "mace" else "MO"][r.norm]
            out.append(f"| {r.method.upper()} | {r.norm} | {r.n} | {r.age_change:.1f} "
                       f"({p[0]}) | {r.n_restricted} | {r.infeasible_restricted} | "
                       f"{r.increase:.1f} ({p[1]}) |")
    out += ["", "### Table 6: seconds per query, median / mean (paper MACE ε = 1e-3 mean in "
            "parentheses)", ""]
    rows = [(m, k, e) for m in models
            for k, e in [("mace", e) for e in eps] + [(b, "1e-3") for b in BASELINES]
            if (m, k) in present]
    paper6 = {(m, "mace", "1e-3"): PAPER_TABLE6_MACE[m] for m in MODELS}
    out.append(_grid(tim.assign(eps=np.where(tim.method != "mace", "1e-3", tim.eps)),
                     lambda r: f"{r['median']:.2g} / {r['mean']:.2g}", rows,
                     ("model", "method", "eps"), paper6, fmt="{:g}"))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="+", help="output directory of `robustce benchmark "
                    "mace-table3` (several: later cells replace earlier ones)")
    ap.add_argument("--csv", help="also write the per-query rows to this CSV")
    args = ap.parse_args()
    pq = per_query(*args.run_dir)
    if args.csv:
        pq.to_csv(args.csv, index=False)
    print(markdown(pq))


if __name__ == "__main__":
    main()
