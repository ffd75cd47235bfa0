"""(δ, α)-robust CEs under the user's own retraining: RetrainRobust against its base CE.

On a dataset (default: diabetes from ``ROBUSTCE_DATA``, else a built-in), a model is trained on
the training split; its retrain procedure (bootstrap of the training rows, new seeds) gives the
search and certification retrains; ``--fresh`` further retrains (procedure indices from 100 000:
never used to search or certify) measure what each CE keeps. Reported per method (the base
CE — MILPNearest where the model is open — and RetrainRobust's certified CE), over the
queries: coverage, the share of fresh retrains that keep each CE (mean, min, and the fraction
of CEs kept by ≥ δ of them), the L1 cost in model space, and time per CE (RetrainRobust's
with and without the retrains it fits, which the procedure caches for later calls)::

    ROBUSTCE_DATA=../shared/datasets python benchmarks/retrain_certificate.py \\
        [--dataset diabetes] [--model mlp|lr|forest] [--queries 50] [--fresh 100]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import robustce as rc


def _estimator(kind: str):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    if kind == "lr":
        return LogisticRegression(max_iter=1000)
    if kind == "forest":
        return RandomForestClassifier(n_estimators=30, max_depth=6)
    return MLPClassifier(hidden_layer_sizes=(16,), max_iter=300)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="diabetes")
    ap.add_argument("--model", default="mlp", choices=["mlp", "lr", "forest"])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--fresh", type=int, default=100)
    ap.add_argument("--share", type=float, default=0.9)
    ap.add_argument("--confidence", type=float, default=0.9)
    ap.add_argument("--n-jobs", type=int, default=1)
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    data = rc.datasets.load(args.dataset)
    train, test = data.split(test_size=0.2, random_state=0)
    enc = rc.data.Encoder(train.schema).fit(train.frame)
    est = _estimator(args.model).set_params(random_state=0)
    model = rc.models.wrap(est.fit(enc.transform(train.frame), train.y), enc,
                           class_names=train.class_names)
    queries = test.frame[model.predict(test.frame) == 0].head(args.queries)
    proc = rc.models.RetrainProcedure.from_model(model, train, "bootstrap", random_state=0,
                                                 n_jobs=args.n_jobs)

    ex = rc.methods.RetrainRobust(model, train, procedure=proc, share=args.share,
                                  confidence=args.confidence)
    t0 = time.perf_counter()
    base = ex.base_.explain(queries)       # the base CE RetrainRobust starts from
    t_base = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = ex.explain(queries)
    t_rr = time.perf_counter() - t0
    fit_rr = res.meta["retrain"]["fit_time"]
    t0 = time.perf_counter()
    fresh = proc.family(args.fresh, start=100_000)
    t_fresh = time.perf_counter() - t0

    print(f"dataset={args.dataset} rows(train)={len(train)} model={args.model} "
          f"test accuracy={(model.predict(test.frame) == test.y).mean():.3f} "
          f"queries={len(queries)} share(δ)={args.share} confidence(α)={args.confidence}")
    print(f"retrains fitted by RetrainRobust: {res.meta['retrain']['n_fitted']} "
          f"({fit_rr:.1f} s); fresh: {args.fresh} ({t_fresh:.1f} s); "
          f"looks per try: {res.meta['retrain']['looks']}")
    print()
    print("| method | coverage | fresh share kept: mean | min | CEs kept by ≥ δ | "
          "L1 cost (model space) | time per CE |")
    print("|---|---|---|---|---|---|---|")
    rows = ((f"{type(ex.base_).__name__} (base)", base, t_base), ("RetrainRobust", res, t_rr))
    for name, r, t in rows:
        cf = r.counterfactuals
        found = r.status == "found"
        if len(cf):
            kept = fresh.validity(cf[train.schema.names],
                                  r.target_class.loc[cf["query_id"]].to_numpy()).per_ce
            x = enc.transform(queries.loc[cf["query_id"]])
            cost = np.abs(enc.transform(cf[train.schema.names]) - x).sum(axis=1)
        else:
            kept, cost = np.full(1, np.nan), np.full(1, np.nan)
        per = t / max(int(found.sum()), 1)
        extra = "" if r is base else (
            f" ({(t - fit_rr) / max(int(found.sum()), 1):.3f} s without fitting)")
        print(f"| {name} | {found.mean():.2f} | {np.nanmean(kept):.3f} | {np.nanmin(kept):.2f} | "
              f"{np.mean(kept >= args.share):.2f} | {np.nanmean(cost):.3f} | {per:.3f} s{extra} |")
    both = (base.status == "found") & (res.status == "found")
    if both.any():
        c = res.certificates.loc[both]
        print(f"\nRetrainRobust's cost over its base CE's, same queries: "
              f"{(c['distance'] / c['base_distance']).median():.2f}× (median); "
              f"verdicts: {res.certificates['verdict'].value_counts(dropna=False).to_dict()}")
    print("not found:", res.messages[res.status != "found"].str.slice(0, 60).value_counts().to_dict())


if __name__ == "__main__":
    main()
