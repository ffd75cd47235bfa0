"""The APΔS authors' protocol as options (issue 31): German credit recoded as they recode it,
their shift data (and its row alignment), continued training on a D2 of its own with the
optimiser state kept, queries drawn with replacement and filtered by an own-class Δ-test, and
the `authors` variant of apas-table1 that puts them together."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

import robustce as rc
from robustce.errors import ConfigError
from robustce.evaluation.config import parse_config, resolve_config
from robustce.evaluation.runner import select_queries
from robustce.models.families import continued_family, incremental_family
from robustce.robustness import ParameterShift, is_delta_robust

CODED = ["status", "credit_history", "purpose", "savings", "employment_duration",
         "installment_rate", "personal_status_sex", "other_debtors", "present_residence",
         "property", "other_installment_plans", "housing", "number_credits", "job",
         "people_liable", "telephone", "foreign_worker"]


# --- data ---------------------------------------------------------------------------------------
def test_statlog_recoding_follows_the_documentation_where_it_was_right(shared_datasets):
    """Statlog and South German credit hold the same 1 000 customers (Groemping 2019). Matched
    on (duration, amount, age), the recoded Statlog rows agree with the South German codes on
    every feature whose Statlog documentation was right; on the others the authors' map (via
    the old documentation) disagrees for most rows — the spurious shift their experiment has."""
    statlog = rc.datasets.load("apas_credit")
    south = rc.datasets.load("german_corrected")
    key = ["duration", "amount", "age"]
    a = statlog.frame.astype(float)
    g = south.frame[list(a.columns)].astype(float)
    m = a.merge(g, on=key, suffixes=("_statlog", "_south"))
    assert len(m) > 950
    agree = {c: float((m[f"{c}_statlog"] == m[f"{c}_south"]).mean()) for c in CODED}
    for c in ["employment_duration", "installment_rate", "other_debtors", "present_residence",
              "number_credits", "job", "telephone"]:
        assert agree[c] == 1.0, (c, agree[c])
    assert agree["status"] < 0.1 and agree["purpose"] < 0.1 and agree["housing"] < 0.1
    # the labels are the same customers' (1 = good in both files)
    assert (m.merge(statlog.frame.assign(y=statlog.y)[key + ["y"]], on=key).shape[0]) > 0
    assert statlog.y.mean() == pytest.approx(0.7)


def test_statlog_first_row_in_the_authors_codes(shared_datasets):
    # german.data row 1: A11 6 A34 A43 1169 A65 A75 4 A93 A101 4 A121 67 A143 A152 2 A173 1 A192 A201
    row = rc.datasets.load("apas_credit").frame.iloc[0]
    expected = {"status": 2, "credit_history": 1, "purpose": 4, "savings": 1,
                "employment_duration": 5, "personal_status_sex": 2, "property": 4,
                "other_installment_plans": 3, "housing": 3, "job": 3, "telephone": 2,
                "foreign_worker": 1, "installment_rate": 4, "people_liable": 1}
    assert {k: int(row[k]) for k in expected} == expected


def test_shift_data_is_the_authors_800_rows_and_their_alignment(shared_datasets):
    d2 = rc.datasets.load("apas_credit_shift")
    south = rc.datasets.load("german_corrected")
    assert len(d2) == 800 and d2.schema == rc.datasets.load("apas_credit").schema
    # every row is a row of the South German file (the authors' file is a subset of it)
    rows = set(map(tuple, south.frame.astype(float).to_numpy()))
    assert all(tuple(r) in rows for r in d2.frame.astype(float).to_numpy())
    assert d2.frame.iloc[0][["duration", "amount", "age"]].tolist() == [18.0, 1049.0, 21.0]
    shifted = rc.datasets.load("apas_credit_shift", authors_alignment=True)
    assert len(shifted) == 799
    np.testing.assert_array_equal(shifted.frame[CODED].to_numpy(), d2.frame[CODED].to_numpy()[1:])
    np.testing.assert_array_equal(shifted.frame[["duration", "amount", "age"]].to_numpy(),
                                  d2.frame[["duration", "amount", "age"]].to_numpy()[:-1])
    np.testing.assert_array_equal(shifted.y, d2.y[:-1])


# --- continued training ------------------------------------------------------------------------
def _loan(n: int = 600, seed: int = 0):
    return rc.datasets.load("synthetic_loan", n_samples=n, random_state=seed)


def test_mlp_resumes_adam_where_its_training_stopped():
    data = _loan()
    m = rc.models.MLP(hidden_layers=(6,), epochs=3, batch_size=100, random_state=0).fit(data)
    steps = int(next(iter(m.optimizer_state_["state"].values()))["step"])
    assert steps == 3 * 6  # 3 epochs of 6 batches
    kept = copy.deepcopy(m).fit_more(data, epochs=1, random_state=1, resume_optimizer=True)
    fresh = copy.deepcopy(m).fit_more(data, epochs=1, random_state=1)
    assert int(next(iter(kept.optimizer_state_["state"].values()))["step"]) == steps + 6
    assert int(next(iter(fresh.optimizer_state_["state"].values()))["step"]) == 6
    w = [x.network().layers[0][0] for x in (kept, fresh)]
    assert np.abs(w[0] - w[1]).max() > 1e-6  # the resumed moments move the weights differently


def test_sklearn_partial_fit_keeps_or_restarts_its_optimiser():
    from sklearn.neural_network import MLPClassifier

    data = _loan()
    base, fam = continued_family(data, MLPClassifier(hidden_layer_sizes=(5,), max_iter=50),
                                 n_models=1, epochs=1, optimizer="kept", random_state=0)
    t0 = base.final_._optimizer.t
    kept = fam.models[0].final_._optimizer.t
    _, fresh_fam = continued_family(data, MLPClassifier(hidden_layer_sizes=(5,), max_iter=50),
                                    n_models=1, epochs=1, optimizer="fresh", random_state=0)
    fresh = fresh_fam.models[0].final_._optimizer.t
    assert kept > t0 and fresh < t0  # kept: Adam's step count continues; fresh: it restarts


def test_continued_family_on_a_d2_of_its_own():
    d1, d2 = _loan(400, 0), _loan(300, 1)
    base, fam = continued_family(d1, {"hidden_layers": [6], "epochs": 20, "lr": 0.01}, d2=d2,
                                 n_models=2, epochs=1, random_state=0)
    assert list(fam.meta["d1_index"]) == list(d1.frame.index)  # the base saw all of D1
    for rows in fam.meta["rows"]:  # each member was trained on from it on D2's rows
        assert set(rows) <= set(d2.frame.index) and len(rows) == len(d2)
    other = rc.datasets.load("synthetic_loan", n_samples=50, random_state=2)
    other = dataclasses.replace(other, frame=other.frame.rename(columns={"income": "salary"}))
    with pytest.raises(rc.errors.ValidationError, match="must be the same"):
        continued_family(d1, d2=other)


def test_incremental_family_rejects_an_unknown_optimizer():
    data = _loan()
    m = rc.models.MLP(hidden_layers=(4,), epochs=2).fit(data)
    with pytest.raises(rc.errors.ValidationError, match="optimizer"):
        incremental_family(m, data, optimizer="adam")


# --- queries --------------------------------------------------------------------------------------
def test_queries_drawn_with_replacement_keep_only_own_class_robust_rows():
    data = _loan(800)
    train, test = data.split(test_size=0.5, random_state=0)
    model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    shift = ParameterShift(0.05)
    q = select_queries(model, test, 15, 0, order="random", replace=True, draws=120,
                       random_state=0, robust_shift=shift)
    assert 0 < len(q) <= 15 and q.index.name == "draw"
    assert is_delta_robust(model, q, shift, target_class=0).all()
    everyone = select_queries(model, test, 120, 0, order="random", replace=True, random_state=0)
    robust = is_delta_robust(model, everyone, shift, target_class=0)
    assert not robust.all()  # the filter removed something
    kept = everyone.index[robust][: len(q)]
    assert list(q.index) == list(kept)  # the first n that pass, in draw order
    # draws caps at the number of rows (the authors' min(num_test_instances, rows))
    rows = int((model.predict(test.frame) == 0).sum())
    assert len(select_queries(model, test, 5, 0, order="random", replace=True,
                              draws=10 * rows, random_state=0)) == 5


# --- configuration ---------------------------------------------------------------------------------
TINY = {"name": "t", "seeds": [0], "datasets": [{"name": "synthetic_loan"}],
        "methods": [{"name": "nearest_neighbour"}], "queries": {"n": 3}}


@pytest.mark.parametrize("change, match", [
    ({"queries": {"n": 3, "draws": 10}}, "draws needs replace"),
    ({"queries": {"n": 3, "order": "random", "replace": True, "draws": 2}}, "at least queries.n"),
    ({"queries": {"n": 3, "own_class_robust": True}}, "no evaluation.delta"),
    ({"evaluation": {"retrain": {"protocol": "continued", "optimizer": "adam"}}}, "optimizer"),
    ({"evaluation": {"retrain": {"protocol": "continued", "d2": "nope"}}}, "unknown dataset"),
    ({"evaluation": {"retrain": {"protocol": "continued", "d2_params": {"a": 1}}}}, "no d2"),
    ({"datasets": [{"name": "synthetic_loan", "query_draws": 5}]}, "needs queries.replace"),
])
def test_protocol_options_are_validated(change, match):
    with pytest.raises(ConfigError, match=match):
        parse_config({**TINY, **change})


def test_authors_variant_assembles_the_protocol():
    c = resolve_config("apas-table1", variant="authors")
    credit = next(d for d in c.datasets if d.label == "credit")
    assert credit.name == "apas_credit" and credit.all_free and credit.query_draws == 2000
    assert credit.model["kind"] == "sklearn_mlp" and credit.model["hidden_layer_sizes"] == [5]
    assert "hidden_layers" not in credit.model  # another kind replaces the MLP table
    retrain = credit.evaluation["retrain"]
    assert retrain["d2"] == "apas_credit_shift" and retrain["optimizer"] == "kept"
    assert retrain["d2_params"] == {"authors_alignment": True}
    assert c.queries["own_class_robust"] and c.queries["replace"] and c.queries["draws"] == 200
    apas = next(m for m in c.methods if m.name == "apas")
    p = c.method_params(credit, apas)
    assert p["n"] == 10_000 and p["fixed_draws"] and p["tau_step"] == 0.2
    assert p["delta"] == credit.evaluation["delta"] == pytest.approx(0.054449)
    plain = resolve_config("apas-table1")
    assert next(d for d in plain.datasets if d.label == "credit").name == "taiwan_credit"
