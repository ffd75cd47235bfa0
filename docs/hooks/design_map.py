"""MkDocs hook: publish the design map (``design-map.md``), generated from ``src/robustce`` by
``tools/design_map.py`` at every build, so the page always matches the code."""

import importlib.util
from pathlib import Path

from mkdocs.structure.files import File, Files

PAGE = "design-map.md"


def _tool(root: Path):
    spec = importlib.util.spec_from_file_location("_robustce_design_map", root / "tools" / "design_map.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config) -> Files:
    root = Path(config["config_file_path"]).parent
    text = _tool(root).build(root / "src")
    files.append(File.generated(config, PAGE, content=text))
    return files
