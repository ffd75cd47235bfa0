"""``FamilyCertifier``: robustness over a *finite* set of models — a retrained family.

Where no parameter box Δ describes how a model changes (gradient-boosted trees, forests: a
retrain moves splits, adds and drops trees), the shift a user cares about is "the next model
we train". A :class:`~robustce.models.families.ModelFamily` (seeds, row subsampling, added
data; :func:`~robustce.models.families.proplace_family`, :func:`seed_family`) is a sample of
those models, and this certifier tests a counterfactual against every one of them (and the
model it is given, unless ``include_model=False``):

* ``robust`` — every model of the set puts ``x`` in its target class with margin > ``tol``.
  The claim is exact *for this finite set* (each member is evaluated, nothing is sampled
  inside the test); it is not a claim about models outside it — validity after another
  retrain is estimated by measuring ``vr`` on a second, independent family.
* ``not_robust`` — some member gives another class; ``evidence[i]`` is the index of the
  member with the lowest target margin (0 is the given model when it is included).
* ``inconclusive`` — the lowest margin lies in ``[0, tol]``: no member flips ``x``, but one is
  within tolerance of doing so.

``lower[i]`` = ``upper[i]`` = the lowest target margin over the set (each model's own
``margin``: logit units for boosters and networks, log-odds of the probabilities for
scikit-learn trees and forests). It works for any robustce model (``predict``/``margin``)
and for a :class:`~robustce.models.ReLUNetwork` as the given model, so methods that take a
``certifier`` — :class:`~robustce.methods.RobustNearestNeighbour` on boosters foremost — use
it unchanged.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from robustce.errors import ValidationError
from robustce.models.network import ReLUNetwork, class_margin, resolve_targets
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.validation import check_bool, check_number

__all__ = ["FamilyCertifier"]


def _margins(model: Any, X: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The target margin of ``model`` at every row (one target per row)."""
    if isinstance(model, ReLUNetwork):
        return class_margin(model.forward(X), targets)
    z = np.asarray(model.logits(model.encode(X)), dtype=np.float64)
    return class_margin(z, targets)


class FamilyCertifier(Certifier):
    """Validity under every model of a finite family (see the module docstring).

    Parameters
    ----------
    family : a :class:`~robustce.models.families.ModelFamily` or any non-empty sequence of
        robustce models over the same model space as the rows tested.
    include_model : whether the model given to :meth:`certify` is part of the set
        (default True).
    tol : a row is ``robust`` only when its lowest margin is > ``tol`` (≥ 0).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> others = [rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=s).fit(train)
    ...           for s in (1, 2)]
    >>> rejected = test.frame[model.predict(test.frame) == 0].head(3)
    >>> res = rc.methods.MILPNearest(model, train).explain(rejected)
    >>> certs = rc.robustness.FamilyCertifier(others).certify(model, res.counterfactuals_encoded, 1)
    >>> [str(s) for s in certs.status]  # nearest CEs sit on the boundary: fragile
    ['not_robust', 'not_robust', 'not_robust']
    >>> certs.columns["valid_fraction"].round(2)  # share of the 3 models accepting each CE
    array([0.67, 0.33, 0.67])
    """

    name: ClassVar[str] = "family"

    def __init__(self, family: Any, *, include_model: bool = True, tol: float = 0.0):
        if not (hasattr(family, "models") or isinstance(family, list | tuple)):
            raise ValidationError(f"family must be a ModelFamily or a list of robustce models, "
                                  f"got {type(family).__name__}")
        models = list(getattr(family, "models", family))
        if not models:
            raise ValidationError("FamilyCertifier needs a non-empty family of models")
        for m in models:
            if not (callable(getattr(m, "logits", None)) and callable(getattr(m, "encode", None))):
                raise ValidationError(
                    f"FamilyCertifier: every family member must be a robustce model "
                    f"(logits, encode), got {type(m).__name__}")
        self.family = family
        self.models = models
        self.include_model = bool(check_bool(include_model, "include_model"))
        self.tol = float(check_number(tol, "tol", low=0))
        self.protocol = str(getattr(family, "protocol", "models"))

    def params(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "n_models": len(self.models),
                "include_model": self.include_model, "tol": self.tol}

    def certify(self, network: Any, X: Any, targets: Any, *,
                time_limit: float | None = None) -> Certificates:
        """Test every row of ``X`` (model space) against the family (and ``network``, the
        model the CEs are for, when ``include_model``). ``targets``: one class, one per row,
        or None (the class ``network`` predicts). ``time_limit`` is not used (no solver)."""
        t0 = time.perf_counter()
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        n = len(X)
        if targets is None:
            if network is None:
                raise ValidationError("targets=None needs the model (its prediction is the target)")
            z = (network.forward(X) if isinstance(network, ReLUNetwork)
                 else network.logits(network.encode(X)))
            z = np.asarray(z, dtype=np.float64)
            t = (z[:, 0] > 0).astype(np.int64) if z.shape[1] == 1 else np.argmax(z, axis=1)
        else:
            t = resolve_targets(targets, n)
        members = ([network] if self.include_model and network is not None else []) + self.models
        if n == 0:
            M = np.zeros((len(members), 0))
        else:
            M = np.stack([_margins(m, X, t) for m in members])
        lowest = M.min(axis=0) if n else np.zeros(0)
        worst = M.argmin(axis=0) if n else np.zeros(0, dtype=np.int64)
        status = np.where(lowest > self.tol, CertStatus.ROBUST,
                          np.where(lowest < 0, CertStatus.NOT_ROBUST, CertStatus.INCONCLUSIVE))
        per_row = (time.perf_counter() - t0) / max(n, 1)
        return Certificates(
            status=status, lower=lowest, upper=lowest,
            evidence=[int(w) for w in worst], time=np.full(n, per_row), target_class=t,
            certifier=self.name, params=self.params(),
            columns={"worst_model": np.asarray(worst, dtype=np.int64),
                     "valid_fraction": (M > 0).mean(axis=0) if n else np.zeros(0)})
