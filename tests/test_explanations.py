"""Explanations: long CE frame, per-query summary, show(), JSON+CSV round trip."""

import json

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.explanations import Explanations, QueryResult


@pytest.fixture()
def explanations():
    df = pd.DataFrame({
        "income": [1000.5, 2000.25, 3000.0],
        "kids": [0, 2, 4],
        "city": ["Paris", "Rome", "Oslo"],
        "owner": [True, False, True],
    })
    schema = rc.data.infer_schema(df)
    enc = rc.data.Encoder(schema).fit(df)
    X = enc.transform(df)
    q = df.set_axis(pd.Index(["q1", "q2", "q3"], name="applicant"))
    cf_a = X[1].copy()
    cf_b = X[2].copy()
    results = [
        QueryResult("found", np.vstack([cf_a, cf_b]), {"distance": 1.5, "robust": True}, 0.25),
        QueryResult("timeout", None, {"distance": np.nan, "robust": False}, 1.0, "time limit"),
        QueryResult("found", cf_a, {"distance": 0.5, "robust": False}, 0.125),
    ]
    return Explanations(queries=q, queries_encoded=X, target_class=[1, 1, 0], results=results,
                        feature_names=schema.names, decode=enc.inverse_transform,
                        meta={"method": "toy", "params": {"delta": 0.1}})


def test_counterfactuals_are_long_with_query_ids(explanations):
    cf = explanations.counterfactuals
    assert list(cf["query_id"]) == ["q1", "q1", "q3"]
    assert list(cf["cf_rank"]) == [0, 1, 0]
    assert list(cf["city"]) == ["Rome", "Oslo", "Rome"]
    assert cf["kids"].dtype == np.int64
    assert list(explanations.status) == ["found", "timeout", "found"]
    assert explanations.coverage == pytest.approx(2 / 3)


def test_to_frame_has_one_row_per_query_with_certificates(explanations):
    f = explanations.to_frame()
    assert list(f.index) == ["q1", "q2", "q3"]
    assert list(f["n_counterfactuals"]) == [2, 0, 1]
    assert list(f["distance"].fillna(-1)) == [1.5, -1, 0.5]
    assert f.loc["q2", "message"] == "time limit"


def test_show_prints_only_changed_features(explanations, capsys):
    text = explanations.show("q3")
    out = capsys.readouterr().out
    assert text in out
    assert "city: Oslo → Rome" in text
    assert "kids: 4 → 2" in text
    assert "income" in text and "owner: True → False" in text
    assert explanations.show("q2").count("CE") == 0
    with pytest.raises(ValidationError, match="unknown query_id"):
        explanations.for_query("nope")


def test_save_load_round_trip_is_exact(explanations, tmp_path):
    path = explanations.save(tmp_path / "exp")
    assert {p.name for p in path.iterdir()} == {"meta.json", "queries.csv", "counterfactuals.csv",
                                                 "summary.csv"}
    json.loads((path / "meta.json").read_text())  # valid JSON, no pickle anywhere
    back = Explanations.load(path)
    pd.testing.assert_frame_equal(back.queries, explanations.queries)
    pd.testing.assert_frame_equal(back.counterfactuals, explanations.counterfactuals)
    np.testing.assert_array_equal(back.counterfactuals_encoded, explanations.counterfactuals_encoded)
    np.testing.assert_array_equal(back.queries_encoded, explanations.queries_encoded)
    pd.testing.assert_series_equal(back.status, explanations.status)
    pd.testing.assert_frame_equal(back.to_frame(), explanations.to_frame(), check_dtype=False)
    assert back.meta == {"method": "toy", "params": {"delta": 0.1}}


def test_save_overwrites_atomically_and_load_rejects_other_dirs(explanations, tmp_path):
    explanations.save(tmp_path / "exp")
    explanations.save(tmp_path / "exp")
    assert [p.name for p in tmp_path.iterdir()] == ["exp"]
    with pytest.raises(ValidationError, match="meta.json"):
        Explanations.load(tmp_path)


def test_load_names_a_missing_or_damaged_file(explanations, tmp_path):
    path = explanations.save(tmp_path / "exp")
    (path / "counterfactuals.csv").unlink()
    with pytest.raises(ValidationError, match="no counterfactuals.csv"):
        Explanations.load(path)
    (path / "meta.json").write_text("{not json")
    with pytest.raises(ValidationError, match="meta.json is not valid JSON"):
        Explanations.load(path)


def test_save_refuses_to_replace_a_directory_that_is_not_explanations(explanations, tmp_path):
    precious = tmp_path / "project"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(ValidationError, match="refusing to replace"):
        explanations.save(precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ValidationError, match="not a directory"):
        explanations.save(tmp_path / "afile")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert Explanations.load(explanations.save(empty)).status.tolist() == explanations.status.tolist()
