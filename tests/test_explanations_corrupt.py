"""Corrupt saved explanations are refused with a ValidationError naming the file and the problem."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.explanations import Explanations, QueryResult


@pytest.fixture()
def saved(tmp_path):
    df = pd.DataFrame({"income": [1000.5, 2000.25, 3000.0], "city": ["Paris", "Rome", "Oslo"]})
    enc = rc.data.Encoder(rc.data.infer_schema(df)).fit(df)
    X = enc.transform(df)
    results = [QueryResult("found", X[1:2] * 0.3 + 0.1, {"distance": 1.5}, 0.25),
               QueryResult("timeout", None, {"distance": np.nan}, 1.0, "time limit"),
               QueryResult("found", X[0:1], {"distance": 0.5}, 0.125)]
    expl = Explanations(queries=df, queries_encoded=X, target_class=[1, 1, 0], results=results,
                        feature_names=list(df.columns), decode=enc.inverse_transform,
                        meta={"method": "toy"})
    return expl.save(tmp_path / "exp")


def _edit_csv(path, fn):
    frame = pd.read_csv(path)
    fn(frame).to_csv(path, index=False)


def _load_fails(path, *patterns):
    with pytest.raises(ValidationError) as info:
        Explanations.load(path)
    text = str(info.value)
    for p in patterns:
        assert p in text, text
    return text


def _fails_naming(path, *patterns) -> bool:
    """True when loading ``path`` raises a ValidationError whose message has every pattern."""
    return bool(_load_fails(path, *patterns))


def test_the_fixture_loads(saved):
    assert list(Explanations.load(saved).status) == ["found", "timeout", "found"]


def test_truncated_counterfactuals_csv(saved):
    f = saved / "counterfactuals.csv"
    text = f.read_text()
    f.write_text(text[: len(text) - 25])  # cut inside the last row
    assert _fails_naming(saved, "counterfactuals.csv")


def test_empty_queries_csv(saved):
    (saved / "queries.csv").write_text("")
    assert _fails_naming(saved, "queries.csv")


def test_non_numeric_encoded_value(saved):
    _edit_csv(saved / "counterfactuals.csv", lambda f: f.assign(enc_0=f["enc_0"].astype(object)
                                                                 .where(f.index != 0, "abc")))
    assert _fails_naming(saved, "counterfactuals.csv", "enc_0", "non-numeric")


def test_missing_encoded_column(saved):
    _edit_csv(saved / "queries.csv", lambda f: f.drop(columns=["enc_1"]))
    assert _fails_naming(saved, "queries.csv", "enc_1")


def test_summary_shorter_than_the_queries(saved):
    _edit_csv(saved / "summary.csv", lambda f: f.iloc[:2])
    assert _fails_naming(saved, "summary.csv", "2 rows", "3 queries")


@pytest.mark.parametrize("n_encoded", [2, 7, 0, "4", None])
def test_wrong_n_encoded_in_meta(saved, n_encoded):
    meta = json.loads((saved / "meta.json").read_text())
    assert meta["n_encoded"] == 4
    meta["n_encoded"] = n_encoded
    (saved / "meta.json").write_text(json.dumps(meta))
    text = _load_fails(saved)
    assert "n_encoded" in text or "enc_" in text, text


def test_unknown_status_and_foreign_query_id(saved, tmp_path):
    _edit_csv(saved / "summary.csv", lambda f: f.assign(status=["found", "robust?", "found"]))
    assert _fails_naming(saved, "summary.csv", "robust?")


def test_counterfactual_of_an_unknown_query(saved):
    _edit_csv(saved / "counterfactuals.csv", lambda f: f.assign(query_id=[7] * len(f)))
    assert _fails_naming(saved, "counterfactuals.csv", "query_id")


def test_cli_certify_on_corrupt_explanations_is_one_line_exit_2(saved, capsys):
    from robustce.cli import main

    _edit_csv(saved / "summary.csv", lambda f: f.iloc[:1])
    assert main(["certify", str(saved), "--delta", "0.01"]) == 2
    err = capsys.readouterr().err.strip()
    assert "summary.csv" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_counterfactuals_csv_cut_inside_a_row(saved):
    f = saved / "counterfactuals.csv"
    text = f.read_text()
    f.write_text(text[: len(text) - 8])
    assert _fails_naming(saved, "counterfactuals.csv")
