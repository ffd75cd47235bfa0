"""A fresh clone: ``make data`` (tools/fetch_data.py) and ``make test-nodata``
(tools/data_tests.py, the modules that must skip without data)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from robustce.data import download as dl

REPO = Path(__file__).resolve().parents[1]


def _load_file(name: str, path: Path):
    """A module from a file that is not importable by name (tools/, a conftest.py)."""
    spec = importlib.util.spec_from_file_location(f"_fresh_clone_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tool(name: str):
    return _load_file(name, REPO / "tools" / f"{name}.py")


def test_fetch_data_offline_fails_with_one_line(tmp_path, capsys):
    fetch = _tool("fetch_data")
    assert fetch.main(["--data-home", str(tmp_path), "diabetes", "no2"]) == 1  # network off
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "2 dataset(s) not fetched (diabetes, no2)" in lines[0]
    assert "diabetes/diabetes.csv" in lines[0] and "ROBUSTCE_DATA" in lines[0]
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_fetch_data_downloads_verifies_and_summarises(tmp_path, capsys, monkeypatch,
                                                     shared_datasets):
    fetch = _tool("fetch_data")
    source = (shared_datasets / "diabetes" / "diabetes.csv").read_bytes()
    monkeypatch.setattr(dl, "fetch_url", lambda url, timeout=60.0: source)
    assert fetch.main(["--data-home", str(tmp_path), "diabetes"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("diabetes") and "1 file" in line and "downloaded, verified" in line
    assert (tmp_path / "diabetes" / "diabetes.csv").read_bytes() == source
    assert fetch.main(["--data-home", str(tmp_path), "diabetes"]) == 0  # now present
    assert "present, verified" in capsys.readouterr().out


def test_fetch_data_reports_a_corrupted_file(tmp_path, capsys, shared_datasets):
    fetch = _tool("fetch_data")
    (tmp_path / "no2").mkdir()
    shutil.copy(shared_datasets / "no2" / "no2.csv", tmp_path / "no2" / "no2.csv")
    with open(tmp_path / "no2" / "no2.csv", "ab") as fh:
        fh.write(b"1,2,3\n")
    assert fetch.main(["--data-home", str(tmp_path), "no2"]) == 1
    assert "FAILED checksum" in capsys.readouterr().out


def test_fetch_data_names_unknown_datasets(capsys):
    assert _tool("fetch_data").main(["adlt"]) == 2
    assert "unknown dataset(s) ['adlt']" in capsys.readouterr().err


def test_data_test_modules_cover_fixture_users():
    modules = _tool("data_tests").data_test_modules()
    # the three that once errored on a fresh clone (they reach diabetes through conftest helpers)
    for name in ("test_proto_robust.py", "test_robx.py", "test_wachter_robust.py"):
        assert f"tests/methods/{name}" in modules
    assert "tests/data/test_datasets.py" in modules
    assert "tests/test_distance.py" not in modules


def test_diabetes_helper_skips_naming_the_path_without_data(tmp_path, monkeypatch):
    """The conftest helper behind ``free_diabetes_setup`` skips (it errored: finding 6)."""
    monkeypatch.setenv("ROBUSTCE_DATA", str(tmp_path))
    monkeypatch.setenv("ROBUSTCE_CACHE", str(tmp_path / "cache"))
    module = _load_file("methods_conftest", REPO / "tests" / "methods" / "conftest.py")
    with pytest.raises(pytest.skip.Exception, match=str(tmp_path)):
        module._free_diabetes()


def test_an_empty_data_folder_counts_as_missing(tmp_path):
    """``shared_datasets`` skips on an empty folder, not only on a missing one."""
    conftest = _load_file("conftest", REPO / "tests" / "conftest.py")
    assert len(conftest.missing_files(tmp_path)) == len(dl.checksums())
