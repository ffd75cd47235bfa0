"""The package's import graph respects the layering and has no circles.

Layers, lowest first (a module may import its own layer and those below it, never above):

    errors, utils, validation, sql_store  →  data, distance, datasets  →  models  →  solvers  →
    robustness  →  explanations  →  nearest  →  methods  →  evaluation  →
    notices, audits, ledger, serve  →  cli, __main__  →  robustce

Every ``import`` / ``from ... import`` in ``src/robustce`` counts — module level, inside
functions and under ``TYPE_CHECKING`` alike — because a lazy import is still a dependency.
The implicit import of parent packages (``import robustce.models.mlp`` runs
``robustce/models/__init__``) is not counted: it is how Python works, not a design choice.

Size: no file under ``src/`` is over 800 lines unless the first line of its docstring says why,
with ``(long: <reason>)``; no method file (``src/robustce/methods/*.py``) is over 500 lines.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "robustce"


def _load_design_map():
    spec = importlib.util.spec_from_file_location(
        "design_map", Path(__file__).resolve().parents[1] / "tools" / "design_map.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_DESIGN_MAP = _load_design_map()

LAYERS: tuple[tuple[str, ...], ...] = (
    ("robustce.errors", "robustce.utils", "robustce.validation", "robustce.sql_store"),
    ("robustce.data", "robustce.distance", "robustce.datasets"),
    ("robustce.models",),
    ("robustce.solvers",),
    ("robustce.robustness",),
    ("robustce.explanations",),
    ("robustce.nearest",),
    ("robustce.methods",),
    ("robustce.evaluation",),
    ("robustce.notices", "robustce.audits", "robustce.ledger", "robustce.serve"),
    ("robustce.cli", "robustce.__main__"),
    ("robustce",),
)


def layer_of(module: str) -> int:
    """Index of the layer a module belongs to (the longest matching prefix decides)."""
    best, best_len = None, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = i, len(p)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported robustce module, line) for every import statement in the file: the design
    map's reading of imports (tools/design_map.py), so the map and this test see one graph."""
    return _DESIGN_MAP.import_lines(name, path, modules, PACKAGE)


@pytest.fixture(scope="module")
def graph() -> dict[str, list[tuple[str, int]]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_layer(graph):
    assert graph, "no modules found under src/robustce"
    for name in graph:
        assert 0 <= layer_of(name) < len(LAYERS), name


def test_no_import_runs_up_the_layers(graph):
    upward = [f"{src}:{line} imports {dst} ({LAYERS[layer_of(dst)][0]} is above "
              f"{LAYERS[layer_of(src)][0]})"
              for src, deps in graph.items() for dst, line in deps if layer_of(dst) > layer_of(src)]
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_no_import_circles(graph):
    """Tarjan's strongly connected components: any component with two or more modules is a
    circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w, _ in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_checker_sees_upward_lazy_imports_and_circles(tmp_path):
    """The walker itself: a function-level upward import and a two-module circle are found."""
    pkg = tmp_path / PACKAGE
    (pkg / "models").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models" / "__init__.py").write_text("")
    (pkg / "models" / "a.py").write_text("def f():\n    from robustce.methods import x\n"
                                         "from . import b\n")
    (pkg / "models" / "b.py").write_text("from robustce.models.a import f\n")
    modules = {"robustce": pkg / "__init__.py", "robustce.models": pkg / "models" / "__init__.py",
               "robustce.models.a": pkg / "models" / "a.py",
               "robustce.models.b": pkg / "models" / "b.py", "robustce.methods": pkg / "m.py"}
    deps = _imports("robustce.models.a", modules["robustce.models.a"], modules)
    assert ("robustce.methods", 2) in deps and ("robustce.models.b", 3) in deps
    assert _imports("robustce.models.b", modules["robustce.models.b"], modules) == [("robustce.models.a", 1)]
    assert layer_of("robustce.methods") > layer_of("robustce.models.a")


# ---- file size ------------------------------------------------------------------------------
#: a source file longer than this needs a reason in the first line of its docstring
MAX_LINES = 800
#: a method file (src/robustce/methods/*.py) longer than this is split, reason or not
MAX_METHOD_LINES = 500
#: the reason: the first docstring line contains "(long: <why>)", e.g.
#: """The MILP interface (long: one class per solver backend would scatter the shared checks)."""
LONG_MARKER = re.compile(r"\(long: *[^)\s][^)]*\)")
METHODS = SRC / PACKAGE / "methods"


def _first_docstring_line(text: str) -> str:
    try:
        doc = ast.get_docstring(ast.parse(text)) or ""
    except SyntaxError:
        return ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def oversized(paths: list[Path], methods_dir: Path = METHODS) -> list[str]:
    """Files against the size rule, each with its length and the limit it breaks."""
    found = []
    for path in sorted(paths):
        text = path.read_text(encoding="utf-8")
        n = len(text.splitlines())
        if path.parent == methods_dir and n > MAX_METHOD_LINES:
            found.append(f"{path}: {n} lines, a method file has at most {MAX_METHOD_LINES}")
        elif n > MAX_LINES and not LONG_MARKER.search(_first_docstring_line(text)):
            found.append(f"{path}: {n} lines (over {MAX_LINES}) and its first docstring line "
                         f"gives no '(long: <reason>)'")
    return found


def test_no_source_file_is_too_long():
    """No file under src/ over 800 lines unless the first line of its docstring says why with
    ``(long: <reason>)``; no method file over 500 lines at all."""
    files = sorted(SRC.rglob("*.py"))
    assert files
    too_long = oversized(files)
    assert not too_long, "files to split (or, outside methods/, to justify):\n" + "\n".join(
        line.replace(f"{SRC.parent}/", "") for line in too_long)


def test_the_size_rule_reads_the_marker_and_the_method_limit(tmp_path):
    methods = tmp_path / "methods"
    methods.mkdir()

    def write(path: Path, first: str, n: int) -> Path:
        body = f'"""{first}\n\nMore.\n"""\n' + "x = 1\n" * (n - 4)
        path.write_text(body, encoding="utf-8")
        assert len(body.splitlines()) == n
        return path

    ok_short = write(tmp_path / "short.py", "Short.", MAX_LINES)
    plain = write(tmp_path / "plain.py", "A long module.", MAX_LINES + 1)
    reasoned = write(tmp_path / "reasoned.py", "A long module (long: one solver's encoding).",
                     MAX_LINES + 1)
    empty = write(tmp_path / "empty.py", "A long module (long: ).", MAX_LINES + 1)
    late = tmp_path / "late.py"
    late.write_text('"""A long module.\n\n(long: said too late)\n"""\n' + "x = 1\n" * MAX_LINES,
                    encoding="utf-8")
    method_ok = write(methods / "m_ok.py", "A method.", MAX_METHOD_LINES)
    method_long = write(methods / "m_long.py", "A method (long: many options).", MAX_METHOD_LINES + 1)
    found = oversized([ok_short, plain, reasoned, empty, late, method_ok, method_long], methods)
    flagged = {Path(line.split(":")[0]).name for line in found}
    assert flagged == {"plain.py", "empty.py", "late.py", "m_long.py"}
