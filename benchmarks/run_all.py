"""Run every ``benchmarks/bench_*.py`` and print one table of figures against their baselines.

Each module exposes ``run(quick: bool) -> list[dict]``; every row describes one measurement
with (at least) ``name``, ``seconds`` (our code), ``baseline_seconds`` (the baseline measured
in the same run) and ``ratio`` = baseline_seconds / seconds (> 1: faster than the baseline).
Rows written before that convention are read too: ``benchmark`` (+ descriptive fields) for the
name, ``fast_s`` / ``vectorised_s`` for seconds, ``baseline_s`` / ``loop_s`` for the baseline,
``speedup`` / ``speedup_vs_loop`` for the ratio. Correctness fields (``agree``, ``max_abs_diff*``)
are shown as checks.

    python benchmarks/run_all.py            # full sizes
    python benchmarks/run_all.py --quick    # small sizes, a minute or two
    python benchmarks/run_all.py --only nn --json results/bench.json

Exit status 1 when a module fails (the others still run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

SECONDS_KEYS = ("seconds", "fast_s", "vectorised_s", "time_s")
BASELINE_KEYS = ("baseline_seconds", "baseline_s", "loop_s")
RATIO_KEYS = ("ratio", "speedup", "speedup_vs_loop")
NAME_FIELDS = ("benchmark", "network", "dataset", "baseline", "method")
SIZE_FIELDS = ("n_samples", "n_queries", "n", "n_inputs")


def discover(only: str | None = None) -> list[Path]:
    files = sorted(HERE.glob("bench_*.py"))
    return [f for f in files if only is None or only in f.stem]


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"_robustce_bench_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "run", None)):
        raise AttributeError(f"{path.name} has no run(quick) function")
    return module


def _first(row: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for k in keys:
        v = row.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
    return None


def normalise(row: dict[str, Any]) -> dict[str, Any]:
    """One row in the common shape: name, seconds, baseline_seconds, ratio, checks."""
    name = row.get("name")
    if not name:
        parts = [str(row[k]) for k in NAME_FIELDS if isinstance(row.get(k), str)]
        if "baseline" in row and isinstance(row["baseline"], str):
            parts[-1:] = [parts[-1]] if parts[-1] != row["baseline"] else [f"vs {row['baseline']}"]
        sizes = [f"{k}={row[k]}" for k in SIZE_FIELDS if isinstance(row.get(k), int)]
        name = " / ".join(parts) + (f" ({', '.join(sizes)})" if sizes else "") or "?"
    seconds = _first(row, SECONDS_KEYS)
    baseline = _first(row, BASELINE_KEYS)
    ratio = _first(row, RATIO_KEYS)
    if ratio is None and seconds and baseline is not None:
        ratio = baseline / seconds
    checks = []
    for k, v in row.items():
        if "agree" in k or "diff" in k or k in ("ok", "equal", "exact"):
            checks.append(f"{k}={v:.1e}" if isinstance(v, float) else f"{k}={v}")
    return {"name": str(name), "seconds": seconds, "baseline_seconds": baseline, "ratio": ratio,
            "checks": ", ".join(checks)}


def _fmt(v: float | None, spec: str) -> str:
    return "–" if v is None or not math.isfinite(v) else format(v, spec)


def format_rows(rows: list[dict[str, Any]]) -> str:
    header = ["module", "name", "seconds", "baseline s", "ratio", "checks"]
    body = [[r["module"], r["name"], _fmt(r["seconds"], ".4f"), _fmt(r["baseline_seconds"], ".4f"),
             _fmt(r["ratio"], ".1f") + ("×" if r["ratio"] is not None else ""), r["checks"]]
            for r in rows]
    widths = [max(len(h), *(len(b[j]) for b in body)) if body else len(h)
              for j, h in enumerate(header)]
    right = {2, 3, 4}

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if j in right else c.ljust(w)
                         for j, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(b) for b in body)])


def run_all(quick: bool = False, only: str | None = None, stream: Any = sys.stdout
            ) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Run the modules; returns (normalised rows, [(module, error)])."""
    rows: list[dict[str, Any]] = []
    failures: list[tuple[str, str]] = []
    for path in discover(only):
        t0 = time.perf_counter()
        print(f"running {path.name}{' (quick)' if quick else ''} ...", file=stream, flush=True)
        try:
            module = _load(path)
            raw = module.run(quick=quick)
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            failures.append((path.stem, f"{type(exc).__name__}: {exc}"))
            traceback.print_exc(file=sys.stderr)
            continue
        for r in raw:
            rows.append({"module": path.stem.removeprefix("bench_"), **normalise(r), "raw": r})
        print(f"  {len(raw)} rows in {time.perf_counter() - t0:.1f} s", file=stream, flush=True)
    return rows, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmarks/bench_*.py and print one table.")
    parser.add_argument("--quick", action="store_true", help="small sizes (each module's quick mode)")
    parser.add_argument("--only", metavar="SUBSTR", default=None, help="only modules whose name contains it")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write all rows as JSON")
    args = parser.parse_args(argv)
    if not discover(args.only):
        print(f"no benchmarks/bench_*.py matches {args.only!r}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    rows, failures = run_all(quick=args.quick, only=args.only)
    print()
    print(format_rows(rows))
    print("(ratio = baseline seconds / seconds, both measured in this run; > 1 is faster)")
    for module, err in failures:
        print(f"FAILED {module}: {err}")
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"quick": args.quick, "rows": rows,
                                   "failures": [{"module": m, "error": e} for m, e in failures]},
                                  indent=1, default=str))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
