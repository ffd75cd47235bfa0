"""APΔS: probabilistic Δ-robustness by sampling (Marzari et al., ECAI 2024).

Lemma 4 (tolerance limits). Draw n networks θ₁..θₙ i.i.d. uniformly from the box
Δ_δ = {θ' : |θ' − θ| ≤ δ elementwise}. If the counterfactual ``x`` keeps its target class on
all n, then with confidence α = 1 − Rⁿ at least a fraction R of Δ_δ keeps it: a CE whose true
robust fraction p is below R passes all n draws with probability pⁿ < Rⁿ = 1 − α. Hence

    n = ⌈ln(1 − α) / ln R⌉                                               (apas_sample_size)

(1379 for α = 0.999, R = 0.995; the paper's 1378 rounds down and gives 1 − 0.995¹³⁷⁸ ≈ 0.998999,
slightly less than the stated α).

* :func:`apas_certify` — the probabilistic Δ-test at one δ for many CEs: all CEs × all n draws in
  batched array code; per CE whether every draw kept the class, the smallest sampled margin and
  the number of draws that flipped it.
* :func:`apas_max_delta` — Algorithm 1: per CE, double δ from δ_init until some draw flips the
  CE, then bisect to δ_init resolution; every tested δ gets n *fresh* draws.

Realisations are drawn as θ + δ·U with U uniform in [−1, 1] per weight (and bias), one U per
sample shared by all CEs tested in the same step (each CE still sees n i.i.d. draws from its own
Δ_δ, which is all Lemma 4 asks). A δ at which interval propagation already proves every network
in Δ_δ keeps the class needs no draws: all n would pass with certainty, so skipping them leaves
the algorithm's output distribution unchanged. A test stops drawing for a CE at its first flip.

Margins follow :func:`robustce.models.network.class_margin` (> 0 iff the target class is
predicted); a draw with margin ≤ 0 counts as a flip (a tie is not a keep).

Modules: this one is the public face (sample size, the two procedures and their results, the
δ_max search, the certifier); :mod:`~robustce.robustness.apas_sampling` the plain float64
sampled test; :mod:`~robustce.robustness.apas_fast` Algorithm 1's fast float32 tests (the
bit-split draws, per-pattern plans, the one-CE path and its grid).
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.models.network import (
    ReLUNetwork,
    as_network,
    class_margin,
    margin_terms,
    model_space_rows,
    resolve_targets,
)
from robustce.robustness.apas_fast import _algorithm1_one, _FreshNoise, _lazy_test, _Plan
from robustce.robustness.apas_sampling import _sampled_test
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.robustness.exact import point_layer_bounds
from robustce.robustness.shift import ParameterShift
from robustce.utils import check_random_state
from robustce.validation import check_bool, check_integer, check_number

__all__ = ["APASCertifier", "APASMaxDeltaResult", "APASResult", "apas_certify", "apas_max_delta",
           "apas_sample_size"]


def _unit_interval(value: Any, name: str) -> float:
    return float(check_number(value, name, low=0.0, high=1.0, low_open=True, high_open=True))


def apas_sample_size(alpha: float, R: float) -> int:
    """Number of draws n = ⌈ln(1 − α) / ln R⌉ for confidence α that a fraction ≥ R of Δ keeps
    the CE (Lemma 4): the smallest n with Rⁿ ≤ 1 − α.

    For α = 0.999, R = 0.995 this is 1379. The paper's 1378 is ``log_R(1 − α) = 1378.1`` rounded
    down, which gives confidence 1 − 0.995¹³⁷⁸ ≈ 0.998999 < α: one draw short.

    Parameters
    ----------
    alpha : confidence α in (0, 1).
    R : the fraction of Δ that must keep the CE's class, in (0, 1).

    Returns
    -------
    int
        n, the number of draws.

    Examples
    --------
    >>> apas_sample_size(0.999, 0.995)
    1379
    """
    a = _unit_interval(alpha, "alpha")
    r = _unit_interval(R, "R")
    log_fail, log_r = math.log1p(-a), math.log(r)
    n = max(1, math.ceil(log_fail / log_r))
    # guard the ceiling against rounding in the ratio: the defining inequality is n ln R ≤ ln(1−α)
    while n > 1 and (n - 1) * log_r <= log_fail:
        n -= 1
    while n * log_r > log_fail:
        n += 1
    return n


def _check_delta(delta: Any, name: str = "delta") -> float:
    return float(check_number(delta, name, low=0.0, low_open=True))


#: most draws one tested δ may take (about 10 minutes of one CE's draws on a 20-10 network)
MAX_DRAWS = 10**8


def _resolve_n(alpha: Any, R: Any, n: Any) -> tuple[int, float, float]:
    """(n, α, R): n from Lemma 4, or a given n with the confidence α = 1 − Rⁿ it buys; at most
    :data:`MAX_DRAWS`."""
    r = _unit_interval(R, "R")
    if n is None:
        a = _unit_interval(alpha, "alpha")
        need = apas_sample_size(a, r)
        if need > MAX_DRAWS:
            raise ValidationError(f"alpha = {a!r} and R = {r!r} need n = {need} draws per tested "
                                  f"delta, above the cap of {MAX_DRAWS:.0e}; lower alpha or R")
        return need, a, r
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise ValidationError(f"n must be a positive integer or None, got {n!r}")
    if int(n) > MAX_DRAWS:
        raise ValidationError(f"n = {int(n)} draws per tested delta is above the cap of "
                              f"{MAX_DRAWS:.0e}")
    return int(n), -math.expm1(int(n) * math.log(r)), r


#: one CE goes through :func:`_algorithm1_one` (tests switch it off to check the batched path
#: on single rows against the plain Algorithm 1 too)
_ONE_ROW_PATH = True


def _rows_and_targets(model: Any, cfs: Any, target_class: Any
                      ) -> tuple[ReLUNetwork, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The network, the rows (unusable ones replaced by zeros), the unusable-row mask, the
    per-row targets and the nominal target margins."""
    net = as_network(model)
    X, bad = model_space_rows(net, cfs, model, name="cfs")
    X = np.where(bad[:, None], 0.0, X)
    t = resolve_targets(target_class, len(X), network=net, X=X)
    nominal = class_margin(net.forward(X), t)
    return net, X, bad, t, nominal


# --- the probabilistic Δ-test --------------------------------------------------------------------


@dataclass
class APASResult:
    """Per counterfactual outcome of :func:`apas_certify` (arrays of length N).

    Parameters
    ----------
    passed : every one of the n draws from Δ_δ kept the target class — then, with confidence
        ``alpha``, at least a fraction ``R`` of Δ_δ does.
    status : ``"passed"``, ``"failed"`` (some draw flipped it), ``"invalid"`` (not valid on the
        nominal model; never passed) or ``"error"`` (NaN/inf row).
    min_margin : the smallest target margin over the draws (NaN for error rows).
    n_flips : draws with margin ≤ 0 (``n_flips / n`` estimates the non-robust fraction).
    nominal_margin : the target margin on the unshifted model (NaN for error rows).
    target_class : the class each counterfactual was tested for.
    message : why a row is invalid or an error (``""`` otherwise).
    delta : the shift size δ tested.
    alpha, R : confidence α and robust fraction R of Lemma 4 (α = 1 − Rⁿ when ``n`` was given).
    n : number of draws from Δ_δ.
    time : seconds for the whole batch.
    meta : the test's settings (``biases``, ``p``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.apas_certify(net, X, 0.05, target_class=1, random_state=0)
    >>> out.status.tolist(), out.n_flips.tolist(), out.n
    (['passed', 'failed'], [0, 47], 1379)
    >>> out.to_frame()[["passed", "status", "n_flips"]]
       passed  status  n_flips
    0    True  passed        0
    1   False  failed       47
    """

    passed: np.ndarray
    status: np.ndarray
    min_margin: np.ndarray
    n_flips: np.ndarray
    nominal_margin: np.ndarray
    target_class: np.ndarray
    message: np.ndarray
    delta: float
    alpha: float
    R: float
    n: int
    time: float
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.passed)

    def certificate(self, i: int) -> dict[str, Any]:
        """What counterfactual ``i``'s claim rests on — enough to re-check it."""
        m = float(self.min_margin[i])
        return {
            "passed": bool(self.passed[i]), "status": str(self.status[i]),
            "delta": self.delta, "p": "inf", "biases": self.meta.get("biases", True),
            "alpha": self.alpha, "R": self.R, "n": self.n,
            "min_margin": None if math.isnan(m) else m, "n_flips": int(self.n_flips[i]),
            "target_class": int(self.target_class[i]), "message": str(self.message[i]),
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per counterfactual."""
        return pd.DataFrame({
            "passed": self.passed, "status": self.status.astype(str),
            "min_margin": self.min_margin, "n_flips": self.n_flips,
            "nominal_margin": self.nominal_margin, "target_class": self.target_class,
            "delta": self.delta, "alpha": self.alpha, "R": self.R, "n": self.n,
            "message": self.message.astype(str),
        })


def apas_certify(model: Any, cfs: Any, delta: Any, alpha: float = 0.999, R: float = 0.995,
                 target_class: Any = None, random_state: int | np.random.Generator | None = None,
                 *, n: int | None = None, biases: bool = True) -> APASResult:
    """Probabilistic Δ-test (APΔS, Lemma 4) of counterfactuals at one shift size δ.

    Parameters
    ----------
    model : a :class:`ReLUNetwork` or a model with ``.network()`` (and ``.encode`` for frames).
    cfs : counterfactuals: model-space array (N, d) or a raw DataFrame.
    delta : δ > 0 (every weight and bias uniform in [θ − δ, θ + δ]), or a
        :class:`~robustce.robustness.ParameterShift` (its δ and ``biases``).
    alpha, R : confidence α and robust fraction R, both in (0, 1); n = ⌈ln(1−α)/ln R⌉ draws.
    target_class : int, per-row array, or None (the class the model predicts per row).
    random_state : int, Generator or None.
    n : number of draws instead of Lemma 4's (``alpha`` is then reported as 1 − Rⁿ).
    biases : whether the shift moves biases too.

    All CEs are evaluated on the same n draws (batched, chunked to bound memory).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.apas_certify(net, X, 0.05, alpha=0.999, R=0.995, target_class=1,
    ...                                  random_state=0)
    >>> out.passed, out.n  # n = ⌈ln(1 − α) / ln R⌉ draws from Δ
    (array([ True, False]), 1379)
    >>> out.certificate(0)["min_margin"] > 0
    True
    """
    if isinstance(delta, ParameterShift):
        delta, biases = delta.delta, delta.biases
    d = _check_delta(delta)
    check_bool(biases, "biases")
    n, a, r = _resolve_n(alpha, R, n)
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    net, X, bad, t, nominal = _rows_and_targets(model, cfs, target_class)
    N = len(X)
    use = np.flatnonzero(~bad)
    min_m = np.full(N, np.nan)
    flips = np.zeros(N, dtype=np.int64)
    mm, fl = _sampled_test(net, X[use], t[use], np.full(len(use), d), n, rng, biases)
    min_m[use], flips[use] = mm, fl
    invalid = ~bad & ~(nominal > 0)
    passed = ~bad & ~invalid & (flips == 0)
    status = np.where(passed, "passed", "failed").astype(object)
    message = np.full(N, "", dtype=object)
    status[invalid] = "invalid"
    for i in np.flatnonzero(invalid):
        message[i] = (f"not valid on the nominal model: target-{int(t[i])} margin "
                      f"{nominal[i]:.4g} <= 0")
    status[bad] = "error"
    message[bad] = "counterfactual contains NaN or infinite values"
    nominal = np.where(bad, np.nan, nominal)
    meta = {"biases": bool(biases), "p": "inf"}
    return APASResult(passed, status, min_m, flips, nominal, t, message, d, a, r, n,
                      time.perf_counter() - t0, meta)


# --- Algorithm 1: the largest δ that passes ------------------------------------------------------


@dataclass
class APASMaxDeltaResult:
    """Per counterfactual outcome of :func:`apas_max_delta` (arrays of length N).

    Parameters
    ----------
    delta : δ_max — the largest tested δ at which all n fresh draws kept the class (0 when the
        CE is invalid on the nominal model or a draw at δ_init already flips it).
    upper : the smallest tested δ at which a draw flipped it (inf when none did).
    status : ``"ok"``, ``"not_robust"`` (flipped at δ_init), ``"invalid"`` (not valid on the
        nominal model), ``"capped"`` (kept up to the cap ``delta_max``), ``"round_limit"`` or
        ``"error"`` (NaN row).
    n_tests : δ values tested.
    n_interval : of which decided by interval bounds (all of Δ_δ proven to keep the class, so
        every draw would have passed).
    n_samples : draws evaluated.
    target_class : the class each counterfactual was tested for.
    message : why a row stopped early or is invalid (``""`` otherwise).
    alpha, R : confidence α and robust fraction R of Lemma 4.
    n : draws per tested δ.
    time : seconds for the whole batch.
    meta : the search's settings (``delta_init``, ``delta_max``, ``biases``, ``p``, ``rounds``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> out = rc.robustness.apas_max_delta(net, X, target_class=1, n=200, random_state=0)
    >>> out.status.tolist(), out.delta_max.round(3)
    (['ok', 'ok'], array([0.278, 0.038]))
    >>> out.to_frame()[["delta_max", "status", "n_tests"]]
       delta_max status  n_tests
    0     0.2782     ok       24
    1     0.0377     ok       19
    """

    delta: np.ndarray
    upper: np.ndarray
    status: np.ndarray
    n_tests: np.ndarray
    n_interval: np.ndarray
    n_samples: np.ndarray
    target_class: np.ndarray
    message: np.ndarray
    alpha: float
    R: float
    n: int
    time: float
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.delta)

    @property
    def delta_max(self) -> np.ndarray:
        """Alias of ``delta`` under the paper's name."""
        return self.delta

    def to_frame(self) -> pd.DataFrame:
        """One row per counterfactual."""
        return pd.DataFrame({
            "delta_max": self.delta, "upper": self.upper, "status": self.status.astype(str),
            "n_tests": self.n_tests, "n_interval": self.n_interval, "n_samples": self.n_samples,
            "target_class": self.target_class, "alpha": self.alpha, "R": self.R, "n": self.n,
            "message": self.message.astype(str),
        })


def apas_max_delta(model: Any, cfs: Any, alpha: float = 0.999, R: float = 0.995,
                   delta_init: float = 1e-4, random_state: int | np.random.Generator | None = None,
                   *, target_class: Any = None, delta_max: float = 10.0, n: int | None = None,
                   biases: bool = True, max_rounds: int = 200) -> APASMaxDeltaResult:
    """Largest δ each counterfactual passes the probabilistic Δ-test at (APΔS Algorithm 1).

    Test δ_init; on a flip δ_max = 0. Otherwise double δ until a draw flips the CE, then bisect
    between the last passing and the first flipping δ until they are ≤ δ_init apart; δ_max is the
    last passing δ. Each tested δ gets n fresh draws, so each test alone carries Lemma 4's
    guarantee (across the ``n_tests`` tests of one CE a union bound gives confidence at least
    1 − n_tests·(1 − α) for all of them at once).

    Vectorised over CEs: each round tests every still-active CE at its own candidate δ with one
    shared set of unit-box draws (θ + δ_i·U). Where δ is at most the exact max provable δ every
    draw passes, so δ_max ≥ ``max_provable_delta`` (same ``delta_init`` / ``delta_max``).

    Parameters
    ----------
    model, cfs, target_class, biases, n : as :func:`apas_certify`.
    alpha, R : Lemma 4's confidence and fraction (n = ⌈ln(1−α)/ln R⌉ draws per tested δ).
    delta_init : first δ tested and the bisection's resolution (the paper's 0.0001).
    delta_max : cap on δ; a CE still passing there gets status ``capped``.
    max_rounds : cap on the tests per CE (each round tests every active CE once; the first
        doubling tests that interval bounds decide up front count too).
    random_state : int, Generator or None — the source of every test's draws.

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPRobust(model, train, shift=0.02).explain(rejected)
    >>> out = rc.robustness.apas_max_delta(model, res, target_class=1, n=200, random_state=0)
    >>> out.status.tolist()
    ['ok', 'ok', 'ok']
    >>> bool((out.delta >= 0.02).all())
    True
    """
    d0 = _check_delta(delta_init, "delta_init")
    try:
        dmax = float(delta_max)
    except (TypeError, ValueError):
        raise ValidationError(f"delta_max must be a number, got {delta_max!r}") from None
    if not (math.isfinite(dmax) and dmax >= d0):
        raise ValidationError(f"delta_max must be finite and >= delta_init, got {delta_max!r}")
    check_integer(max_rounds, "max_rounds", low=1)
    check_bool(biases, "biases")
    n, a, r = _resolve_n(alpha, R, n)
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    net, X, bad, t, nominal = _rows_and_targets(model, cfs, target_class)
    res = _algorithm1(net, X, bad, t, nominal, d0, dmax, n, _FreshNoise(rng), biases,
                      int(max_rounds))
    res.alpha, res.R, res.time = a, r, time.perf_counter() - t0
    return res


def _bounds(net: ReLUNetwork, X: np.ndarray, deltas: np.ndarray, biases: bool
            ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval pre-activation bounds of every layer over Δ_δ at point inputs X, δ per row
    (:func:`~robustce.robustness.exact.point_layer_bounds`), with a lean path for one δ."""
    d = float(deltas[0])
    if not (net.plain and np.all(deltas == d)):
        return point_layer_bounds(net, X, deltas, biases)
    db = d if biases else 0.0
    W, b = net.weights[0]
    c = X @ W.T + b
    r = d * np.abs(X).sum(axis=1, keepdims=True) + db
    out = [(c - r, c + r)]
    for W, b in net.weights[1:]:
        lo, hi = np.maximum(out[-1][0], 0.0), np.maximum(out[-1][1], 0.0)
        Wl, Wu = W - d, W + d
        out.append((lo @ np.maximum(Wl, 0.0).T + hi @ np.minimum(Wl, 0.0).T + (b - db),
                    hi @ np.maximum(Wu, 0.0).T + lo @ np.minimum(Wu, 0.0).T + (b + db)))
    return out


def _skip_interval_prefix(net: ReLUNetwork, X: np.ndarray, t: np.ndarray, active: np.ndarray,
                          lo: np.ndarray, cand: np.ndarray, n_tests: np.ndarray,
                          n_interval: np.ndarray, status: np.ndarray, d0: float, dmax: float,
                          noise: _FreshNoise, biases: bool, max_rounds: int) -> None:
    """Algorithm 1's first doubling tests, δ = δ_init·2^k, that interval propagation decides,
    all at once: Δ_δ grows with δ and interval bounds are inclusion-monotone, so the tests
    proven this way form a prefix of the doubling sequence; each would have passed with
    certainty. Moves every active row (in place) past its proven prefix, as the round-by-round
    loop would, and leaves ``active`` rows that reached ``delta_max`` capped."""
    idx = np.flatnonzero(active)
    if idx.size == 0:
        return
    ladder = [d0]
    while ladder[-1] < dmax:
        ladder.append(min(2.0 * ladder[-1], dmax))
    L = len(ladder)
    rows = np.repeat(idx, L)
    bounds = _bounds(net, X[rows], np.tile(ladder, idx.size), biases)
    sure = margin_terms(bounds[-1][0], bounds[-1][1], t[rows]).min(axis=1) > 0
    proven = np.cumprod(sure.reshape(idx.size, L), axis=1).sum(axis=1)   # prefix length
    proven = np.minimum(proven, max_rounds)          # max_rounds caps the tests, these included
    for _ in range(int(proven.max())):
        noise.start_test()
    has = proven > 0
    i, p = idx[has], proven[has]
    ladder_arr = np.asarray(ladder)
    lo[i] = ladder_arr[p - 1]
    n_tests[i] += p
    n_interval[i] += p
    capped = lo[i] >= dmax
    status[i[capped]] = "capped"
    active[i[capped]] = False
    more = i[~capped]
    cand[more] = np.minimum(2.0 * lo[more], dmax)


def _algorithm1(net: ReLUNetwork, X: np.ndarray, bad: np.ndarray, t: np.ndarray,
                nominal: np.ndarray, d0: float, dmax: float, n: int, noise: _FreshNoise,
                biases: bool, max_rounds: int) -> APASMaxDeltaResult:
    """:func:`apas_max_delta` on validated rows, drawing from ``noise`` (α, R and time are
    filled in by the caller)."""
    N = len(X)
    lo = np.zeros(N)
    hi = np.full(N, np.inf)
    cand = np.full(N, d0)
    n_tests = np.zeros(N, dtype=np.int64)
    n_interval = np.zeros(N, dtype=np.int64)
    n_samples = np.zeros(N, dtype=np.int64)
    status = np.full(N, "ok", dtype=object)
    message = np.full(N, "", dtype=object)
    invalid = ~bad & ~(nominal > 0)
    status[invalid] = "invalid"
    for i in np.flatnonzero(invalid):
        message[i] = (f"not valid on the nominal model: target-{int(t[i])} margin "
                      f"{nominal[i]:.4g} <= 0; delta_max = 0")
    status[bad] = "error"
    message[bad] = "counterfactual contains NaN or infinite values"
    active = ~bad & ~invalid
    plan = _Plan(net, biases)
    rounds = 0
    limited = np.zeros(N, dtype=bool)
    if N == 1 and active[0] and _ONE_ROW_PATH and net.plain:  # one CE: tests on scalars
        (lo[0], hi[0], status[0], n_tests[0], n_interval[0], n_samples[0], rounds,
         limited[0]) = _algorithm1_one(plan, X[0], int(t[0]), d0, dmax, n, noise, biases,
                                       max_rounds)
        active[0] = False
    _skip_interval_prefix(net, X, t, active, lo, cand, n_tests, n_interval, status, d0, dmax,
                          noise, biases, max_rounds)
    while True:
        over = active & (n_tests >= max_rounds)
        limited |= over
        active &= ~over
        if not active.any():
            break
        rounds += 1
        noise.start_test()
        idx = np.flatnonzero(active)
        # interval bounds: where all of Δ_δ keeps the class, every draw would pass
        bounds = _bounds(net, X[idx], cand[idx], biases)
        sure = margin_terms(bounds[-1][0], bounds[-1][1], t[idx]).min(axis=1) > 0
        ok = sure.copy()
        need = idx[~sure]
        if need.size:
            nb = [(lo_[~sure], hi_[~sure]) for lo_, hi_ in bounds]
            if net.plain:
                used, keep = _lazy_test(plan, X[need], t[need], cand[need], n, noise, nb)
            else:  # structured network: plain float64 draws of its own parameters
                _, fl = _sampled_test(net, X[need], t[need], cand[need], n,
                                      np.random.Generator(noise.bitgen), biases)
                used, keep = np.full(need.size, n, dtype=np.int64), fl == 0
            ok[~sure] = keep
            n_samples[need] += used
        n_tests[idx] += 1
        n_interval[idx[sure]] += 1
        lo[idx[ok]] = cand[idx[ok]]
        hi[idx[~ok]] = cand[idx[~ok]]
        li, hi_i = lo[idx], hi[idx]
        doubling = np.isinf(hi_i)
        capped = doubling & (li >= dmax)
        flipped_at_init = ~doubling & (li == 0.0)
        narrow = ~doubling & ~flipped_at_init & (hi_i - li <= d0)
        status[idx[capped]] = "capped"
        status[idx[flipped_at_init]] = "not_robust"
        active[idx[capped | flipped_at_init | narrow]] = False
        grow = doubling & ~capped
        cand[idx[grow]] = np.minimum(2.0 * li[grow], dmax)
        bis = ~doubling & ~flipped_at_init & ~narrow
        cand[idx[bis]] = 0.5 * (li[bis] + hi_i[bis])
    for i in np.flatnonzero(status == "not_robust"):
        message[i] = f"a sampled realisation at delta_init = {d0:g} flips it; delta_max = 0"
    for i in np.flatnonzero(status == "capped"):
        message[i] = f"every draw kept the class up to the cap delta_max = {dmax:g}"
    for i in np.flatnonzero(limited):
        status[i] = "round_limit"
        message[i] = (f"stopped after max_rounds = {max_rounds}; delta_max is the last "
                      f"passing delta tested")
    meta = {"delta_init": d0, "delta_max": dmax, "biases": bool(biases), "p": "inf",
            "rounds": rounds}
    return APASMaxDeltaResult(lo, hi, status, n_tests, n_interval, n_samples, t, message,
                              math.nan, math.nan, n, math.nan, meta)


# --- the certifier protocol ----------------------------------------------------------------------


class APASCertifier(Certifier):
    """APΔS's probabilistic Δ-test as a :class:`~robustce.robustness.certifier.Certifier`.

    ``robust`` means: all n = ⌈ln(1−α)/ln R⌉ draws from Δ = ``shift`` kept the target class, so
    with confidence α at least a fraction R of Δ does (Lemma 4) — an average-case claim, not a
    proof over all of Δ (that is :class:`~robustce.robustness.ExactDeltaCertifier`). A draw
    that flips the CE makes it ``not_robust``; so does a CE the network itself does not give
    the target class.

    Parameters
    ----------
    shift : :class:`ParameterShift` or a number δ.
    alpha, R : Lemma 4's confidence and fraction, in (0, 1).
    n : draws per CE instead of Lemma 4's (``alpha`` then becomes 1 − Rⁿ).
    random_state : None (fresh entropy per call), an int (each call's draws are seeded by it and
        the rows tested — the same CE gets the same draws in any order or process) or a
        Generator (consumed call by call).
    fixed_draws : with an int ``random_state``, every call draws the same n networks, whatever
        the rows (the APΔS authors' loop reseeds before each test: ``np.random.seed(1)``); a
        CE that fails once then fails at every margin whose CE sits where it does.

    Notes
    -----
    Certificates: ``lower`` — the smallest sampled margin where the test passed (Lemma 4: with
    confidence α a fraction ≥ R of Δ has at least this margin; NaN where it failed);
    ``upper`` — the smallest margin of a concrete network seen (a draw, or the base network);
    ``evidence`` — per row ``{"n": n, "n_flips": k, "min_margin": m}``; ``columns``:
    ``min_sampled_margin``, ``n_flips``. A sampled test runs n forward passes per row and no
    solver, so ``time_limit`` does not apply.

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> certifier = rc.robustness.APASCertifier(0.05, alpha=0.999, R=0.995, random_state=0)
    >>> certs = certifier.certify(net, X, 1)
    >>> [str(s) for s in certs.status], certs.columns["n_flips"].tolist()
    (['robust', 'not_robust'], [0, 42])
    >>> certifier.params()["n"]
    1379
    """

    name = "apas"

    def __init__(self, shift: ParameterShift | float, *, alpha: float = 0.999, R: float = 0.995,
                 n: int | None = None, random_state: int | np.random.Generator | None = None,
                 fixed_draws: bool = False):
        self.shift = ParameterShift.of(shift)
        self.n, self.alpha, self.R = _resolve_n(alpha, R, n)
        if not (random_state is None or isinstance(random_state, np.random.Generator)
                or (isinstance(random_state, int | np.integer) and not isinstance(random_state, bool))):
            raise ValidationError(
                f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}")
        self.random_state = random_state
        check_bool(fixed_draws, "fixed_draws")
        if fixed_draws and not isinstance(random_state, int | np.integer):
            raise ValidationError("fixed_draws needs an int random_state (the seed of the one "
                                  f"set of draws), got {type(random_state).__name__}")
        self.fixed_draws = fixed_draws

    def params(self) -> dict[str, Any]:
        return {"delta": self.shift.delta, "p": "inf", "biases": self.shift.biases,
                "alpha": self.alpha, "R": self.R, "n": self.n, "fixed_draws": self.fixed_draws}

    def rng_for(self, X: np.ndarray, targets: np.ndarray) -> np.random.Generator:
        """The generator one call draws from (see ``random_state``)."""
        if isinstance(self.random_state, np.random.Generator):
            return self.random_state
        if self.random_state is None:
            return np.random.default_rng()
        if self.fixed_draws:
            return np.random.default_rng(int(self.random_state))
        key = zlib.crc32(np.ascontiguousarray(X, dtype=np.float64).tobytes())
        key = zlib.crc32(np.ascontiguousarray(targets, dtype=np.int64).tobytes(), key)
        return np.random.default_rng(np.random.SeedSequence([int(self.random_state), key]))

    def certify(self, network: Any, X: Any, targets: Any, *,
                time_limit: float | None = None) -> Certificates:
        net = as_network(network)
        X, bad = model_space_rows(net, X, network)
        Xc = np.where(bad[:, None], 0.0, X)
        t = resolve_targets(targets, len(X), network=net, X=Xc)
        res = apas_certify(net, X, self.shift, target_class=t, random_state=self.rng_for(Xc, t),
                           R=self.R, n=self.n)
        status = np.full(len(X), CertStatus.NOT_ROBUST, dtype=object)
        status[res.passed] = CertStatus.ROBUST
        status[res.status == "error"] = CertStatus.ERROR
        lower = np.where(res.passed, res.min_margin, np.nan)
        upper = np.fmin(res.min_margin, res.nominal_margin)
        evidence: list[Any] = [
            None if s == "error" else {"n": res.n, "n_flips": int(k), "min_margin": float(m)}
            for s, k, m in zip(res.status, res.n_flips, res.min_margin, strict=True)]
        per_row = np.full(len(X), res.time / max(len(X), 1))
        return Certificates(status, lower, upper, evidence, per_row, res.target_class, self.name,
                            self.params(), {"min_sampled_margin": res.min_margin,
                                            "n_flips": res.n_flips})
