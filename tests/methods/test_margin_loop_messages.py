"""A margin-loop query that stops on a search timeout says where the search stood (the last
tested margin and its worst case), so a deep network's give-up is explained (issue 33)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from robustce.methods.margin_loop import Candidate, run_margin_loop
from robustce.models.network import ReLUNetwork
from robustce.robustness.certifier import CertStatus


def test_search_timeout_after_round_one_reports_the_last_test():
    net = ReLUNetwork([(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([0.0]))])
    calls = []

    def find(rows, taus, remaining):
        calls.append(float(taus[0]))
        if len(calls) == 1:
            return [Candidate("found", np.array([0.5]), "", {})]
        return [Candidate("timeout", None, "Time limit reached", {})]

    class Cert:
        def certify(self, network, X, targets, time_limit=None):
            return SimpleNamespace(status=np.array([CertStatus.NOT_ROBUST.value]),
                                   lower=np.array([-1.0]), upper=np.array([-0.25]))

    (r,) = run_margin_loop(find, Cert(), net, np.array([[0.0]]), np.array([1]), tau=0.1,
                           growth=2.0, slack=0.05, bisect_tol=1e-3, max_rounds=5, time_limit=10)
    assert r.status == "timeout"
    assert r.message.startswith("Time limit reached; round 2 at margin")
    assert "last tested: round 1: margin 0.5, worst case in Δ -0.25 (not_robust)" in r.message
