"""LightGBM's zero-as-missing routing on every combination of threshold side and default
direction (issue 47, mutant ``lgb_zero_default_left_flipped``): a split with ``missing_type
"Zero"`` sends ``|z| <= 1e-35`` its default way, and the plain comparison sends 0 left when
``0 <= threshold``. Where the two agree the view is exact and the model imports; where they
disagree and valid rows can hold 0 it is refused. The older test trained one booster, whose
splits disagreed both ways, so reading ``default_left`` backwards still refused it."""

from __future__ import annotations

import pytest

from robustce.errors import UnsupportedModelError
from robustce.models import from_sklearn

from .test_boosters import _credit, _lgb, _patch_dump

lgb = pytest.importorskip("lightgbm")


def _nodes(node):
    yield node
    for side in ("left_child", "right_child"):
        if side in node:
            yield from _nodes(node[side])


@pytest.mark.parametrize("threshold, default_left", [(0.5, True), (0.5, False), (-0.5, False),
                                                     (-0.5, True)])
def test_zero_as_missing_is_refused_exactly_where_zero_goes_against_its_threshold(
        monkeypatch, threshold, default_left):
    df, y, _ = _credit()
    num = df[["u", "income", "years"]]  # u holds an exact 0 and ranges over [0, 1]
    clf = _lgb(zero_as_missing=True).fit(num, y)

    def edit(dump):
        for tree in dump["tree_info"]:
            for node in _nodes(tree["tree_structure"]):
                if "split_feature" in node:
                    node["missing_type"] = "None"
        root = dump["tree_info"][0]["tree_structure"]
        assert root.get("decision_type") == "<="
        root.update(split_feature=0, threshold=threshold, missing_type="Zero", default_left=default_left)

    _patch_dump(monkeypatch, clf, edit)
    zero_goes_left_by_threshold = 0.0 <= threshold  # written out, not the library's rule
    if zero_goes_left_by_threshold == default_left:
        from_sklearn(clf, num)  # agreeing: imported
    else:
        with pytest.raises(UnsupportedModelError, match="as missing"):
            from_sklearn(clf, num)
