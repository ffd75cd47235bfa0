"""``robustce --version`` and ``robustce datasets list|describe``."""

from __future__ import annotations

import pytest

import robustce
from robustce.cli import build_parser, main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"robustce {robustce.__version__}"


def test_datasets_list(capsys):
    assert main(["datasets", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "type", "description"]
    rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert rows["adult"] == "file" and rows["moons"] == "builtin"
    assert rows["synthetic_loan"] == "builtin" and rows["online_news"] == "file"
    assert "Class 1 = income >50K" in next(x for x in lines if x.startswith("adult "))


def test_datasets_describe_file_dataset(capsys, shared_datasets):
    assert main(["datasets", "describe", "compas"]) == 0
    out = capsys.readouterr().out
    assert "rows:     6172" in out
    assert "columns:  7 raw features" in out
    assert "immutable: age, race, sex" in out
    assert "High" in out and "1144" in out and "Low/Medium" in out and "5028" in out
    assert "c_charge_degree" in out and "binary" in out


def test_datasets_describe_with_data_home_and_groups(capsys, shared_datasets):
    assert main(["datasets", "describe", "rocoursenet_student",
                 "--data-home", str(shared_datasets)]) == 0
    out = capsys.readouterr().out
    assert "rows:     649" in out
    assert "groups (school):" in out and "GP" in out and "423" in out


def test_datasets_describe_builtin(capsys):
    assert main(["datasets", "describe", "iris"]) == 0
    out = capsys.readouterr().out
    assert "rows:     150" in out and "virginica" in out and "continuous 4" in out


def test_unknown_dataset_exit_2_no_traceback(capsys):
    assert main(["datasets", "describe", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("robustce: error: unknown dataset 'nope'; available:")
    assert "Traceback" not in captured.err


def test_missing_file_is_a_user_error(capsys, tmp_path):
    assert main(["datasets", "describe", "heloc", "--data-home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "robustce: error:" in err and "could not be downloaded" in err
    assert "Traceback" not in err


def test_usage_errors_exit_2(capsys):
    assert main(["datasets", "frobnicate"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main([]) == 2  # no command: help on stderr
    assert "usage: robustce" in capsys.readouterr().err
    assert main(["datasets"]) == 2
    assert "usage: robustce datasets" in capsys.readouterr().err


def test_parser_is_extensible():
    parser = build_parser()
    args = parser.parse_args(["datasets", "describe", "adult", "--data-home", "/x"])
    assert args.name == "adult" and args.data_home == "/x"
    assert args.func.__name__ == "_cmd_datasets_describe"


def test_console_script_entry_point():
    """``robustce`` is installed as a console script calling main (its return is the exit
    code)."""
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "robustce"]
    assert ep.value == "robustce.cli:main"
    assert ep.load() is main


@pytest.mark.parametrize("argv", [["--help"], ["datasets", "describe", "--help"]])
def test_help_exits_0(argv, capsys):
    assert main(argv) == 0
    assert "usage:" in capsys.readouterr().out


def test_datasets_describe_lists_the_shipped_relations(capsys):
    # issue 53 (8): the relations every method applies by default are shown with the dataset
    assert main(["datasets", "describe", "synthetic_loan"]) == 0
    out = capsys.readouterr().out
    assert "constraints (every method applies them by default" in out
    assert "relation     years_employed <= age - 16" in out
    assert "relation     debt <= income" in out
    assert main(["datasets", "describe", "moons"]) == 0
    assert "constraints: (none shipped)" in capsys.readouterr().out
