"""MkDocs hook: publish the repository's root Markdown files (EXPERIMENTS.md, CHANGELOG.md) as
site pages without a copy in ``docs/`` — the page is generated from the root file at build time.

A root file links the documentation as ``docs/<page>.md`` (what GitHub resolves from the
repository root); on the site the root page sits at the top of ``docs/``, so those links lose
their ``docs/`` prefix, and a link to another root file (``EXPERIMENTS.md``) points at its page.
The strict build then checks each one, anchors included.
"""

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

# site page -> file at the repository root
ROOT_PAGES = {"experiments.md": "EXPERIMENTS.md", "changelog.md": "CHANGELOG.md"}

# a Markdown link target that starts with docs/: ](docs/results/x.md#a)
_DOCS_LINK = re.compile(r"\]\(docs/")
# a link from one root file to another: ](EXPERIMENTS.md) -> ](experiments.md)
_ROOT_LINK = re.compile(r"\]\((" + "|".join(re.escape(s) for s in ROOT_PAGES.values()) + r")([#)])")


def site_text(text: str) -> str:
    """A root file's Markdown as its site page: ``](docs/x.md)`` becomes ``](x.md)`` and a link
    to another root file points at its page."""
    pages = {source: page for page, source in ROOT_PAGES.items()}
    text = _ROOT_LINK.sub(lambda m: f"]({pages[m.group(1)]}{m.group(2)}", text)
    return _DOCS_LINK.sub("](", text)


def on_files(files: Files, config) -> Files:
    root = Path(config["config_file_path"]).parent
    for page, source in ROOT_PAGES.items():
        text = site_text((root / source).read_text(encoding="utf-8"))
        files.append(File.generated(config, page, content=text))
    return files


# API page -> the modules whose ``__all__`` it must cover (one anchor per public name)
API_PAGES = {
    "api/robustce.html": ("robustce.explanations", "robustce.datasets", "robustce.errors"),
    "api/data.html": ("robustce.data",),
    "api/models.html": ("robustce.models",),
    "api/methods.html": ("robustce.methods",),
    "api/robustness.html": ("robustce.robustness",),
    "api/evaluation.html": ("robustce.evaluation",),
    "api/solvers.html": ("robustce.solvers",),
    "api/notices.html": ("robustce.notices",),
    "api/audits.html": ("robustce.audits",),
    "api/serve.html": ("robustce.serve",),
}


def public_names(module) -> list[str]:
    """``module.__all__``, or (``robustce.errors`` has none) the classes it defines."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__]


def on_post_build(config) -> None:
    """Fail the build when a name of a public ``__all__`` has no entry in the API reference."""
    import importlib

    from mkdocs.exceptions import PluginError

    site = Path(config["site_dir"])
    missing = []
    for page, modules in API_PAGES.items():
        html = (site / page).read_text(encoding="utf-8")
        for name in modules:
            module = importlib.import_module(name)
            # robustce.Explanations is shown under its top-level name
            prefixes = {name, "robustce"} if name == "robustce.explanations" else {name}
            for public in public_names(module):
                if not any(f'id="{p}.{public}"' in html for p in prefixes):
                    missing.append(f"{name}.{public} (expected on {page})")
    if missing:
        raise PluginError("API reference lacks public names: " + ", ".join(missing))
