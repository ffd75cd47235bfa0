"""Limits that mean the same on every host (issue 51): the same MILP-R queries, idle-ish and beside
CPU-burning processes, with the default limits; their statuses should be identical.

MILP-R at δ = 0.05 on the synthetic 34-50-50-1 network (``bench_deep.py``'s
``milp_robust_status`` row: growth 1.25, 30 rounds, ``time_limit`` = 60, the default), one query
at a time: status, rounds, wall and CPU seconds (of this thread) per query. The run is repeated
with ``--burners`` processes spinning on the CPU (started here and stopped at the end of the
run, loopback only: they do nothing but spin), interleaved per query as ``idle`` then
``loaded``. Reports the load average before each query.

    ROBUSTCE_DATA=../shared/datasets python benchmarks/bench_loaded.py [--queries 4] [--burners 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from robustce.methods import MILPRobust

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_deep import _deep_synthetic  # noqa: E402
from bench_milp import _queries  # noqa: E402

_SPIN = "import time\nend = time.time() + 1800\nwhile time.time() < end:\n    pass\n"


def _burners(k: int) -> list[subprocess.Popen]:
    """``k`` processes spinning on the CPU (each ends by itself after 30 min at the latest)."""
    return [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(k)]


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=10)


def run(n: int, burners: int) -> pd.DataFrame:
    syn, syn_test, model = _deep_synthetic()
    qs = _queries(syn_test, model, n)
    rows = []
    for i in range(n):
        for setting in ("idle", "loaded"):
            procs = _burners(burners) if setting == "loaded" else []
            try:
                if procs:
                    time.sleep(1.0)  # let the burners start spinning
                ex = MILPRobust(model, syn, shift=0.05, growth=1.25, max_rounds=30)
                load = os.getloadavg()[0]
                c0, t0 = time.thread_time(), time.perf_counter()
                r = ex.explain(qs.iloc[[i]])
                wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
            finally:
                _stop(procs)
            c = r.certificates.iloc[0]
            rows.append({"query": i, "setting": setting, "burners": len(procs),
                         "load1": round(load, 2), "status": r.status.iloc[0],
                         "rounds": c.get("rounds"), "wall_s": round(wall, 2),
                         "cpu_s": round(cpu, 2), "message": r.messages.iloc[0][:90]})
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=4)
    ap.add_argument("--burners", type=int, default=2)
    args = ap.parse_args()
    df = run(args.queries, args.burners)
    print(df.to_string(index=False))
    same = (df[df.setting == "idle"].status.to_numpy() == df[df.setting == "loaded"].status.to_numpy())
    print(f"identical statuses: {int(same.sum())}/{len(same)}")


if __name__ == "__main__":
    main()
