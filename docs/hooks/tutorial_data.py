"""MkDocs hook: pages whose code needs a benchmark dataset run only where its files are at hand.

A page lists the datasets its executed code reads in its front matter::

    ---
    needs_data: [compas]
    ---

Before the page is rendered, every file of those datasets is located and checked the way the
loaders do it (:func:`robustce.data.download.ensure_file`: ``$ROBUSTCE_DATA``, then the download
cache, else a checksummed download when the network allows). When all are at hand the page is
left as it is: its code runs, and a failing block fails the strict build. When one cannot be
had, the page's code blocks are shown without being run and a warning box at the top names the
missing dataset and how to get it, so a fresh clone without data and without network still
builds. A file that is present but fails its checksum is never skipped: it fails the build.

``ROBUSTCE_DOCS_NO_DOWNLOAD=1`` treats a file that is not present locally as missing without
trying the network: what a fresh clone sees offline (``make docs-nodata``, CI).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable

from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.hooks.tutorial_data")

#: the front-matter key naming the datasets a page's executed code reads
META_KEY = "needs_data"
#: set (to anything but "" or "0"): never download, only look locally
NO_DOWNLOAD_ENV = "ROBUSTCE_DOCS_NO_DOWNLOAD"

# an executed code fence's opening line: ```python exec="on" … (markdown-exec's syntax)
_EXEC_FENCE = re.compile(
    r'^(?P<open>[ \t]*(?:`{3,}|~{3,})[ \t]*\w+)[ \t]+[^\n]*\bexec="(?:on|1|true)"[^\n]*$', re.MULTILINE)
_TITLE = re.compile(r"\A(?:[ \t]*\n)*#[^\n]*\n")


def dataset_files(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The files each named dataset is read from (an unknown or built-in name is an error:
    the page's front matter is wrong)."""
    from robustce.data.registry import get_spec
    from robustce.errors import UnknownDatasetError

    files = {}
    for name in names:
        try:
            spec = get_spec(name)
        except UnknownDatasetError as error:
            raise PluginError(f"{META_KEY}: {error}") from error
        if spec.builtin:
            raise PluginError(f"{META_KEY}: {name!r} is built in; it needs no data, remove it")
        files[name] = spec.files
    return files


def unavailable(names: Iterable[str]) -> dict[str, str]:
    """Datasets among ``names`` whose files are neither local nor downloadable, each with the
    first file missing. A file present with the wrong checksum raises (fails the build)."""
    from robustce.data.download import ensure_file, locate, verify_file
    from robustce.errors import ChecksumError, DatasetUnavailableError

    download = os.environ.get(NO_DOWNLOAD_ENV, "") in ("", "0")
    missing = {}
    for name, files in dataset_files(names).items():
        for relpath in files:
            try:
                if download:
                    ensure_file(relpath)
                elif (path := locate(relpath)) is None:
                    raise DatasetUnavailableError(f"{relpath} is not present ({NO_DOWNLOAD_ENV} is set)")
                else:
                    verify_file(path, relpath)
            except ChecksumError as error:
                raise PluginError(f"dataset {name!r}: {error}") from error
            except DatasetUnavailableError:
                missing[name] = relpath
                break
    return missing


def not_run_note(missing: dict[str, str]) -> str:
    """The warning box of a page whose code was not run: which data, and how to get it."""
    names = ", ".join(f"`{name}`" for name in missing)
    files = ", ".join(f"`{relpath}`" for relpath in missing.values())
    args = " ".join(missing)
    return (
        f'!!! warning "Not run in this build: the {names} data was not available"\n'
        f"    This page runs its code when the site is built, and that code reads the benchmark\n"
        f"    dataset {names} (file {files}). The build found it neither under `$ROBUSTCE_DATA`\n"
        f"    nor in the download cache, and could not download it, so the code below is shown\n"
        f"    without its output. To run it, fetch the data — `make data` (every dataset,\n"
        f"    checksum-verified) or `python tools/fetch_data.py {args}` — or point `ROBUSTCE_DATA`\n"
        f"    at a folder that holds {files}; then rebuild with `make docs`.\n\n"
    )


def without_execution(markdown: str) -> str:
    """``markdown`` with every executed code fence turned into a plain one (source shown)."""
    return _EXEC_FENCE.sub(lambda m: m.group("open"), markdown)


def prepare(markdown: str, needs: Iterable[str]) -> str:
    """The page as it will be rendered: unchanged when its data is at hand; else its code not
    run, and the note (after the page's title) saying why."""
    missing = unavailable(needs)
    if not missing:
        return markdown
    note = not_run_note(missing)
    title = _TITLE.match(markdown)
    end = title.end() if title else 0
    return markdown[:end] + "\n" + note + without_execution(markdown[end:])


def on_page_markdown(markdown: str, page, config, files) -> str:
    needs = page.meta.get(META_KEY) or []
    if isinstance(needs, str):
        needs = [needs]
    prepared = prepare(markdown, needs)
    if prepared is not markdown:
        log.info("%s: not run, its data is missing (%s)", page.file.src_uri, ", ".join(needs))
    return prepared
