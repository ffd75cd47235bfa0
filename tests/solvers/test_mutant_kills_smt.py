"""The z3 seed reaches z3: :func:`robustce.solvers.smt.check` sets the solver's
``random_seed`` to the ``seed`` it is given, and MACE gives it its ``random_state`` (mutant
``smt_seed_not_passed``: z3 always ran with seed 0, whatever the user set and recorded)."""

from __future__ import annotations

import z3
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.methods.mace import MACE
from robustce.solvers import smt


class RecordingSolver(z3.Solver):
    """A z3 solver that records the parameters it is given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params: list[tuple] = []

    def set(self, *args, **kwargs):
        self.params.append(args)
        return super().set(*args, **kwargs)


def test_check_gives_z3_the_seed_it_is_given():
    data = rc.datasets.load("synthetic_loan", n_samples=50, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    inp = smt.SMTInput(enc)
    for seed in (7, 12345):
        s = RecordingSolver()
        s.add(*inp.domain)
        assert smt.check(s, inp, rlimit=10_000_000, seed=seed).status == "sat"
        assert ("random_seed", seed) in s.params


def test_mace_passes_its_random_state_to_every_z3_call(monkeypatch):
    data = rc.datasets.load("synthetic_loan", n_samples=200, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    model = rc.models.wrap(DecisionTreeClassifier(max_depth=3, random_state=0)
                           .fit(enc.transform(data.frame), data.y), enc)
    seeds: list[int] = []
    check = smt.check

    def recording(*args, **kwargs):
        seeds.append(kwargs.get("seed"))
        return check(*args, **kwargs)

    monkeypatch.setattr(smt, "check", recording)
    queries = data.frame[model.predict(data.frame) == 0].head(1)
    MACE(model, data, backend="smt", norm="l1", random_state=31, time_limit=5).explain(queries)
    assert seeds and set(seeds) == {31}
