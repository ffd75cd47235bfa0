"""The walk of docs/own_data.md runs as shown: a CSV with ``approved`` / ``rejected`` labels and
an immutable ``age`` gives Δ-robust CEs for rejected applicants toward approval, from Python
(``docs/examples/own_data_loans.py``) and from the CLI (``describe --write-schema``, an edited
schema, ``explain --schema``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import robustce as rc
from robustce.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "own_data_loans.py"


def _example():
    spec = importlib.util.spec_from_file_location("own_data_loans", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_walk(tmp_path, capsys):
    result = _example().main(str(tmp_path / "my_loans.csv"))
    out = capsys.readouterr().out
    assert out.startswith("0 = approved (favourable), 1 = rejected\n")
    assert "age    integer" in out and "immutable" in out
    assert (result.status == "found").all() and (result.target_class == 0).all()
    cfs, queries = result.counterfactuals, result.queries
    assert (cfs["age"].to_numpy() == queries.loc[cfs["query_id"], "age"].to_numpy()).all()
    assert out.count("(toward approved)") == len(result) and out.rstrip().endswith("True]")


def test_cli_walk(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _example().make_loans().to_csv("my_loans.csv", index=False)
    assert main(["datasets", "describe", "--data", "my_loans.csv", "--target", "decision",
                 "--write-schema", "schema.toml"]) == 0
    text = Path("schema.toml").read_text()
    text = text.replace('upper = 69\nactionability = "free"', 'upper = 69\nactionability = "immutable"')
    text = text.replace('kind = "categorical"\ncategories = ["bachelor", "high_school", "master"]\n'
                        'actionability = "free"',
                        'kind = "ordinal"\ncategories = ["high_school", "bachelor", "master"]\n'
                        'actionability = "increase"')
    Path("schema.toml").write_text(text)
    capsys.readouterr()
    assert main(["explain", "--data", "my_loans.csv", "--schema", "schema.toml", "--method",
                 "milp_robust", "--param", "shift=0.02", "--queries", "3", "--out",
                 "loans-ce"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("classes: 0 = approved (favourable), 1 = rejected; explaining rows "
                          "predicted rejected toward approved\n")
    res = rc.Explanations.load("loans-ce")
    assert (res.status == "found").all() and (res.target_class == 0).all()
    cfs = res.counterfactuals
    assert (cfs["age"].to_numpy() == res.queries.loc[cfs["query_id"], "age"].to_numpy()).all()
    edu = ["high_school", "bachelor", "master"]
    before = res.queries.loc[cfs["query_id"], "education"].map(edu.index).to_numpy()
    assert (cfs["education"].map(edu.index).to_numpy() >= before).all()
