"""Throughput and memory of ``robustce.ledger.check`` (no repairs): N promises on an SQLite
ledger (target rows: built-in ``synthetic_loan`` rows, target class approved), checked with a
small retrained MLP, 200 bootstrap replicates, one group column, partitions of 10 000; the
broken promises listed up to ``--max-broken``. Prints the time to record and to check, the
rates, and the peak RSS before and after the check (memory stays flat as N grows: it is
bounded by the partition size, not by N).

    python benchmarks/bench_ledger_check.py --n 100000
    python benchmarks/bench_ledger_check.py --n 300000 --max-broken 1000
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import robustce as rc
from robustce.ledger import Ledger, check
from robustce.ledger.promises import promise_row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000, help="promises (default 100000)")
    p.add_argument("--max-broken", type=int, default=1000,
                   help="broken promises listed (default 1000)")
    args = p.parse_args()
    data = rc.datasets.load("synthetic_loan", n_samples=2000, random_state=0)
    train, _ = data.split(test_size=0.3, random_state=0)
    v2 = rc.models.MLP(hidden_layers=(8,), epochs=100, random_state=5).fit(train)
    rows = data.frame.to_dict("records")
    issuer = ("sha256:v1", ["rejected", "approved"])
    with tempfile.TemporaryDirectory() as folder:
        book = Ledger(os.path.join(folder, "ledger.sqlite3"))
        t0 = time.perf_counter()
        for start in range(0, args.n, 10_000):
            book.record_rows([promise_row(applicant_id=i, applicant_row=rows[i % len(rows)],
                                          target_row=rows[(7 * i) % len(rows)], model=None,
                                          method="m", target_class=1, _hash=issuer)
                              for i in range(start, min(args.n, start + 10_000))])
        t_record = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.perf_counter()
        report = check(book, v2, repair=False, n_boot=200, groups=["housing"],
                       partition_size=10_000, max_broken=args.max_broken)
        t_check = time.perf_counter() - t0
        size = os.path.getsize(os.path.join(folder, "ledger.sqlite3")) / 2**20
        book.close()
    print(f"N={args.n}: record {t_record:.1f} s ({args.n / t_record:.0f}/s), check "
          f"{t_check:.1f} s ({args.n / t_check:.0f}/s); honour rate {report.honour_rate:.3f}; "
          f"peak RSS {rss:.0f} MiB before the check, "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB after; "
          f"ledger file {size:.0f} MiB")


if __name__ == "__main__":
    main()
