"""Fetch and verify the benchmark datasets (``make data``).

For every registered file dataset (``robustce datasets list``: those that are not built in),
each of its files is located (``data_home``, else ``$ROBUSTCE_DATA`` then the download cache),
checked against its recorded SHA-256, and downloaded into the cache when absent — the same
:func:`robustce.data.download.ensure_file` the loaders use. One line per dataset:

    adult                    3 files  verified  (present: /data/carla)
    online_news              1 file   downloaded, unverified (no checksum recorded)

Exit status: 0 when every dataset is present and verified; 1 when a file fails its checksum or
cannot be downloaded. Without network access the datasets already present are verified and
listed, and one line names those that could not be fetched (and the first file missing).

    make data                                # every dataset
    python tools/fetch_data.py adult loan    # some of them
    python tools/fetch_data.py --data-home DIR
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

from robustce.data import download  # noqa: E402
from robustce.data.registry import list_datasets  # noqa: E402
from robustce.errors import ChecksumError, DatasetUnavailableError  # noqa: E402


def _fetch(name: str, files: tuple[str, ...], data_home: Path | None) -> tuple[str, bool]:
    """(summary line, ok) for one dataset; raises DatasetUnavailableError when a download
    fails (the caller ends the run there: most likely no network)."""
    present = [download.locate(rel, data_home) for rel in files]
    unverified = [rel for rel in files if not download.checksums().get(rel, {}).get("sha256")]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "used unverified": said below
            paths = [download.ensure_file(rel, data_home) for rel in files]
    except ChecksumError as exc:
        return f"{name:<24} FAILED checksum: {exc}", False
    n = len(files)
    count = f"{n} file{'s' if n != 1 else ' '}"
    fetched = sum(p is None for p in present)
    state = "downloaded" if fetched == n else (
        f"{fetched} downloaded" if fetched else "present")
    check = ", unverified (no checksum recorded)" if unverified else ", verified"
    where = os.path.commonpath([str(p.parent) for p in paths])
    return f"{name:<24} {count:<8} {state}{check}  ({where})", True


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="datasets to fetch (default: all file datasets)")
    parser.add_argument("--data-home", type=Path, default=None,
                        help="look in and download into this folder only")
    args = parser.parse_args(argv)
    specs = [s for s in list_datasets() if not s.builtin]
    known = {s.name for s in specs}
    unknown = sorted(set(args.names) - known)
    if unknown:
        print(f"make data: unknown dataset(s) {unknown}; file datasets: {sorted(known)}",
              file=sys.stderr)
        return 2
    if args.names:
        specs = [s for s in specs if s.name in args.names]
    ok = True
    unreachable: list[str] = []  # datasets not fetched once a download has failed
    first_failure = ""
    for spec in specs:
        if unreachable and any(download.locate(r, args.data_home) is None for r in spec.files):
            unreachable.append(spec.name)  # no network: do not wait on every file again
            continue
        try:
            line, good = _fetch(spec.name, spec.files, args.data_home)
        except DatasetUnavailableError as exc:
            unreachable.append(spec.name)
            first_failure = str(exc).split(": ", 1)[0]
            continue
        print(line)
        ok &= good
    if unreachable:
        print(f"make data: {len(unreachable)} dataset(s) not fetched ({', '.join(unreachable)}): "
              f"{first_failure}. No network? Copy the offline datasets into a folder and set "
              f"ROBUSTCE_DATA to it.", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
