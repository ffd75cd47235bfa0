"""Recourse metrics by group with bootstrap confidence intervals, streamed over partitions.

Per group (each level of each group column) and metric, a ratio ``Σ num / Σ den`` over the
group's declined applicants:

=================  ===========================================  ============================
metric             value                                        over
=================  ===========================================  ============================
coverage           share with a counterfactual found            declined applicants
cost_l1_model      mean ℓ1 of the CE in model space [0,1]^d     those with a CE
burden             mean normalised raw ℓ1 (Σ_j δ_j, MACE's       those with a CE
                   per-feature distance) — CERTIFAI's burden
                   (Sharma et al. 2020)
n_changed          mean number of changed features              those with a CE
validity           share the model accepts (forward pass)       those with a CE
vr                 mean robust validity over the family         those with a CE
delta_validity     share proven Δ-robust                        those with a CE
=================  ===========================================  ============================

The *gap* of a group is its value minus the reference group's (the largest group of the
column). The *recourse-fairness gap* of a column is the largest minus the smallest group mean
of ``burden`` — the group-level "equal recourse" criterion of Gupta et al. (2019) and the
(non-causal) group-level fairness of recourse of von Kügelgen et al. (2022).

Confidence intervals: the Poisson bootstrap (each row gets an independent Poisson(1) weight
per replicate, seeded by partition and row position), which can be accumulated partition by
partition with memory O(replicates × groups) — no per-row results are kept — and is
identical for every backend and partition order. Percentile intervals (2.5 %, 97.5 %). Groups
with fewer than ``min_group`` declined applicants are reported (``too_few``) but get no
gap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from robustce.utils import percentile_interval

__all__ = ["METRICS", "GroupAccumulator"]

# metric -> (numerator column or None for 1, denominator: "all" or "found")
METRICS: dict[str, tuple[str | None, str]] = {
    "coverage": ("found", "all"),
    "cost_l1_model": ("cost_l1_model", "found"),
    "burden": ("cost_l1_raw", "found"),
    "n_changed": ("n_changed", "found"),
    "validity": ("valid", "found"),
    "vr": ("vr", "found"),
    "delta_validity": ("delta_valid", "found"),
}


class GroupAccumulator:
    """Streaming sums for :data:`METRICS` by group, with ``n_boot`` Poisson replicates.

    Parameters
    ----------
    groups : group column names.
    n_boot : bootstrap replicates.
    seed : the audit's seed (replicate weights are seeded by seed, partition and row).
    hist_bins : bin edges of the cost histograms kept per group (for the report's plots).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from robustce.audits import GroupAccumulator
    >>> rows = pd.DataFrame({  # per declined applicant, as an audit's partitions hold them
    ...     "sex": ["F", "F", "F", "M", "M", "M"], "found": [True, True, False, True, True, True],
    ...     "cost_l1_model": [1.0, 3.0, np.nan, 1.0, 1.0, 2.0],
    ...     "cost_l1_raw": [0.5, 1.5, np.nan, 0.2, 0.4, 0.6], "n_changed": [1, 2, np.nan, 1, 1, 1],
    ...     "valid": [1.0, 1.0, np.nan, 1.0, 1.0, 1.0], "vr": np.nan, "delta_valid": np.nan})
    >>> acc = GroupAccumulator(["sex"], n_boot=50, seed=0, hist_bins=np.linspace(0, 2, 5))
    >>> acc.add(rows.iloc[:4], 0)  # partition by partition
    >>> acc.add(rows.iloc[4:], 1)
    >>> t = acc.table(min_group=1).set_index(["level", "metric"])  # gaps: to the reference M
    >>> t.loc[[("F", "coverage"), ("M", "coverage"), ("F", "burden")], ["value", "gap"]].round(3)
                    value    gap
    level metric
    F     coverage  0.667 -0.333
    M     coverage  1.000    NaN
    F     burden    1.000  0.600
    """

    def __init__(self, groups: list[str], n_boot: int, seed: int, hist_bins: np.ndarray):
        self.groups = list(groups)
        self.n_boot = int(n_boot)
        self.seed = int(seed)
        self.bins = np.asarray(hist_bins, dtype=float)
        # (column, level) -> arrays of shape (n_metrics, 1 + n_boot)
        self.num: dict[tuple[str, str], np.ndarray] = {}
        self.den: dict[tuple[str, str], np.ndarray] = {}
        self.count: dict[tuple[str, str], int] = {}
        self.hist: dict[tuple[str, str], np.ndarray] = {}
        self.measured = {m: False for m in METRICS}

    def add(self, part: pd.DataFrame, index: int) -> None:
        """Accumulate one partition's per-applicant rows (the output of
        :func:`~robustce.audits.recourse.run_partition`)."""
        n = len(part)
        if n == 0:
            return
        rng = np.random.default_rng([self.seed, index, 7])
        W = np.vstack([np.ones((1, n)), rng.poisson(1.0, (self.n_boot, n))])  # (1+B, n)
        found = part["found"].to_numpy(dtype=float)
        nums, dens = [], []
        for m, (col, over) in METRICS.items():
            v = part[col].to_numpy(dtype=float)
            present = found.astype(bool) & ~np.isnan(v) if over == "found" else np.ones(n, bool)
            if over == "found" and present.any():
                self.measured[m] = True
            if over == "all":
                self.measured[m] = True
            nums.append(np.where(present, np.nan_to_num(v), 0.0))
            dens.append(present.astype(float))
        N, D = np.vstack(nums), np.vstack(dens)  # (n_metrics, n)
        cost = part["cost_l1_raw"].to_numpy(dtype=float)
        for g in self.groups:
            labels = part[g].astype(str).to_numpy()
            for level in np.unique(labels):
                sel = labels == level
                key = (g, str(level))
                num = N[:, sel] @ W[:, sel].T
                den = D[:, sel] @ W[:, sel].T
                if key in self.num:
                    self.num[key] += num
                    self.den[key] += den
                    self.count[key] += int(sel.sum())
                    self.hist[key] += np.histogram(cost[sel & (found > 0)], self.bins)[0]
                else:
                    self.num[key], self.den[key] = num, den
                    self.count[key] = int(sel.sum())
                    self.hist[key] = np.histogram(cost[sel & (found > 0)], self.bins)[0]

    def table(self, min_group: int = 30) -> pd.DataFrame:
        """One row per (group column, level, metric): n, value, CI, gap to the reference
        group with its CI, and whether the group is too small to compare."""
        rows: list[dict[str, Any]] = []
        names = list(METRICS)
        for g in self.groups:
            levels = sorted(lv for (c, lv) in self.count if c == g)
            if not levels:
                continue
            ref = max(levels, key=lambda lv: (self.count[(g, lv)], lv))
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = {lv: self.num[(g, lv)] / self.den[(g, lv)] for lv in levels}
            for lv in levels:
                too_few = self.count[(g, lv)] < min_group
                for i, m in enumerate(names):
                    if not self.measured[m]:
                        continue
                    r = ratio[lv][i]
                    lo, hi = percentile_interval(r[1:], r[0])
                    row = {"group": g, "level": lv, "n_declined": self.count[(g, lv)],
                           "metric": m, "value": r[0], "ci_low": lo, "ci_high": hi,
                           "reference": ref, "too_few": too_few,
                           "gap": np.nan, "gap_low": np.nan, "gap_high": np.nan}
                    if not too_few and lv != ref:
                        d = r - ratio[ref][i]
                        row["gap"] = d[0]
                        row["gap_low"], row["gap_high"] = percentile_interval(d[1:], d[0])
                    rows.append(row)
        return pd.DataFrame(rows)

    def fairness_gaps(self, min_group: int = 30) -> pd.DataFrame:
        """Per group column: the recourse-fairness gap (max − min group burden, over groups
        with at least ``min_group`` declined) with its bootstrap CI, and the coverage gap.

        ``highest`` and ``lowest`` name the groups at the top and the bottom ("A and B (tie)"
        where several share it); ``compared`` names the pair the CI is about: the same two
        groups in every replicate, so the CI is the bootstrap distribution of the value's own
        statistic (the max − min of each replicate, a different statistic, lies above the
        value by construction: a tie of 0 got a CI above 0). A CI reaching below 0 says the
        order of the two groups is not settled."""
        rows = []
        for g in self.groups:
            levels = sorted(lv for (c, lv) in self.count
                            if c == g and self.count[(c, lv)] >= min_group)
            if len(levels) < 2:
                continue
            for m in ("burden", "coverage"):
                i = list(METRICS).index(m)
                with np.errstate(invalid="ignore", divide="ignore"):
                    R = np.vstack([self.num[(g, lv)][i] / self.den[(g, lv)][i] for lv in levels])
                point = R[:, 0]
                if not np.isfinite(point).any():
                    continue
                top = _tied(point, np.nanmax(point))
                bottom = _tied(point, np.nanmin(point))
                high = top[0]
                others = [k for k in bottom if k != high]  # all tied: another of them
                if not others:  # one group measured: no spread
                    continue
                low = others[0]
                d = R[high] - R[low]
                lo, hi = percentile_interval(d[1:], d[0])
                rows.append({"group": g, "measure": f"{m}_spread", "value": d[0],
                             "ci_low": lo, "ci_high": hi,
                             "highest": _names(levels, top), "lowest": _names(levels, bottom),
                             "compared": f"{levels[high]} − {levels[low]}"})
        return pd.DataFrame(rows)


def _tied(values: np.ndarray, target: float) -> list[int]:
    """Positions of ``values`` equal to ``target`` (to rounding)."""
    return [k for k, v in enumerate(values) if np.isfinite(v) and abs(v - target) <= 1e-12]


def _names(levels: list[str], positions: list[int]) -> str:
    """One group's name, or "A and B (tie)" / "A, B and C (tie)"."""
    names = [levels[k] for k in positions]
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + f" and {names[-1]} (tie)"
