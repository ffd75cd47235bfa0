"""``tools/mutants.py`` (the mutation check, not run in CI): every mutant still applies to the
code (a snippet that moved is drift, reported by name), drift is reported rather than raised,
and the reach marker runs exactly when the mutated statement does."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("robustce_mutants_tool", ROOT / "tools" / "mutants.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def test_every_mutant_applies_once_compiles_and_gets_a_marker(tool):
    """The drift check (``tools/mutants.py --check``): a failure here names the mutant whose
    snippet moved — update its pattern in tools/mutants.py after the merge."""
    names = [m.name for m in tool.MUTANTS]
    assert len(names) == len(set(names)) >= 35
    for m in tool.MUTANTS:
        text = (ROOT / "src" / "robustce" / m.file).read_text()
        mutated, note = tool.mutate(text, m)
        assert mutated is not None and not note, f"{m.name}: {note}"
        assert mutated.count(tool.MARK_MODULE) == 1, m.name
        for t in m.tests:
            assert (ROOT / t.split("::")[0]).is_file(), f"{m.name}: no test file {t}"


def test_drift_ambiguity_and_broken_mutants_are_reported_not_raised(tool):
    src = "def f(x):\n    if x > 0:\n        return 1\n    return 0\n"
    mk = lambda old, new: tool.Mutant("m", "f.py", old, new, (), "")  # noqa: E731
    assert tool.mutate(src, mk("x >= 0", "x > 1")) == (
        None, f"{tool.DRIFT}: the snippet is not in f.py (the code moved) — update the mutant")
    got, note = tool.mutate(src, mk("return", "return -"))
    assert got is None and note.startswith(tool.AMBIGUOUS)
    got, note = tool.mutate(src, mk("if x > 0:", "if x >"))
    assert got is None and note.startswith(tool.INVALID)


SOURCE = textwrap.dedent("""\
    def f(x):
        if x > 1:
            y = 1
        elif x > 0:
            y = 2
        else:
            y = 3
        return y
    """)


@pytest.mark.parametrize("old, new, touched", [
    ("        y = 3", "        y = 4", {-1}),              # the else branch only
    ("    elif x > 0:", "    elif x >= 0:", {0.5, -1}),    # the elif test: x ≤ 1
    ("    else:\n        y = 3", "    else:\n        y = 5", {-1}),  # a shared head is skipped
    ("    return y", "    return -y", {2, 0.5, -1}),       # every call
])
def test_the_marker_runs_exactly_when_the_mutated_statement_does(tool, tmp_path, monkeypatch,
                                                                 old, new, touched):
    mutated, note = tool.mutate(SOURCE, tool.Mutant("m", "f.py", old, new, (), ""))
    assert not note
    (tmp_path / f"{tool.MARK_MODULE}.py").write_text(tool._MARK_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    flag = tmp_path / "reached"
    monkeypatch.setenv("ROBUSTCE_MUTANT_MARK", str(flag))
    namespace: dict = {}
    exec(compile(mutated, "f.py", "exec"), namespace)
    for x in (2, 0.5, -1):
        monkeypatch.delitem(sys.modules, tool.MARK_MODULE, raising=False)
        flag.unlink(missing_ok=True)
        namespace["f"](x)
        assert flag.exists() == (x in touched), (old, x)
    monkeypatch.delitem(sys.modules, tool.MARK_MODULE, raising=False)


# --- the mutated copy is the code the service tests serve (issue 47) ----------------------------

def test_servers_and_scripts_started_by_the_tests_run_the_copy_on_pythonpath(tmp_path):
    """The service tests start ``robustce serve`` (and ``tools/serve_exchange.py`` starts one)
    as a process: its PYTHONPATH must name the ``src`` of the robustce the tests import — the
    mutated copy when ``tools/mutants.py`` runs them — not this checkout's, or no serve mutant
    could ever be killed through a live server."""
    import shutil
    import subprocess

    copy = tmp_path / "src"
    shutil.copytree(ROOT / "src", copy, ignore=shutil.ignore_patterns("__pycache__"))
    probe = ("import sys; sys.path.insert(1, 'tools')\n"
             "from tests.serve.conftest import SRC\n"
             "from serve_exchange import served_src\n"
             "print(SRC); print(served_src())\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy)}, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(copy.resolve())] * 2


@pytest.mark.slow
def test_a_serve_mutant_is_reached_and_killed_only_through_a_live_server(tool):
    """End to end: the token check runs only inside the server process, so its reach marker
    fires only if the server serves the mutated copy; the live-server test then kills it."""
    m = next(m for m in tool.MUTANTS if m.name == "serve_token_prefix_accepted")
    (outcome,) = tool.run([m], timeout=300)
    assert outcome.reached is True and outcome.verdict == "killed", outcome


def test_a_guarding_test_marked_slow_is_run_not_deselected(tool, tmp_path):
    """The project's addopts say ``-m 'not slow'``: a mutant's run must still execute a listed
    test marked ``slow`` (a failing one here: exit 1, "1 failed"), where plain pytest under
    the same configuration deselects it (exit 5, nothing collected)."""
    import subprocess

    t = tmp_path / "test_slow_guard.py"
    t.write_text("import pytest\n\n\n@pytest.mark.slow\ndef test_guard():\n    assert False\n")
    m = tool.Mutant("m", "f.py", "", "", (str(t),), "")
    cmd = tool.pytest_command(m)
    config = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path)]
    with_tool = [*cmd[:3], *config, *cmd[3:]]
    plain = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *config, str(t)]
    runs = [subprocess.run(c, cwd=tmp_path, capture_output=True, text=True, timeout=120)
            for c in (with_tool, plain)]
    assert runs[1].returncode == 5, runs[1].stdout[-1000:]
    assert runs[0].returncode == 1 and "1 failed" in runs[0].stdout, runs[0].stdout[-1000:]
