"""Shared helpers: directory replacement keeps the old directory until the new one is in place."""

from __future__ import annotations

import os

import pytest

from robustce.utils import replace_dir, temp_dir_beside


def _new_dir(path, text):
    tmp = temp_dir_beside(path)
    (tmp / "f.txt").write_text(text)
    return tmp


def test_replace_dir_creates_and_replaces(tmp_path):
    path = tmp_path / "out"
    replace_dir(_new_dir(path, "one"), path)
    assert (path / "f.txt").read_text() == "one"
    replace_dir(_new_dir(path, "two"), path)
    assert (path / "f.txt").read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_replace_dir_restores_the_old_directory_when_the_rename_fails(tmp_path, monkeypatch):
    path = tmp_path / "out"
    replace_dir(_new_dir(path, "old"), path)
    tmp = _new_dir(path, "new")
    real = os.replace

    def failing(src, dst):
        if str(src) == str(tmp):
            raise OSError("rename failed")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="rename failed"):
        replace_dir(tmp, path)
    monkeypatch.undo()
    assert (path / "f.txt").read_text() == "old"
