"""Robustness of counterfactuals under model shifts: the shift set Δ and its sampled view
(``shift``), the certifier protocol (``certifier``), the exact Δ-test (``exact``: public face;
``delta_milp``: the MILP engine; ``attack``: the weight attack), the largest provable δ
(``maxdelta``), exact enumeration of Δ by interval splitting (``enumeration``) and validity
over a finite family of retrained models (``family``: any model kind, boosters included), and
the (δ, α) certificate from the user's own retrain procedure (``retrain``: any model, black
boxes included — a statistical claim from sampled retrains).

Every robustness claim here is proven over all of Δ (``enumerate_delta`` reports proven volume
fractions) except APΔS's (``apas``: public face; ``apas_sampling``, ``apas_fast``: its
engines): a sampled test whose claim is probabilistic — with confidence α, a fraction ≥ R of Δ
keeps the class. The network views (``IntervalNetwork``,
``as_network``, ``empirical_delta``) live in :mod:`robustce.models.network` and are re-exported here.
"""

from robustce.models.network import IntervalNetwork, as_network, empirical_delta
from robustce.robustness.apas import (
    APASCertifier,
    APASMaxDeltaResult,
    APASResult,
    apas_certify,
    apas_max_delta,
    apas_sample_size,
)
from robustce.robustness.certifier import Certificates, Certifier, CertStatus
from robustce.robustness.ensemble import (
    EnsembleCertifier,
    EnsembleShift,
    ensemble_worst_case,
)
from robustce.robustness.enumeration import EnumerationResult, enumerate_delta
from robustce.robustness.exact import (
    DeltaStatus,
    ExactDeltaCertifier,
    ExactResult,
    exact_worst_case,
    is_delta_robust,
)
from robustce.robustness.family import FamilyCertifier
from robustce.robustness.maxdelta import MaxDeltaResult, max_provable_delta
from robustce.robustness.retrain import (
    RetrainCertificates,
    RetrainCertifier,
    certify_retrain,
    share_bounds,
)
from robustce.robustness.shift import ParameterShift, SampledNetworks

__all__ = [
    "APASCertifier",
    "APASMaxDeltaResult",
    "APASResult",
    "CertStatus",
    "Certificates",
    "Certifier",
    "DeltaStatus",
    "EnsembleCertifier",
    "EnsembleShift",
    "EnumerationResult",
    "ExactDeltaCertifier",
    "ExactResult",
    "FamilyCertifier",
    "IntervalNetwork",
    "MaxDeltaResult",
    "ParameterShift",
    "RetrainCertificates",
    "RetrainCertifier",
    "SampledNetworks",
    "apas_certify",
    "apas_max_delta",
    "apas_sample_size",
    "certify_retrain",
    "as_network",
    "empirical_delta",
    "ensemble_worst_case",
    "enumerate_delta",
    "exact_worst_case",
    "is_delta_robust",
    "max_provable_delta",
    "share_bounds",
]
