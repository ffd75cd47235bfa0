"""MkDocs hook: fail the build when a built page or stylesheet would load anything from the
network (a script, a stylesheet, a font, a CSS ``@import``) — the site must work offline."""

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

_EXTERNAL = re.compile(
    r"""<script[^>]+src=["']https?://[^"']+"""          # scripts
    r"""|<link[^>]+href=["']https?://[^"']+["'][^>]*>"""  # stylesheets, fonts, preconnects
    r"""|@import\s+(?:url\()?["']?https?://[^"')\s]+""",  # CSS imports
    re.IGNORECASE)


def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    found = []
    for path in sorted([*site.rglob("*.html"), *site.rglob("*.css")]):
        for match in _EXTERNAL.finditer(path.read_text(encoding="utf-8", errors="replace")):
            if match.group(0).lower().startswith("<link") and "stylesheet" not in match.group(0) \
                    and "preconnect" not in match.group(0) and "preload" not in match.group(0):
                continue  # e.g. <link rel="canonical">: a reference, not a load
            found.append(f"{path.relative_to(site)}: {match.group(0)[:120]}")
    if found:
        raise PluginError("the site would load from the network:\n  " + "\n  ".join(found[:20]))
