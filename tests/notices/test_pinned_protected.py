"""Protected features are never among a notice's reasons, even when the CE handed in changes
them: a model where ``sex`` weighs most, CEs searched on the same model with ``sex`` left free
(so the nearest CEs flip it), and the notice built on the model that marks it protected."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Feature, Schema, from_frame
from robustce.notices import notice, principal_reasons

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(6)
    n = 400
    sex = rng.choice(["F", "M"], n)
    income, debt = rng.uniform(0, 10, n), rng.uniform(0, 10, n)
    y = ((3 * (sex == "M") + 0.3 * (income - debt) + rng.normal(0, 0.3, n)) > 2.5).astype(int)
    df = pd.DataFrame({"sex": sex, "income": income, "debt": debt, "y": y})
    schema = Schema([Feature("sex", "binary", categories=("F", "M")),
                     Feature("income", "continuous", 0.0, 10.0),
                     Feature("debt", "continuous", 0.0, 10.0)])
    data = from_frame(df, "y", schema)
    free = rc.models.MLP((8,), epochs=60, random_state=0).fit(data)
    declined = data.frame[free.predict(data.frame) == 0].head(12)
    flips = rc.methods.MILPNearest(free, data, norm="l0").explain(declined)  # one change: sex
    guarded = free.with_actionability(sex="protected")
    fair = rc.methods.MILPNearest(guarded, data).explain(declined)
    return data, free, guarded, declined, flips, fair


def test_the_free_search_changes_the_protected_feature(setup):
    """The premise: without protection the nearest CEs flip sex (the test below can fail)."""
    _, _, _, declined, flips, _ = setup
    cfs = flips.counterfactuals
    q = declined.loc[cfs["query_id"].to_numpy()]
    assert (cfs["sex"].to_numpy() != q["sex"].to_numpy()).sum() >= 3


def test_protected_feature_is_never_a_reason_even_when_the_ce_changes_it(setup):
    _, free, guarded, declined, flips, fair = setup
    pos, C = flips.first_counterfactuals()
    checked = 0
    for p, c in zip(pos, C, strict=True):
        x = flips.queries_encoded[p]
        raw_x, raw_c = (free.encoder.inverse_transform(r[None, :]).iloc[0] for r in (x, c))
        if raw_x["sex"] == raw_c["sex"]:
            continue
        reasons, phi = principal_reasons(guarded, x, c, 1)
        assert "sex" not in [r.feature for r in reasons]
        # sex is what moved the margin most: it would lead the list if it were allowed
        assert max(phi, key=lambda f: phi[f]) == "sex", phi
        checked += 1
    assert checked >= 3
    n_options = 0
    for qid in declined.index:
        n = notice(guarded, qid, [flips, fair], seed=0)
        n_options += len(n.options)
        assert "sex" not in [r["feature"] for r in n.reasons]
        for o in n.options:
            assert "sex" not in [ch["feature"] for ch in o.changes]
            assert "sex" not in [r["feature"] for r in o.reasons]
            # the listed changes alone, sex kept, reach approval: no hidden change of sex
            row = declined.loc[[qid]].copy()
            for ch in o.changes:
                row[ch["feature"]] = ch["required"]
            assert free.predict(free.encoder.transform(row))[0] == 1, (qid, o.changes)
        assert "sex" not in n.applicant
        assert n.protected_features == ["sex"]
    assert n_options >= 3
