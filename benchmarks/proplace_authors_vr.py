"""PROPLACE Table 1, authors' variant: which CEs lose a retrained model, and which option matters.

``breakdown DIR`` reads a ``robustce benchmark proplace-table1 [--variant authors]`` run and
prints, per seed, the CEs of one method on one dataset that some retrained model rejects (vr of
the CE < 1). With ``--models`` it rebuilds each seed's family (the runner's own
``prepare_group``: same seeds, same models) and names the members that reject them.

``ablate OUT`` runs one dataset's PROPLACE cells under the default protocol, the authors'
variant, and the authors' variant with each of its options turned back to the default, and
prints vr (two decimals and integer percent) and the CEs that lose a model, per seed::

    ROBUSTCE_DATA=../shared/datasets python benchmarks/proplace_authors_vr.py \\
        breakdown results/proplace-table1-authors --dataset heloc --models
    ROBUSTCE_DATA=../shared/datasets python benchmarks/proplace_authors_vr.py \\
        ablate results/pt1-ablate --dataset heloc [--seeds 0 1 2] [--protocols authors]
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from robustce.evaluation.config import apply_variant, config_path, parse_config, read_toml
from robustce.evaluation.results import cell_id, load_results
from robustce.evaluation.runner import prepare_group, run_benchmark

#: the family size the (CE, model) loss counts assume (the config's 10 + 10)
N_MEMBERS = {"n": 20}


def losses(per_query: pd.DataFrame, dataset: str, method: str) -> pd.DataFrame:
    """Per seed: CEs, CEs that lose ≥ 1 model, (CE, model) pairs lost, vr over the CEs (%, two
    decimals, and integer percent as the paper prints it)."""
    pq = per_query[(per_query["dataset"] == dataset) & (per_query["method"] == method)]
    pq = pq[pq["vr"].notna()]
    rows = []
    for seed, g in pq.groupby("seed"):
        lost = g["vr"] < 1
        rows.append({"seed": int(seed), "CEs": len(g), "lose_a_model": int(lost.sum()),
                     "pairs_lost": int(round(((1 - g["vr"]) * N_MEMBERS.get("n", 20)).sum())),
                     "vr_pct": 100 * g["vr"].mean()})
    out = pd.DataFrame(rows)
    if len(out):
        total = {"seed": "all", "CEs": int(out["CEs"].sum()),
                 "lose_a_model": int(out["lose_a_model"].sum()),
                 "pairs_lost": int(out["pairs_lost"].sum()), "vr_pct": 100 * pq["vr"].mean()}
        out = pd.concat([out, pd.DataFrame([total])], ignore_index=True)
        out["vr_int"] = out["vr_pct"].round().astype(int)
        out["vr_pct"] = out["vr_pct"].map(lambda v: f"{v:.2f}")
    return out


def member_names(family: Any) -> list[str]:
    kinds = family.meta["kinds"]
    counts: dict[str, int] = {}
    names = []
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
        names.append(f"{'retrain' if k == 'retrain_full' else 'drop'}{counts[k]}")
    return names


def models_breakdown(out_dir: Path, dataset: str, method: str, seeds: list[int] | None = None
                     ) -> None:
    """Rebuild each seed's family and name the members that reject a CE."""
    import robustce as rc

    result = load_results(out_dir)
    config = result.config
    entry = next(d for d in config.datasets if d.label == dataset)
    for seed in seeds or config.seeds:
        ctx = prepare_group(config, entry, seed)
        expl = rc.Explanations.load(out_dir / "explanations" / cell_id(dataset, seed, method))
        cfs = expl.counterfactuals
        feats = [c for c in cfs.columns if c in ctx.train.frame.columns]
        ok = ctx.family.predict(cfs[feats]) == ctx.target_class  # (models, CEs)
        names = member_names(ctx.family)
        same = set(ctx.family.meta.get("same_init", []))
        lost = np.flatnonzero(~ok.all(axis=0))
        print(f"seed {seed}: {len(lost)} of {ok.shape[1]} CEs lose a model; "
              f"(CE, model) losses {int((~ok).sum())}; base-seeded: {sorted(same) or 'none'}")
        per_model = (~ok).sum(axis=1)
        print("  losses per member: " + ", ".join(
            f"{n}={int(c)}" for n, c in zip(names, per_model, strict=True) if c))
        margins = ctx.model.network().margin(expl.counterfactuals_encoded, ctx.target_class)
        qids = cfs["query_id"].to_numpy()
        rows = expl.queries.loc[qids]
        first = {}
        for j, key in enumerate(map(tuple, rows.to_numpy())):
            first.setdefault(key, j)
        same_row = [first[tuple(r)] for r in rows.to_numpy()]
        print(f"  {len(set(same_row))} distinct query rows among {len(qids)} draws; losing "
              f"CEs come from {len({same_row[j] for j in lost})} distinct rows")
        for j in lost:
            who = [names[i] for i in np.flatnonzero(~ok[:, j])]
            print(f"  query {qids[j]} (row of draw {qids[same_row[j]]}): rejected by "
                  f"{', '.join(who)}; base logit margin {margins[j]:.4f}")


def ablations(raw: dict[str, Any], dataset: str) -> dict[str, dict[str, Any]]:
    """The default protocol, the authors' variant, and the variant minus each option."""
    def only(cfg: dict[str, Any]) -> dict[str, Any]:
        cfg = copy.deepcopy(cfg)
        cfg["datasets"] = [d for d in cfg["datasets"] if d.get("label", d["name"]) == dataset]
        cfg["methods"] = [m for m in cfg["methods"] if m["name"] == "proplace"]
        for d in cfg["datasets"]:
            d["methods"] = {k: v for k, v in d.get("methods", {}).items() if k == "proplace"}
        cfg.pop("quick", None)
        return cfg

    authors = apply_variant(raw, "authors")
    out = {"default": only({k: v for k, v in raw.items() if k != "variants"}),
           "authors": only(authors)}

    def without(name: str, change: Any) -> None:
        cfg = only(authors)
        change(cfg)
        out[f"authors_without_{name}"] = cfg

    def retrain(cfg: dict[str, Any]) -> dict[str, Any]:
        return cfg["evaluation"]["retrain"]

    def entry_retrain(cfg: dict[str, Any]) -> dict[str, Any]:
        return cfg["datasets"][0].setdefault("evaluation", {}).setdefault("retrain", {})

    without("shared_drop", lambda c: retrain(c).update(shared_drop=False))
    without("d1_all", lambda c: retrain(c).update(method_data="d1"))
    without("replace", lambda c: c["queries"].update(replace=False))
    r = entry_retrain(out["authors"])
    if "same_init_retrain" in r or "same_init_drop" in r:
        without("same_init", lambda c: [entry_retrain(c).pop(k, None)
                                        for k in ("same_init_retrain", "same_init_drop")])
    if "member_model" in r:
        without("member_model", lambda c: entry_retrain(c).pop("member_model"))
    return out


def ablate(out_dir: Path, dataset: str, n_jobs: int, seeds: list[int] | None = None,
           only: list[str] | None = None) -> pd.DataFrame:
    raw = read_toml(config_path("proplace-table1"))
    rows = []
    for name, cfg in ablations(raw, dataset).items():
        if only and name not in only:
            continue
        if seeds:
            cfg["seeds"] = seeds
        result = run_benchmark(parse_config(cfg), out_dir / name, n_jobs=n_jobs, progress=False)
        table = losses(result.per_query, dataset, "proplace")
        table.insert(0, "protocol", name)
        rows.append(table)
        print(table.to_string(index=False), flush=True)
    return pd.concat(rows, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("breakdown")
    b.add_argument("dir", type=Path)
    b.add_argument("--dataset", default="heloc")
    b.add_argument("--method", default="proplace")
    b.add_argument("--models", action="store_true")
    b.add_argument("--seeds", type=int, nargs="+", default=None, help="--models: these seeds")
    a = sub.add_parser("ablate")
    a.add_argument("out", type=Path)
    a.add_argument("--dataset", default="heloc")
    a.add_argument("--n-jobs", type=int, default=2)
    a.add_argument("--seeds", type=int, nargs="+", default=None, help="default: the config's")
    a.add_argument("--protocols", nargs="+", default=None,
                   help="default, authors, authors_without_OPTION, ... (default: all)")
    args = parser.parse_args()
    if args.cmd == "breakdown":
        result = load_results(args.dir)
        print(losses(result.per_query, args.dataset, args.method).to_string(index=False))
        if args.models:
            models_breakdown(args.dir, args.dataset, args.method, args.seeds)
    else:
        print(ablate(args.out, args.dataset, args.n_jobs, args.seeds, args.protocols
                     ).to_string(index=False))


if __name__ == "__main__":
    main()
