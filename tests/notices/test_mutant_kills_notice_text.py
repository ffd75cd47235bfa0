"""Why an option is missing, in the applicant's words (issue 47's mutants): "Only one option
is shown, although we looked for up to three" is followed by what the search did; a notice
with no option says why in its statement; each kind of search outcome is counted."""

from __future__ import annotations

import re

import pytest

import robustce as rc
from robustce.notices import notice
from robustce.notices.notice import _why_missing


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


@pytest.fixture(scope="module")
def loan():
    data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    declined = test.frame[model.predict(test.frame) == 0].head(1)
    return data, train, model, declined


def test_one_option_of_three_says_the_search_found_no_other(loan):
    _, train, model, declined = loan
    expl = rc.methods.MILPNearest(model, train).explain(declined)
    assert (expl.status == "found").all()
    n = notice(model, declined.index[0], expl, seed=0)
    assert len(n.options) == 1
    first, *why = _sentences(n.missing_options)
    assert first == "Only one option is shown, although we looked for up to three."
    # one search, which found this option: it found no other (not a timeout, not a proof)
    assert why and why[0].startswith("Our search found no other, different change"), why


def test_no_option_says_what_the_search_did(loan):
    data, train, model, declined = loan
    frozen = model.with_actionability(**{f: "immutable" for f in data.schema.names if f != "debt"})
    expl = rc.methods.NearestNeighbour(frozen, train).explain(declined)
    n = notice(frozen, declined.index[0], expl, seed=0)
    assert n.options == [] and n.missing_options == ""
    sentences = _sentences(n.statement)
    at = next(i for i, s in enumerate(sentences) if s.startswith("We found no change"))
    why = sentences[at + 1:]
    assert why and re.match(r"One search (found no|showed that no) change", why[0]), why


def test_every_search_is_counted():
    text = _why_missing(["timeout", "timeout", "infeasible"], 0, 0, "approved")
    assert "Two searches ran out of time." in text
    assert "One search showed that no change of the kind it looks for leads to 'approved'." in text


def test_left_out_changes_are_counted_in_plain_grammar():
    one = _why_missing(["found"], 1, 1, "approved")
    assert "One change found was left out because it would change a protected" in one
    two = _why_missing(["found", "found"], 1, 2, "approved")
    assert "Two changes found were left out because they would change a protected" in two
    assert two.endswith("The searches found no other, different change that leads to 'approved'.")
