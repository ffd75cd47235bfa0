"""Every subcommand refuses a bad argument before any training or solving (issue 53): ``notice``
used to train for minutes and then stop at "--param.shift: unknown parameter", because a
``--param`` went to every ``--method``. Now a parameter goes to each method that takes it, and
one that none takes, a bad value, an unknown group column or a bad count is one line, with no
training announced and nothing written."""

from __future__ import annotations

import json

import pytest

from robustce.cli import main

DATA = ["--dataset", "synthetic_loan", "--hidden", "8", "--epochs", "20"]
NOTICE = ["notice", *DATA, "--applicants", "1"]
AUDIT = ["audit", *DATA]
EXPLAIN = ["explain", *DATA, "--queries", "2"]

CASES = {
    "notice-param-no-method-takes": (
        [*NOTICE, "--method", "milp_nearest", "--param", "shift=0.05"],
        "--param shift: no --method takes it (MILPNearest)"),
    "notice-param-bad-value": (
        [*NOTICE, "--method", "milp_nearest", "--method", "milp_robust", "--param", "shift=-1"],
        "--param shift: delta must be a finite number > 0"),
    "notice-param-bad-type": (
        [*NOTICE, "--method", "milp_robust", "--param", "shift=abc"],
        "--param shift: wrong type"),
    "notice-epochs": ([*NOTICE, "--method", "milp_nearest", "--epochs", "0"], "--epochs"),
    "audit-param-no-method-takes": (
        [*AUDIT, "--groups", "housing", "--param", "shift=0.05"],
        "--param shift: no --method takes it (NearestNeighbour)"),
    "audit-param-bad-value": (
        [*AUDIT, "--groups", "housing", "--method", "milp_robust", "--param", "shift=-1"],
        "--param shift: delta must be a finite number > 0"),
    "audit-unknown-group": ([*AUDIT, "--groups", "gender"], "unknown group column 'gender'"),
    "audit-bootstrap": ([*AUDIT, "--groups", "housing", "--bootstrap", "0"],
                        "--bootstrap must be >= 1"),
    "audit-sample-fraction": ([*AUDIT, "--groups", "housing", "--sample-fraction", "1.5"],
                              "--sample-fraction must be in (0, 1]"),
    "audit-missing-input": ([*AUDIT, "--groups", "housing", "--input", "no_such_file.csv"],
                            "audit input not found"),
    "explain-param-unknown": ([*EXPLAIN, "--method", "milp_nearest", "--param", "shift=0.05"],
                              "--param shift: unknown parameter"),
    "explain-param-bad-value": ([*EXPLAIN, "--method", "milp_robust", "--param", "shift=-1"],
                                "delta must be a finite number > 0"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_argument_is_one_line_before_any_training(case, tmp_path, capsys):
    argv, expected = CASES[case]
    out = tmp_path / "out"
    code = main([*argv, "--out", str(out)])  # not --quiet: training would be announced
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("robustce: error:"), err
    assert expected in err[0]
    assert not out.exists()  # nothing written


def test_notice_param_goes_to_each_method_that_takes_it(tmp_path):
    """``n_neighbours`` is a parameter of nearest_neighbour, not of milp_nearest: both run,
    and the audit record shows it on the one method only."""
    out = tmp_path / "n"
    assert main([*NOTICE, "--method", "nearest_neighbour", "--method", "milp_nearest",
                 "--param", "n_neighbours=2", "--quiet", "--out", str(out)]) == 0
    (path,) = out.glob("notice_*.json")
    methods = {m["method"]: m["params"] for m in json.loads(path.read_text())["record"]["methods"]}
    assert methods["nearest_neighbour"]["n_neighbours"] == 2
    assert "n_neighbours" not in methods["milp_nearest"]
