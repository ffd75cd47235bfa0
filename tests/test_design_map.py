"""``tools/design_map.py``: the generated map lists every module of ``src/robustce`` and the
direction of every call between rooms, and the documentation build publishes it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "design_map.py"


def _tool():
    spec = importlib.util.spec_from_file_location("_robustce_design_map_test", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(text: str, header: str) -> dict[str, list[str]]:
    """Rows of the Markdown table whose header line starts with ``header``, keyed by the first
    cell (backticks removed)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells
    return rows


def _names(cell: str) -> list[str]:
    return [n.strip().strip("`").removesuffix("` (circle)") for n in cell.split(",")
            if n.strip() not in ("–", "(one file)")]


def _modules_on_disk(package_dir: Path) -> set[str]:
    """Dotted names relative to the package, found by walking the folder (the test's own walk,
    not the tool's)."""
    out = set()
    for path in package_dir.rglob("*.py"):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.add(".".join(parts) or package_dir.name)
    return out


def test_the_script_lists_every_module_of_robustce(tmp_path):
    out = tmp_path / "map.md"
    subprocess.run([sys.executable, str(TOOL), "--out", str(out)], check=True, cwd=ROOT)
    text = out.read_text(encoding="utf-8")
    on_disk = _modules_on_disk(ROOT / "src" / "robustce")
    listed = set(_table(text, "| module |"))
    assert on_disk - listed == set(), "modules missing from the map"
    assert listed - on_disk == set(), "the map lists modules that do not exist"
    # every room's module list names the modules of that room, and only once over all rooms
    rooms = _table(text, "| room |")
    named = [f"{room}.{m}" if room != "robustce" else m
             for room, cells in rooms.items() for m in _names(cells[2])]
    assert len(named) == len(set(named))
    assert set(named) | set(rooms) == on_disk


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_calls_point_the_way_the_imports_go(tmp_path):
    """A made-up package: rooms, a new sub-package, a lazy import and a circle between rooms."""
    _write(tmp_path, {
        "robustce/__init__.py": '"""Top."""\nfrom robustce import low\n',
        "robustce/low.py": '"""The bottom: imports nothing."""\n',
        "robustce/mid/__init__.py": '"""Middle room."""\n',
        "robustce/mid/a.py": '"""Uses low."""\nfrom .. import low\n',
        "robustce/mid/deep/__init__.py": '"""A sub-package is its own room."""\n',
        "robustce/mid/deep/b.py": '"""Lazily uses mid."""\ndef f():\n    from robustce.mid import a\n',
        "robustce/x/__init__.py": '"""Circle one."""\nimport robustce.y.q\n',
        "robustce/y/__init__.py": '"""Circle two."""\n',
        "robustce/y/q.py": '"""Back to x."""\nfrom robustce.x import thing\n',
    })
    text = _tool().build(tmp_path)
    rooms = _table(text, "| room |")
    assert set(rooms) == {"robustce", "low", "mid", "mid.deep", "x", "y"}
    assert set(_table(text, "| module |")) == _modules_on_disk(tmp_path / "robustce")
    calls = {r: _names(cells[3]) for r, cells in rooms.items()}
    called_by = {r: _names(cells[4]) for r, cells in rooms.items()}
    assert calls["low"] == [] and sorted(called_by["low"]) == ["mid", "robustce"]
    assert calls["mid"] == ["low"] and called_by["mid"] == ["mid.deep"]
    assert calls["mid.deep"] == ["mid"]                       # the import inside a function counts
    assert calls["robustce"] == ["low"]
    assert calls["x"] == ["y"] and calls["y"] == ["x"]
    order = list(rooms)
    assert order.index("low") < order.index("mid") < order.index("mid.deep")   # bottom-up
    # of the two rooms in the circle, the one listed first marks its call to the later one
    first, second = sorted(("x", "y"), key=order.index)
    assert rooms[first][3] == f"`{second}` (circle)" and "(circle)" not in rooms[second][3]
    assert rooms["mid"][1] == "Middle room." and _names(rooms["mid"][2]) == ["a"]


def test_the_docs_build_runs_the_script():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "  - docs/hooks/design_map.py\n" in config
    assert ": design-map.md\n" in config
    hook = (ROOT / "docs" / "hooks" / "design_map.py").read_text(encoding="utf-8")
    assert '"tools" / "design_map.py"' in hook and 'PAGE = "design-map.md"' in hook
