"""List the test modules that read the benchmark datasets (for ``make test-nodata``).

A fresh clone has no offline datasets beside it; those modules must then skip their
data-dependent tests (naming the data path), never error. ``make test-nodata`` runs the modules
this script prints with ``ROBUSTCE_DATA`` at an empty folder; CI (``.ci/run``) runs it.

A module reads the datasets when its source names a registered file dataset in quotes
(``"diabetes"``), or names a helper or fixture of a ``conftest.py`` that does (followed
through helpers calling helpers), or uses the ``shared_datasets`` fixture.

    python tools/data_tests.py          # one path per line, relative to the repository
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO / "src"))

from robustce.data.registry import list_datasets  # noqa: E402


def _conftest_readers(tests: Path, literal: re.Pattern[str]) -> set[str]:
    """Names of conftest functions (fixtures, helpers) that reach a file dataset."""
    bodies: dict[str, str] = {}
    for conf in tests.rglob("conftest.py"):
        source = conf.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                bodies[node.name] = ast.get_source_segment(source, node) or ""
    readers = {"shared_datasets"} | {name for name, body in bodies.items()
                                     if literal.search(body)}
    grew = True
    while grew:  # helpers that call helpers that read
        calls = re.compile(r"\b(" + "|".join(map(re.escape, readers)) + r")\b")
        more = {name for name, body in bodies.items()
                if name not in readers and calls.search(body)}
        readers |= more
        grew = bool(more)
    return readers


def data_test_modules(tests: Path = REPO / "tests") -> list[str]:
    """Paths (relative to the repository) of the test modules that read benchmark data."""
    names = sorted(s.name for s in list_datasets() if not s.builtin)
    literal = re.compile(r"""["'](""" + "|".join(map(re.escape, names)) + r""")["']""")
    fixtures = re.compile(r"\b(" + "|".join(map(re.escape, sorted(
        _conftest_readers(tests, literal)))) + r")\b")
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        source = path.read_text(encoding="utf-8")
        if literal.search(source) or fixtures.search(source):
            found.append(str(path.relative_to(REPO)))
    return found


if __name__ == "__main__":
    print("\n".join(data_test_modules()))
