"""(δ, α)-robustness to the user's own retraining (BetaRCE: Stępka, Stefanowski, Lango, KDD
2025), for any model, estimated from sampled retrains.

A CE ``x`` with target class ``t`` is **(δ, α)-robust** for a retrain procedure when, with
confidence α, at least a share δ of the models the procedure would produce give ``x`` the
class ``t``. In robustce's names: ``share`` is the paper's δ (``delta`` already names the
weight-shift bound of :class:`~robustce.robustness.ParameterShift`) and ``confidence`` its α.
The models are independent draws of a :class:`~robustce.models.RetrainProcedure` (model ``i``
of the procedure), so ``k`` of ``n`` accepting models is a binomial count with the unknown
share ``p`` of the procedure's models that accept ``x``.

Bounds (``bound=``), each a one-sided bound on ``p`` from ``k`` of ``n``:

* ``"clopper_pearson"`` (the default) — the exact frequentist lower confidence bound
  ``L = Beta⁻¹(e; k, n − k + 1)``: for *every* ``p``, ``P(L > p) ≤ e`` over the draw of the
  models. So "certified" is wrong with probability at most ``1 − α`` whatever the true share
  is — the claim a user reads ("with confidence α"), and the one the soundness test checks by
  repeating the certification at a share just below δ. It is the default for that reason.
* ``"beta"`` — the paper's Beta posterior with prior ``Beta(a, b)`` (``prior=(1, 1)``,
  uniform; the authors' code uses (0.5, 0.5) in places): certified when the posterior
  ``P(p > δ | k of n) > α``, i.e. ``Beta⁻¹(e; a + k, b + n − k) > δ``. A Bayesian statement:
  it holds on average over ``p`` drawn from the prior, not for every ``p`` — its lower quantile
  is above Clopper–Pearson's, so at a fixed share just below δ it certifies more often than
  ``1 − α``.

**Early stopping that keeps the confidence.** Testing after every new model and stopping at
the first success would inflate the error. The certificate looks at a fixed, increasing set
of sample sizes ``looks`` (default: ``n_looks`` sizes from the smallest ``n`` at which
certification is possible up to ``max_models``, geometric) and spends the error ``1 − α``
evenly across them (Bonferroni): each look tests at ``e = (1 − α) / len(looks)``. A row is
**certified** at the first look where its lower bound exceeds ``share`` and **refuted** where
the upper bound (the same rule, at ``e``) falls below it; by the union bound a certified
verdict is false with probability ≤ ``1 − α`` (a refuted one likewise), however the looks
end. Rows neither certified nor refuted at the last look are **undecided** — a status of its
own (``inconclusive``), never robust. Rows stop drawing models once decided; models are
shared across rows (one ``predict`` per model over every undecided row), fitted once and
cached by the procedure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from robustce.errors import ValidationError
from robustce.models.families.procedure import RetrainProcedure
from robustce.models.network import ReLUNetwork, resolve_targets
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.validation import check_choice, check_integer, check_number

__all__ = ["BOUNDS", "RetrainCertificates", "RetrainCertifier", "certify_retrain",
           "share_bounds"]

BOUNDS = ("clopper_pearson", "beta")
#: verdict -> the certifier status it maps to (only certified is a claim of robustness)
VERDICTS = {"certified": CertStatus.ROBUST, "refuted": CertStatus.NOT_ROBUST,
            "undecided": CertStatus.INCONCLUSIVE}


def share_bounds(k: Any, n: Any, error: float, bound: str = "clopper_pearson",
                 prior: tuple[float, float] = (1.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """One-sided bounds ``(lower, upper)`` on a share from ``k`` successes of ``n`` draws,
    each at error ``error`` (see the module docstring for the two ``bound`` kinds).

    Parameters
    ----------
    k : successes (models giving the target class), scalar or array.
    n : draws (models asked), broadcast with ``k``.
    error : the error of each one-sided bound, in (0, 1).
    bound : ``"clopper_pearson"`` or ``"beta"``.
    prior : the Beta prior ``(a, b)`` of ``bound="beta"``.

    Returns
    -------
    (ndarray, ndarray)
        The lower and the upper bound.

    Examples
    --------
    >>> lo, hi = share_bounds([20, 19], [20, 20], 0.05)
    >>> lo.round(3).tolist(), hi.round(3).tolist()       # Clopper–Pearson
    ([0.861, 0.784], [1.0, 0.997])
    >>> round(float(share_bounds(20, 20, 0.05, "beta")[0]), 3)  # uniform prior: 0.05 ** (1 / 21)
    0.867
    """
    k, n = _counts(k, "k"), _counts(n, "n")
    if k.shape != n.shape and k.size != 1 and n.size != 1:
        raise ValidationError(f"k and n must broadcast, got shapes {k.shape} and {n.shape}")
    if np.any(k > n):
        raise ValidationError("k must be <= n (successes of n draws)")
    check_number(error, "error", low=0, high=1, low_open=True, high_open=True)
    check_choice(bound, "bound", BOUNDS)
    prior = _prior(prior)
    if bound == "clopper_pearson":
        with np.errstate(invalid="ignore"):
            lo = np.where(k > 0, stats.beta.ppf(error, np.maximum(k, 1), n - k + 1), 0.0)
            hi = np.where(k < n, stats.beta.ppf(1 - error, k + 1, np.maximum(n - k, 1)), 1.0)
        return lo, hi
    a, b = float(prior[0]), float(prior[1])
    return (stats.beta.ppf(error, a + k, b + n - k), stats.beta.ppf(1 - error, a + k, b + n - k))


def _counts(v: Any, name: str) -> np.ndarray:
    """Non-negative whole counts as a float array (a typed error naming ``name`` otherwise)."""
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        arr = np.full(1, np.nan)
    if isinstance(v, bool) or arr.size == 0 or not np.isfinite(arr).all() or (arr < 0).any() \
            or (arr != np.round(arr)).any() or (arr > 10**9).any():
        raise ValidationError(f"{name} must be whole counts in [0, 1e9], got {v!r}")
    return arr


def _prior(prior: Any) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in prior)
    except (TypeError, ValueError):
        raise ValidationError(f"prior must be two positive numbers (a, b), got {prior!r}") from None
    if not (a > 0 and b > 0 and np.isfinite(a) and np.isfinite(b)):
        raise ValidationError(f"prior must be two positive numbers (a, b), got {prior!r}")
    return a, b


def _min_models(share: float, error: float, bound: str, prior: tuple[float, float],
                limit: int) -> int | None:
    """The smallest n at which n of n accepting models certify ``share`` (None: > limit)."""
    ns = np.arange(1, limit + 1)
    ok = np.flatnonzero(share_bounds(ns, ns, error, bound, prior)[0] > share)
    return int(ns[ok[0]]) if len(ok) else None


@dataclass
class RetrainCertificates(Certificates):
    """:class:`~robustce.robustness.Certificates` of the (δ, α) test, with ``meta``: the
    procedure, the models fitted for this call (``n_fitted``, ``fit_time``) and the indices
    of the models used (``models``: ``[start, stop)`` procedure indices). Per-row columns:
    ``verdict`` (certified / refuted / undecided), ``share_lower`` / ``share_upper`` (the
    bounds at the deciding look's error),
    ``k`` (models giving the target class), ``n`` (models asked), ``look`` (1-based look
    at which the row was decided; the last one for undecided rows), ``first_model`` (the
    procedure index of the first model used: a row used models ``first_model`` ..
    ``first_model + n − 1``). ``lower`` / ``upper`` (margins) are NaN: no margin is claimed.

    Attributes
    ----------
    status : :class:`CertStatus` per row: robust (certified), not_robust (refuted),
        inconclusive (undecided).
    lower : NaN per row (no margin is claimed).
    upper : NaN per row.
    evidence : None per row.
    time : seconds per row (the call's time, shared).
    target_class : the class tested per row.
    certifier : ``"retrain"``.
    params : share, confidence, bound, looks, error per look, first model, procedure.
    columns : verdict, share_lower, share_upper, k, n, look, first_model (see above).
    meta : n_fitted, fit_time, models, procedure (see above).

    Examples
    --------
    >>> proc = rc.models.RetrainProcedure(lambda seed: None)   # never asked: no rows
    >>> res = RetrainCertifier(proc, looks=[30]).certify(None, np.zeros((0, 2)), 1)
    >>> len(res), res.meta["n_fitted"], round(res.params["error_per_look"], 6)
    (0, 0, 0.1)
    """

    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> np.ndarray:
        return np.asarray(self.columns["verdict"], dtype=object)


class RetrainCertifier(Certifier):
    """The (δ, α) certificate from sampled retrains (see the module docstring).

    Parameters
    ----------
    procedure : a :class:`~robustce.models.RetrainProcedure` (or a callable
        ``retrain(seed) -> model``, made one).
    share : the paper's δ — the share of retrained models that must keep the CE, in (0, 1).
    confidence : the paper's α — the confidence of the claim, in (0, 1).
    max_models : the most retrained models asked per row (the budget).
    looks : the sample sizes tested, increasing (default: ``n_looks`` sizes, see above).
    n_looks : how many looks the default uses (1 = one test at ``max_models``).
    bound : ``"clopper_pearson"`` (default, exact frequentist) or ``"beta"`` (the paper's
        posterior).
    prior : the Beta prior ``(a, b)`` of ``bound="beta"``.
    first : the procedure index of the first model used (models ``first`` .. ``first +
        max_models − 1``); give models a search has not seen for a fresh certificate.

    Raises
    ------
    ValidationError
        A parameter out of range, or ``max_models`` too small to ever certify ``share`` at
        ``confidence`` (the message gives the smallest budget that can).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("moons", n_samples=300, random_state=0)
    >>> proc = rc.models.RetrainProcedure.from_model(LogisticRegression(), data, "bootstrap")
    >>> model = proc.model(0)           # the user's model; certify against retrains 1, 2, ...
    >>> cert = RetrainCertifier(proc, share=0.9, confidence=0.9, max_models=60, first=1)
    >>> cert.looks_                     # 36 of 36 is the least that can certify 0.9
    (36, 43, 51, 60)
    >>> X = model.encode(data.frame.head(4))
    >>> res = cert.certify(model, X, 1)
    >>> res.verdict.tolist(), res.columns["k"].tolist(), res.columns["n"].tolist()
    (['certified', 'certified', 'refuted', 'certified'], [36, 36, 0, 36], [36, 36, 36, 36])
    >>> res.meta["n_fitted"], res.meta["models"]      # retrains 1 .. 36, fitted once
    (36, [1, 37])
    """

    name: ClassVar[str] = "retrain"

    def __init__(self, procedure: Any, *, share: float = 0.9, confidence: float = 0.9,
                 max_models: int = 64, looks: Any = None, n_looks: int = 4,
                 bound: str = "clopper_pearson", prior: tuple[float, float] = (1.0, 1.0),
                 first: int = 0):
        if not isinstance(procedure, RetrainProcedure):
            if not callable(procedure):
                raise ValidationError(f"procedure must be a RetrainProcedure or a callable "
                                      f"retrain(seed) -> model, got {type(procedure).__name__}")
            procedure = RetrainProcedure(procedure)
        self.procedure = procedure
        self.share = float(check_number(share, "share", low=0, high=1, low_open=True,
                                        high_open=True))
        self.confidence = float(check_number(confidence, "confidence", low=0, high=1,
                                             low_open=True, high_open=True))
        self.bound = check_choice(bound, "bound", BOUNDS)
        self.prior = _prior(prior)
        self.first = int(check_integer(first, "first", low=0))
        if looks is None:
            self.max_models = int(check_integer(max_models, "max_models", low=1, high=10**6))
            self.n_looks = int(check_integer(n_looks, "n_looks", low=1, high=64))
            self.looks_ = self._default_looks()
        else:
            try:
                seq = [int(v) for v in looks]
            except (TypeError, ValueError):
                raise ValidationError(f"looks must be increasing positive integers, got "
                                      f"{looks!r}") from None
            if not seq or seq[0] < 1 or any(b <= a for a, b in zip(seq, seq[1:], strict=False)):
                raise ValidationError(f"looks must be increasing positive integers, got {looks!r}")
            self.looks_ = tuple(seq)
            self.max_models, self.n_looks = seq[-1], len(seq)
            if _min_models(self.share, self.error_, self.bound, self.prior, seq[-1]) is None:
                raise ValidationError(self._too_small(seq[-1], f"looks={seq}"))

    @property
    def error_(self) -> float:
        """The error each look tests at: ``(1 − confidence) / len(looks)``."""
        return (1.0 - self.confidence) / len(getattr(self, "looks_", ())
                                             or range(self.n_looks))

    def _too_small(self, budget: int, label: str | None = None) -> str:
        need = _min_models(self.share, self.error_, self.bound, self.prior, 10**6)
        return (f"{label or f'max_models={budget}'} cannot certify share={self.share} at confidence="
                f"{self.confidence} with {self.n_looks} look(s): even {budget} of {budget} "
                f"accepting models fall short; it needs at least {need} models")

    def _default_looks(self) -> tuple[int, ...]:
        n_min = _min_models(self.share, self.error_, self.bound, self.prior, self.max_models)
        if n_min is None:
            raise ValidationError(self._too_small(self.max_models))
        sizes = np.round(np.geomspace(n_min, self.max_models, self.n_looks)).astype(int)
        return tuple(int(v) for v in np.unique(np.clip(sizes, n_min, self.max_models)))

    def params(self) -> dict[str, Any]:
        return {"share": self.share, "confidence": self.confidence, "bound": self.bound,
                **({"prior": list(self.prior)} if self.bound == "beta" else {}),
                "looks": list(self.looks_), "error_per_look": self.error_,
                "first": self.first, "procedure": self.procedure.summary()}

    # --- the test ---------------------------------------------------------------------------
    def certify(self, network: Any, X: Any, targets: Any = None, *,
                time_limit: float | None = None) -> RetrainCertificates:
        """Certify every row of ``X`` for its target class.

        ``network``: the user's model (a robustce model, black boxes included, or a
        :class:`~robustce.models.ReLUNetwork`); it gives the model space of ``X`` and, with
        ``targets=None``, the targets (its own predictions). ``X``: model-space rows, or a
        raw DataFrame (encoded with ``network``'s encoder). ``time_limit``: seconds for the
        whole call; when it runs out before a look, the remaining rows stay ``undecided``."""
        t0 = time.perf_counter()
        fitted0, fit_time0 = self.procedure.n_fitted, self.procedure.fit_time
        enc = getattr(network, "encoder", None)
        if isinstance(X, pd.DataFrame):
            if enc is None:
                raise ValidationError("raw rows need the model (its encoder) to encode them")
            X = network.encode(X)
        X = _rows(X, "X") if enc is None else enc.check_array(X, name="X")
        n = len(X)
        if targets is None:
            if network is None:
                raise ValidationError("targets=None needs the model (its prediction is the target)")
            t = (network.predict(X) if not isinstance(network, ReLUNetwork)
                 else network.predict(X)).astype(np.int64)
        else:
            t = resolve_targets(targets, n)
        views: dict[int, np.ndarray] = {}
        raw: list[pd.DataFrame] = []

        def rows_for(model: Any) -> np.ndarray | pd.DataFrame:
            m_enc = getattr(model, "encoder", None)
            if enc is None or m_enc is None or m_enc is enc:
                return X
            if id(m_enc) not in views:
                if not raw:
                    raw.append(enc.inverse_transform(X))
                views[id(m_enc)] = m_enc.transform(raw[0])
            return views[id(m_enc)]

        k = np.zeros(n, dtype=np.int64)
        used = np.zeros(n, dtype=np.int64)
        verdict = np.full(n, "undecided", dtype=object)
        lower, upper = np.full(n, np.nan), np.full(n, np.nan)
        look_of = np.zeros(n, dtype=np.int64)
        active = np.ones(n, dtype=bool)
        prev = 0
        for j, size in enumerate(self.looks_, start=1):
            if not active.any():
                break
            if time_limit is not None and j > 1 and time.perf_counter() - t0 > time_limit:
                break
            rows = np.flatnonzero(active)
            for m in self.procedure.models(range(self.first + prev, self.first + size)):
                k[rows] += np.asarray(m.predict(rows_for(m)[rows])) == t[rows]
            used[rows] = size
            lo, hi = share_bounds(k[rows], used[rows], self.error_, self.bound, self.prior)
            lower[rows], upper[rows], look_of[rows] = lo, hi, j
            cert, ref = lo > self.share, hi < self.share
            verdict[rows[cert]] = "certified"
            verdict[rows[ref & ~cert]] = "refuted"
            active[rows[cert | ref]] = False
            prev = size
        elapsed = time.perf_counter() - t0
        status = [VERDICTS[v] for v in verdict]
        meta = {"n_fitted": self.procedure.n_fitted - fitted0,
                "fit_time": self.procedure.fit_time - fit_time0,
                "models": [self.first, self.first + int(used.max()) if n else self.first],
                "procedure": self.procedure.summary()}
        return RetrainCertificates(
            status=status, lower=np.full(n, np.nan), upper=np.full(n, np.nan),
            evidence=[None] * n, time=np.full(n, elapsed / max(n, 1)), target_class=t,
            certifier=self.name, params=self.params(),
            columns={"verdict": verdict, "share_lower": lower, "share_upper": upper,
                     "k": k, "n": used, "look": look_of,
                     "first_model": np.full(n, self.first, dtype=np.int64)},
            meta=meta)


def _rows(X: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} must be numeric rows (n, d), got {type(X).__name__}") from None
    arr = np.atleast_2d(arr) if arr.ndim == 1 else arr
    if arr.ndim != 2 or not np.isfinite(arr).all():
        raise ValidationError(f"{name} must be finite numeric rows (n, d)")
    return arr


def certify_retrain(model: Any, cfs: Any, procedure: Any, target_class: Any = None,
                    **params: Any) -> RetrainCertificates:
    """``RetrainCertifier(procedure, **params).certify(model, cfs, target_class)``: the (δ, α)
    certificate of CEs ``cfs`` (raw frame or model-space rows) of ``model``.

    Parameters
    ----------
    model : the user's model (its encoder reads ``cfs``; its predictions are the targets
        when ``target_class`` is None).
    cfs : the CEs, a raw DataFrame or model-space rows.
    procedure : a :class:`~robustce.models.RetrainProcedure` or a callable
        ``retrain(seed) -> model``.
    target_class : one class, one per row, or None.
    **params : :class:`RetrainCertifier`'s parameters (``share``, ``confidence``, ...).

    Returns
    -------
    RetrainCertificates

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> data = rc.datasets.load("moons", n_samples=200, random_state=0)
    >>> proc = rc.models.RetrainProcedure.from_model(LogisticRegression(), data, "seed")
    >>> model = proc.model(0)   # LogisticRegression ignores its seed: every retrain is alike
    >>> res = certify_retrain(model, data.frame.head(3), proc, share=0.95, max_models=80,
    ...                       first=1)      # target_class=None: the class the model predicts
    >>> res.target_class.tolist(), res.verdict.tolist(), res.columns["k"].tolist()
    ([0, 1, 0], ['certified', 'certified', 'certified'], [72, 72, 72])
    """
    if not isinstance(cfs, pd.DataFrame):
        enc = getattr(model, "encoder", None)
        cfs = _rows(cfs, "cfs") if enc is None else enc.check_array(cfs, name="cfs")
    return RetrainCertifier(procedure, **params).certify(model, cfs, target_class)
