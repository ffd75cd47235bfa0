"""Band edges (issue 47's mutants): an audit's bands ``<e1``, ``e1–e2``, …, ``≥ek`` hold
their lower edge, so a value exactly on an edge belongs to the band that starts there."""

from __future__ import annotations

import pandas as pd

from robustce.audits.recourse import band_labels, group_frame


def test_a_value_on_an_edge_is_in_the_band_that_starts_there():
    ages = pd.Series([18.0, 29.999, 30.0, 30.5, 49.999, 50.0, 80.0], index=list("abcdefg"))
    expected = ["<30", "<30", "30–50", "30–50", "30–50", "≥50", "≥50"]
    assert band_labels(ages, [50, 30]).tolist() == expected  # edges in any order
    banded = group_frame(pd.DataFrame({"age": ages}), ["age_band"], {"age": [30, 50]})
    assert banded["age_band"].tolist() == expected and list(banded.index) == list("abcdefg")
