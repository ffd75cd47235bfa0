"""``robustce audit``: the portfolio recourse audit of a dataset's test split (or a CSV /
Parquet file of applicants, streamed), by group, serially, on joblib processes or on a Dask
cluster (``--scheduler tcp://...``); resumable in ``--out``."""

from __future__ import annotations

import argparse
from typing import Any

from robustce.cli._common import EXIT_OK, _names, _user_error
from robustce.cli.notice import _add_source_args, prepare


def _add_audit(sub: Any) -> None:
    p = sub.add_parser(
        "audit", help="portfolio recourse audit by group (report, global actions)",
        description="Audit recourse for every declined applicant: coverage, cost, validity, "
                    "vr and Δ-validity by group with bootstrap CIs, global actions, and an "
                    "HTML + Markdown report in --out (docs/audit.md). A rerun resumes.")
    _add_source_args(p)
    p.add_argument("--method", metavar="NAME", default="nearest_neighbour",
                   help="the method giving each applicant's recourse (default nearest_neighbour)")
    p.add_argument("--input", metavar="FILE", default=None,
                   help="applicants as .csv or .parquet (streamed; feature columns plus group "
                        "columns); default: the dataset's test split")
    p.add_argument("--groups", metavar="C1,C2", required=True,
                   help="group columns (e.g. sex,race); banded columns come from --band")
    p.add_argument("--band", metavar="COL=E1,E2", action="append", default=[],
                   help="band a numeric column at these edges (e.g. age=25,45,65 gives age_band)")
    p.add_argument("--backend", choices=("serial", "joblib", "dask"), default="serial")
    p.add_argument("--n-jobs", type=int, default=2, help="joblib processes (default 2)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="Dask scheduler address (with --backend dask; default: a LocalCluster "
                        "of --n-jobs worker processes)")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the scheduler (default 10)")
    p.add_argument("--partition-rows", type=int, default=10_000, metavar="N")
    p.add_argument("--sample-fraction", type=float, default=None, metavar="F",
                   help="audit a seeded sample of this share of the declined applicants")
    p.add_argument("--global-sample", type=int, default=5000, metavar="N",
                   help="applicants the global actions are chosen on (default 5000)")
    p.add_argument("--max-actions", type=int, default=5, metavar="K")
    p.add_argument("--bootstrap", type=int, default=200, metavar="B",
                   help="bootstrap replicates (default 200)")
    p.add_argument("--min-group", type=int, default=30, metavar="N",
                   help="groups with fewer declined applicants are reported, not compared")
    p.set_defaults(func=_cmd_audit)


def _bands(items: list[str]) -> dict[str, list[float]]:
    out = {}
    for item in items:
        col, sep, edges = item.partition("=")
        try:
            values = [float(e) for e in edges.split(",") if e.strip()]
        except ValueError:
            values = []
        if not sep or not col.strip() or not values:
            raise _user_error(f"--band {item!r}: expected COL=E1,E2,... (numbers)")
        out[col.strip()] = values
    return out


def _check_numbers(args: argparse.Namespace) -> None:
    """The audit's counts and shares, one line each (before any training)."""
    for flag, value in (("--n-jobs", args.n_jobs), ("--partition-rows", args.partition_rows),
                        ("--global-sample", args.global_sample),
                        ("--max-actions", args.max_actions), ("--bootstrap", args.bootstrap),
                        ("--min-group", args.min_group)):
        if value < 1:
            raise _user_error(f"{flag} must be >= 1, got {value}")
    if args.sample_fraction is not None and not 0 < args.sample_fraction <= 1:
        raise _user_error(f"--sample-fraction must be in (0, 1], got {args.sample_fraction}")
    if args.connect_timeout <= 0:
        raise _user_error(f"--connect-timeout must be > 0, got {args.connect_timeout}")


def _check_groups(args: argparse.Namespace, groups: list[str], bands: dict[str, list[float]],
                  test: Any) -> None:
    """The group columns against the applicants' columns (the first rows of ``--input``, or
    the test split): an unknown one is refused before any training."""
    from robustce.audits.partitions import iter_partitions
    from robustce.audits.recourse import group_frame

    if args.input is None:
        head = test.frame.iloc[:1]
    else:
        rows = iter_partitions(args.input, 1)
        head = next(rows, None)
        rows.close()  # the file is closed
        if head is None:
            raise _user_error(f"--input {args.input} has no rows")
    group_frame(head, groups + list(bands), bands)


def _cmd_audit(args: argparse.Namespace) -> int:
    from robustce.audits import audit
    from robustce.cli._common import hidden_layers
    from robustce.cli.notice import check_methods, params_by_method
    from robustce.methods.registry import get_method

    cls = get_method(args.method)
    (params,) = params_by_method([cls], args.param)
    bands = _bands(args.band)
    groups = [g for g in _names(args.groups) if g not in bands]
    if args.backend != "dask" and args.scheduler is not None:
        raise _user_error("--scheduler goes with --backend dask")
    _check_numbers(args)
    hidden_layers(args)

    def check(train: Any, test: Any) -> None:
        _check_groups(args, groups, bands, test)
        check_methods([cls], [params], args, train)

    data, train, test, target, model, family = prepare(args, check)
    source = args.input if args.input is not None else test.frame
    kw: dict[str, Any] = {}
    cluster = None
    if args.backend == "dask":
        if args.scheduler is None:
            from distributed import Client, LocalCluster

            cluster = LocalCluster(n_workers=args.n_jobs, threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            kw["scheduler"] = Client(cluster)
        else:
            kw["scheduler"] = args.scheduler
    try:
        res = audit(model, source, method=args.method, params=params, train=train,
                    groups=groups + list(bands), bands=bands, family=family, shift=args.delta,
                    target_class=target, out=args.out, partition_rows=args.partition_rows,
                    backend=args.backend, n_jobs=args.n_jobs,
                    connect_timeout=args.connect_timeout, sample_fraction=args.sample_fraction,
                    global_sample=args.global_sample, max_actions=args.max_actions,
                    n_boot=args.bootstrap, min_group=args.min_group, seed=args.seed, **kw)
    finally:
        if cluster is not None:
            kw["scheduler"].close()
            cluster.close()
    t = res.totals
    print(f"audited {t['declined_audited']} declined applicants of {t['rows']} rows; "
          f"coverage {t['coverage']:.3f}; {len(res.actions)} global actions")
    for r in t["groups_too_few"]:
        print(f"note: group {r['group']}={r['level']} has {r['n_declined']} declined applicants "
              f"(< {args.min_group}): reported, not compared")
    print(f"report: {res.files.get('report.html')}")
    return EXIT_OK
