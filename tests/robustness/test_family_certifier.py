"""FamilyCertifier: validity over a finite set of models, against a brute-force check of every
member's prediction and margin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.models import ModelFamily, NetworkModel
from robustce.robustness import FamilyCertifier
from robustce.robustness.certifier import CertStatus


def _line(w: float, b: float, enc) -> NetworkModel:
    """The one-logit model w·(a + b_col) + b over two columns."""
    return NetworkModel([(np.array([[w, w]]), np.array([b]))], enc)


@pytest.fixture(scope="module")
def setting():
    df = pd.DataFrame({"a": [0.0, 1.0, 0.5, 0.2], "b": [0.0, 1.0, 0.5, 0.9]})
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)
    base = _line(1.0, -1.0, enc)          # class 1 iff a + b > 1
    members = [_line(1.0, -0.8, enc), _line(1.0, -1.2, enc), _line(2.0, -2.5, enc)]
    family = ModelFamily(members, "test", [0, 1, 2])
    return base, family


def test_statuses_and_margins_equal_every_members_own(setting):
    base, family = setting
    X = np.array([[0.9, 0.9], [0.6, 0.55], [0.1, 0.1], [0.7, 0.55], [0.625, 0.625]])
    res = FamilyCertifier(family).certify(base, X, 1)
    M = np.stack([m.margin(X, 1) for m in [base, *family]])
    np.testing.assert_allclose(res.lower, M.min(axis=0))
    np.testing.assert_allclose(res.upper, M.min(axis=0))
    np.testing.assert_array_equal(res.columns["worst_model"], M.argmin(axis=0))
    np.testing.assert_allclose(res.columns["valid_fraction"], (M > 0).mean(axis=0))
    expected = np.where(M.min(axis=0) > 0, "robust",
                        np.where(M.min(axis=0) < 0, "not_robust", "inconclusive"))
    assert [str(s) for s in res.status] == list(expected)
    assert res.status[-1] is CertStatus.INCONCLUSIVE  # 2·1.25 − 2.5 = 0 exactly
    assert res.robust.tolist() == [True, False, False, False, False]
    assert res.params == {"protocol": "test", "n_models": 3, "include_model": True, "tol": 0.0}


def test_targets_per_row_none_and_without_the_model(setting):
    base, family = setting
    X = np.array([[0.9, 0.9], [0.1, 0.1]])
    cert = FamilyCertifier(family)
    by_row = cert.certify(base, X, [1, 0])
    assert by_row.robust.all()
    none = cert.certify(base, X, None)  # the base model's own classes
    np.testing.assert_array_equal(none.target_class, [1, 0])
    # a + b = 0.92: the base rejects it (margin −0.08), member 0 accepts it (0.12): robust
    # over member 0 alone, not once the base is part of the set
    x = np.array([[0.42, 0.5]])
    assert FamilyCertifier([family[0]], include_model=False).certify(base, x, 1).robust.all()
    res = FamilyCertifier([family[0]]).certify(base, x, 1)
    assert res.not_robust.all() and res.evidence == [0]
    # a ReLUNetwork as the given model
    assert FamilyCertifier(family).certify(base.network(), X, [1, 0]).robust.all()


def test_tolerance_and_bad_input(setting):
    base, family = setting
    X = np.array([[0.66, 0.66]])  # lowest margin: 2·1.32 − 2.5 = 0.14
    assert FamilyCertifier(family, tol=0.1).certify(base, X, 1).robust.all()
    assert not FamilyCertifier(family, tol=0.2).certify(base, X, 1).robust.any()
    with pytest.raises(ValidationError, match="non-empty"):
        FamilyCertifier([])
    with pytest.raises(ValidationError, match="family must be a ModelFamily"):
        FamilyCertifier(base)
    with pytest.raises(ValidationError, match="include_model"):
        FamilyCertifier(family, include_model=1)
    with pytest.raises(ValidationError, match="robustce model"):
        FamilyCertifier([object()])
    with pytest.raises(ValidationError, match="tol"):
        FamilyCertifier(family, tol=-1.0)
    assert len(FamilyCertifier(family).certify(base, np.zeros((0, 2)), 1)) == 0
