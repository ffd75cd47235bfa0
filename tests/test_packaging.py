"""What a distribution carries (issue 53): the licence text that ``pyproject.toml`` declares,
at the root of the repository, in the wheel and in the sdist. The distributions are built by
setuptools' own PEP 517 hooks (offline, no isolation) from a copy of the project."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LICENCE = REPO / "LICENSE"


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The wheel and the sdist built from a copy of the project (the checkout stays clean)."""
    root = tmp_path_factory.mktemp("dist")
    project = root / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy2(REPO / name, project / name)
    shutil.copytree(REPO / "src", project / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    out = root / "out"
    # the hooks rewrite sys.argv: the folder is read before
    hooks = ("import sys, setuptools.build_meta as b; out = sys.argv[1]; "
             "b.build_wheel(out); b.build_sdist(out)")
    done = subprocess.run([sys.executable, "-c", hooks, str(out)], cwd=project,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def test_the_repository_carries_the_apache_licence_it_declares():
    text = LICENCE.read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and "LICENSE" in project["license-files"]


def test_the_wheel_carries_the_licence(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = wheel.namelist()
        licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(licence) == 1, names
        assert wheel.read(licence[0]).decode() == LICENCE.read_text()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata


def test_the_sdist_carries_the_licence(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1]: m for m in sdist.getmembers() if "/" in m.name}
        assert "LICENSE" in members, sorted(members)
        assert sdist.extractfile(members["LICENSE"]).read().decode() == LICENCE.read_text()
