"""Audit throughput: the same synthetic applicants (``synthetic_loan`` generator) audited with
``nearest_neighbour`` (all declined) and ``milp_robust`` (a seeded sample of the declined) on
joblib processes and on a Dask ``LocalCluster`` of 1, 2 and 4 worker processes; the serial run
is the baseline (ratio = serial s / backend s). Also the peak resident memory of the driver
process and, from a measured run of ``--big`` rows with ``nearest_neighbour``, the time to
audit 1 million applicants (linear extrapolation: partitions are independent).

    python benchmarks/bench_audit.py                       # 100 000 applicants, 200 000 big run
    python benchmarks/bench_audit.py --rows 20000 --big 0  # a quick look

Input is streamed from a Parquet file in partitions of ``--partition-rows`` rows.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--big", type=int, default=200_000, help="rows of the 1M extrapolation run")
    ap.add_argument("--partition-rows", type=int, default=10_000)
    ap.add_argument("--milp-sample", type=float, default=0.002,
                    help="share of the declined audited with milp_robust")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--skip", default="", help="comma list of backends to skip")
    args = ap.parse_args(argv)

    import robustce as rc
    from robustce.audits import audit
    from robustce.data.registry import load

    train = load("synthetic_loan", n_samples=4000, random_state=0)
    model = rc.models.MLP((20, 10), epochs=60, random_state=0).fit(train)
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    rows = []
    try:
        def applicants(n: int) -> Path:
            path = tmp / f"applicants_{n}.parquet"
            if not path.exists():
                load("synthetic_loan", n_samples=n, random_state=1).frame.to_parquet(path)
            return path

        def run(label: str, n: int, method: str, backend: str, **kw) -> float:
            out = tmp / f"out_{label}"
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.perf_counter()
            res = audit(model, str(applicants(n)), train=train, method=method,
                        groups=["housing"], bands={"age": [30, 50]}, out=out,
                        partition_rows=args.partition_rows, backend=backend, n_boot=50,
                        report=False, seed=0, **kw)
            s = time.perf_counter() - t0
            rows.append((label, n, res.totals["declined_audited"], s,
                         res.totals["declined_audited"] / s, _peak_mb(), _children_peak_mb()))
            print(f"{label:<40} rows {n:>8}  audited {res.totals['declined_audited']:>7}  "
                  f"{s:8.1f} s  {rows[-1][4]:9.0f} applicants/s  driver peak {rows[-1][5]:.0f} MB"
                  f"  children peak {rows[-1][6]:.0f} MB", flush=True)
            shutil.rmtree(out, ignore_errors=True)
            return s

        skip = set(args.skip.split(","))
        workers = [int(w) for w in args.workers.split(",") if w]
        for method, extra in (("nearest_neighbour", {}),
                              ("milp_robust", {"sample_fraction": args.milp_sample})):
            base = run(f"{method} serial", args.rows, method, "serial", **extra)
            if "joblib" not in skip:
                for w in workers:
                    s = run(f"{method} joblib n_jobs={w}", args.rows, method, "joblib",
                            n_jobs=w, **extra)
                    print(f"  ratio serial/joblib({w}) = {base / s:.2f}×")
            if "dask" not in skip:
                from distributed import Client, LocalCluster

                for w in workers:
                    with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cl, Client(cl) as client:
                        s = run(f"{method} dask LocalCluster {w} proc", args.rows, method,
                                "dask", scheduler=client, **extra)
                    print(f"  ratio serial/dask({w}) = {base / s:.2f}×")
        if args.big:
            s = run("nearest_neighbour serial (big)", args.big, "nearest_neighbour", "serial")
            print(f"1 000 000 applicants with nearest_neighbour, serial, extrapolated from "
                  f"{args.big} rows: {s * 1_000_000 / args.big / 60:.1f} min")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
