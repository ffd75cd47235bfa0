"""Honour rates by key (method, certificate kind, group level, age), streamed over partitions
with Poisson-bootstrap intervals — the audit's approach (:mod:`robustce.audits.groups`): each
promise gets an independent Poisson(1) weight per replicate, seeded by the check's seed, the
partition and the row's position, so the sums are accumulated partition by partition in
memory O(replicates × keys), and the 95 % percentile interval of a rate always contains it
(the audit's rule; not imported from it, which would load the audit's models and solvers).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from robustce.utils import percentile_interval

__all__ = ["RateAccumulator"]


class RateAccumulator:
    """Sums of honoured promises and of promises per (dimension, label), with ``n_boot``
    Poisson replicates.

    Examples
    --------
    >>> import numpy as np
    >>> acc = RateAccumulator(n_boot=100, seed=0)
    >>> acc.add({"method": np.array(["a", "a", "b", "b"])}, np.array([True, False, True, True]), 0)
    >>> {k: (v["n"], v["honoured"], v["honour_rate"]) for k, v in acc.result("method").items()}
    {'a': (2, 1, 0.5), 'b': (2, 2, 1.0)}
    """

    def __init__(self, n_boot: int, seed: int):
        self.n_boot = int(n_boot)
        self.seed = int(seed)
        self.num: dict[tuple[str, str], np.ndarray] = {}
        self.den: dict[tuple[str, str], np.ndarray] = {}

    def add(self, labels: dict[str, np.ndarray], honoured: np.ndarray, index: int) -> None:
        """One partition: per dimension, each row's label; whether each row is honoured."""
        n = len(honoured)
        if n == 0:
            return
        rng = np.random.default_rng([self.seed, int(index), 11])
        W = np.vstack([np.ones((1, n)), rng.poisson(1.0, (self.n_boot, n))])  # (1+B, n)
        Wh = W * np.asarray(honoured, dtype=float)[None, :]
        for dim, values in labels.items():
            levels, inverse = np.unique(np.asarray(values).astype(str), return_inverse=True)
            onehot = sparse.csr_matrix((np.ones(n), (np.arange(n), inverse.ravel())),
                                       shape=(n, len(levels)))
            num = np.asarray(onehot.T @ Wh.T)  # (levels, 1+B)
            den = np.asarray(onehot.T @ W.T)
            for j, level in enumerate(levels):
                key = (dim, str(level))
                if key in self.num:
                    self.num[key] += num[j]
                    self.den[key] += den[j]
                else:
                    self.num[key], self.den[key] = num[j].copy(), den[j].copy()

    def result(self, dim: str) -> dict[str, dict[str, Any]]:
        """Per label of ``dim``: n, honoured, honour_rate and its 95 % interval ``ci``."""
        out = {}
        for (d, level) in sorted(self.num):
            if d != dim:
                continue
            num, den = self.num[(d, level)], self.den[(d, level)]
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = num / den
            lo, hi = percentile_interval(ratio[1:], ratio[0])
            out[level] = {"n": int(round(den[0])), "honoured": int(round(num[0])),
                          "honour_rate": float(ratio[0]) if den[0] else None,
                          "ci": [None if np.isnan(lo) else lo, None if np.isnan(hi) else hi]}
        return out
