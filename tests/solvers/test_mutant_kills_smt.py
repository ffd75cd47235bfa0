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


def _hard_solver(inp) -> z3.Solver:
    s = z3.Solver()
    s.add(*inp.domain)
    xs = [z3.Int(f"k{i}") for i in range(12)]
    s.add(*[z3.And(k >= 0, k <= 40) for k in xs])
    s.add(z3.Sum([k * k for k in xs[:5]]) == 1234)  # needs search
    return s


def test_a_calls_work_is_its_own_not_what_its_context_spent_before():
    """z3's resource counter adds up over a context; a call's ``work`` is what that call spent
    (mutant ``smt_work_counted_from_the_contexts_start``): after an unlimited call that spent
    thousands of units, a call limited to R units reports at most about R."""
    data = rc.datasets.load("synthetic_loan", n_samples=50, random_state=0)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    with smt.fresh_context():
        inp = smt.SMTInput(enc)
        s = _hard_solver(inp)
        first = smt.check(s, inp)
        assert first.status == "sat" and first.work > 1000
        for limit in (5, 50):
            again = smt.check(s, inp, rlimit=limit)
            assert 0 < again.work <= 2 * limit, (limit, again)
            other = smt.check(_hard_solver(inp), inp, rlimit=limit)  # a new solver, same context
            assert 0 < other.work <= 2 * limit, (limit, other)


def test_fresh_context_installs_a_new_default_context_and_restores_the_old():
    """Inside :func:`fresh_context` z3's default context is the new one (terms built without
    a ``ctx`` land there), a new one each time; afterwards the previous default is back
    (mutant ``smt_context_not_fresh``)."""
    before = z3.main_ctx()
    seen = []
    for _ in range(2):
        with smt.fresh_context() as ctx:
            assert z3.main_ctx() is ctx and ctx is not before
            assert z3.Int("x").ctx is ctx
            seen.append(ctx)
        assert z3.main_ctx() is before
    assert seen[0] is not seen[1]
