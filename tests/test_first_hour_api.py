"""Issue 30 from Python: the favourable class by label (``from_frame``, ``target_class="approved"``),
classes named in ``show``, typed errors for an unknown keyword, ``delta=`` on a method that takes
``shift=``, raw rows as an array and an unknown query id, certificate columns that keep their
dtype across save/load, and certifiers that take an ``Explanations`` object or its frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ParameterError, RobustCEError, ValidationError


@pytest.fixture(scope="module")
def loans():
    rng = np.random.default_rng(1)
    n = 240
    income = rng.normal(42_000, 12_000, n).round(2)
    debt = rng.gamma(2.0, 4_000, n).round(2)
    edu = rng.choice(["high_school", "bachelor"], n)
    score = (income - 40_000) / 10_000 - debt / 8_000 + (edu == "bachelor") * 0.8
    df = pd.DataFrame({"age": rng.integers(21, 70, n), "income": income, "debt": debt,
                       "education": edu,
                       "decision": np.where(score > 0, "approved", "rejected")})
    data = rc.datasets.from_frame(df, "decision", immutable=["age"])
    train, test = data.split(random_state=0)
    model = rc.models.MLP((8,), epochs=60, lr=5e-3, random_state=0).fit(train)
    return data, train, test, model


def test_from_frame_reads_the_favourable_class_from_the_labels(loans):
    data = loans[0]
    assert data.class_names == ("approved", "rejected")
    assert data.favourable == 0 and data.favourable_label == "approved"
    assert data.class_mapping() == "0 = approved (favourable), 1 = rejected"


@pytest.mark.parametrize("labels, expected", [(("no", "yes"), 1), (("bad", "good"), 1),
                                              (("default", "paid"), 1), ((0, 1), None),
                                              (("A", "B"), None), (("x", "y", "z"), None)])
def test_guess_favourable(labels, expected):
    from robustce.data.dataset import guess_favourable

    assert guess_favourable(labels) == expected


def test_from_frame_favourable_by_label_and_unknown_label_is_typed():
    df = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": ["A", "B", "A", "B"]})
    assert rc.datasets.from_frame(df, "y").favourable is None
    assert rc.datasets.from_frame(df, "y", favourable="B").favourable == 1
    with pytest.raises(ValidationError, match="'C'.*0 = A, 1 = B"):
        rc.datasets.from_frame(df, "y", favourable="C")


def test_target_class_by_label(loans):
    data, train, test, model = loans
    by_label = rc.methods.NearestNeighbour(model, train, target_class="approved")
    by_index = rc.methods.NearestNeighbour(model, train, target_class=0)
    rows = test.frame.iloc[:8]
    a, b = by_label.explain(rows), by_index.explain(rows)
    assert (a.target_class == 0).all()
    pd.testing.assert_frame_equal(a.counterfactuals, b.counterfactuals)
    per_call = rc.methods.NearestNeighbour(model, train).explain(rows, target_class="approved")
    assert (per_call.target_class == 0).all()
    with pytest.raises(ValidationError, match="target_class 'granted'.*0 = approved"):
        rc.methods.NearestNeighbour(model, train, target_class="granted")


def test_show_names_the_target_class_and_unknown_id_is_typed(loans):
    data, train, test, model = loans
    rejected = test.frame[model.predict(test.frame) == 1].iloc[:3]
    res = rc.methods.NearestNeighbour(model, train).explain(rejected)
    text = res.show(res.query_ids[0])
    assert "toward approved" in text
    with pytest.raises(ValidationError, match="unknown query_id 99999; the query ids are"):
        res.show(99999)


def test_unknown_keyword_and_delta_are_typed_errors(loans):
    data, train, test, model = loans
    with pytest.raises(ParameterError, match="'delta'.*shift="):
        rc.methods.MILPRobust(model, train, delta=0.02)
    with pytest.raises(ParameterError, match="n_neighbour.*did you mean 'n_neighbours'"):
        rc.methods.NearestNeighbour(model, train, n_neighbour=3)
    assert isinstance(ParameterError("x"), TypeError)  # old ``except TypeError`` still works


def test_raw_rows_as_an_array_is_a_typed_error(loans):
    data, train, test, model = loans
    with pytest.raises(ValidationError, match="DataFrame with the columns"):
        rc.methods.NearestNeighbour(model, train).explain(test.frame.to_numpy())


def test_certificate_columns_keep_their_dtype_across_save_and_load(loans, tmp_path):
    data, train, test, model = loans
    rejected = test.frame[model.predict(test.frame) == 1].iloc[:2]
    res = rc.methods.MILPRobust(model, train, shift=0.01, time_limit=20).explain(rejected)
    res.save(tmp_path / "e")
    back = rc.Explanations.load(tmp_path / "e")
    before, after = res.to_frame(), back.to_frame()
    for col in res.certificates.columns:
        assert before[col].dtype == after[col].dtype, col
    assert before["p"].iloc[0] == after["p"].iloc[0] == "inf"


def test_certifiers_take_explanations_or_their_frame(loans):
    from robustce.robustness import ParameterShift, apas_certify, is_delta_robust

    data, train, test, model = loans
    rejected = test.frame[model.predict(test.frame) == 1].iloc[:3]
    res = rc.methods.MILPNearest(model, train).explain(rejected)
    shift = ParameterShift(0.001)
    plain = is_delta_robust(model, res.counterfactuals[res.feature_names], shift,
                            target_class=0)
    assert np.array_equal(is_delta_robust(model, res, shift, target_class=0), plain)
    assert np.array_equal(is_delta_robust(model, res.counterfactuals, shift, target_class=0),
                          plain)
    cert = apas_certify(model, res, delta=0.001, random_state=0)
    assert len(cert.to_frame()) == len(res.counterfactuals)
    with pytest.raises(RobustCEError):
        is_delta_robust(model, res.counterfactuals.assign(zzz=1), shift, target_class=0)


def test_precheck_verdicts_carry_no_solver_fields(loans):
    """Rows decided by the interval bound or the weight attack: ``solver`` and
    ``solver_status`` are empty (as docs/certification.md says), even where a MILP then
    computed the exact ``value``."""
    from robustce.robustness import ParameterShift, exact_worst_case

    data, train, test, model = loans
    X = model.encoder.transform(test.frame.iloc[:12])
    res = exact_worst_case(model, X, ParameterShift(0.5), model.predict(X), time_limit=5)
    frame = res.to_frame()
    pre = frame["decided_by"].isin(["interval", "attack"])
    assert pre.any()
    assert frame.loc[pre, "solver"].isna().all() and frame.loc[pre, "solver_status"].isna().all()
    milp = frame["decided_by"] == "milp"
    assert (frame.loc[milp, "solver"] == "highs").all()


def test_to_frame_names_the_target_class(loans, tmp_path):
    data, train, test, model = loans
    res = rc.methods.NearestNeighbour(model, train).explain(test.frame.iloc[:3])
    frame = res.to_frame()
    assert set(frame["target_label"]) <= {"approved", "rejected"}
    assert (frame["target_label"] == frame["target_class"].map(["approved", "rejected"].__getitem__)
            ).all()
    res.save(tmp_path / "e")
    pd.testing.assert_frame_equal(rc.Explanations.load(tmp_path / "e").to_frame(), frame)
