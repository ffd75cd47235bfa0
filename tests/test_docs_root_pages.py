"""The root Markdown files (EXPERIMENTS.md, CHANGELOG.md) link pages that exist, both where
GitHub reads them (from the repository root) and on the site (docs/hooks/root_pages.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "docs" / "hooks" / "root_pages.py"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _hook():
    spec = importlib.util.spec_from_file_location("_docs_hook_root_pages", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _local_targets(text: str) -> list[str]:
    return [t for t in _LINK.findall(text) if "://" not in t]


def test_site_text_rewrites_docs_and_root_links():
    hook = _hook()
    text = ("[a](docs/results/mace.md#x) [b](EXPERIMENTS.md) [c](CHANGELOG.md#added) "
            "[d](EXPERIMENTS.mdx) [e](https://example.org/docs/x) `](docs/` in prose")
    assert hook.site_text(text) == (
        "[a](results/mace.md#x) [b](experiments.md) [c](changelog.md#added) "
        "[d](EXPERIMENTS.mdx) [e](https://example.org/docs/x) `](` in prose")


def test_root_files_link_existing_files_from_the_root_and_on_the_site():
    hook = _hook()
    site_pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    site_pages |= set(hook.ROOT_PAGES)
    for page, source in hook.ROOT_PAGES.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        targets = _local_targets(text)
        missing = [t for t in targets if not (ROOT / t).exists()]
        assert not missing, f"{source} links files that do not exist: {missing}"
        on_site = [t for t in _local_targets(hook.site_text(text)) if t not in site_pages]
        assert not on_site, f"{page} (from {source}) links pages the site lacks: {on_site}"


def test_every_results_page_is_in_the_nav():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted((ROOT / "docs" / "results").glob("*.md"))
    assert pages
    for page in pages:
        assert f": results/{page.name}\n" in config, f"{page.name} is missing from mkdocs.yml's nav"
