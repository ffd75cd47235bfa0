"""Exact z3 numerals of float64 values, and builders of the commonest terms by one C call each
(the Python API's argument checks cost more than the call on tree paths)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache

import z3

from robustce.errors import SolverError


@lru_cache(maxsize=1 << 18)
def _rational(value: float) -> z3.RatNumRef:
    f = Fraction(value)
    return z3.RealVal(f"{f.numerator}/{f.denominator}")


def rational(value: float) -> z3.RatNumRef:
    """The exact rational value of a float64 as a z3 constant (``RealVal(0.1)`` would be 1/10)."""
    return _rational(float(value))


@lru_cache(maxsize=1 << 16)
def _vote(a: float, b: float) -> z3.RatNumRef:
    f = Fraction(a) - Fraction(b)
    return z3.RealVal(f"{f.numerator}/{f.denominator}")


#: serialises :func:`fresh_context` blocks across threads (z3's default context is one global)
_CTX_LOCK = threading.RLock()


@contextmanager
def fresh_context() -> Iterator[z3.Context]:
    """Run the block with a new z3 context as z3's default one (every term built without an
    explicit ``ctx`` goes there), then restore the previous default.

    z3's answers, and the work it spends (its ``rlimit`` counter), depend on the internal ids
    of the terms, which a context hands out in creation order and shares between equal terms:
    in one long-lived context a query is solved differently after other queries. A fresh
    context per query makes the query's z3 run a function of the query alone. The numeral
    caches are cleared on entry and exit (their terms belong to one context). Blocks in
    different threads run one at a time."""
    import z3.z3 as z3_module

    with _CTX_LOCK:
        previous = z3_module._main_ctx
        ctx = z3.Context()
        z3_module._main_ctx = ctx
        _rational.cache_clear()
        _vote.cache_clear()
        try:
            yield ctx
        finally:
            z3_module._main_ctx = previous
            _rational.cache_clear()
            _vote.cache_clear()


def _to_float(value: z3.ExprRef) -> float:
    """A z3 numeral (int or rational) as the nearest float64."""
    if z3.is_int_value(value):
        return float(value.as_long())
    if z3.is_rational_value(value):
        return float(Fraction(value.numerator_as_long(), value.denominator_as_long()))
    if z3.is_algebraic_value(value):  # irrational (cannot arise in linear arithmetic)
        return float(value.approx(20).as_fraction())
    raise SolverError(f"z3 returned a non-numeric value {value}")


def _is_one(p: z3.BoolRef) -> z3.ArithRef:
    return z3.If(p, z3.RealVal(1), z3.RealVal(0))


def _and2(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    """``z3.And(a, b)``: the same term, built by one C call without the Python API's argument
    checks (which cost more than the call; tree paths make tens of thousands of these)."""
    ctx = a.ctx
    args = (z3.Ast * 2)(a.as_ast(), b.as_ast())
    return z3.BoolRef(z3.z3core.Z3_mk_and(ctx.ref(), 2, args), ctx)


def _or(terms: Sequence[z3.BoolRef]) -> z3.BoolRef:
    """``z3.Or(terms)`` (a non-empty list of Boolean terms): the same term by one C call."""
    ctx = terms[0].ctx
    args = (z3.Ast * len(terms))(*(t.as_ast() for t in terms))
    return z3.BoolRef(z3.z3core.Z3_mk_or(ctx.ref(), len(terms), args), ctx)


def assert_all(solver: z3.Solver, terms: Sequence[z3.BoolRef]) -> None:
    """``solver.add(*terms)`` for Boolean terms, one C call each (what ``add`` does after its
    per-term sort checks)."""
    ref, handle = solver.ctx.ref(), solver.solver
    for t in terms:
        z3.z3core.Z3_solver_assert(ref, handle, t.as_ast())


def _implies_eq(cond: z3.BoolRef, var: z3.ArithRef, value: z3.ArithRef) -> z3.BoolRef:
    """``z3.Implies(cond, var == value)`` for a real variable and a real numeral: the same
    term by two C calls. (Python evaluates ``var == value`` as ``value.__eq__(var)``, the
    numeral's class being a subclass of the variable's, so the equality reads ``value = var``.)"""
    ctx = cond.ctx
    eq = z3.z3core.Z3_mk_eq(ctx.ref(), value.as_ast(), var.as_ast())
    return z3.BoolRef(z3.z3core.Z3_mk_implies(ctx.ref(), cond.as_ast(), eq), ctx)


#: the stacks of recently seen tree lists, keyed by the trees' ids; each entry keeps its trees
