"""Dataset files: where they live, where they come from, and how they are checked.

Every benchmark file has a *relative path* (its place in the data folder, e.g.
``carla/adult.csv``; the layout is the one of ``../shared/datasets``), a public *source*
(one or more URLs, pinned to a commit) and a recorded SHA-256 in ``checksums.json``.

Where a file is looked for (:func:`locate`):

1. ``data_home`` given: only there. A missing file is downloaded into it.
2. otherwise: ``$ROBUSTCE_DATA`` (if set; a read-only mirror such as ``../shared/datasets``),
   then the user cache (``$ROBUSTCE_CACHE``, default ``~/.cache/robustce``). A file that is in
   neither is downloaded into the cache.

A file that is present is verified against its checksum and the network is never touched;
a mismatch raises :class:`~robustce.errors.ChecksumError`. A download is verified *before* it
is written, and written atomically, so a failed or corrupted download leaves nothing behind.
All network access goes through :func:`fetch_url` (patch it in tests).

Files whose stored form differs from the source:

* ``rocoursenet/loan/year=YYYY.csv.gz`` — the source holds the uncompressed ``year=YYYY.csv``;
  the download is checked against the source's checksum and then gzip-compressed. Our
  compressor need not reproduce the reference ``.gz`` bytes, so a ``.gz`` file is accepted when
  either its own bytes or its decompressed bytes match the record.
* ``spambase/spambase.csv`` is ``spambase.data`` in its source repository (same bytes).
* ``online_news/OnlineNewsPopularity.csv`` comes out of UCI's zip archive; no checksum of it
  has been recorded (it is not in the offline copy), so it is used unverified, with a warning
  on download.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import io
import json
import logging
import os
import urllib.request
import warnings
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from robustce.errors import ChecksumError, DatasetUnavailableError
from robustce.utils import atomic_write

__all__ = [
    "SOURCES",
    "Source",
    "cache_dir",
    "checksums",
    "compute_checksums",
    "ensure_file",
    "fetch_url",
    "locate",
    "search_dirs",
    "sha256_file",
    "verify_file",
]

log = logging.getLogger(__name__)

ENV_DATA = "ROBUSTCE_DATA"
ENV_CACHE = "ROBUSTCE_CACHE"
CHECKSUMS_FILE = Path(__file__).with_name("checksums.json")
USER_AGENT = "robustce-dataset-loader (+https://pypi.org/project/robustce)"


# ----------------------------------------------------------------------------------------
# Sources
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a file comes from. ``urls`` are tried in order (mirrors); ``transform`` says how
    the downloaded bytes become the stored file: ``None`` (as is), ``"gzip"`` (compress) or
    ``"unzip"`` (extract ``member`` from a zip archive)."""

    urls: tuple[str, ...]
    origin: str
    transform: str | None = None
    member: str | None = None


def _gh(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


_CFDATA = ("carla-recourse/cf-data", "2d56677095bd11deba5d8e3731f8941b95e0a880")
_AAAI = ("fraleo/robust_counterfactuals_aaai24", "8c57253c5d8b409ebbe13b6ce460246378cb77e7")
_APAS = ("lmarza/APAS", "e2a66fdfb9d7ef81821ededd5510c9e68db862b8")
_ROAR = ("AI4LIFE-GROUP/ROAR", "1ed84f70230166b6e7624956210ecc15c7b8896b")
_COUNTERNET = ("BirkhoffG/counternet", "1bd37858c682edcec7a87497aecefb374d79b00a")
_SPAM = ("jenniferdo2211/Spam-Filtering-Neural-Network", "ec9ad3540aa57be7ced637febfaba95988dd2ea0")
_STUDENT = ("jennachristensenn/homework5", "b1173c33f06c56d64513d4872226d48a37481265")
_RCN = ("BirkhoffG/RoCourseNet", "0a383992f90462cdc03602d6a5c02721680fe3f8")
# same blobs, used as a mirror for the RoCourseNet files
_RCN_MIRROR = ("bkghz-orange-blue/counternet_adv", "69a19528d0073f9c7290d1fa3d497c3b7270c701")

_UCI_NEWS = (
    "https://archive.ics.uci.edu/static/public/332/online+news+popularity.zip",
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00332/OnlineNewsPopularity.zip",
)

LOAN_YEARS = tuple(range(1988, 2013))


def _one(pair: tuple[str, str], path: str, **kw: Any) -> Source:
    return Source((_gh(pair[0], pair[1], path),), f"{pair[0]}:{path}@{pair[1][:7]}", **kw)


def _rcn(path: str, **kw: Any) -> Source:
    return Source(
        (_gh(*_RCN, f"assets/data/{path}"), _gh(*_RCN_MIRROR, f"assets/data/adv/{path}")),
        f"{_RCN[0]}:assets/data/{path}@{_RCN[1][:7]}",
        **kw,
    )


def _build_sources() -> dict[str, Source]:
    src: dict[str, Source] = {}
    for name in ("adult", "compas", "give_me_some_credit", "heloc"):
        for suffix in ("", "_train", "_test"):
            src[f"carla/{name}{suffix}.csv"] = _one(_CFDATA, f"{name}{suffix}.csv")
    src["diabetes/diabetes.csv"] = _one(_AAAI, "datasets/diabetes/diabetes.csv")
    src["no2/no2.csv"] = _one(_APAS, "exp_sec7/datasets/no2/no2.csv")
    src["german_credit/german.csv"] = _one(_ROAR, "datasets/german.csv")
    src["german_credit/corrected_german.csv"] = _one(_ROAR, "datasets/corrected_german.csv")
    src["german_credit/german.data"] = _one(_COUNTERNET, "assets/data/extra/german.data")
    src["spambase/spambase.csv"] = _one(_SPAM, "spambase.data")
    src["spambase/spam.csv"] = _one(_AAAI, "datasets/spam/spam.csv")
    src["sba/SBAcase.11.13.17.csv"] = _one(_ROAR, "datasets/SBAcase.11.13.17.csv")
    src["student/student-por.csv"] = _one(_STUDENT, "student-por.csv")
    src["student/student-mat.csv"] = _one(_STUDENT, "student-mat.csv")
    src["credit_default_taiwan/credit_card.csv"] = _one(
        _COUNTERNET, "assets/data/extra/credit_card.csv")
    src["credit_default_taiwan/credit_processed.csv"] = _one(
        _ROAR, "actionable-recourse/examples/paper/data/credit_processed.csv")
    for part in ("german_credit/org.csv", "german_credit/upt.csv",
                 "student/gp.csv", "student/ms.csv"):
        src[f"rocoursenet/{part}"] = _rcn(part)
    for year in LOAN_YEARS:
        src[f"rocoursenet/loan/year={year}.csv.gz"] = _rcn(f"loan/year={year}.csv",
                                                          transform="gzip")
    src["online_news/OnlineNewsPopularity.csv"] = Source(
        _UCI_NEWS, "UCI Online News Popularity (id 332)", transform="unzip",
        member="OnlineNewsPopularity/OnlineNewsPopularity.csv")
    return src


SOURCES: dict[str, Source] = _build_sources()


@lru_cache(maxsize=1)
def checksums() -> dict[str, dict[str, Any]]:
    """The recorded checksums: ``{relpath: {"sha256", "size"[, "source_sha256", "source_size"]}}``."""
    with open(CHECKSUMS_FILE, encoding="utf-8") as fh:
        return json.load(fh)


# ----------------------------------------------------------------------------------------
# Locations
# ----------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The download cache: ``$ROBUSTCE_CACHE`` or ``~/.cache/robustce``."""
    env = os.environ.get(ENV_CACHE)
    return Path(env).expanduser() if env else Path("~/.cache/robustce").expanduser()


def search_dirs(data_home: str | os.PathLike | None = None) -> tuple[list[Path], Path]:
    """(folders searched in order, folder a missing file is downloaded into)."""
    if data_home is not None:
        home = Path(data_home).expanduser()
        return [home], home
    dirs = []
    env = os.environ.get(ENV_DATA)
    if env:
        dirs.append(Path(env).expanduser())
    cache = cache_dir()
    dirs.append(cache)
    return dirs, cache


def locate(relpath: str, data_home: str | os.PathLike | None = None) -> Path | None:
    """Where ``relpath`` is present locally (unverified), or ``None``."""
    for d in search_dirs(data_home)[0]:
        p = d / relpath
        if p.is_file():
            return p
    return None


# ----------------------------------------------------------------------------------------
# Checksums
# ----------------------------------------------------------------------------------------


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_VERIFIED: dict[tuple[str, int, int], bool] = {}


def verify_file(path: str | os.PathLike, relpath: str) -> None:
    """Check a present file against its recorded checksum; raise :class:`ChecksumError`.

    A ``.gz`` file also passes when its decompressed bytes match the source's checksum (we
    compress downloads ourselves). Files without a record pass unchecked. Successful checks
    are remembered for the process (keyed by path, size and modification time).
    """
    entry = checksums().get(relpath)
    if entry is None or not entry.get("sha256"):
        return
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if _VERIFIED.get(key):
        return
    got = sha256_file(path)
    ok = got == entry["sha256"]
    if not ok and entry.get("source_sha256") and path.suffix == ".gz":
        try:
            with gzip.open(path, "rb") as fh:
                ok = sha256_bytes(fh.read()) == entry["source_sha256"]
        except (OSError, EOFError):
            ok = False
    if not ok:
        raise ChecksumError(
            f"{path} does not match the recorded SHA-256 of {relpath!r} "
            f"(expected {entry['sha256']}, got {got}). The file is corrupted or a different "
            f"version; delete it to download it again{_source_hint(relpath)}."
        )
    _VERIFIED[key] = True


def _source_hint(relpath: str) -> str:
    src = SOURCES.get(relpath)
    return f", or replace it with the file from {src.urls[0]}" if src else ""


def compute_checksums(root: str | os.PathLike, relpaths: Iterable[str] | None = None
                      ) -> dict[str, dict[str, Any]]:
    """Checksum records for the files under ``root`` (default: every known source present
    there). Used to (re)generate ``checksums.json`` from a trusted copy."""
    root = Path(root)
    out: dict[str, dict[str, Any]] = {}
    for rel in sorted(relpaths if relpaths is not None else SOURCES):
        p = root / rel
        if not p.is_file():
            continue
        data = p.read_bytes()
        entry: dict[str, Any] = {"sha256": sha256_bytes(data), "size": len(data)}
        src = SOURCES.get(rel)
        if src is not None and src.transform == "gzip":
            raw = gzip.decompress(data)
            entry["source_sha256"] = sha256_bytes(raw)
            entry["source_size"] = len(raw)
        out[rel] = entry
    return out


# ----------------------------------------------------------------------------------------
# Download
# ----------------------------------------------------------------------------------------


def fetch_url(url: str, timeout: float = 60.0) -> bytes:
    """GET ``url`` and return its body. Every download goes through this function, so
    patching it (``robustce.data.download.fetch_url``) controls all network access."""
    return _read_url(url, timeout)


def _read_url(url: str, timeout: float) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.read()


def _prepare(relpath: str, src: Source, data: bytes) -> bytes:
    """Check downloaded bytes and turn them into the stored file's bytes."""
    entry = checksums().get(relpath) or {}
    if src.transform == "gzip":
        expected = entry.get("source_sha256")
        got = sha256_bytes(data)
        if expected and got != expected:
            raise ChecksumError(f"expected SHA-256 {expected}, got {got}")
        return gzip.compress(data, compresslevel=9, mtime=0)
    if src.transform == "unzip":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                data = zf.read(src.member)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise ChecksumError(f"not a zip archive holding {src.member!r}: {exc}") from None
    expected = entry.get("sha256")
    got = sha256_bytes(data)
    if expected and got != expected:
        raise ChecksumError(f"expected SHA-256 {expected}, got {got}")
    if not expected:
        warnings.warn(
            f"no checksum is recorded for {relpath!r}; the downloaded file is used unverified "
            f"(SHA-256 {got})", RuntimeWarning, stacklevel=4)
    return data


def _download(relpath: str, target_dir: Path, searched: list[Path]) -> Path:
    dest = target_dir / relpath
    src = SOURCES.get(relpath)
    where = " or ".join(str(d / relpath) for d in searched)
    if src is None:
        raise DatasetUnavailableError(
            f"{relpath!r} is not at {where} and no public source is known for it; "
            f"put the file there (or point data_home= / ${ENV_DATA} at a folder holding it)."
        )
    failures: list[str] = []
    bad_checksum: list[str] = []
    for url in src.urls:
        log.info("downloading %s from %s", relpath, url)
        try:
            data = fetch_url(url)
        except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError, timeouts…
            failures.append(f"{url}: {exc}")
            continue
        try:
            payload = _prepare(relpath, src, data)
        except ChecksumError as exc:
            bad_checksum.append(f"{url}: {exc}")
            continue
        try:
            with atomic_write(dest, "wb") as fh:
                fh.write(payload)
        except OSError as exc:
            raise DatasetUnavailableError(
                f"downloaded {relpath!r} but cannot write it to {dest}: {exc}. Choose a "
                f"writable folder with data_home= or ${ENV_CACHE}."
            ) from None
        return dest
    if bad_checksum:
        raise ChecksumError(
            f"the download of {relpath!r} does not match its recorded checksum, so it was not "
            f"saved: {'; '.join(bad_checksum + failures)}"
        )
    raise DatasetUnavailableError(
        f"{relpath!r} is not at {where} and could not be downloaded "
        f"(you may be offline): {'; '.join(failures)}. Download it from {src.urls[0]}"
        + (f" (extract {src.member})" if src.member else "")
        + (" and gzip it" if src.transform == "gzip" else "")
        + f", and save it as {dest}; or point data_home= / ${ENV_DATA} at a folder holding "
        f"{relpath}."
    )


def ensure_file(relpath: str, data_home: str | os.PathLike | None = None) -> Path:
    """Path of a verified local copy of ``relpath``, downloading it if it is absent."""
    dirs, target = search_dirs(data_home)
    for d in dirs:
        p = d / relpath
        if p.is_file():
            verify_file(p, relpath)
            return p
    path = _download(relpath, target, dirs)
    verify_file(path, relpath)
    return path


def _main(argv: list[str] | None = None) -> int:  # pragma: no cover - maintenance helper
    """``python -m robustce.data.download ROOT`` rewrites checksums.json from ROOT."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m robustce.data.download DATA_ROOT", file=sys.stderr)
        return 2
    records = compute_checksums(args[0])
    with atomic_write(CHECKSUMS_FILE, "w") as fh:
        json.dump(records, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {len(records)} records to {CHECKSUMS_FILE}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
