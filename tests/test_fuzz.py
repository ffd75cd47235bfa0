"""Fuzz suite: random bad input never escapes as anything but a typed, one-line robustce error.

* every public explainer in ``rc.methods`` (found by introspection) and every public function /
  constructor in ``rc.robustness``, each parameter given a bad value (NaN, ±inf, 0, negatives,
  wrong types, huge): only :class:`~robustce.errors.RobustCEError` subclasses escape, with a
  message naming the parameter; NaN, strings and arbitrary objects are never accepted;
* random corruptions (truncation, byte flips, deleted or emptied files) of a saved model and of
  saved explanations: loading either works or raises a ``RobustCEError`` naming the file;
* the CLI: one bad value in one argument, or a corrupt explanations directory for ``certify``:
  exit code 2, one line on stderr, no traceback, no output created.

``FUZZ_EXAMPLES`` (hypothesis ``max_examples``) keeps the default run fast (> 200 generated cases
in all); the ``slow``-marked variants run ten times more.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import shutil

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import robustce as rc
from robustce.errors import RobustCEError
from robustce.explanations import Explanations
from robustce.methods.base import Explainer

FUZZ_EXAMPLES = {"params": 160, "robustness": 80, "files": 40, "cli": 40, "cli_files": 20}
FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


#: values that are never a valid parameter (must always be refused)
NEVER = [math.nan, "x", _Opaque(), [math.nan]]
#: values that are bad for most parameters (refused with a typed error, or accepted)
BAD = NEVER + [math.inf, -math.inf, 0, -1, -0.5, -1e300, 1e300, 10**18, True, [1, 2], None]


# --- a tiny world ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.random(60), "b": rng.random(60),
                       "c": rng.choice(["x", "y"], 60)})
    df["y"] = ((df.a + df.b > 1) ^ (df.c == "y")).astype(int)
    data = rc.data.from_frame(df, "y")
    model = rc.models.MLP((4,), epochs=20, random_state=0).fit(data)
    X = model.encoder.transform(data.frame)
    return data, model, X


#: explainers of one model class only: fuzzed on that model over the same world
TREE_ONLY = {"PlausibleFeatureTweaking", "EnsembleRobust"}
LINEAR_ONLY = {"ActionableRecourse"}


@pytest.fixture(scope="module")
def forest(world):
    from sklearn.ensemble import RandomForestClassifier

    data, model, X = world
    rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, data.y)
    return rc.models.wrap(rf, model.encoder)


@pytest.fixture(scope="module")
def linear(world):
    from sklearn.linear_model import LogisticRegression

    data, model, X = world
    return rc.models.wrap(LogisticRegression().fit(X, data.y), model.encoder)


def explainers() -> list[type[Explainer]]:
    """Every public explainer class of ``rc.methods`` (DiCE only where dice-ml is installed:
    without it DiCE refuses to build at all, whatever its parameters)."""
    out = []
    for name in rc.methods.__all__:
        obj = getattr(rc.methods, name)
        if inspect.isclass(obj) and issubclass(obj, Explainer) and obj is not Explainer:
            if name == "DiCE" and importlib.util.find_spec("dice_ml") is None:
                continue
            out.append(obj)
    return out


def _trains_own_model(cls: type[Explainer]) -> bool:
    """CounterNet-like: no model parameter; built from parameters, then ``fit(train)``."""
    return "model" not in inspect.signature(cls).parameters


#: small settings for explainers that train their own network (unless the case fuzzes them)
_SMALL_TRAINING = {"epochs": 1, "hidden": ((4,), (4,), (4,)), "progress": False}


def explainer_params() -> list[tuple[type[Explainer], str]]:
    return [(cls, p) for cls in explainers() for p in cls.param_names()]


def _names_param(exc: BaseException, name: str) -> bool:
    return name in str(exc)


def _one_line(exc: BaseException) -> bool:
    return "\n" not in str(exc).strip()


def test_every_public_explainer_is_fuzzed():
    assert len(explainers()) >= 4
    assert all(cls.param_names() for cls in explainers())


def _check_explainer_value(world, cls, param, value, forest=None, linear=None):
    data, model, X = world
    if cls.__name__ in TREE_ONLY:
        model = forest
    elif cls.__name__ in LINEAR_ONLY:
        model = linear
    kwargs = {"time_limit": 1.0, param: value}
    try:
        if _trains_own_model(cls):
            explainer = cls(**{**_SMALL_TRAINING, **kwargs})
            explainer.fit(data)
        else:
            explainer = cls(model, data, **kwargs)
        explainer.time_limit = 1.0  # an accepted huge time limit: keep the run short
        explainer.explain(data.frame.iloc[:2])
    except RobustCEError as exc:
        assert _names_param(exc, param), f"{cls.__name__}({param}={value!r}): {exc}"
        assert _one_line(exc), f"{cls.__name__}({param}={value!r}): {exc!r}"
        return
    assert not any(value is v for v in NEVER) and not (isinstance(value, float)
                                                      and math.isnan(value)), \
        f"{cls.__name__}({param}={value!r}) was accepted"


@settings(FUZZ, max_examples=FUZZ_EXAMPLES["params"])
@given(case=st.sampled_from(explainer_params()), value=st.sampled_from(BAD))
def test_explainer_parameters_fuzz(world, forest, linear, case, value):
    cls, param = case
    _check_explainer_value(world, cls, param, value, forest, linear)


# --- rc.robustness ------------------------------------------------------------------------------
#: public names of rc.robustness that are results / protocols, not things a user calls with
#: parameters (every other public name is fuzzed; a new one fails test_every_robustness_*)
NOT_CALLED = {"APASMaxDeltaResult", "APASResult", "CertStatus", "Certificates", "Certifier",
              "DeltaStatus", "EnumerationResult", "RetrainCertificates",
              "ExactResult", "IntervalNetwork", "MaxDeltaResult", "SampledNetworks"}


#: rc.robustness callables about tree models: fuzzed with the world's forest
TREE_MODEL_CALLABLES = {"ensemble_worst_case"}


_FORESTS: dict[int, object] = {}


def _world_forest(world):
    """A 3-tree forest on the world's encoder (built once per world)."""
    from sklearn.ensemble import RandomForestClassifier

    data, model, X = world
    key = id(model.encoder)
    if key not in _FORESTS:
        rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, data.y)
        _FORESTS[key] = rc.models.wrap(rf, model.encoder)
    return _FORESTS[key]


def _robustness_targets(world):
    """(label, callable, valid arguments, fuzzed parameter names) for every public callable."""
    data, model, X = world
    shift = rc.robustness.ParameterShift(0.01)
    cf = X[:1]
    required = {"model": model, "network": model, "X": cf, "cfs": cf, "cf": cf, "shift": shift,
                "delta": 0.01, "base": model, "other": model, "model_a": model, "model_b": model,
                "alpha": 0.999, "R": 0.995, "family": [model],
                "procedure": rc.models.RetrainProcedure(lambda seed: model), "k": 1,
                "error": 0.05}
    targets = []
    fns = {name: getattr(rc.robustness, name) for name in rc.robustness.__all__
           if name not in NOT_CALLED}
    # public methods users call with parameters
    fns["ParameterShift.sample"] = shift.sample
    fns["ParameterShift.contains"] = shift.contains
    for label, fn in fns.items():
        sig = inspect.signature(fn)
        args, fuzzed = {}, []
        req = required  # the (δ, ε)-test takes a tree model
        if label in TREE_MODEL_CALLABLES:
            req = {**required, "model": _world_forest(world),
                   "shift": rc.robustness.EnsembleShift(0.01, 0.01)}
        for p, v in sig.parameters.items():
            if v.kind in (v.VAR_KEYWORD, v.VAR_POSITIONAL):
                continue
            if v.default is inspect.Parameter.empty:
                if p == "n":
                    args[p] = 3
                else:
                    args[p] = req[p]
            fuzzed.append(p)
        targets.append((label, fn, args, fuzzed))
    return targets


def test_every_robustness_callable_is_fuzzed(world):
    labels = {t[0] for t in _robustness_targets(world)}
    assert set(rc.robustness.__all__) - NOT_CALLED <= labels
    assert {"is_delta_robust", "exact_worst_case", "max_provable_delta", "enumerate_delta",
            "ParameterShift"} <= labels


#: parameters that take any object (models, arrays), fuzzed by the corruption tests instead
_OBJECT_PARAMS = {"model", "network", "base", "other", "model_a", "model_b"}
#: values that would make a valid call allocate without bound (refusing them is not required)
_TIME_LIMIT = {"time_limit": 1.0}


def _check_robustness_value(world, target, param, value):
    label, fn, args, _ = target
    kwargs = dict(args)
    if "time_limit" in inspect.signature(fn).parameters and param != "time_limit":
        kwargs.update(_TIME_LIMIT)
    kwargs[param] = value
    if "max_splits" in inspect.signature(fn).parameters and param != "max_splits":
        kwargs.setdefault("max_splits", 2)
    try:
        fn(**kwargs)
    except RobustCEError as exc:
        assert _names_param(exc, param), f"{label}({param}={value!r}): {exc}"
        assert _one_line(exc), f"{label}({param}={value!r}): {exc!r}"
        return
    assert not any(value is v for v in NEVER), f"{label}({param}={value!r}) was accepted"


def _robustness_cases(world):
    return [(t, p) for t in _robustness_targets(world) for p in t[3] if p not in _OBJECT_PARAMS]


@settings(FUZZ, max_examples=FUZZ_EXAMPLES["robustness"])
@given(data=st.data())
def test_robustness_parameters_fuzz(world, data):
    cases = _robustness_cases(world)
    target, param = data.draw(st.sampled_from(cases), label="case")
    value = data.draw(st.sampled_from(BAD), label="value")
    _check_robustness_value(world, target, param, value)


# --- corrupt files --------------------------------------------------------------------------------
def _corrupt(path, how: str, rng: np.random.Generator) -> str:
    """Corrupt one file under directory ``path``; returns the file's name."""
    files = sorted(p for p in path.rglob("*") if p.is_file())
    f = files[int(rng.integers(len(files)))]
    raw = f.read_bytes()
    if how == "truncate":
        f.write_bytes(raw[: int(rng.integers(len(raw)))] if raw else b"")
    elif how == "flip":
        b = bytearray(raw)
        for i in rng.integers(0, max(len(b), 1), size=max(1, len(b) // 50)):
            if b:
                b[i] ^= 0xFF
        f.write_bytes(bytes(b))
    elif how == "garbage":
        f.write_bytes(rng.bytes(int(rng.integers(1, 200))))
    elif how == "empty":
        f.write_bytes(b"")
    else:
        f.unlink()
    return f.name


HOWS = ["truncate", "flip", "garbage", "empty", "delete"]


@pytest.fixture(scope="module")
def saved_originals(world, tmp_path_factory):
    data, model, _ = world
    root = tmp_path_factory.mktemp("fuzz_saved")
    model.save(root / "model")
    res = rc.methods.NearestNeighbour(model, data).explain(data.frame.iloc[:6])
    res.save(root / "expl")
    return root


def _check_load(load, path, name):
    try:
        load(path)
    except RobustCEError as exc:
        assert name in str(exc) or str(path) in str(exc), f"{name}: {exc}"
        assert _one_line(exc), repr(exc)


@settings(FUZZ, max_examples=FUZZ_EXAMPLES["files"])
@given(kind=st.sampled_from(["model", "expl"]), how=st.sampled_from(HOWS),
       seed=st.integers(0, 2**32 - 1))
def test_corrupt_saved_files_fuzz(saved_originals, tmp_path_factory, kind, how, seed):
    work = tmp_path_factory.mktemp("corrupt")
    target = work / kind
    shutil.copytree(saved_originals / kind, target)
    name = _corrupt(target, how, np.random.default_rng(seed))
    load = rc.models.load if kind == "model" else Explanations.load
    _check_load(load, target, name)


# --- more examples: the slow variants ----------------------------------------------------------
@pytest.mark.slow
@settings(FUZZ, max_examples=10 * FUZZ_EXAMPLES["params"])
@given(case=st.sampled_from(explainer_params()), value=st.sampled_from(BAD))
def test_explainer_parameters_fuzz_slow(world, forest, linear, case, value):
    _check_explainer_value(world, case[0], case[1], value, forest, linear)


@pytest.mark.slow
@settings(FUZZ, max_examples=10 * FUZZ_EXAMPLES["robustness"])
@given(data=st.data())
def test_robustness_parameters_fuzz_slow(world, data):
    target, param = data.draw(st.sampled_from(_robustness_cases(world)), label="case")
    _check_robustness_value(world, target, param, data.draw(st.sampled_from(BAD), label="value"))



# --- the CLI --------------------------------------------------------------------------------------
_BAD_TEXT = ["nan", "inf", "-inf", "0", "-1", "1000000000000000000", "x", "", "[1, 2]", "1e999"]
_EXPLAIN = ["explain", "--dataset", "moons", "--method", "nearest_neighbour", "--queries", "2",
            "--hidden", "4", "--epochs", "2"]


def _cli_cases():
    """(argv builder, text) pairs: each puts one bad value into one argument."""
    return [
        ("explain --param n_neighbours", lambda v, out: _EXPLAIN + ["--param", f"n_neighbours={v}",
                                                                    "--out", out]),
        ("explain --param norm", lambda v, out: _EXPLAIN + ["--param", f"norm={v}",
                                                            "--out", out]),
        ("explain --test-size", lambda v, out: _EXPLAIN + ["--test-size", v, "--out", out]),
        ("explain --queries", lambda v, out: ["explain", "--dataset", "moons", "--method",
                                              "nearest_neighbour", "--queries", v, "--out", out]),
        ("explain --hidden", lambda v, out: ["explain", "--dataset", "moons", "--method",
                                             "wachter", "--hidden", v, "--out", out]),
        ("explain --method", lambda v, out: ["explain", "--dataset", "moons", "--method",
                                             v or "none", "--out", out]),
        ("certify --delta", lambda v, out: ["certify", "nowhere", "--delta", v, "--out", out]),
        *_CLI_CASES_FIRST_HOUR,
    ]


_CLI_CASES_FIRST_HOUR = [
    ("explain --from-class", lambda v, out: _EXPLAIN + ["--from-class", v, "--out", out]),
    ("explain --target-class", lambda v, out: _EXPLAIN + ["--target-class", v, "--out", out]),
    ("explain --favourable", lambda v, out: _EXPLAIN + ["--favourable", v, "--out", out]),
    ("explain --immutable", lambda v, out: _EXPLAIN + ["--immutable", v, "--out", out]),
    ("explain --schema", lambda v, out: _EXPLAIN + ["--schema", v or "none", "--out", out]),
]


#: (case, value) pairs that are not errors: more queries than the test split has means all;
#: class 0 of moons is a valid source, target and favourable class; an empty list of names
_CLI_VALID = {("explain --queries", "1000000000000000000"), ("explain --from-class", "0"),
              ("explain --target-class", "0"), ("explain --favourable", "0"),
              ("explain --favourable", ""), ("explain --immutable", "")}


def _check_cli(argv, out, capsys):
    from robustce.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and "error" in lines[0], (argv, err)
    assert "Traceback" not in err
    assert not out.exists(), argv


@settings(FUZZ, max_examples=FUZZ_EXAMPLES["cli"])
@given(case=st.sampled_from(_cli_cases()), value=st.sampled_from(_BAD_TEXT))
def test_cli_bad_arguments_fuzz(tmp_path_factory, capsys, case, value):
    """(A model trained before the check would print a second line: "training an MLP ...".)"""
    assume((case[0], value) not in _CLI_VALID)
    out = tmp_path_factory.mktemp("cli") / "out"
    _check_cli(case[1](value, str(out)), out, capsys)


@settings(FUZZ, max_examples=FUZZ_EXAMPLES["cli_files"])
@given(how=st.sampled_from(HOWS), seed=st.integers(0, 2**32 - 1))
def test_cli_certify_corrupt_explanations_fuzz(saved_originals, world, tmp_path_factory, capsys,
                                               how, seed):
    from robustce.cli import main

    work = tmp_path_factory.mktemp("cli_corrupt")
    shutil.copytree(saved_originals / "expl", work / "expl")
    _corrupt(work / "expl", how, np.random.default_rng(seed))
    out = work / "certs" / "c.csv"
    argv = ["certify", str(work / "expl"), "--model", str(saved_originals / "model"),
            "--delta", "0.01", "--time-limit", "1", "--out", str(out)]
    try:
        Explanations.load(work / "expl")
    except RobustCEError:
        _check_cli(argv, out, capsys)
    else:  # a harmless corruption (e.g. a flipped byte inside a text cell): certify works
        assert main(argv) == 0


@pytest.mark.slow
@settings(FUZZ, max_examples=10 * FUZZ_EXAMPLES["files"])
@given(kind=st.sampled_from(["model", "expl"]), how=st.sampled_from(HOWS),
       seed=st.integers(0, 2**32 - 1))
def test_corrupt_saved_files_fuzz_slow(saved_originals, tmp_path_factory, kind, how, seed):
    work = tmp_path_factory.mktemp("corrupt")
    shutil.copytree(saved_originals / kind, work / kind)
    name = _corrupt(work / kind, how, np.random.default_rng(seed))
    _check_load(rc.models.load if kind == "model" else Explanations.load, work / kind, name)


@pytest.mark.slow
@settings(FUZZ, max_examples=70)
@given(case=st.sampled_from(_cli_cases()), value=st.sampled_from(_BAD_TEXT))
def test_cli_bad_arguments_fuzz_slow(tmp_path_factory, capsys, case, value):
    assume((case[0], value) not in _CLI_VALID)
    out = tmp_path_factory.mktemp("cli") / "out"
    _check_cli(case[1](value, str(out)), out, capsys)


# --- unknown keywords, arrays instead of frames, missing query ids --------------------------------
_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)


@settings(FUZZ, max_examples=40)
@given(cls=st.sampled_from(explainers()), name=st.one_of(st.just("delta"), _NAMES))
def test_unknown_keyword_fuzz(world, cls, name):
    """Any keyword a method does not take: a typed one-line error naming its parameters."""
    from robustce.errors import ParameterError

    assume(name not in cls.param_names() and name not in ("model", "data"))
    data, model, _ = world
    with pytest.raises(ParameterError) as info:
        if _trains_own_model(cls):
            cls(**{name: 1})
        else:
            cls(model, data, **{name: 1})
    assert _one_line(info.value) and repr(name) in str(info.value)
    assert all(p in str(info.value) for p in cls.param_names())


@settings(FUZZ, max_examples=30)
@given(rows=st.integers(1, 5), cols=st.sampled_from(["all", "strings", "numbers"]))
def test_array_instead_of_frame_fuzz(world, rows, cols):
    """Raw rows as a numpy array (strings inside, or the raw width): typed, one line."""
    data, model, _ = world
    frame = data.frame.iloc[:rows]
    arr = {"all": frame.to_numpy(), "strings": frame[["c"]].to_numpy(),
           "numbers": frame[["a", "b"]].to_numpy()}[cols]
    with pytest.raises(RobustCEError) as info:
        rc.methods.NearestNeighbour(model, data).explain(arr)
    assert _one_line(info.value)


@pytest.fixture(scope="module")
def small_result(world):
    data, model, _ = world
    return rc.methods.NearestNeighbour(model, data).explain(data.frame.iloc[:4])


@settings(FUZZ, max_examples=40)
@given(qid=st.one_of(st.integers(), st.text(max_size=8), st.floats(allow_nan=True),
                     st.none(), st.lists(st.integers(), max_size=2)),
       verb=st.sampled_from(["show", "for_query", "cf_positions"]))
def test_missing_query_id_fuzz(small_result, qid, verb):
    """A query id that is not in the result: a typed one-line error naming the valid ids."""
    assume(not isinstance(qid, int) or qid not in small_result.query_ids)
    with pytest.raises(RobustCEError) as info:
        getattr(small_result, verb)(qid)
    assert _one_line(info.value)
    assert all(str(i) in str(info.value) for i in small_result.query_ids)
