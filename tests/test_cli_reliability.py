"""CLI reliability: output paths are checked before any work (exit 2, one line, nothing
created), ``explain --out`` appears whole or not at all, errors print one line, and the
``--out`` of a fresh explain can be interrupted at any save step without a half-written result."""

from __future__ import annotations

import pytest

import robustce as rc
from robustce.cli import main
from robustce.errors import ValidationError

EXPLAIN = ["explain", "--dataset", "moons", "--method", "nearest_neighbour", "--queries", "3",
           "--hidden", "8", "--epochs", "5"]


@pytest.fixture
def no_training(monkeypatch):
    """Fail loudly if a command trains a model (the checks must come first)."""
    def refuse(*args, **kwargs):
        raise AssertionError("trained before checking the output path")
    monkeypatch.setattr(rc.models.MLP, "fit", refuse)


def _user_error(capsys, code):
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("robustce: error:"), err
    assert "Traceback" not in err
    return lines[0]


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize("command", ["explain", "certify", "benchmark"])
def test_out_under_a_regular_file_fails_before_any_work(tmp_path, capsys, no_training, command):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = str(blocker / "sub" / "out")
    argv = {"explain": EXPLAIN + ["--out", out],
            "certify": ["certify", str(tmp_path / "missing_expl"), "--delta", "0.01", "--out", out],
            "benchmark": ["benchmark", "proplace-table1", "--quick", "--out", out,
                          "--no-progress"]}[command]
    before = _files(tmp_path)
    line = _user_error(capsys, main(argv))
    assert "--out" in line and "not a directory" in line
    assert _files(tmp_path) == before  # nothing created


def test_explain_out_a_foreign_nonempty_dir_fails_before_training(tmp_path, capsys, no_training):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("keep me")
    line = _user_error(capsys, main(EXPLAIN + ["--out", str(out)]))
    assert "not a saved Explanations directory" in line
    assert _files(tmp_path) == ["mine", "mine/thesis.tex"]


def test_explanations_save_under_a_file_is_a_validation_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = rc.Explanations.__new__(rc.Explanations)  # the check comes before any field is read
    with pytest.raises(ValidationError, match="not a directory"):
        rc.Explanations.save(res, blocker / "deeper" / "expl")


def test_multi_line_errors_print_one_line(tmp_path, capsys, monkeypatch):
    def two_lines(*args, **kwargs):
        raise ValidationError("size mismatch for 0.weight: copying a param with shape [8, 2]\n"
                              "      whose shape in the current model is [16, 2].")
    monkeypatch.setattr(rc.models, "load", two_lines)
    import robustce.models as models
    monkeypatch.setattr(models, "load", two_lines)
    line = _user_error(capsys, main(EXPLAIN + ["--model", "m", "--out", str(tmp_path / "o")]))
    assert "size mismatch" in line and "[16, 2]" in line


@pytest.mark.parametrize("step", ["explanations", "model"])
def test_explain_out_interrupted_while_saving_leaves_nothing(tmp_path, capsys, monkeypatch, step):
    """A KeyboardInterrupt while the explanations or the model are written: no --out directory,
    no stray temporary directory (before: the explanations without their model)."""
    target = rc.Explanations if step == "explanations" else rc.models.MLP
    real = target.save

    def interrupted(self, path, *args, **kwargs):
        real(self, path, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(target, "save", interrupted)
    out = tmp_path / "out"
    code = main(EXPLAIN + ["--out", str(out)])
    capsys.readouterr()
    assert code == 130
    assert _files(tmp_path) == []


def test_explain_out_interrupted_keeps_the_previous_result(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert main(EXPLAIN + ["--out", str(out)]) == 0
    before = {p: (out / p).read_bytes() for p in _files(out) if (out / p).is_file()}
    real = rc.models.MLP.save

    def interrupted(self, path, *args, **kwargs):
        real(self, path, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(rc.models.MLP, "save", interrupted)
    assert main(EXPLAIN + ["--seed", "1", "--out", str(out)]) == 130
    capsys.readouterr()
    after = {p: (out / p).read_bytes() for p in _files(out) if (out / p).is_file()}
    assert after == before
    assert _files(tmp_path) == ["out"] + [f"out/{p}" for p in _files(out)]
