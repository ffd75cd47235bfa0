"""Audit throughput: the same synthetic applicants (``synthetic_loan`` generator) audited with
``nearest_neighbour`` (all declined) and ``milp_robust`` (a seeded sample of the declined) on
joblib processes and on a Dask ``LocalCluster`` of 1, 2 and 4 worker processes; the serial run
is the baseline (ratio = serial s / backend s). Also the peak resident memory of the driver
process and, from a measured run of ``--big`` rows with ``nearest_neighbour``, the time to
audit 1 million applicants (linear extrapolation: partitions are independent).

    python benchmarks/bench_audit.py                       # 100 000 applicants, 200 000 big run
    python benchmarks/bench_audit.py --rows 20000 --big 0  # a quick look
    python benchmarks/bench_audit.py --write-input 1000000 /tmp/a1m.parquet
    python benchmarks/bench_audit.py --audit-file /tmp/a1m.parquet   # time + peak memory

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


def measure(rows: int, big: int, partition_rows: int = 10_000, milp_sample: float = 0.0005,
            workers: tuple[int, ...] = (1, 2, 4), skip: tuple[str, ...] = (),
            methods: tuple[str, ...] = ("nearest_neighbour", "milp_robust")) -> list[dict]:
    """Every measurement as a row: ``name``, ``seconds``, ``baseline_seconds`` (the serial run
    of the same method, same run), ``ratio`` = baseline / seconds, throughput, peak memory."""
    import robustce as rc
    from robustce.audits import audit
    from robustce.data.registry import load

    train = load("synthetic_loan", n_samples=4000, random_state=0)
    model = rc.models.MLP((20, 10), epochs=60, random_state=0).fit(train)
    tmp = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    out_rows: list[dict] = []
    try:
        def applicants(n: int) -> Path:
            path = tmp / f"applicants_{n}.parquet"
            if not path.exists():
                load("synthetic_loan", n_samples=n, random_state=1).frame.to_parquet(path)
            return path

        def run_one(label: str, n: int, method: str, backend: str, base: float | None,
                    **kw) -> float:
            out = tmp / "out"
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.perf_counter()
            res = audit(model, str(applicants(n)), train=train, method=method,
                        groups=["housing"], bands={"age": [30, 50]}, out=out,
                        partition_rows=partition_rows, backend=backend, n_boot=50,
                        report=False, seed=0, **kw)
            s = time.perf_counter() - t0
            audited = res.totals["declined_audited"]
            row = {"name": label, "n": n, "audited": audited, "seconds": s,
                   "baseline_seconds": base if base is not None else s,
                   "ratio": (base / s) if base is not None else 1.0,
                   "applicants_per_s": audited / s, "driver_peak_mb": _peak_mb(),
                   "children_peak_mb": _children_peak_mb()}
            out_rows.append(row)
            print(f"{label:<44} rows {n:>8}  audited {audited:>7}  {s:8.1f} s  "
                  f"{row['applicants_per_s']:9.1f} applicants/s  ratio vs serial "
                  f"{row['ratio']:.2f}x  driver peak {row['driver_peak_mb']:.0f} MB  "
                  f"children peak {row['children_peak_mb']:.0f} MB", flush=True)
            shutil.rmtree(out, ignore_errors=True)
            return s

        for method, extra in (("nearest_neighbour", {}),
                              ("milp_robust", {"sample_fraction": milp_sample})):
            if method not in methods:
                continue
            base = run_one(f"audit {method} serial", rows, method, "serial", None, **extra)
            if "joblib" not in skip:
                for w in workers:
                    run_one(f"audit {method} joblib n_jobs={w}", rows, method, "joblib", base,
                            n_jobs=w, **extra)
            if "dask" not in skip:
                from distributed import Client, LocalCluster

                for w in workers:
                    with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cl, Client(cl) as client:
                        run_one(f"audit {method} dask LocalCluster {w} proc", rows, method,
                                "dask", base, scheduler=client, **extra)
        if big:
            s = run_one("audit nearest_neighbour serial (big)", big, "nearest_neighbour",
                        "serial", None)
            print(f"1 000 000 applicants with nearest_neighbour, serial, extrapolated from "
                  f"{big} rows: {s * 1_000_000 / big / 60:.1f} min", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_rows


def _model_and_train() -> tuple:
    import robustce as rc
    from robustce.data.registry import load

    train = load("synthetic_loan", n_samples=4000, random_state=0)
    return rc.models.MLP((20, 10), epochs=60, random_state=0).fit(train), train


def audit_file(path: str, partition_rows: int = 10_000) -> dict:
    """Audit the applicants of a Parquet file with nearest_neighbour, serially, in this
    process: seconds, and this process's peak resident memory before and after the audit
    (the input is streamed, so the peak should not grow with the file's rows)."""
    from robustce.audits import audit

    model, train = _model_and_train()
    before = _peak_mb()
    out = Path(tempfile.mkdtemp(prefix="bench-audit-file-"))
    try:
        t0 = time.perf_counter()
        res = audit(model, path, train=train, method="nearest_neighbour", groups=["housing"],
                    bands={"age": [30, 50]}, out=out, partition_rows=partition_rows,
                    n_boot=50, report=False, seed=0)
        s = time.perf_counter() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)
    row = {"name": f"audit nearest_neighbour serial, {res.totals['rows']} rows from Parquet",
           "seconds": s, "rows": res.totals["rows"], "audited": res.totals["declined_audited"],
           "peak_mb_before_audit": before, "peak_mb_after_audit": _peak_mb()}
    print(f"{row['name']}: {s:.1f} s, {row['audited']} declined audited, "
          f"{row['audited'] / s:.0f} applicants/s; peak RSS before the audit "
          f"{before:.0f} MB, after {row['peak_mb_after_audit']:.0f} MB; 1 000 000 rows "
          f"extrapolated: {s * 1_000_000 / row['rows'] / 60:.1f} min", flush=True)
    return row


def run(quick: bool = False) -> list[dict]:
    """For ``benchmarks/run_all.py``: quick = 5 000 applicants, 1 and 2 workers, no big run."""
    if quick:
        return measure(5000, 0, partition_rows=1000, milp_sample=0.002, workers=(1, 2))
    return measure(100_000, 200_000)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--big", type=int, default=200_000, help="rows of the 1M extrapolation run")
    ap.add_argument("--partition-rows", type=int, default=10_000)
    ap.add_argument("--milp-sample", type=float, default=0.0005,
                    help="share of the declined audited with milp_robust")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--skip", default="", help="comma list of backends to skip")
    ap.add_argument("--methods", default="nearest_neighbour,milp_robust")
    ap.add_argument("--write-input", nargs=2, metavar=("ROWS", "PARQUET"),
                    help="only write ROWS synthetic applicants to PARQUET")
    ap.add_argument("--audit-file", metavar="PARQUET",
                    help="only audit this file (nearest_neighbour, serial) and report memory")
    args = ap.parse_args(argv)
    if args.write_input:
        from robustce.data.registry import load

        n, path = int(args.write_input[0]), args.write_input[1]
        load("synthetic_loan", n_samples=n, random_state=1).frame.to_parquet(path)
        return 0
    if args.audit_file:
        audit_file(args.audit_file, args.partition_rows)
        return 0
    measure(args.rows, args.big, args.partition_rows, args.milp_sample,
            tuple(int(w) for w in args.workers.split(",") if w),
            tuple(s for s in args.skip.split(",") if s),
            tuple(m for m in args.methods.split(",") if m))
    return 0


if __name__ == "__main__":
    sys.exit(main())
