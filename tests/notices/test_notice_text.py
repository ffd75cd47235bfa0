"""The applicant's text of a notice (issue 53): plain sentences a lender's compliance team
could sign — no solver jargon or symbols ("Method certificate: … tau = 7.64; rounds = 4"),
the one tolerance of the notice's own check and not the method's (δ = 0.05 stood right under
"Proven … δ = 0.02"), short sentences, and a sentence saying why an option is missing. The
solver's certificate is kept, for reviewers: in the record and the HTML appendix."""

from __future__ import annotations

import html
import re

import pytest

import robustce as rc
from robustce.notices import notice, to_html

# words and symbols an applicant cannot read
JARGON = re.compile(r"\btau\b|\brounds?\b|\bmargin\b|δ|Δ|\bdelta\b|=|ℓ|\bl1\b|\bvr\b|solver|"
                    r"certificate|milp|nearest_neighbour|\bMILP\b|infeasible|no_robust_point",
                    re.IGNORECASE)
METHOD_DELTA, NOTICE_DELTA = 0.05, 0.02


@pytest.fixture(scope="module")
def notices():
    """Notices for the demo data's declined applicants in the shapes a lender meets: one
    method (options missing), several with a family and the exact check (the method's own δ
    differs from the notice's), a protected feature, and no option at all."""
    data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    declined = test.frame[model.predict(test.frame) == 0].head(3)
    _, family = rc.models.families.seed_family(train, rc.models.MLP((8,), epochs=20),
                                               n_models=3, random_state=1)
    nearest = rc.methods.MILPNearest(model, train).explain(declined)
    robust = rc.methods.MILPRobust(model, train, shift=METHOD_DELTA).explain(declined)
    nn3 = rc.methods.NearestNeighbour(model, train, n_neighbours=3).explain(declined)
    out = {}
    for qid in declined.index:
        out[f"one-method-{qid}"] = notice(model, qid, nearest, seed=0)
        out[f"all-{qid}"] = notice(model, qid, [robust, nearest, nn3], family=family,
                                   shift=NOTICE_DELTA, seed=0)
    protected = model.with_actionability(housing="protected")
    fixed = rc.methods.MILPNearest(protected, train).explain(declined)
    out["protected"] = notice(protected, declined.index[0], fixed, seed=0)
    # everything fixed but debt, which nearest_neighbour cannot match: no option
    frozen = model.with_actionability(
        **{f: "immutable" for f in data.schema.names if f != "debt"})
    none = rc.methods.NearestNeighbour(frozen, train).explain(declined.head(1))
    out["none"] = notice(frozen, declined.index[0], none, seed=0)
    return out


def _applicant_html(n) -> str:
    """The text of the HTML page's applicant part (tags stripped)."""
    page = to_html(n)
    part = page[page.index("<section id='applicant'>"):page.index("<section id='reviewers'")]
    return html.unescape(re.sub(r"<[^>]+>", " ", part))


def _applicant_sentences(n) -> list[str]:
    texts = [n.statement, n.missing_options, n.next_steps]
    texts += [s for o in n.options for s in o.certificates]
    return [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t.strip()) if s]


def test_the_cases_are_all_there(notices):
    assert notices["none"].options == []
    assert any(0 < len(n.options) < 3 for n in notices.values())
    assert any(len(n.options) == 3 for n in notices.values())
    assert notices["protected"].protected_features == ["housing"]


def test_applicant_text_has_no_jargon(notices):
    for name, n in notices.items():
        for text in [*_applicant_sentences(n), _applicant_html(n)]:
            found = JARGON.findall(text)
            assert not found, f"{name}: {found} in {text!r}"


def test_one_tolerance_per_statement_the_notices_own(notices):
    """The exact check's tolerance is the notice's (0.02); the method's own (0.05) is not in
    the applicant's text, and no sentence gives two numbers."""
    for name, n in notices.items():
        text = _applicant_html(n)
        assert f"{METHOD_DELTA:g}" not in text, name
        for o in n.options:
            for s in o.certificates:
                assert len(re.findall(r"\d+(?:\.\d+)?", s)) <= 2, s  # "3 other versions: 2 of them"
                if "updated" in s:
                    assert re.findall(r"\d+(?:\.\d+)?", s) == [f"{NOTICE_DELTA:g}"], s


def test_sentences_are_short(notices):
    for name, n in notices.items():
        words = [len(s.split()) for s in _applicant_sentences(n)]
        assert sum(words) / len(words) <= 20, (name, words)
        assert max(words) <= 32, (name, _applicant_sentences(n))


def test_a_missing_option_is_explained(notices):
    for name, n in notices.items():
        if 0 < len(n.options) < 3:
            assert n.missing_options.startswith("Only "), name
            assert n.missing_options in html.unescape(to_html(n))
        elif len(n.options) == 3:
            assert n.missing_options == ""
    assert "no change" in notices["none"].statement.lower()
    assert notices["none"].next_steps


def test_the_solver_certificate_goes_to_the_reviewers(notices):
    n = notices["all-" + str(next(k for k in notices if k.startswith("all-")).split("-", 1)[1])]
    entries = n.record["options"]
    assert len(entries) == len(n.options)
    page = to_html(n)
    reviewers = page[page.index("<section id='reviewers'"):]
    for o, entry in zip(n.options, entries, strict=True):
        assert entry["method"] == o.method and entry["shift"]["delta"] == NOTICE_DELTA
        for key in entry["method_certificate"]:
            assert f"{o.method} certificate: {key.replace('_', ' ')}" in reviewers
    robust_entries = [e for e in entries if e["method"] == "milp_robust"]
    for e in robust_entries:  # the method's own tolerance, labelled as the method's
        assert "rounds" in e["method_certificate"] or "tau" in e["method_certificate"]
    rc.notices.validate_notice(n.to_dict())
