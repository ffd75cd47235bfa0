"""``robustce explain`` on a user's own CSV (issue 30): the favourable class by label, the class
mapping printed, a warning where the labels do not say which outcome is favourable,
actionability from flags or a schema file, unknown classes and unwritable outputs refused before
any training, a progress bar only on a terminal, and partial results kept on Ctrl-C."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.cli import main


def _loans(n: int = 300, labels: tuple[str, str] = ("approved", "rejected")) -> pd.DataFrame:
    """Loan applications whose decision depends on income, debt and education (not on age)."""
    rng = np.random.default_rng(0)
    income = rng.normal(42_000, 12_000, n).clip(12_000, 120_000).round(2)
    debt = rng.gamma(2.0, 4_000, n).round(2)
    edu = rng.choice(["high_school", "bachelor", "master"], n, p=[0.5, 0.35, 0.15])
    score = (income - 40_000) / 10_000 - debt / 8_000 + (edu != "high_school") * 0.8
    return pd.DataFrame({"age": rng.integers(21, 70, n), "income": income, "debt": debt,
                         "education": edu,
                         "decision": np.where(score > 0, labels[0], labels[1])})


@pytest.fixture
def loans_csv(tmp_path):
    path = tmp_path / "my_loans.csv"
    _loans().to_csv(path, index=False)
    return path


def _explain(csv, out, *extra):
    return main(["explain", "--data", str(csv), "--target", "decision", "--method",
                 "milp_nearest", "--queries", "6", "--hidden", "8", "--epochs", "30",
                 "--show", "0", "--out", str(out), *extra])


@pytest.fixture
def no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("trained before the check")
    monkeypatch.setattr(rc.models.MLP, "fit", refuse)


def _one_error_line(capsys, code):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("robustce: error:"), err
    return lines[0]


def test_own_csv_explains_rejected_rows_toward_approved(loans_csv, tmp_path, capsys):
    """Alphabetically ``approved`` is class 0: the default used to explain approved applicants
    how to get rejected. Now the labels say which outcome is favourable."""
    out = tmp_path / "x"
    assert _explain(loans_csv, out, "--immutable", "age") == 0
    stdout = capsys.readouterr().out
    assert "classes: 0 = approved (favourable), 1 = rejected" in stdout
    assert "explaining rows predicted rejected toward approved" in stdout
    res = rc.Explanations.load(out)
    assert (res.target_class == 0).all()  # toward approved
    model = rc.models.load(out / "model")
    assert (model.predict(res.queries) == 1).all()  # the queries are rejected applicants
    found = res.counterfactuals
    assert len(found) and (model.predict(found[res.feature_names]) == 0).all()
    q = res.queries.loc[found["query_id"]]
    assert (found["age"].to_numpy() == q["age"].to_numpy()).all()  # --immutable age held
    assert "toward approved" in res.show(res.query_ids[0])


def test_unclear_labels_warn_and_favourable_chooses(tmp_path, capsys):
    csv = tmp_path / "ab.csv"
    _loans(labels=("B", "A")).to_csv(csv, index=False)  # B = the good outcome, not obvious
    assert _explain(csv, tmp_path / "x1") == 0
    err = capsys.readouterr().err
    assert "do not say which outcome is favourable" in err and "--favourable" in err
    assert _explain(csv, tmp_path / "x2", "--favourable", "B") == 0
    captured = capsys.readouterr()
    assert "--favourable" not in captured.err
    assert "0 = A, 1 = B (favourable)" in captured.out
    assert (rc.Explanations.load(tmp_path / "x2").target_class == 1).all()


def test_builtin_datasets_declare_their_favourable_class():
    assert rc.datasets.load("synthetic_loan", n_samples=200).favourable_label == "approved"
    assert rc.datasets.load("breast_cancer").favourable_label == "benign"
    assert rc.datasets.load("iris").favourable is None


def test_diabetes_default_explains_diabetic_rows_toward_healthy(tmp_path, capsys,
                                                                 shared_datasets):
    if not (shared_datasets / "diabetes" / "diabetes.csv").is_file():
        pytest.skip(f"diabetes not found under {shared_datasets}")
    out = tmp_path / "d"
    assert main(["explain", "--dataset", "diabetes", "--method", "nearest_neighbour",
                 "--queries", "3", "--show", "0", "--out", str(out)]) == 0
    assert "explaining rows predicted diabetic toward not_diabetic" in capsys.readouterr().out
    assert (rc.Explanations.load(out).target_class == 0).all()


@pytest.mark.parametrize("flag, value", [("--from-class", "5"), ("--from-class", "maybe"),
                                         ("--target-class", "7"), ("--favourable", "granted"),
                                         ("--immutable", "agee"), ("--increase-only", "zip")])
def test_unknown_class_or_feature_fails_before_training(loans_csv, tmp_path, capsys,
                                                        no_training, flag, value):
    line = _one_error_line(capsys, _explain(loans_csv, tmp_path / "x", flag, value))
    assert value in line
    assert not (tmp_path / "x").exists()


def test_from_class_equal_to_target_is_refused(loans_csv, tmp_path, capsys, no_training):
    line = _one_error_line(capsys, _explain(loans_csv, tmp_path / "x", "--from-class",
                                            "approved"))
    assert "nothing to explain" in line


def test_no_row_predicted_as_the_source_class_is_one_line(loans_csv, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.setattr(rc.models.MLP, "predict", lambda self, X: np.zeros(len(X), int))
    line = _one_error_line(capsys, _explain(loans_csv, tmp_path / "x", "--quiet"))
    assert "predicts no test row as rejected" in line


@pytest.mark.parametrize("where", ["proc", "read-only"])
def test_unwritable_out_fails_before_any_work(loans_csv, tmp_path, capsys, no_training, where):
    import os

    if where == "proc":
        out = "/proc/x"
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        os.chmod(ro, 0o555)
        out = str(ro / "x")
        if os.access(ro, os.W_OK):  # root ignores the mode bits
            pytest.skip("cannot make a read-only directory here")
    line = _one_error_line(capsys, _explain(loans_csv, out))
    assert "cannot be written" in line or "cannot be created" in line


def test_out_paths_print_normalised(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    assert main(["explain", "--dataset", "moons", "--method", "nearest_neighbour", "--queries",
                 "2", "--hidden", "4", "--epochs", "2", "--show", "0",
                 "--out", "a/../b/./c"]) == 0
    assert "explanations: b/c\n" in capsys.readouterr().out


def test_increase_and_decrease_only_flags_hold(loans_csv, tmp_path, capsys):
    out = tmp_path / "x"
    assert _explain(loans_csv, out, "--immutable", "age,income", "--decrease-only", "debt") == 0
    res = rc.Explanations.load(out)
    found = res.counterfactuals
    q = res.queries.loc[found["query_id"]]
    assert (found["income"].to_numpy() == q["income"].to_numpy()).all()
    assert (found["debt"].to_numpy() <= q["debt"].to_numpy() + 1e-6).all()


def test_schema_file_round_trip_sets_actionability(loans_csv, tmp_path, capsys):
    schema = tmp_path / "schema.toml"
    assert main(["datasets", "describe", "--data", str(loans_csv), "--target", "decision",
                 "--write-schema", str(schema)]) == 0
    text = schema.read_text()
    assert 'favourable = "approved"' in text and 'target = "decision"' in text
    edited = text.replace('name = "age"\nkind = "integer"', 'name = "age"\nkind = "integer"', 1)
    edited = edited.replace('actionability = "free"', 'actionability = "immutable"', 1)  # age
    schema.write_text(edited)
    out = tmp_path / "x"
    assert main(["explain", "--data", str(loans_csv), "--schema", str(schema), "--method",
                 "milp_nearest", "--queries", "4", "--hidden", "8", "--epochs", "30",
                 "--show", "0", "--out", str(out)]) == 0
    res = rc.Explanations.load(out)
    found = res.counterfactuals
    assert len(found)
    assert (found["age"].to_numpy() == res.queries.loc[found["query_id"], "age"].to_numpy()).all()


def test_bad_schema_file_is_one_line(loans_csv, tmp_path, capsys, no_training):
    schema = tmp_path / "schema.toml"
    schema.write_text('[[features]]\nname = "age"\nkind = "wobbly"\n')
    line = _one_error_line(capsys, _explain(loans_csv, tmp_path / "x", "--schema", str(schema)))
    assert "schema.toml" in line


def test_no_progress_bar_off_a_terminal_and_quiet_is_quiet(loans_csv, tmp_path, capsys):
    assert _explain(loans_csv, tmp_path / "x", "--quiet") == 0
    assert capsys.readouterr().err == ""


def test_ctrl_c_keeps_the_finished_queries_beside_out(loans_csv, tmp_path, capsys, monkeypatch):
    """An interrupt while explaining: the queries explained so far are saved, whole, to
    OUT.partial; OUT itself is left as it was (here: absent)."""
    from robustce.methods.base import Explainer

    real = Explainer.explain
    calls = {"n": 0}

    def interrupted(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Explainer, "explain", interrupted)
    out = tmp_path / "x"
    assert _explain(loans_csv, out) == 130
    err = capsys.readouterr().err
    assert "interrupted after 2 of 6 queries" in err
    assert not out.exists()
    partial = rc.Explanations.load(tmp_path / "x.partial")
    assert len(partial) == 2 and "interrupted" in partial.meta["partial"]
    assert (tmp_path / "x.partial" / "model").is_dir()


def test_benchmark_output_path_prints_normalised(tmp_path, capsys, monkeypatch):
    """``out_dir = "../../results/x"`` in a config under configs/sub: printed as results/x."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs" / "sub").mkdir(parents=True)
    (tmp_path / "configs" / "sub" / "c.toml").write_text(
        'name = "c"\nseeds = [0]\nout_dir = "../../results/x"\nmetrics = ["validity"]\n'
        'model = {hidden_layers = [4], epochs = 3}\nqueries = {n = 2}\n'
        '[[methods]]\nname = "nearest_neighbour"\n'
        '[[datasets]]\nname = "moons"\nparams = {n_samples = 200}\n')
    code = main(["benchmark", "configs/sub/c.toml", "--no-report", "--no-progress"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "results: results/x\n" in out and ".." not in out


def test_progress_bar_on_a_terminal(loans_csv, tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert _explain(loans_csv, tmp_path / "x") == 0
    err = capsys.readouterr().err
    assert "explain: 100%" in err and "6/6" in err


def test_a_read_only_file_system_fails_before_any_work(loans_csv, tmp_path, capsys,
                                                       no_training, monkeypatch):
    """What the mode bits cannot tell (a read-only mount; root ignores the bits): the probe
    directory cannot be made."""
    import errno

    import robustce.utils as utils

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(utils.tempfile, "mkdtemp", refuse)
    line = _one_error_line(capsys, _explain(loans_csv, tmp_path / "x"))
    assert "cannot be written" in line and "Read-only file system" in line


def _explain_quick(csv, out, *extra):
    return main(["explain", "--data", str(csv), "--target", "decision", "--method",
                 "nearest_neighbour", "--queries", "2", "--hidden", "8", "--epochs", "30",
                 "--show", "0", "--quiet", "--out", str(out), *extra])


def test_the_trained_model_is_saved_with_the_favourable_class(tmp_path, capsys):
    """Issue 46: the favourable label chosen at explain time was not saved with the model, so
    ``robustce serve`` had to guess it."""
    csv = tmp_path / "loans.csv"
    _loans(labels=("approved", "denied")).to_csv(csv, index=False)
    assert _explain_quick(csv, tmp_path / "x", "--favourable", "approved") == 0
    model = rc.models.load(tmp_path / "x" / "model")
    assert model.class_names == ("approved", "denied") and model.favourable_label == "approved"


def test_labels_that_say_nothing_save_the_chosen_target_and_no_guess(tmp_path, capsys):
    csv = tmp_path / "ab.csv"
    _loans(labels=("B", "A")).to_csv(csv, index=False)
    assert _explain_quick(csv, tmp_path / "chosen", "--target-class", "B") == 0
    assert rc.models.load(tmp_path / "chosen" / "model").favourable_label == "B"
    assert _explain_quick(csv, tmp_path / "guessed") == 0  # explains toward B (class 1): a guess
    assert rc.models.load(tmp_path / "guessed" / "model").favourable is None
