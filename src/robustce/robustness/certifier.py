"""The certifier protocol: one interface for every robustness test of counterfactuals.

A certifier answers, per row ``x`` of ``X`` with target class ``t``: does the target margin
``margin_t(θ'(x))`` stay positive for every model ``θ'`` in the certifier's set? ::

    certs = certifier.certify(network, X, targets)      # -> Certificates, one entry per row
    certs.robust                                         # bool array: status == robust
    certs.to_frame()                                     # one row per counterfactual

Implementations:

* :class:`~robustce.robustness.exact.ExactDeltaCertifier` — the exact MILP Δ-test over the
  parameter box Δ (PROPLACE Def. 7); ``robust`` is a proof.
* room for a sampled test (APΔS: a probabilistic statement about Δ from model samples; its
  ``params`` name the confidence it holds with) and for an input-perturbation test (the set is
  a ball around ``x`` instead of around θ). A new certifier subclasses :class:`Certifier`,
  implements ``certify`` and fills :class:`Certificates`; methods that loop "find a CE, test
  it" (MILP-R, Wacht-R, Proto-R, APΔS) take any certifier.

Contract (what a loop may rely on):

* ``status[i]`` is a :class:`CertStatus`. Only ``robust`` is a claim of robustness; ``timeout``,
  ``inconclusive`` and ``error`` are never robust.
* ``lower[i]``: a lower bound of the worst-case target margin over the set, as strong as the
  certifier's claim (NaN where it has none). ``upper[i]``: the target margin of a concrete
  member of the set (the evidence) — so ``margin(x) − upper[i]`` is how much the set can lower
  the margin at least (NaN where no member was evaluated).
* ``evidence[i]``: the witness (e.g. a :class:`~robustce.models.ReLUNetwork` in Δ that flips
  the prediction) or a summary of what was examined; None where there is none.
* ``time[i]``: seconds spent on row ``i``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from robustce.errors import ValidationError

__all__ = ["CertStatus", "Certificates", "Certifier"]


class CertStatus(StrEnum):
    """Outcome of a robustness test for one counterfactual. Only ``ROBUST`` is a claim.

    Examples
    --------
    >>> from robustce.robustness import CertStatus
    >>> [s.value for s in CertStatus]
    ['robust', 'not_robust', 'timeout', 'inconclusive', 'error']
    >>> CertStatus("timeout") is CertStatus.TIMEOUT, CertStatus.TIMEOUT == "timeout"
    (True, True)
    """

    ROBUST = "robust"
    NOT_ROBUST = "not_robust"  # with evidence (a member of the set that flips the prediction)
    TIMEOUT = "timeout"  # the test hit its time limit without deciding
    INCONCLUSIVE = "inconclusive"  # the worst case is within tolerance of 0, no flipping witness
    ERROR = "error"  # solver failure or unusable input row


@dataclass
class Certificates:
    """Per-row outcome of :meth:`Certifier.certify` (arrays of length n; see the module
    docstring for what each field promises).

    Attributes
    ----------
    status : :class:`CertStatus` value per row; only ``robust`` is a claim.
    lower : lower bound of the worst-case target margin over the set (NaN where none).
    upper : the target margin of a concrete member of the set (the evidence).
    evidence : per row, the witness (e.g. a network in Δ that flips the CE), a summary of what
        was examined, or None.
    time : seconds spent per row.
    target_class : the class tested per row.
    certifier : the certifier's name.
    params : what the test was run with (enough to re-check a claim, e.g. ``delta``, ``p``,
        ``biases``, ``solver``, ``tol``).
    columns : further per-row fields a certifier reports (e.g. the exact test's ``value``,
        ``decided_by``).

    Examples
    --------
    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> certs = rc.robustness.ExactDeltaCertifier(0.05).certify(net, X, 1)
    >>> [str(s) for s in certs.status], certs.robust
    (['robust', 'not_robust'], array([ True, False]))
    >>> certs.to_frame()[["status", "target_class", "decided_by"]]
           status  target_class decided_by
    0      robust             1   interval
    1  not_robust             1     attack
    >>> certs.certificate(1)["delta"]
    0.05
    """

    status: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    evidence: list[Any]
    time: np.ndarray
    target_class: np.ndarray
    certifier: str
    params: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.status)
        self.status = np.array([CertStatus(s) for s in self.status], dtype=object)
        self.lower = np.asarray(self.lower, dtype=np.float64).reshape(-1)
        self.upper = np.asarray(self.upper, dtype=np.float64).reshape(-1)
        self.time = np.asarray(self.time, dtype=np.float64).reshape(-1)
        self.target_class = np.asarray(self.target_class, dtype=np.int64).reshape(-1)
        self.evidence = list(self.evidence)
        sizes = {len(self.lower), len(self.upper), len(self.time), len(self.target_class),
                 len(self.evidence), *(len(v) for v in self.columns.values())}
        if sizes != {n}:
            raise ValidationError(f"Certificates: every per-row field needs {n} entries")

    def __len__(self) -> int:
        return len(self.status)

    @property
    def robust(self) -> np.ndarray:
        """True only where the certifier claims robustness."""
        return np.array([s is CertStatus.ROBUST for s in self.status], dtype=bool)

    @property
    def not_robust(self) -> np.ndarray:
        return np.array([s is CertStatus.NOT_ROBUST for s in self.status], dtype=bool)

    def certificate(self, i: int) -> dict[str, Any]:
        """Row ``i`` as one flat dict: the parameters, status, bounds, time and columns."""
        out: dict[str, Any] = {"certifier": self.certifier, **self.params,
                               "target_class": int(self.target_class[i]),
                               "status": str(self.status[i]), "lower": _num(self.lower[i]),
                               "upper": _num(self.upper[i]), "time": float(self.time[i])}
        for k, v in self.columns.items():
            val = v[i]
            out[k] = _num(val) if isinstance(val, float | np.floating) else val
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per counterfactual (the evidence objects are left out)."""
        return pd.DataFrame([self.certificate(i) for i in range(len(self))])


def _num(v: float) -> float | None:
    v = float(v)
    return None if math.isnan(v) else v


class Certifier(ABC):
    """A robustness test for counterfactuals of a ReLU network (see the module docstring).

    Subclasses set ``name``, implement :meth:`certify` and :meth:`params`. A certifier holds
    its own set (a shift Δ, a sample size, an input ball) and options; ``certify`` may be
    called many times (a method's loop calls it once per candidate).

    Examples
    --------
    Every certifier answers the same call; a method's robustness loop takes any of them:

    >>> import numpy as np
    >>> net = rc.models.ReLUNetwork([(np.array([[1.0, -1.0], [0.5, 1.0]]), np.zeros(2)),
    ...                              (np.array([[1.0, 1.0]]), np.array([-0.5]))])
    >>> X = np.array([[1.0, 0.0], [0.4, 0.0]])  # class-1 margins 1.0 and 0.1
    >>> for certifier in (rc.robustness.ExactDeltaCertifier(0.05),
    ...                   rc.robustness.APASCertifier(0.05, random_state=0)):
    ...     print(certifier.name, [str(s) for s in certifier.certify(net, X, 1).status])
    exact_delta ['robust', 'not_robust']
    apas ['robust', 'not_robust']
    >>> rc.robustness.ExactDeltaCertifier(0.05).to_dict()
    {'certifier': 'exact_delta', 'delta': 0.05, 'p': 'inf', 'biases': True, 'solver': 'highs',
     'time_limit': 10.0, 'tol': 1e-06}
    """

    name: ClassVar[str] = "certifier"

    @abstractmethod
    def certify(self, network: Any, X: np.ndarray, targets: Any, *,
                time_limit: float | None = None) -> Certificates:
        """Test every row of ``X`` (model space, shape (n, d)) for its target class
        (``targets``: one int, one per row, or None for the class ``network`` predicts).
        ``network``: a :class:`~robustce.models.ReLUNetwork` or a model with ``.network()``.
        ``time_limit``: seconds per row for this call, overriding the certifier's own."""

    def params(self) -> dict[str, Any]:
        """What the test runs with (JSON-able); copied into every certificate."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"certifier": self.name, **self.params()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"
