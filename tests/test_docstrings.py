"""Every public name (the ``__all__`` of robustce and its subpackages) has a docstring, and every
parameter of a public function or class constructor is documented in it (numpydoc sections,
parsed by griffe — the parser mkdocstrings uses for the API reference)."""

from __future__ import annotations

import dataclasses
import doctest
import enum
import importlib
import inspect
import logging

import pytest

griffe = pytest.importorskip("griffe", reason="griffe comes with the dev and docs extras")

PUBLIC_MODULES = ("robustce", "robustce.explanations", "robustce.datasets", "robustce.data",
                  "robustce.models", "robustce.methods", "robustce.robustness",
                  "robustce.evaluation", "robustce.solvers", "robustce.audits", "robustce.notices",
                  "robustce.ledger")

# sections whose entries name a constructor's parameters (a dataclass documents its fields as
# Attributes)
_NAME_SECTIONS = ("parameters", "other_parameters", "attributes")


def public_objects() -> list[tuple[str, object]]:
    """(qualified name, object) for each distinct function or class in a public ``__all__``."""
    seen: set[int] = set()
    out = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and id(obj) not in seen:
                seen.add(id(obj))
                out.append((f"{module_name}.{name}", obj))
    return out


def documented_names(doc: str | None) -> set[str]:
    """Names in the Parameters / Other Parameters / Attributes sections of a numpydoc string."""
    if not doc:
        return set()
    logging.getLogger("griffe").setLevel(logging.ERROR)
    sections = griffe.Docstring(inspect.cleandoc(doc), parser=griffe.Parser.numpy).parse()
    names: set[str] = set()
    for section in sections:
        if section.kind.value.replace(" ", "_") in _NAME_SECTIONS:
            names |= {item.name.lstrip("*") for item in section.value}
    return names


def required_params(obj: object) -> list[str]:
    """The parameters a docstring must describe: a function's own; a class's constructor's
    (an explainer's: model, data and :meth:`param_names`, which follows ``**kwargs`` up the
    class chain). Enums and exceptions take no documented arguments."""
    if inspect.isclass(obj):
        if issubclass(obj, enum.Enum | BaseException) or obj.__init__ is object.__init__:
            return []
        from robustce.methods import Explainer

        if issubclass(obj, Explainer):  # CounterNet-style trainables take no model or data
            own = inspect.signature(obj.__init__).parameters
            return [*(p for p in ("model", "data") if p in own), *obj.param_names()]
        func = obj.__init__
    else:
        func = obj
    params = inspect.signature(func).parameters
    return [p for p in params if p not in ("self", "cls")]


# The public names whose docstrings still lack some parameters (issue 37: the 24 measured when this
# test was written are all documented now). A ratchet: strict xfail, so a name that gets
# documented fails here until it is removed from this set, and a name outside it fails at once.
KNOWN_GAPS: frozenset[str] = frozenset()

# The public names without a running example yet (issue 37: every public name has one now).
# The same strict-xfail ratchet.
KNOWN_NO_EXAMPLE: frozenset[str] = frozenset()

OBJECTS = public_objects()


def ratchet_cases(known: frozenset[str], reason: str) -> list:
    """One case per public name; the names in ``known`` are expected to fail (strict xfail)."""
    return [pytest.param(name, obj, id=name,
                         marks=[pytest.mark.xfail(strict=True, reason=reason)] if name in known
                         else []) for name, obj in OBJECTS]


CASES = ratchet_cases(KNOWN_GAPS, "known gap: parameters not yet documented (issue 37)")
EXAMPLE_CASES = ratchet_cases(KNOWN_NO_EXAMPLE, "known gap: no running example yet (issue 37)")


def test_public_names_are_found() -> None:
    names = {name for name, _ in OBJECTS}
    assert {"robustce.methods.MILPRobust", "robustce.Explanations",
            "robustce.robustness.is_delta_robust"} <= names


@pytest.mark.parametrize(("name", "obj"), CASES)
def test_public_name_is_documented(name: str, obj: object) -> None:
    doc = obj.__doc__
    assert doc and doc.strip(), f"{name} has no docstring"
    if dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
        pytest.fail(f"{name} has only the docstring dataclasses generate")
    documented = documented_names(doc)
    if inspect.isclass(obj) and "__init__" in vars(obj):
        documented |= documented_names(obj.__init__.__doc__)
    missing = [p for p in required_params(obj) if p not in documented]
    assert not missing, f"{name}: parameters not in its docstring's Parameters section: {missing}"


# modules whose docstring examples run here (``make test``); the module of every public name is
# among them (test_public_name_has_running_example)
DOCTEST_MODULES = ("robustce.data.dataset", "robustce.data.registry", "robustce.data.schema",
                   "robustce.robustness.apas", "robustce.robustness.shift",
                   "robustce.methods.milp_nearest", "robustce.methods.milp_robust",
                   "robustce.methods.apas", "robustce.methods.nearest_neighbour",
                   "robustce.methods.wachter", "robustce.methods.proplace", "robustce.methods.mace",
                   "robustce.methods.robust_nearest_neighbour", "robustce.methods.wachter_robust",
                   "robustce.methods.diverse_robust", "robustce.robustness.exact",
                   "robustce.robustness.maxdelta", "robustce.methods.roar", "robustce.methods.rbr",
                   "robustce.methods.robx", "robustce.methods.proto_robust",
                   "robustce.methods.minimum_observable", "robustce.methods.dice",
                   "robustce.methods.ensemble_robust", "robustce.robustness.ensemble",
                   "robustce.methods.feature_tweaking", "robustce.methods.actionable_recourse",
                   "robustce.methods.counternet", "robustce.methods.rocoursenet",
                   "robustce.data.constraints",
                   "robustce.robustness.retrain", "robustce.methods.retrain_robust",
                   "robustce.models.opaque", "robustce.models.families.procedure",
                   "robustce.data.encoder",
                   "robustce.errors",
                   "robustce.explanations",
                   "robustce.methods.base",
                   "robustce.methods.registry",
                   "robustce.models.base",
                   "robustce.models.boosting",
                   "robustce.models.families.family",
                   "robustce.models.families.retraining",
                   "robustce.models.families.updates",
                   "robustce.models.mlp",
                   "robustce.models.network",
                   "robustce.models.network_model",
                   "robustce.models.persistence",
                   "robustce.models.sklearn",
                   "robustce.models.sklearn_import.imported",
                   "robustce.models.sklearn_import.preprocessing",
                   "robustce.models.sklearn_import.registry",
                   "robustce.models.torch_import",
                   "robustce.models.trees",
                   "robustce.solvers.milp.common",
                   "robustce.solvers.milp.model",
                   "robustce.robustness.certifier",
                   "robustce.robustness.enumeration",
                   "robustce.robustness.family",
                   "robustce.evaluation.config",
                   "robustce.evaluation.metrics",
                   "robustce.evaluation.plausibility",
                   "robustce.evaluation.report",
                   "robustce.evaluation.results",
                   "robustce.evaluation.runner",
                   "robustce.audits.audit",
                   "robustce.audits.execute",
                   "robustce.audits.global_actions",
                   "robustce.audits.groups",
                   "robustce.notices.batch",
                   "robustce.notices.notice",
                   "robustce.notices.reasons",
                   "robustce.notices.render",
                   "robustce.ledger.certificates",
                   "robustce.ledger.check",
                   "robustce.ledger.rates",
                   "robustce.ledger.report",
                   "robustce.ledger.store",
                   )


def running_examples(obj: object) -> list[doctest.Example]:
    """The ``>>>`` examples of ``obj``'s docstring (and its own ``__init__``'s, for a class)
    that doctest runs: those not marked ``+SKIP``."""
    docs = [obj.__doc__ or ""]
    if inspect.isclass(obj) and "__init__" in vars(obj):
        docs.append(obj.__init__.__doc__ or "")
    parser = doctest.DocTestParser()
    return [ex for doc in docs for ex in parser.get_examples(doc)
            if not ex.options.get(doctest.SKIP, False)]


def test_skipped_examples_do_not_count() -> None:
    def skipped() -> None:
        """Examples
        --------
        >>> 1 + 1  # doctest: +SKIP
        2
        """

    def running() -> None:
        """Examples
        --------
        >>> 1 + 1
        2
        """

    assert running_examples(skipped) == []
    assert [ex.source for ex in running_examples(running)] == ["1 + 1\n"]


@pytest.mark.parametrize(("name", "obj"), EXAMPLE_CASES)
def test_public_name_has_running_example(name: str, obj: object) -> None:
    assert running_examples(obj), (f"{name} has no running example: no `>>>` line (without "
                                   "+SKIP) in its docstring")
    assert obj.__module__ in DOCTEST_MODULES, (
        f"{name}: its module {obj.__module__} is not in DOCTEST_MODULES, so `make test` never "
        "runs its example")


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_docstring_examples_run(module_name: str) -> None:
    import robustce as rc

    module = importlib.import_module(module_name)
    result = doctest.testmod(module, extraglobs={"rc": rc}, report=True,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, f"{module_name}: {result}"
