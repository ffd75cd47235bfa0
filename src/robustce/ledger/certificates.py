"""A promise's certificate, as the ledger keeps it: its kind, the parameters it was computed
with, and its verdict.

=================  ===============================================  =========================
kind               what was claimed                                  parameters
=================  ===============================================  =========================
``delta``          Δ-robust: valid for every model with each         delta, p (and the
                   weight and bias within ±δ (exact MILP test)       worst-case margin)
``delta_epsilon``  valid for every tree ensemble whose thresholds    delta, epsilon
                   move by δ and leaf values by ε
``apas``           probably robust (APΔS): with confidence α, a      delta, p, alpha, R, n
                   share R of the models in Δ keep the class         (and delta_max)
``none``           valid under the issuing model only (a forward     —
                   pass at issue)
=================  ===============================================  =========================

The verdict is the test's status (``robust``, ``not_robust``, ``timeout``, ...; for a notice
option ``proven`` / its exact test's status).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from robustce.errors import ValidationError

__all__ = ["CERTIFICATE_KINDS", "certificate_of", "checked_certificate"]

CERTIFICATE_KINDS = ("delta", "delta_epsilon", "apas", "none")
_PARAMS = {
    "apas": ("delta", "p", "alpha", "R", "n", "delta_max"),
    "delta_epsilon": ("delta", "epsilon", "worst_case_margin"),
    "delta": ("delta", "p", "worst_case_margin"),
}


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return not (isinstance(value, str) and not value)


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") and not isinstance(value, str) else value


def certificate_of(method_certificate: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ledger's certificate of an option from its method's certificate columns.

    Parameters
    ----------
    method_certificate : one query's row of
        :attr:`Explanations.certificates <robustce.explanations.Explanations.certificates>`
        (column: value); None for a method without certificate columns.

    Returns
    -------
    dict
        ``kind`` (one of :data:`CERTIFICATE_KINDS`), the parameters of the claim and
        ``verdict``; ``{"kind": "none"}`` when the method claims no robustness.

    Examples
    --------
    >>> certificate_of({"distance": 0.3, "delta": 0.02, "p": "inf", "delta_status": "robust",
    ...                 "worst_case_margin": 0.1})
    {'kind': 'delta', 'delta': 0.02, 'p': 'inf', 'worst_case_margin': 0.1, 'verdict': 'robust'}
    >>> certificate_of({"distance": 0.3, "training_index": 12})
    {'kind': 'none'}
    """
    c = {k: _plain(v) for k, v in (method_certificate or {}).items() if _present(v)}
    if "alpha" in c and "R" in c:
        kind = "apas"
    elif "epsilon" in c and "delta" in c:
        kind = "delta_epsilon"
    elif "delta" in c:
        kind = "delta"
    else:
        return {"kind": "none"}
    out: dict[str, Any] = {"kind": kind}
    out.update({k: c[k] for k in _PARAMS[kind] if k in c})
    if "delta_status" in c:
        out["verdict"] = str(c["delta_status"])
    elif "worst_case_margin" in c:  # PROPLACE: a found CE is proven, its margin says so
        out["verdict"] = "robust" if float(c["worst_case_margin"]) >= 0 else "not_robust"
    else:
        out["verdict"] = "unknown"
    return out


def checked_certificate(certificate: Mapping[str, Any] | None) -> dict[str, Any]:
    """A caller's certificate dict, checked: ``kind`` one of :data:`CERTIFICATE_KINDS`
    (default ``none``), JSON-ready values."""
    if certificate is None:
        return {"kind": "none"}
    out = {str(k): _plain(v) for k, v in certificate.items()}
    kind = out.setdefault("kind", "none")
    if kind not in CERTIFICATE_KINDS:
        raise ValidationError(f"certificate kind {kind!r} is not one of {CERTIFICATE_KINDS}")
    return out
