"""Planted-bug (mutation) check: does the test suite catch the bugs that matter?

Each mutant is one small, plausible bug in a place a user relies on (a flipped comparison, a
dropped constraint, a skipped projection, a loosened acceptance test, a non-atomic write): the
foundation (files, the Explainer base, the exact Δ-test, interval bounds, the MILP methods),
every method that issues a certificate or a guarantee (PROPLACE, APΔS, DiverseRobust, MACE,
RoCourseNet's attacker, ROAR, RobX), the scikit-learn / torch / booster import folds and,
since issue 47, the service (auth, limits, client parameters, records, audit log and trail,
kept answers, the job store; security headers, /docs, the lifeline, job resume; the body
limits, the launcher, ``--solver-nodes``, the retry key, the served hash, the pool and the
worker's answers), notices, audits (and their execution and report files), dataset
constraints (relations, compiled rows, conditionals) and constraints in the exact methods,
EnsembleShift's ε, ActionableRecourse's grid bound and MACE's z3 determinism. For each, the
script copies this checkout's ``src/`` to a temporary folder, applies the edit there (the
working tree is never written), runs the tests that guard that place with the mutated copy
first on ``PYTHONPATH``, and records whether the suite failed ("killed") or passed. The
servers the service tests start run the copy too: ``tests/serve/conftest.py`` puts the
``src`` of the robustce the tests import (not this checkout's) first on their PYTHONPATH.

**Reached vs survived.** The mutated copy also imports a marker module just before the
statement holding the first mutated line; that import touches a file named by an environment
variable (inherited by subprocesses and joblib workers). A mutant whose tests pass *and* never
executed that statement is reported ``UNREACHED`` (the tests do not look there), not
``SURVIVED`` (they look and miss the bug).

**Drift.** Mutants are textual replacements anchored on short snippets. When a snippet is no
longer in its file (the code moved, e.g. after a merge) the mutant is reported as
``PATTERN NOT FOUND`` (``PATTERN AMBIGUOUS`` when it occurs twice) and the run goes on;
``--check`` lists such mutants without running any test.

    make mutants                             # all mutants, their guarding tests
    python tools/mutants.py -k proplace      # only mutants whose name contains "proplace"
    python tools/mutants.py --list | --check
    python tools/mutants.py --markdown t.md  # also write the result table

The last full run is recorded in ``docs/mutation.md``; a surviving mutant that changes a
certificate, a status, a saved file or a returned CE's validity is a gap in the tests.
**Markers.** A mutant's listed tests run whatever their marker: the run passes
``-m 'slow or not slow'``, which replaces the project's addopts ``-m 'not slow'`` (that one
would silently deselect a guarding test marked ``slow``, and a selection of only such tests
would "collect nothing" instead of running).

Not part of CI (each mutant reruns a slice of the suite: minutes in all); CI runs only the
drift check, ``tests/test_mutants_tool.py``.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # relative to src/robustce
    old: str
    new: str
    tests: tuple[str, ...]  # files or node ids, as narrow as sound
    why: str  # what would go wrong for a user


#: MACE's guards: certificates bracketing a brute-force optimum; infeasible is a proof
MACE_BRACKET = "tests/methods/test_mace.py::test_trees_bounds_bracket_the_brute_force_optimum"
MACE_INFEASIBLE = "tests/methods/test_mace.py::test_infeasible_is_a_proof"
MACE_WORK = ("tests/methods/test_mace_determinism.py::"
             "test_a_spent_work_budget_is_a_timeout_not_a_certificate")

MUTANTS: tuple[Mutant, ...] = (
    # --- files ---------------------------------------------------------------------------
    Mutant("atomic_write_in_place", "utils.py",
           """    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")""",
           """    fd, tmp = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), str(path)""",
           ("tests/test_atomic_writes.py", "tests/test_utils.py"),
           "a crash mid-write leaves a half-written result file"),
    Mutant("replace_dir_deletes_first", "utils.py",
           """    backup = temp_dir_beside(path, "old")""",
           """    shutil.rmtree(path)
    os.replace(tmp, path)
    return
    backup = temp_dir_beside(path, "old")""",
           ("tests/test_utils.py", "tests/test_atomic_writes.py"),
           "a failed rename loses the previous saved directory"),
    Mutant("explanations_8_digits", "explanations.py",
           """tmp / "counterfactuals.csv", index=False, float_format="%.17g")""",
           """tmp / "counterfactuals.csv", index=False, float_format="%.8g")""",
           ("tests/test_saved_precision.py", "tests/test_explanations.py"),
           "reloaded CEs differ from the certified ones"),
    Mutant("load_skips_count_check", "explanations.py",
           """        if not np.array_equal(counts, have):""",
           """        if False:""",
           ("tests/test_explanations_corrupt.py",),
           "a file truncated at a line boundary silently loses CEs"),
    # --- the Explainer base (methods/revalidation.py: its CE checks) -------------------
    Mutant("base_skips_projection", "methods/revalidation.py",
           """cfs = self.encoder.project(np.vstack(""",
           """cfs = (np.vstack(""",
           ("tests/methods/test_revalidation.py", "tests/methods/test_base.py"),
           "off-grid CEs (half a category) reach the user"),
    Mutant("base_skips_forward_pass", "methods/revalidation.py",
           """        ok = np.all(pred == targets[None, :], axis=0)""",
           """        ok = np.ones(len(E), dtype=bool)""",
           ("tests/methods/test_revalidation.py", "tests/methods/test_base.py",
            "tests/methods/test_roundtrip.py"),
           "an invalid CE is returned as found"),
    Mutant("base_skips_user_model", "methods/revalidation.py",
           """                ok[ok] = own == targets[ok]""",
           """                pass""",
           ("tests/methods/test_roundtrip.py",),
           "a CE the user's own pipeline or module rejects is returned as found"),
    Mutant("encode_decoded_skips_dtype", "data/encoder.py",
           """_scaled(restored.astype(np.float64), float(f.lower),""",
           """_scaled(np.asarray(v, dtype=np.float64), float(f.lower),""",
           ("tests/data/test_encode_decoded.py",),
           "the round trip stores a CE whose float32 column the user receives rounded: E is not "
           "the encoding of the raw row"),
    Mutant("explanations_reuse_misaligned", "methods/revalidation.py",
           """else (cfs[keep], raw.iloc[np.flatnonzero(keep)]))""",
           """else (cfs[keep], raw.iloc[np.flatnonzero(keep)[::-1]]))""",
           ("tests/methods/test_roundtrip.py",),
           "the raw CEs a user receives belong to other queries (the round trip's decoded rows "
           "reused out of order)"),
    Mutant("tree_split_margin_zero", "models/trees.py",
           """        return np.where(self.continuous[cols], m, 0.0)""",
           """        return np.zeros(np.broadcast(cols, t).shape)""",
           ("tests/methods/test_roundtrip.py",),
           "tree CEs sit exactly on a split threshold and decode to the other leaf"),
    Mutant("base_skips_actionability", "methods/revalidation.py",
           """        keep = valid & act""",
           """        keep = valid""",
           ("tests/methods/test_base.py",),
           "a CE that changes an immutable feature is returned"),
    # --- the exact Δ-test ----------------------------------------------------------------
    Mutant("delta_incumbent_as_bound", "robustness/delta_milp.py",
           """                b = max(res.bound, term_lb) if math.isfinite(res.bound) else term_lb""",
           """                b = res.objective if res.has_solution else term_lb""",
           ("tests/robustness/test_exact_honesty.py", "tests/robustness/test_exact.py"),
           "a timed-out MILP's incumbent (an upper bound) is taken as a proof: unproven 'robust'"),
    Mutant("delta_tolerance_band", "robustness/exact.py",
           """            elif lower[i] >= tol:""",
           """            elif lower[i] >= -tol:""",
           ("tests/robustness/test_exact_honesty.py", "tests/robustness/test_exact.py"),
           "a worst case in [-tol, tol) is called robust"),
    Mutant("interval_precheck_nonstrict", "robustness/exact.py",
           """        rob = todo & (lower_iv > 0)""",
           """        rob = todo & (lower_iv > -1e-3)""",
           ("tests/robustness/test_exact.py", "tests/robustness/test_exact_honesty.py"),
           "the interval pre-check calls slightly negative lower bounds robust"),
    Mutant("attack_witness_unchecked", "robustness/exact.py",
           """                if flips:
                    status[i], decided[i], witness[i] = DeltaStatus.NOT_ROBUST, "attack", cand""",
           """                if True:
                    status[i], decided[i], witness[i] = DeltaStatus.NOT_ROBUST, "attack", cand""",
           ("tests/robustness/test_exact.py",),
           "an attack that did not flip the CE is reported as a counterexample"),
    Mutant("interval_negative_inputs_unsound", "models/network.py",
           """        return xp @ Wl.T + xn @ Wu.T, xp @ Wu.T + xn @ Wl.T""",
           """        return xp @ Wl.T + xn @ Wl.T, xp @ Wu.T + xn @ Wu.T""",
           ("tests/robustness/test_shift.py", "tests/models/test_network.py"),
           "interval bounds for negative inputs are not sound (RobustX's bug)"),
    Mutant("interval_relu_dropped", "models/network.py",
           """                lo, hi = np.maximum(plo, 0.0), np.maximum(phi, 0.0)""",
           """                lo, hi = plo, phi""",
           ("tests/robustness/test_shift.py", "tests/models/test_network.py"),
           "interval propagation forgets the ReLU"),
    # --- MILP methods ----------------------------------------------------------------------
    Mutant("milp_nearest_no_margin", "nearest/network.py",
           """m.add_constrs_coo([0], [y[0]], [1.0], 1, tau, np.inf)""",
           """m.add_constrs_coo([0], [y[0]], [1.0], 1, -np.inf, np.inf)""",
           ("tests/methods/test_milp_methods.py",),
           "the nearest-CE MILP ignores validity"),
    Mutant("milp_robust_accepts_undecided", "methods/margin_loop.py",
           """            if status is CertStatus.ROBUST:
                s.cert["worst_case_margin"]""",
           """            if status in (CertStatus.ROBUST, CertStatus.TIMEOUT, CertStatus.INCONCLUSIVE):
                s.cert["worst_case_margin"]""",
           ("tests/methods/test_milp_methods.py",),
           "MILP-R returns a CE whose Δ-test timed out as Δ-robust"),
    Mutant("milp_robust_no_raise", "methods/margin_loop.py",
           """            if status is not CertStatus.NOT_ROBUST:
                s.undecided += 1""",
           """            if status is not CertStatus.NOT_ROBUST:
                s.undecided += 1
            s.result = QueryResult("found", cfs[j][None], s.cert)
            continue""",
           ("tests/methods/test_milp_methods.py",),
           "MILP-R returns the first (non-robust) CE"),
    Mutant("margin_loop_first_witness", "methods/margin_loop.py",
           """                                   worst_case=True,""",
           """                                   exact_value=True,""",
           ("tests/methods/test_margin_exact_drop.py",),
           "the margin loop raises τ by the first flipping network's drop, not the exact one"),
    Mutant("milp_robust_minimal_keeps_the_first", "methods/margin_loop.py",
           """            if here[0] <= ref.best[0]:
                ref.best = here""",
           """            if False:
                ref.best = here""",
           ("tests/methods/test_milp_methods.py",),
           "the margin refinement returns the first Δ-robust CE, not the nearest it proved"),
    Mutant("milp_robust_refinement_returns_an_unproven_ce", "methods/margin_loop.py",
           "                s.result = refine_not_robust(s, worst, lo_cost(int(i), cfs[j], "
           "s.schedule.tau))",
           """                s.result = robust_found(s, int(i), cfs[j], 1e-3)""",
           ("tests/methods/test_milp_methods.py",),
           "a refinement round's CE that the Δ-test did not prove is returned as Δ-robust"),
    Mutant("milp_robust_margin_gap_understated", "methods/margin_loop.py",
           """        cert = dict(cert, rounds=s.rnd, margin_gap=ref.hi - ref.lo)""",
           """        cert = dict(cert, rounds=s.rnd, margin_gap=0.0)""",
           ("tests/methods/test_milp_methods.py",),
           "the certificate's margin_gap claims the returned margin is the smallest robust one"),
    # --- PROPLACE (methods/proplace.py) ----------------------------------------------------
    Mutant("proplace_accepts_near_robust", "methods/proplace.py",
           """            if status is CertStatus.ROBUST:
                cert.update(distance=""",
           """            if status is CertStatus.ROBUST or (status is CertStatus.NOT_ROBUST
                                               and float(test.lower[0]) > -1e-3):
                cert.update(distance=""",
           ("tests/methods/test_proplace.py",),
           "a not_robust verdict whose worst case is just below the threshold is accepted"),
    Mutant("proplace_hull_one_column", "methods/proplace.py",
           """columns=np.flatnonzero(~fixed))""",
           """columns=np.flatnonzero(~fixed)[:1])""",
           ("tests/methods/test_proplace.py",),
           "the plausible region (the hull) constrains one column only: CEs leave it"),
    Mutant("proplace_vertices_margin_zero", "methods/proplace.py",
           """            tol=self.sigma, certify_time_limit=self.certify_time_limit""",
           """            tol=0.0, certify_time_limit=self.certify_time_limit""",
           ("tests/methods/test_proplace.py",),
           "hull vertices certified with margin 0 instead of σ (Proposition 1's feasibility)"),
    # --- APΔS (robustness/apas.py, apas_sampling.py, apas_fast.py) -------------------------
    Mutant("apas_sample_size_one_short", "robustness/apas.py",
           """        return need, a, r""",
           """        return need - 1, a, r""",
           ("tests/robustness/test_apas.py", "tests/methods/test_apas_method.py"),
           "n = ⌈ln(1−α)/ln R⌉ − 1 draws: the stated confidence α is not reached"),
    Mutant("apas_certify_tolerates_one_flip", "robustness/apas.py",
           """    passed = ~bad & ~invalid & (flips == 0)""",
           """    passed = ~bad & ~invalid & (flips <= 1)""",
           ("tests/robustness/test_apas.py",),
           "a CE with one flipped draw among n passes the probabilistic test"),
    Mutant("apas_biases_not_drawn", "robustness/apas_sampling.py",
           """rng.random((s,) + b.shape) if biases else None)""",
           """None)""",
           ("tests/robustness/test_apas.py",),
           "the sampled test never perturbs the biases although the shift moves them"),
    Mutant("apas_interval_bounds_ignore_bias", "robustness/apas.py",
           """    db = d if biases else 0.0""",
           """    db = 0.0""",
           ("tests/robustness/test_apas.py",),
           "δ_max's interval pre-check forgets the bias shift: 'sure' without being sure"),
    Mutant("apas_delta_max_keeps_failed_delta", "robustness/apas.py",
           """        lo[idx[ok]] = cand[idx[ok]]""",
           """        lo[idx] = cand[idx]""",
           ("tests/robustness/test_apas.py",),
           "δ_max search counts a δ at which a draw flipped the CE as passed (many CEs)"),
    Mutant("apas_delta_max_one_row_keeps_failed_delta", "robustness/apas_fast.py",
           """        else:
            hi = cand
        if math.isinf(hi):""",
           """        else:
            hi = lo = cand
        if math.isinf(hi):""",
           ("tests/robustness/test_apas.py",),
           "δ_max search counts a flipping δ as passed (the one-CE path)"),
    Mutant("apas_delta_max_coarse_bisection", "robustness/apas.py",
           """        narrow = ~doubling & ~flipped_at_init & (hi_i - li <= d0)""",
           """        narrow = ~doubling & ~flipped_at_init & (hi_i - li <= 0.5 * hi_i)""",
           ("tests/robustness/test_apas.py",),
           "the bisection stops at half the bracket: δ_max far below the resolution promised"),
    # --- DiverseRobust (methods/diverse_robust.py) -------------------------------------------
    Mutant("diverse_distance_cut_dropped", "methods/diverse_robust.py",
           """            keep = ok & (dist <= (1.0 + self.epsilon) * m + _TIE)""",
           """            keep = ok""",
           ("tests/methods/test_diverse_robust.py",),
           "the distance cut keeps candidates beyond (1 + ε) × the nearest distance"),
    Mutant("diverse_angle_filter_dropped", "methods/diverse_robust.py",
           """free &= np.abs(cos) <= self.beta""",
           """free &= np.abs(cos) <= 1.0 + self.beta""",
           ("tests/methods/test_diverse_robust.py",),
           "the angle filter keeps near-parallel CEs (no diversity)"),
    Mutant("diverse_distance_filter_dropped", "methods/diverse_robust.py",
           """free &= self._dist(C, C[rows, cur][:, None, :]) >= radius""",
           """free &= self._dist(C, C[rows, cur][:, None, :]) >= 0.0 * radius""",
           ("tests/methods/test_diverse_robust.py",),
           "the distance filter keeps CEs closer to each other than (1 + β) × the nearest"),
    Mutant("diverse_line_search_keeps_failed", "methods/diverse_robust.py",
           """            best[active[r_up]] = tests[r_up, k_up]""",
           """            best[active[r_down]] = tests[r_down, k_down]""",
           ("tests/methods/test_diverse_robust.py",),
           "the line search returns a midpoint the model did not put in the target class"),
    Mutant("diverse_line_search_stops_early", "methods/diverse_robust.py",
           """            small = size <= self.gamma""",
           """            small = size <= 4.0 * self.gamma""",
           ("tests/methods/test_diverse_robust.py",),
           "the line search stops up to 4γ from the boundary (accuracy γ not met)"),
    Mutant("diverse_cut_stops_growing", "methods/diverse_robust.py",
           """            if not more.any() or k >= cap:""",
           """            if True:""",
           ("tests/methods/test_diverse_robust.py",),
           "the distance cut stops at its first k candidates: in-radius ones are lost"),
    Mutant("diverse_cap_ignored", "methods/diverse_robust.py",
           """else min(int(self.max_candidates), n_class)""",
           """else n_class""",
           ("tests/methods/test_diverse_robust.py",),
           "max_candidates (the cap on a distance cut) is ignored"),
    # --- MACE (methods/mace.py, solvers/smt/, distance.py) --------------------------------
    Mutant("mace_epsilon_loose", "methods/mace.py",
           """            if high - low <= self._eps:
                return "found", best, high, low, \"\"""",
           """            if high - low <= 10.0 * self._eps:
                return "found", best, high, low, \"\"""",
           (MACE_BRACKET,
            "tests/methods/test_mace.py::test_logistic_regression_l1_matches_the_lp"),
           "'found' (optimal within ε) claimed with a gap of up to 10ε"),
    Mutant("mace_radius_too_small", "methods/mace.py",
           """                r = min(r, J * delta / self._norm[key])""",
           """                r = min(r, 0.5 * J * delta / self._norm[key])""",
           (MACE_BRACKET, MACE_INFEASIBLE),
           "the per-feature box of d ≤ δ is too small: unsat is wrong, δ_min is no lower bound"),
    Mutant("mace_work_limit_ignored", "methods/mace.py",
           """                          rlimit=work, seed=self._z3_seed)""",
           """                          rlimit=None, seed=self._z3_seed)""",
           (MACE_WORK,),
           "z3 is not given the work budget: a query runs on past work_limit"),
    Mutant("mace_unknown_as_unsat", "methods/mace.py",
           """            elif r.status == "unsat":
                low = mid""",
           """            elif r.status in ("unsat", "unknown"):
                low = mid""",
           (MACE_WORK,),
           "a spent work budget (z3 unknown) is read as a proof: a false δ_min"),
    Mutant("mace_pruner_unsound", "solvers/tree_encoding.py",
           """        out = lb > limit""",
           """        out = lb > 0.5 * limit""",
           (MACE_BRACKET, MACE_INFEASIBLE),
           "tree branches within distance δ are pruned: a wrong unsat, a false δ_min"),
    Mutant("mace_onehot_counts_twice", "solvers/smt/domain.py",
           """                per_feature.append(z3.If(same, z3.RealVal(0), z3.RealVal(1)))
                continue""",
           """                per_feature.append(z3.If(same, z3.RealVal(0),
                                         z3.RealVal(1 if v.sort == "bool" else 2)))
                continue""",
           (MACE_BRACKET,),
           "a changed one-hot categorical counts twice in MACE's formula distance"),
    Mutant("onehot_column_weight_one", "distance.py",
           """            w[b.slice] = 0.5""",
           """            w[b.slice] = 1.0""",
           ("tests/test_distance.py", MACE_BRACKET),
           "a changed one-hot category counts twice (both its columns) in the raw distance"),
    # --- RoCourseNet's virtual data shift (methods/rocoursenet.py) -------------------------
    Mutant("vds_attacker_descends", "methods/rocoursenet.py",
           """(delta.detach() + step * direction)""",
           """(delta.detach() - step * direction)""",
           ("tests/methods/test_counternet.py",),
           "the attacker steps δ to lower the CE loss: no worst case, weak training"),
    Mutant("vds_no_linf_projection", "methods/rocoursenet.py",
           """            return delta.clamp(-epsilon, epsilon)""",
           """            return delta""",
           ("tests/methods/test_counternet.py",),
           "δ leaves the ε-ball (L∞): the data shift is larger than configured"),
    Mutant("vds_no_l2_projection", "methods/rocoursenet.py",
           """torch.clamp(epsilon / (n + 1e-12), max=1.0)""",
           """torch.clamp(epsilon / (n + 1e-12), min=1.0)""",
           ("tests/methods/test_counternet.py",),
           "δ leaves the ε-ball (L2)"),
    Mutant("vds_ignores_shift_mask", "methods/rocoursenet.py",
           """step * direction) * mask, eps, norm,""",
           """step * direction), eps, norm,""",
           ("tests/methods/test_counternet.py",),
           "the attacker shifts immutable / non-continuous columns it must leave alone"),
    Mutant("rocoursenet_shifts_immutables", "methods/rocoursenet.py",
           """                cols = ~self.encoder_.immutable_mask_""",
           """                cols = np.ones_like(cols)""",
           ("tests/methods/test_counternet.py",),
           "softmax mode shifts immutable features too"),
    # --- ROAR and RobX ---------------------------------------------------------------------
    Mutant("roar_worst_case_sign", "methods/roar.py",
           """    dW = -delta_max * np.sign(X)""",
           """    dW = delta_max * np.sign(X)""",
           ("tests/methods/test_roar.py",),
           "ROAR's inner max takes the best case, not the worst: certificates too optimistic"),
    Mutant("roar_training_worst_case_sign", "methods/roar.py",
           """- self.delta_max * var.abs().sum(1) - bias_shift""",
           """+ self.delta_max * var.abs().sum(1) - bias_shift""",
           ("tests/methods/test_roar.py",),
           "ROAR's optimiser trains against the best case: CEs not robust to δ_max"),
    Mutant("robx_stability_no_std", "methods/robx.py",
           """        out[s:s + step] = pt.mean(axis=1) - pt.std(axis=1)""",
           """        out[s:s + step] = pt.mean(axis=1)""",
           ("tests/methods/test_robx.py",),
           "RobX's stability forgets the standard deviation (mean only)"),
    Mutant("robx_candidates_not_stable", "methods/robx.py",
           """        return ok & (stab[nbr] >= self.tau)""",
           """        return ok""",
           ("tests/methods/test_robx.py",),
           "RobX's anchor is any training point, stable or not"),
    Mutant("robx_line_search_ignores_tau", "methods/robx.py",
           """            ok &= R >= self.tau""",
           """            ok &= R >= self.tau - 1.0""",
           ("tests/methods/test_robx.py",),
           "RobX's line search returns a point whose stability is below τ"),
    # --- the scikit-learn and torch import folds ----------------------------------------------
    Mutant("sklearn_standard_scaler_no_mean", "models/sklearn_import/preprocessing.py",
           """        m = np.asarray(step.mean_, dtype=np.float64) if step.with_mean else zeros""",
           """        m = zeros""",
           ("tests/models/test_sklearn_import.py::test_view_predicts_like_the_pipeline_on_every_training_row",),
           "StandardScaler's centring is not folded: the view decides differently"),
    Mutant("sklearn_minmax_no_min", "models/sklearn_import/preprocessing.py",
           """np.asarray(step.min_, dtype=np.float64)""",
           """np.zeros(n)""",
           ("tests/models/test_sklearn_import.py::test_every_supported_transformer_folds_exactly",),
           "MinMaxScaler's offset is not folded"),
    Mutant("sklearn_linear_fold_drops_offset", "models/network.py",
           """                W, b = W @ A, W @ c + b""",
           """                W, b = W @ A, b""",
           ("tests/models/test_sklearn_import.py::test_view_predicts_like_the_pipeline_on_every_training_row",),
           "the preprocessing offset is left out of the first layer of an imported network"),
    Mutant("sklearn_tree_negative_not_flipped", "models/sklearn_import/splits.py",
           """            return [k], float(np.nextafter(b, -np.inf)), True""",
           """            return [k], float(np.nextafter(b, -np.inf)), False""",
           ("tests/models/test_sklearn_import.py::test_tree_splits_on_a_negative_coefficient_column_route_like"
            "_the_pipeline",),
           "a split on a column with a negative coefficient keeps its direction (wrong child)"),
    Mutant("sklearn_tree_threshold_off_by_one_float", "models/sklearn_import/splits.py",
           """            if alpha > 0:
                return [k], _apart_from_above(theta, b, c0, alpha, above), False""",
           """            if alpha > 0:
                return [k], float(np.nextafter(_apart_from_above(theta, b, c0, alpha, above),"""
           """ -np.inf)), False""",
           ("tests/models/test_sklearn_import.py::test_rows_on_and_beside_every_continuous_tree_threshold"
            "_route_like_the_pipeline",
            "tests/models/test_sklearn_import.py::test_view_predicts_like_the_pipeline_on_every_training_row"),
           "a row exactly on a tree threshold goes right instead of left"),
    Mutant("input_map_drops_offset", "models/network.py",
           """        return X @ A.T + c""",
           """        return X @ A.T""",
           ("tests/models/test_user_weight_certificates.py",),
           "the certified network sees the preprocessed CE without the preprocessing's offset"),
    Mutant("torch_batchnorm_mean_sign", "models/torch_import.py",
           """            t = -mean * s""",
           """            t = mean * s""",
           ("tests/models/test_torch_import.py",),
           "BatchNorm's running mean folded with the wrong sign"),
    Mutant("torch_batchnorm_input_offset_dropped", "models/torch_import.py",
           """                    in_map = (np.diag(s), t)""",
           """                    in_map = (np.diag(s), 0 * t)""",
           ("tests/models/test_torch_import.py",),
           "a BatchNorm on the inputs loses its shift when folded into the next Linear"),
    # XGBoost / LightGBM import (models/boosters.py) and boosted trees in MACE's MILP
    Mutant("xgb_split_not_strict", "models/boosters.py",
           """            np.where(leaf, np.nan, below), left, right,""",
           """            np.where(leaf, np.nan, cond.astype(np.float64)), left, right,""",
           ("tests/models/test_boosters.py::test_rows_on_and_beside_every_threshold_reach_the_"
            "boosters_leaves",),
           "an XGBoost row exactly on a split condition goes left (XGBoost: float32(z) < s)"),
    Mutant("lgb_split_in_float32", "models/boosters.py",
           """    return BoosterTree(feature, threshold, left, right, value, tuple(cats), output, False)""",
           """    return BoosterTree(feature, threshold, left, right, value, tuple(cats), output, True)""",
           ("tests/models/test_boosters.py::test_rows_on_and_beside_every_threshold_reach_the_"
            "boosters_leaves",),
           "LightGBM's float64 thresholds compared in float32: rows beside a threshold misrouted"),
    Mutant("xgb_base_score_as_margin", "models/boosters.py",
           """        baseline = np.array([np.log(p) - np.log1p(-p)])""",
           """        baseline = np.array([p])""",
           ("tests/models/test_boosters.py::test_bare_view_equals_the_booster_on_every_training_row",),
           "XGBoost ≥ 2's base_score (a probability) used as the intercept logit"),
    Mutant("lgb_category_set_inverted", "models/boosters.py",
           """        left = np.array([v >= 0 and int(v) in codes for v in code])""",
           """        left = np.array([v >= 0 and int(v) not in codes for v in code])""",
           ("tests/models/test_boosters.py::test_lightgbm_categorical_splits_on_a_pandas_category"
            "_column",),
           "a LightGBM categorical split sends the listed categories right"),
    Mutant("xgb_missing_value_ignored", "models/boosters.py",
           """            conflicts.update({int(j): around for j in feats[against]})""",
           """            conflicts.update({})""",
           ("tests/models/test_boosters.py::test_values_the_booster_reads_as_missing",),
           "rows holding XGBoost's `missing` value are imported though the booster routes them "
           "the default way"),
    Mutant("boosted_vote_drops_baseline", "models/boosting.py",
           """            values[int(mine[0]) if len(mine) else 0][:, column(k)] += self.baseline[k]""",
           """            values[int(mine[0]) if len(mine) else 0][:, column(k)] += 0.0""",
           ("tests/models/test_boosters.py::test_mace_milp_backend_on_boosters_matches_brute_force_and_smt",
            "tests/models/test_boosters.py::test_vote_trees_sum_to_the_logits"),
           "MACE's MILP on a boosted model forgets the intercept: CEs and bounds for another model"),
    # the (δ, ε)-test for tree ensembles and the nearest (δ, ε)-robust CE
    Mutant("ensemble_reach_ignores_parent", "robustness/ensemble.py",
           """            R[:, s.right[nodes]] = here & (X[:, f] > lo)""",
           """            R[:, s.right[nodes]] = X[:, f] > lo""",
           ("tests/robustness/test_ensemble_certificate.py::test_worst_case_equals_brute_force_on_"
            "tiny_ensembles",),
           "a right child counted reachable though its parent is not: worst cases of leaves "
           "the CE cannot reach"),
    Mutant("ensemble_eps_ignored", "robustness/ensemble.py",
           """        eps = shift.epsilons(self.n_features)
        n = len(X)""",
           """        eps = 0.0 * shift.epsilons(self.n_features)
        n = len(X)""",
           ("tests/robustness/test_ensemble_certificate.py",),
           "threshold shifts ignored: CEs next to a split certified robust"),
    Mutant("ensemble_delta_once", "robustness/ensemble.py",
           """                - delta * (m[:, target].astype(float) + m[:, rival]))""",
           """                - delta * m[:, target].astype(float))""",
           ("tests/robustness/test_ensemble_certificate.py",),
           "a forest's rival leaf values never move up: certificates for too small a set"),
    Mutant("ensemble_witness_unchecked", "robustness/ensemble.py",
           """            if int(np.argmax(votes)) != t[i]:""",
           """            if True:""",
           ("tests/robustness/test_ensemble_certificate.py::test_a_tie_the_witness_does_not_"
            "break_is_inconclusive",),
           "a tie reported not_robust with a witness that does not flip the CE"),
    Mutant("robust_trees_reach_drops_parent", "solvers/robust_trees.py",
           """                rows_lb.append(p_c0[new] + g_c0[new] - 1.0)""",
           """                rows_lb.append(g_c0[new] - 2.0)""",
           ("tests/methods/test_ensemble_robust.py",),
           "reach no longer flows down the tree: the MILP ignores leaves the set can reach"),
    Mutant("ensemble_float_margin_zero", "models/trees.py",
           """EPSILON_FLOAT_STEPS = 4""",
           """EPSILON_FLOAT_STEPS = 0""",
           ("tests/robustness/test_ensemble_corner_attack.py",),
           "(δ, ε) CEs placed exactly on the real-valued ε boundary: the user's own float32 "
           "scikit-learn estimator, thresholds moved by ε, flips them (issue 47)"),
    Mutant("ensemble_native_scale_ignored", "robustness/ensemble.py",
           """            lo, hi = (epsilon_split_bounds(t, e, self.native[f]) if float_margin""",
           """            lo, hi = (epsilon_split_bounds(t, e) if float_margin""",
           ("tests/robustness/test_ensemble_corner_attack.py::test_a_forest_on_raw_values_of_a_"
            "narrow_high_column_survives_its_own_corners",),
           "the float margin ignores the raw magnitude the estimator reads: rows near a split "
           "of a narrow high column (a year) certified, then flipped by the user's estimator"),
    Mutant("tree_view_shared_subtrees_kept", "models/trees.py",
           """        if not kids.size or np.bincount(kids, minlength=self.n_nodes).max() <= 1:""",
           """        if True:""",
           ("tests/methods/test_ensemble_robust.py::test_the_worst_case_at_zero_is_the_lightgbm_"
            "booster_score_through_categorical_splits",),
           "a LightGBM categorical split's shared child routed once: (δ, ε) worst cases of no "
           "leaf, EnsembleRobust errors on category columns (issue 47)"),
    Mutant("filter_removed_is_error", "methods/revalidation.py",
           """                if (status == "error" and n_constr[j] > 0""",
           """                if (status == "error" and n_constr[j] == sizes[j]""",
           ("tests/methods/test_constraints_registry.py::test_constraints_that_remove_everything_"
            "give_the_documented_status",),
           "DiCE under constraints reports error (a bug) where the constraints removed every "
           "valid CE and the rest failed the forward pass (issue 47)"),
    Mutant("robust_trees_no_delta", "methods/ensemble_robust.py",
           """tie + self._votes_.rival_shift(target, self.shift_.delta))""",
           """tie + 0.0 * self._votes_.rival_shift(target, self.shift_.delta))""",
           ("tests/methods/test_ensemble_robust.py",),
           "the MILP forgets δ: the loop must repair every CE, or the optimum is wrong"),
    # --- issue 47: the service (each selection starts a real server where it must) ---------
    Mutant("serve_token_prefix_accepted", "serve/app.py",
           """        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(),
                                                                 settings.token.encode()):""",
           """        if scheme.lower() != "bearer" or not settings.token.encode().startswith(
                given.strip().encode()):""",
           ("tests/serve/test_security.py::test_every_v1_route_checks_the_bearer_token[token prefix]",),
           "a prefix of the token (or an empty one) is accepted: anyone who guesses its first "
           "characters reads and writes the service"),
    Mutant("serve_item_limit_off_by_one", "serve/app.py",
           """        if len(items) > limit:""",
           """        if len(items) >= limit:""",
           ("tests/serve/test_mutant_kills_serve.py",),
           "a request of exactly --max-items items is refused (the documented limit is "
           "inclusive)"),
    Mutant("serve_body_limit_counts_one_chunk", "serve/app.py",
           """                seen += len(message.get("body", b""))""",
           """                seen = len(message.get("body", b""))""",
           ("tests/serve/test_api.py::test_body_over_the_limit_is_413",),
           "a chunked body (no Content-Length) of any size is read: the limit counts one chunk"),
    Mutant("serve_params_unlisted_passed_through", "serve/app.py",
           """        refused = check_client_params(name, params)""",
           """        refused = [e for e in check_client_params(name, params)
                   if e["type"] != "value_error.param_not_allowed"]""",
           ("tests/serve/test_hygiene.py::test_execution_parameters_are_refused_naming_them_and_no_"
            "worker_forks",),
           "a client sets n_jobs, threads, a solver or a time limit: execution settings reach the "
           "workers"),
    Mutant("client_params_execution_param_allowed", "serve/client_params.py",
           """    "nearest_neighbour": {"n_neighbours": """,
           """    "nearest_neighbour": {"n_jobs": Integer(1, 64), "n_neighbours": """,
           ("tests/serve/test_client_params.py",),
           "the allow-list lets a client choose how many processes a request forks"),
    Mutant("records_extra_keys_take_the_fast_path", "serve/records.py",
           """        if len(record) != len(self.names) or not self.names.issuperset(record):""",
           """        if not self.names.issubset(record):""",
           ("tests/serve/test_records.py",),
           "a record with unknown keys (a misspelt feature beside the right ones) is accepted"),
    Mutant("records_unknown_keys_not_counted", "serve/records.py",
           """    n_unknown = len(record) - present""",
           """    n_unknown = 0""",
           ("tests/serve/test_records.py", "tests/serve/test_mutant_kills_records.py"),
           "unknown features are not named in the 422 (or not refused at all)"),
    Mutant("audit_log_prev_not_updated", "serve/audit_log.py",
           """        self._prev, self._seq = line_hash(line), full["seq"]""",
           """        self._seq = full["seq"]""",
           ("tests/serve/test_audit_log.py",),
           "the hash chain is broken from the second line: verify fails on an honest log, and an "
           "edit could no longer be told from it"),
    Mutant("audit_log_short_write_not_truncated", "serve/audit_log.py",
           """        except OSError as exc:
            self._truncate(start)""",
           """        except OSError as exc:
            pass""",
           ("tests/serve/test_audit_log.py::test_short_write_is_an_error_and_leaves_whole_lines",),
           "a failed write (full disk) leaves a torn line that the next record is glued to"),
    Mutant("audit_trail_401_not_recorded", "serve/audit_trail.py",
           """                if not await self._record(scope, status, reason, start) and status != 503:""",
           """                if status != 401 and not await self._record(scope, status, reason, start) \\
                        and status != 503:""",
           ("tests/serve/test_audit_trail.py::test_every_request_gets_exactly_one_record_refusals_"
            "included",),
           "requests refused for a bad token leave no audit record: probing the token is unseen"),
    Mutant("kept_answer_given_twice", "serve/app.py",
           """        self.kept.discard(retry)  # taken out first: two retries at once get it once""",
           """        pass""",
           ("tests/serve/test_audit_full_disk.py",),
           "a kept answer is given to every retry (and recorded each time) instead of once"),
    Mutant("store_chunk_at_wrong_position", "serve/store.py",
           """                       self.jobs.c.status.in_(UNFINISHED), self.jobs.c.done == int(start))""",
           """                       self.jobs.c.status.in_(UNFINISHED))""",
           ("tests/serve/test_jobs_durable.py::test_the_store_keeps_chunks_in_order_and_one_owner_"
            "per_job",),
           "a chunk stored twice or past a gap: a job's results no longer line up with its items"),
    Mutant("store_lease_not_checked", "serve/store.py",
           """                .where(self.jobs.c.id == job_id, self.jobs.c.owner == owner,
                       self.jobs.c.status.in_(UNFINISHED), self.jobs.c.done""",
           """                .where(self.jobs.c.id == job_id,
                       self.jobs.c.status.in_(UNFINISHED), self.jobs.c.done""",
           ("tests/serve/test_jobs_durable.py::test_the_store_keeps_chunks_in_order_and_one_owner_"
            "per_job",),
           "a process that lost a job's lease still writes its results: two owners, one job"),
    # --- issue 47: notices and audits ------------------------------------------------------
    Mutant("notice_protected_among_reasons", "notices/reasons.py",
           """        if np.any(np.abs(dx[blk.slice]) > 1e-9) and not schema[blk.name].protected:""",
           """        if np.any(np.abs(dx[blk.slice]) > 1e-9):""",
           ("tests/notices/test_mutant_kills_notices.py",
            "tests/notices/test_notice.py::test_protected_feature_never_changes_nor_appears"),
           "a protected characteristic (sex, age) is named among a notice's principal reasons"),
    Mutant("notice_applicant_text_carries_delta", "notices/notice.py",
           """            out.append(f"We have proven that the result stays '{label}' even if "
                       f"{_shift_words(shift)}.")""",
           """            out.append(f"We have proven that the result stays '{label}' even if "
                       f"{_shift_words(shift)} (δ = {getattr(shift, 'delta', shift)}).")""",
           ("tests/notices/test_notice_text.py::test_applicant_text_has_no_jargon",),
           "the applicant's text quotes the solver's δ: a symbol an applicant cannot read"),
    Mutant("audit_interval_misses_its_point", "utils.py",
           """        lo, hi = min(lo, point), max(hi, point)""",
           """        pass""",
           ("tests/audits/test_audit_figures.py", "tests/audits/test_mutant_kills_audits.py"),
           "a bootstrap interval that does not contain its own value (a skewed distribution)"),
    Mutant("audit_lowest_named_as_highest", "audits/groups.py",
           """ "lowest": _names(levels, bottom),""",
           """ "lowest": _names(levels, top),""",
           ("tests/audits/test_audit_figures.py",),
           "the fairness table names the same group as the most and the least burdened"),
    # --- issue 47: constraints in the exact methods ------------------------------------------
    Mutant("milp_relation_lower_dropped", "solvers/constraint_encoding.py",
           """                             np.asarray(constraints.lower)[rows],
                             np.asarray(constraints.upper)[rows])""",
           """                             np.full(rows.size, -np.inf),
                             np.asarray(constraints.upper)[rows])""",
           ("tests/methods/test_constraints_methods.py::test_milp_optimum_equals_brute_force",
            "tests/methods/test_mutant_kills_constraints.py"),
           "MILP methods drop every ≥ side of a relation (an equality becomes ≤): CEs break it"),
    Mutant("milp_max_changes_off_by_one", "solvers/constraint_encoding.py",
           """                         -np.inf, float(k))""",
           """                         -np.inf, float(k) + 1)""",
           ("tests/methods/test_constraints_methods.py::test_milp_optimum_equals_brute_force",),
           "MILP CEs change one feature more than max_changes allows"),
    Mutant("smt_relation_upper_sense_flipped", "solvers/smt/constraints.py",
           """            [e <= rational(hi + slack)] if math.isfinite(hi) else [])""",
           """            [e >= rational(hi + slack)] if math.isfinite(hi) else [])""",
           ("tests/methods/test_constraints_methods.py::test_mace_backends_satisfy_constraints_and_agree",),
           "MACE (SMT) reads a ≤ relation as ≥: its CEs break the user's relations"),
    Mutant("smt_relation_lower_sense_flipped", "solvers/smt/constraints.py",
           """        return ([e >= rational(lo - slack)] if math.isfinite(lo) else []) + (""",
           """        return ([e <= rational(lo - slack)] if math.isfinite(lo) else []) + (""",
           ("tests/methods/test_mutant_kills_constraints.py",),
           "MACE (SMT) reads a ≥ relation (or an equality's lower side) as ≤"),
    Mutant("smt_max_changes_off_by_one", "solvers/smt/constraints.py",
           """        out.append(z3.Sum(moved) <= int(constraints.max_changes))""",
           """        out.append(z3.Sum(moved) <= int(constraints.max_changes) + 1)""",
           ("tests/methods/test_constraints_methods.py::test_mace_backends_satisfy_constraints_and_agree",),
           "MACE (SMT) CEs change one feature more than max_changes allows"),
    # --- issue 47: booster imports and the raw round trip -----------------------------------
    Mutant("lgb_zero_default_left_flipped", "models/boosters.py",
           """            agrees = t >= _LGB_ZERO if node.get("default_left") else t < -_LGB_ZERO""",
           """            agrees = t >= _LGB_ZERO if not node.get("default_left") else t < -_LGB_ZERO""",
           ("tests/models/test_boosters.py::test_values_the_booster_reads_as_missing",
            "tests/models/test_mutant_kills_boosters.py"),
           "LightGBM zero-as-missing: zero's default way read backwards, so rows with 0 are "
           "routed unlike the booster (or a model is refused for nothing)"),
    Mutant("roundtrip_integer_truncated", "data/encoder.py",
           """        values = np.round(values)  # round, never truncate (2.9999999 -> 3)""",
           """        values = values  # astype truncates (2.9999999 -> 2)""",
           ("tests/data/test_encoder.py", "tests/data/test_encode_decoded.py"),
           "a decoded integer column is truncated: the raw CE a user receives is one step off"),
    Mutant("serve_job_view_without_token", "serve/app.py",
           """    @app.get("/v1/jobs/{job_id}", response_model=JobOut, dependencies=v1, tags=["jobs"])""",
           """    @app.get("/v1/jobs/{job_id}", response_model=JobOut, tags=["jobs"])""",
           ("tests/serve/test_security.py::test_every_v1_route_checks_the_bearer_token[none]",),
           "anyone who knows (or guesses) a job id reads its applicants' results without a token"),
    Mutant("serve_job_submit_without_token", "serve/app.py",
           """        await auth(request)
        check_json_media(request)
        m = service.model(model_id)
        body = await request.body()""",
           """        check_json_media(request)
        m = service.model(model_id)
        body = await request.body()""",
           ("tests/serve/test_security.py::test_every_v1_route_checks_the_bearer_token[none]",),
           "a job (hours of solver work) is accepted without a token"),
    Mutant("global_actions_count_an_applicant_twice", "audits/global_actions.py",
           """            new = int((cov & ~covered).sum())""",
           """            new = int(cov.sum())""",
           ("tests/audits/test_audit.py::test_audit_reports_and_global_actions_cover_when_applied",
            "tests/audits/test_mutant_kills_audits_actions.py"),
           "greedy global actions count applicants an earlier action already covers: the list "
           "repeats near-identical actions instead of reaching new applicants"),
    Mutant("audit_min_group_exclusive", "audits/groups.py",
           """                too_few = self.count[(g, lv)] < min_group""",
           """                too_few = self.count[(g, lv)] <= min_group""",
           ("tests/audits/test_audit.py::test_small_group_is_reported_not_an_error",
            "tests/audits/test_audit_figures.py", "tests/audits/test_mutant_kills_audits_actions.py"),
           "a group of exactly the minimum size is reported as too small to compare"),
    # --- issue 47, part 2 (branch h/mut47): headers, /docs, lifeline, job resume, the job
    # store's takeover, dataset constraints, the notices' missing-option sentences and
    # applicant/appendix split, audit bands, the tree view's native float scale -------------
    Mutant("headers_nosniff_dropped", "serve/headers.py",
           """    "x-content-type-options": "nosniff",
""",
           "",
           ("tests/serve/test_security.py::test_open_routes_answer_without_a_token",),
           "responses without X-Content-Type-Options: a browser may sniff an applicant's JSON "
           "answer as HTML and run it"),
    Mutant("headers_on_success_only", "serve/headers.py",
           """            if message["type"] == "http.response.start":""",
           """            if message["type"] == "http.response.start" and message["status"] < 400:""",
           ("tests/serve/test_security.py::test_every_v1_route_checks_the_bearer_token[none]",),
           "error answers (401, 404, 422) go out without the Content-Security-Policy and "
           "framing headers"),
    Mutant("headers_route_header_kept", "serve/headers.py",
           """for k, v in message.get("headers", []) if k.lower() not in _NAMES]""",
           """for k, v in message.get("headers", [])]""",
           ("tests/serve/test_mutant_kills_headers.py",
            "tests/serve/test_security.py::test_open_routes_answer_without_a_token"),
           "a route's own, looser policy header is sent beside the service's: two CSPs, "
           "or a framing header that contradicts the service's"),
    Mutant("api_docs_assets_not_mounted", "serve/api_docs.py",
           """    if assets is not None:
        app.mount(""",
           """    if assets is None:
        app.mount(""",
           ("tests/serve/test_security.py::test_open_routes_answer_without_a_token",),
           "/docs loads a Swagger UI that is not served: the page is blank (or a developer "
           "'fixes' it with a CDN)"),
    Mutant("redoc_from_cdn_served", "serve/app.py",
           """docs_url=None, redoc_url=None, redirect_slashes=False""",
           """docs_url=None, redoc_url="/redoc", redirect_slashes=False""",
           ("tests/serve/test_security.py::test_each_route_answers_only_its_verbs",),
           "FastAPI's /redoc is served: a page that loads its script from a CDN"),
    Mutant("lifeline_forkserver_not_armed", "serve/lifeline.py",
           """    if parent.isdigit() and int(parent) == os.getppid() and die_with_parent(int(parent)):""",
           """    if parent.isdigit() and int(parent) == os.getpid() and die_with_parent(int(parent)):""",
           ("tests/serve/test_orphans.py::test_kill_9_of_the_server_leaves_no_process[one-process]",),
           "the forkserver never asks to die with the server: after kill -9 it and its "
           "workers live on, holding memory and the models"),
    Mutant("lifeline_wrong_prctl_option", "serve/lifeline.py",
           """_PR_SET_PDEATHSIG = 1""",
           """_PR_SET_PDEATHSIG = 2""",
           ("tests/serve/test_orphans.py::test_kill_9_of_the_server_leaves_no_process[one-process]",),
           "prctl is asked PR_GET_PDEATHSIG (2) instead of PR_SET_PDEATHSIG (1): it succeeds, "
           "nothing is armed, and every solver process outlives a killed server"),
    Mutant("jobs_resume_restarts_from_zero", "serve/jobs.py",
           """            done, size = row.done, self.service.settings.job_chunk""",
           """            done, size = 0, self.service.settings.job_chunk""",
           ("tests/serve/test_mutant_kills_jobs.py",),
           "a resumed job starts again from its first item: its committed chunks clash, the job "
           "never finishes"),
    Mutant("jobs_resume_not_audited", "serve/jobs.py",
           """            if row.done:
                self._audit(row, model, [], event="resumed", done=row.done)""",
           """            pass""",
           ("tests/serve/test_mutant_kills_jobs.py",),
           "a job resumed by another process leaves no 'resumed' record: the audit trail "
           "cannot tell which process computed which items"),
    Mutant("jobs_stop_not_given_back", "serve/jobs.py",
           """            self._give_back(row, model)
            raise""",
           """            raise""",
           ("tests/serve/test_mutant_kills_jobs.py",),
           "on SIGTERM a running job is neither handed back nor recorded as interrupted: it "
           "waits out its lease and the audit log misses the interruption"),
    Mutant("store_dead_owner_waits_for_lease", "serve/store.py",
           """ and row.lease_until >= now and not owner_gone(row.owner):""",
           """ and row.lease_until >= now:""",
           ("tests/serve/test_jobs_durable.py::test_a_dead_owners_job_is_taken_over_only_for_the_"
            "same_model",),
           "after kill -9 a job waits for its lease to run out instead of being resumed at the "
           "next start"),
    Mutant("store_other_model_version_taken", "serve/store.py",
           """            if served.get(row.model_id) != row.model_hash:
                continue""",
           """            pass""",
           ("tests/serve/test_jobs_durable.py::test_a_dead_owners_job_is_taken_over_only_for_the_"
            "same_model",),
           "a job accepted for one model version is taken over by a process serving another, "
           "and fails (or, worse, would be answered by the other model)"),
    Mutant("store_owner_gone_ignores_start_time", "serve/store.py",
           """    return found is None or found[0] != start or found[1] in ("Z", "X")""",
           """    return found is None or found[1] in ("Z", "X")""",
           ("tests/serve/test_jobs_durable.py::test_a_dead_owners_job_is_taken_over_only_for_the_"
            "same_model", "tests/serve/test_mutant_kills_jobs.py"),
           "a dead owner whose pid was reused counts as alive: its jobs wait out their lease"),
    Mutant("store_release_fails_the_job", "serve/store.py",
           """            self._update_owned(job_id, owner, status="queued", owner=None, lease_until=0.0)""",
           """            self._update_owned(job_id, owner, status="failed", owner=None, lease_until=0.0)""",
           ("tests/serve/test_jobs_durable.py::test_the_store_keeps_chunks_in_order_and_one_owner_"
            "per_job",),
           "a job stopped by SIGTERM is marked failed instead of queued: never resumed"),
    Mutant("constraints_dataset_default_dropped", "data/constraint_source.py",
           """            return shipped, {"source": "dataset", **where}""",
           """            return None, {"source": "dataset", **where}""",
           ("tests/methods/test_dataset_relations.py::test_exact_methods_keep_the_shipped_"
            "relations_by_default",),
           "the dataset's relations (debt <= income) are not applied by default, although "
           "the result's meta says they were"),
    Mutant("constraints_dataset_max_changes_ignored", "data/constraint_source.py",
           """c.groups or c.max_changes is not None""",
           """c.groups""",
           ("tests/methods/test_dataset_relations.py::test_exact_methods_keep_the_shipped_"
            "relations_by_default", "tests/data/test_mutant_kills_constraint_source.py"),
           "a dataset that ships only a max_changes (or only a causal graph) is read as "
           "shipping nothing: its limit is silently off by default"),
    Mutant("notice_missing_option_without_why", "notices/notice.py",
           """                   f"{_COUNT_WORDS.get(int(max_options), max_options)}. "
                   + _why_missing(statuses, len(options), n_dropped, label_t))""",
           """                   f"{_COUNT_WORDS.get(int(max_options), max_options)}.")""",
           ("tests/notices/test_notice_text.py::test_a_missing_option_is_explained",
            "tests/notices/test_mutant_kills_notice_text.py"),
           "'Only one option is shown' without why: the applicant is not told whether the "
           "search ran out of time or proved there is nothing else"),
    Mutant("notice_no_option_without_why", "notices/notice.py",
           """                     f"can act on that would lead to '{label_t}'. "
                     + _why_missing(statuses, 0, n_dropped, label_t))""",
           """                     f"can act on that would lead to '{label_t}'.")""",
           ("tests/notices/test_notice_text.py::test_a_missing_option_is_explained",
            "tests/notices/test_mutant_kills_notice_text.py"),
           "a notice with no option does not say why (a proof that none exists, or a timeout)"),
    Mutant("notice_searches_counted_once", "notices/notice.py",
           """        by_status[st] = by_status.get(st, 0) + 1""",
           """        by_status[st] = 1""",
           ("tests/notices/test_notice_text.py", "tests/notices/test_mutant_kills_notice_text.py"),
           "'one search ran out of time' when two did: the missing-option sentence miscounts"),
    Mutant("notice_unproven_said_proven", "notices/notice.py",
           """        if robust:
            out.append(f"We have proven""",
           """        if True:
            out.append(f"We have proven""",
           ("tests/notices/test_notice.py::test_options_are_ranked_most_durable_first",),
           "the applicant is told the option is proven to survive a model update when the "
           "exact test did not prove it"),
    Mutant("notice_method_named_in_applicant_text", "notices/render.py",
           """<p><b>Option {i}</b>: change """,
           """<p><b>Option {i}</b> ({_v(o['method'])}): change """,
           ("tests/notices/test_notice_text.py::test_applicant_text_has_no_jargon",),
           "the applicant's page names the solver method of each option (milp_robust, "
           "nearest_neighbour): jargon in the applicant's text"),
    Mutant("notice_appendix_drops_method_certificate", "notices/render.py",
           """        for key, value in entry.get("method_certificate", {}).items():""",
           """        for key, value in {}.items():""",
           ("tests/notices/test_notice_text.py::test_the_solver_certificate_goes_to_the_reviewers",),
           "the reviewers' appendix loses the method's own certificate (τ, rounds): the "
           "technical record of why an option was offered is gone"),
    Mutant("audit_band_edge_in_lower_band", "audits/recourse.py",
           """    codes = np.searchsorted(np.asarray(edges), values.to_numpy(dtype=float), side="right")""",
           """    codes = np.searchsorted(np.asarray(edges), values.to_numpy(dtype=float), side="left")""",
           ("tests/audits/test_mutant_kills_audit_bands.py",),
           "an applicant aged exactly 30 is counted in '<30', not '30–50': every banded "
           "figure of the audit moves people across groups"),
    Mutant("native_scale_on_grid_columns", "models/trees.py",
           """    return np.where(m.continuous & np.isfinite(r), r, 0.0)""",
           """    return np.where(~m.continuous & np.isfinite(r), r, 0.0)""",
           ("tests/robustness/test_ensemble_corner_attack.py::test_a_forest_on_raw_values_of_a_"
            "narrow_high_column_survives_its_own_corners",),
           "the float margin counts the raw magnitude on the wrong columns: certified rows near "
           "a year split flip under the user's own estimator"),
    Mutant("forkserver_init_does_not_arm", "serve/forkserver_init.py",
           """
arm_forkserver()""",
           """
pass  # arm_forkserver() left out""",
           ("tests/serve/test_orphans.py::test_kill_9_of_the_server_leaves_no_process[one-process]",),
           "the forkserver's first preload no longer arms it: after kill -9 of the server the "
           "forkserver and its workers live on"),
    Mutant("maxdelta_undecided_counts_as_proven", "robustness/maxdelta.py",
           """        rob = np.array([s == DeltaStatus.ROBUST for s in c.status], dtype=bool)""",
           """        rob = np.array([s != DeltaStatus.NOT_ROBUST for s in c.status], dtype=bool)""",
           ("tests/robustness/test_maxdelta.py",),
           "a Δ-test that timed out or stayed undecided counts as passed: the 'largest provably "
           "safe δ' is not proven"),
    Mutant("family_certifier_skips_the_model", "robustness/family.py",
           """([network] if self.include_model and network is not None else []) + self.models""",
           """list(self.models)""",
           ("tests/robustness/test_family_certifier.py",),
           "a CE the user's own model rejects is certified robust over the retrained family"),
    Mutant("family_certifier_tolerance_ignored", "robustness/family.py",
           """        status = np.where(lowest > self.tol, CertStatus.ROBUST,""",
           """        status = np.where(lowest > 0, CertStatus.ROBUST,""",
           ("tests/robustness/test_family_certifier.py",),
           "a CE one retrained model puts within the tolerance of flipping is called robust"),
    Mutant("notice_model_hash_ignores_schema", "notices/record.py",
           """    return "sha256:" + _digest(arrays + [np.frombuffer(extra, dtype=np.uint8)])""",
           """    return "sha256:" + _digest(arrays)""",
           ("tests/notices/test_notice.py::test_batch_notices_refuse_to_resume_with_other_settings",),
           "the record's model hash misses the schema (actionability, protected features): "
           "notices made under other rules pass as the same model, and a resume keeps them"),
    Mutant("notice_batch_resume_checks_methods_only", "notices/batch.py",
           """        differs = sorted(k for k in now if before.get(k) != now[k])""",
           """        differs = sorted(k for k in ("methods",) if before.get(k) != now[k])""",
           ("tests/notices/test_notice.py::test_batch_notices_refuse_to_resume_with_other_settings",),
           "a batch of notices resumed into a folder made with another model, δ or family keeps "
           "the old notices silently"),
    Mutant("audit_resume_compares_keys_only", "audits/partitions.py",
           """            if old != json.loads(text):""",
           """            if set(old) != set(json.loads(text)):""",
           ("tests/audits/test_audit.py::test_resume_with_other_settings_is_refused",),
           "an audit resumed with another method, seed or δ mixes partitions of two "
           "configurations into one report"),
    Mutant("enumeration_biases_fixed", "robustness/enumeration.py",
           """        rad[o + W.size:o + sizes[li]] = shift.bias_delta""",
           """        rad[o + W.size:o + sizes[li]] = 0.0""",
           ("tests/robustness/test_enumeration.py",),
           "the enumeration of Δ never moves the biases: the 'proven robust' volume covers a "
           "smaller set than the shift the user asked about"),
    Mutant("bounds_relu_upper_line_through_origin", "robustness/bounds.py",
           """    e = np.where(unstable, -a * hmin, 0.0)""",
           """    e = np.zeros_like(a)""",
           ("tests/robustness/test_bounds.py::test_point_bounds_are_sound_on_sampled_weights",
            "tests/robustness/test_bounds.py::test_box_bounds_are_sound_on_sampled_inputs"),
           "the linear upper bound of an unstable ReLU loses its intercept: bounds the exact "
           "test trusts are no longer sound (a CE proven robust that is not)"),
    Mutant("vr_any_model", "evaluation/metrics.py",
           """    return (P == resolve_targets(target_class, len(C))[None, :]).mean(axis=0)""",
           """    return (P == resolve_targets(target_class, len(C))[None, :]).max(axis=0).astype(float)""",
           ("tests/evaluation/test_metrics.py::test_validity_and_vr_by_hand",),
           "robust validity vr (notices, audits, benchmarks) is 1 when any retrained model "
           "agrees, not the fraction that does"),
    Mutant("audit_totals_last_partition_only", "audits/audit.py",
           """        n_found += int(part["found"].sum())""",
           """        n_found = int(part["found"].sum())""",
           ("tests/audits/test_audit.py::test_audit_reports_and_global_actions_cover_when_applied",),
           "the audit's headline coverage counts the found CEs of the last partition only"),
    Mutant("rnn_pool_ignores_tol", "methods/robust_nearest_neighbour.py",
           """        keep = res.robust & (res.lower >= self.tol)""",
           """        keep = res.robust""",
           ("tests/methods/test_robust_nearest_neighbour.py::test_a_borderline_pool_is_no_robust_"
            "point_and_a_timed_out_one_a_timeout",
            "tests/methods/test_robust_nearest_neighbour.py::test_a_robust_verdict_below_the_"
            "tolerance_does_not_enter_the_pool"),
           "RobustNearestNeighbour returns a training point whose worst-case margin is within "
           "the tolerance of 0 as proven Δ-robust"),
    Mutant("shift_biases_never_move", "robustness/shift.py",
           """        return self.delta if self.biases else 0.0""",
           """        return 0.0""",
           ("tests/robustness/test_shift.py",),
           "ParameterShift(δ) keeps every bias fixed although biases=True: the sampled and "
           "enumerated Δ miss part of the shift the user asked about"),
    Mutant("batching_each_gets_the_first_slice", "serve/batching.py",
           """        return results[start:start + len(records)]""",
           """        return results[:len(records)]""",
           ("tests/serve/test_batching.py::test_concurrent_requests_form_one_batch_and_each_gets_"
            "its_own_items_in_order",),
           "requests merged into one batch all get the first request's results: an applicant "
           "receives another applicant's counterfactuals"),
    Mutant("batching_one_bad_record_fails_the_batch", "serve/batching.py",
           """            if batch.members > 1:""",
           """            if False:""",
           ("tests/serve/test_batching.py::test_an_error_raised_by_one_request_fails_only_that_"
            "request",),
           "one request's bad record fails every request merged with it"),
    Mutant("batching_max_items_overrun", "serve/batching.py",
           """if batch is None or len(batch.records) + len(records) > self.max_items:""",
           """if batch is None or len(batch.records) > self.max_items:""",
           ("tests/serve/test_batching.py::test_a_batch_holds_at_most_max_items_records",),
           "a merged batch grows past --max-items: one worker task holds more records (and "
           "time) than any request may"),
    Mutant("schemas_time_limit_unbounded", "serve/schemas.py",
           """    time_limit_s: float = Field(10.0, gt=0, le=600, description="time limit per item")""",
           """    time_limit_s: float = Field(10.0, gt=0, description="time limit per item")""",
           ("tests/serve/test_mutant_kills_schemas.py",),
           "a client asks for hours of solver time per item: one request holds a worker "
           "for as long as it likes"),
    Mutant("certificates_inconclusive_counted_robust", "robustness/certifier.py",
           """        return np.array([s is CertStatus.ROBUST for s in self.status], dtype=bool)""",
           """        ok = (CertStatus.ROBUST, CertStatus.INCONCLUSIVE)
        return np.array([s in ok for s in self.status], dtype=bool)""",
           ("tests/robustness/test_certifier.py", "tests/robustness/test_mutant_kills_certifier.py"),
           "a certificate whose worst case is within tolerance of 0 counts as robust: every "
           "method and metric reading Certificates.robust claims what nobody proved"),
    # --- issue 47, third part: code added after the 147-mutant run (the body limits, the one
    # launcher, the service's solver work limit and retry key, and the modules no mutant
    # reached yet) ------------------------------------------------------------------------------
    Mutant("bodies_job_item_limit_off_by_one", "serve/bodies.py",
           """        if len(items) > max_items:""",
           """        if len(items) >= max_items:""",
           ("tests/serve/test_bodies.py", "tests/serve/test_mutant_kills_bodies.py"),
           "a job of exactly --max-job-items items is refused (422) although the limit allows it"),
    Mutant("bodies_chunk_errors_located_in_the_first_chunk", "serve/bodies.py",
           """            errors += _located(exc, offset=start)""",
           """            errors += _located(exc, offset=0)""",
           ("tests/serve/test_bodies.py",),
           "a job's 422 names the wrong item (an error in item 401 is reported at item 0)"),
    Mutant("bodies_chunk_drops_an_item", "serve/bodies.py",
           """            rest += _ITEMS.validate_python(items[start:start + CHUNK], context=context)""",
           """            rest += _ITEMS.validate_python(items[start:start + CHUNK - 1], context=context)""",
           ("tests/serve/test_bodies.py",),
           "a large job silently loses one item per chunk of 200: applicants never answered"),
    Mutant("job_body_parsed_on_the_event_loop", "serve/app.py",
           ("""        req, records = await anyio.to_thread.run_sync(parse_job_body, body, m.schema, """
            """m.record_checker,\n"""
            """                                                      settings.max_job_items, """
            """limiter=service.parsers())"""),
           ("""        req, records = parse_job_body(body, m.schema, m.record_checker, """
            """settings.max_job_items)"""),
           ("tests/serve/test_bodies.py::test_the_job_route_parses_its_body_on_a_worker_thread",),
           "a 2 MB job body is parsed on the event loop: every other request (health included) "
           "stalls for the parse"),
    Mutant("body_limit_sync_routes_take_the_job_limit", "serve/app.py",
           """        self.sync_limit = limit if sync_limit is None else min(sync_limit, limit)""",
           """        self.sync_limit = limit""",
           ("tests/serve/test_hygiene.py::test_a_large_body_to_a_synchronous_route_is_413_unread_and_audited",),
           "--max-sync-body is ignored: explain and certify read and parse 2 MB bodies on the event "
           "loop"),
    Mutant("body_limit_header_checked_against_the_job_limit", "serve/app.py",
           """        if length is not None and (not length.isdigit() or int(length) > limit):""",
           """        if length is not None and (not length.isdigit() or int(length) > self.limit):""",
           ("tests/serve/test_mutant_kills_body_limit.py",
            "tests/serve/test_hygiene.py::test_a_large_body_to_a_synchronous_route_is_413_unread_and_audited"),
           "a synchronous body over --max-sync-body is read before it is refused (413 only once "
           "the bytes are in): the limit no longer spares the server the read"),
    Mutant("settings_sync_limit_not_capped", "serve/settings.py",
           """    return min(settings.max_sync_body_bytes, settings.max_body_bytes)""",
           """    return settings.max_sync_body_bytes""",
           ("tests/serve/test_cli_serve.py::test_the_limits_are_server_options_passed_to_the_settings",),
           "--max-sync-body above --max-body lets a synchronous request past the server's body "
           "limit"),
    Mutant("settings_solver_nodes_zero_allowed", "serve/settings.py",
           """"max_body_bytes", "max_sync_body_bytes", "retry_after_s", "solver_nodes"):""",
           """"max_body_bytes", "max_sync_body_bytes", "retry_after_s"):""",
           ("tests/serve/test_mutant_kills_settings.py",),
           "--solver-nodes 0 is accepted: every MILP stops at once, every item times out"),
    Mutant("settings_token_length_unchecked", "serve/settings.py",
           """    if len(token) < 16 or any(c.isspace() for c in token):""",
           """    if len(token) < 1 or any(c.isspace() for c in token):""",
           ("tests/serve/test_mutant_kills_settings.py",),
           "a 3-character bearer token is accepted: the service's only secret can be guessed"),
    # the one launcher of the service tests
    Mutant("launcher_serves_the_checkout", "serve/launcher.py",
           """        src = src or _this_src()""",
           """        src = src or Path.cwd() / "src\"""",
           ("tests/serve/test_mutant_kills_launcher.py",),
           "the servers the tests start run this checkout's code, not the code under test: no "
           "serve mutant (no bug in the served copy) can be seen"),
    Mutant("launcher_pythonpath_appended", "serve/launcher.py",
           ("""        env = {**os.environ, "PYTHONPATH": """
            """f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}"""),
           ("""        env = {**os.environ, "PYTHONPATH": """
            """f"{os.environ.get('PYTHONPATH', '')}{os.pathsep}{src}"}"""),
           ("tests/serve/test_mutant_kills_launcher.py",),
           "the server imports the robustce found first on the caller's PYTHONPATH, not the src "
           "it was asked to serve"),
    Mutant("launcher_exit_not_noticed", "serve/launcher.py",
           """            if self.proc.poll() is not None:
                raise RuntimeError""",
           """            if False:
                raise RuntimeError""",
           ("tests/serve/test_mutant_kills_launcher.py",),
           "a server that exits at start is waited for until the timeout (2 minutes), and its "
           "log is not shown as the reason"),
    # --solver-nodes: the context, the worker, the app
    Mutant("highs_context_not_applied", "solvers/milp/highs.py",
           """        for key, val in {**dict(_HIGHS_CONTEXT.get()), **options.extra}.items():""",
           """        for key, val in {**options.extra}.items():""",
           ("tests/serve/test_work_limits.py",),
           "--solver-nodes never reaches HiGHS: an item's MILP work depends on the clock and the "
           "host's load again"),
    Mutant("highs_context_overrides_the_models_options", "solvers/milp/highs.py",
           """        for key, val in {**dict(_HIGHS_CONTEXT.get()), **options.extra}.items():""",
           """        for key, val in {**options.extra, **dict(_HIGHS_CONTEXT.get())}.items():""",
           ("tests/serve/test_work_limits.py",),
           "the service's node limit overrides a model's own HiGHS options"),
    Mutant("highs_context_never_reset", "solvers/milp/highs.py",
           """        _HIGHS_CONTEXT.reset(token)""",
           """        pass""",
           ("tests/serve/test_work_limits.py",),
           "a node limit leaks past its context: later solves of the process are cut short"),
    Mutant("worker_solver_nodes_dropped", "serve/worker.py",
           """    return nullcontext() if nodes is None else highs_work_limits(mip_max_nodes=int(nodes))""",
           """    return nullcontext()""",
           ("tests/serve/test_work_limits.py::test_every_milp_of_a_task_is_made_with_the_services_node_limit",),
           "the worker ignores the task's solver_nodes: served MILPs run unbounded in nodes"),
    Mutant("serve_explain_task_without_solver_nodes", "serve/app.py",
           """                "solver_nodes": self.settings.solver_nodes,""",
           """                "solver_nodes": None,""",
           ("tests/serve/test_mutant_kills_work_limits.py",),
           "explain requests (and jobs) run without --solver-nodes: the served answer depends "
           "on the host's load"),
    Mutant("serve_certify_task_without_solver_nodes", "serve/app.py",
           """                "seed": req.seed, "solver_nodes": settings.solver_nodes}""",
           """                "seed": req.seed}""",
           ("tests/serve/test_mutant_kills_work_limits.py",),
           "certify requests run without --solver-nodes: the served certificate depends on the "
           "host's load"),
    # the retry key (only with an Idempotency-Key) and the served model's identity
    Mutant("retry_key_hashes_without_a_key", "serve/app.py",
           """        if key is None:
            return NO_RETRY_KEY""",
           """        if key is None:
            pass""",
           ("tests/serve/test_retry_key.py",),
           "every request's body is read and hashed although no retry can use it"),
    Mutant("retry_identity_ignores_the_path", "serve/app.py",
           """    body = request.url.path.encode() + b"\\0" + await request.body()""",
           """    body = await request.body()""",
           ("tests/serve/test_retry_key.py",),
           "a retry to another route (certify for explain) with the same body gets the kept "
           "answer of the first"),
    Mutant("retry_identity_ignores_the_token_holder", "serve/app.py",
           """    holder = hashlib.sha256(request.headers.get("authorization", "").encode()).hexdigest()""",
           """    holder = hashlib.sha256(b"").hexdigest()""",
           ("tests/serve/test_retry_key.py",),
           "another token holder who sends the same key and body gets someone else's kept answer"),
    Mutant("kept_results_never_expire", "serve/kept_results.py",
           """            if until > now:""",
           """            if True:""",
           ("tests/serve/test_audit_kept_results.py",),
           "kept answers are given out after their stated time (an hour)"),
    Mutant("kept_results_newest_dropped", "serve/kept_results.py",
           """            self._kept.popitem(last=False)""",
           """            self._kept.popitem(last=True)""",
           ("tests/serve/test_audit_kept_results.py",),
           "over the bound the answer just kept is dropped: the client told to retry gets nothing"),
    Mutant("served_hash_ignores_the_favourable_class", "serve/registry.py",
           """    if saved is not None and int(saved) == int(served):""",
           """    if saved is not None:""",
           ("tests/serve/test_favourable.py::test_the_served_hash_tells_the_favourable_class_apart",),
           "serving a model toward another favourable class keeps the saved model's hash: audit "
           "records of two different services look like one"),
    Mutant("served_hash_without_the_class_index", "serve/registry.py",
           """    return hashlib.sha256(f"{digest}\\0favourable={int(served)}".encode()).hexdigest()""",
           """    return hashlib.sha256(f"{digest}\\0favourable".encode()).hexdigest()""",
           ("tests/serve/test_favourable.py::test_the_served_hash_tells_the_favourable_class_apart",
            "tests/serve/test_mutant_kills_registry.py"),
           "servings of one model toward two different --favourable classes share one identity"),
    Mutant("registry_applicants_include_approved", "serve/registry.py",
           """    return frame[model.predict(frame) != model.favourable].iloc[:50]""",
           """    return frame.iloc[:50]""",
           ("tests/serve/test_favourable.py::test_applicants_offered_are_those_the_model_denies",),
           "the page offers applicants the model already approves (recourse toward what they have)"),
    Mutant("api_error_body_drops_loc", "serve/api_error.py",
           ("""        return {"detail": self.detail} if self.loc is None else """
            """{"detail": self.detail, "loc": self.loc}"""),
           """        return {"detail": self.detail}""",
           ("tests/serve/test_mutant_kills_body_limit.py",
            "tests/serve/test_api.py::test_body_over_the_limit_is_413"),
           "a 413 of a chunked body no longer says it is the body that is refused"),
    # the solver pool and the worker's answers
    Mutant("pool_queue_wait_taken_from_the_run", "serve/pool.py",
           """        slot = await self.acquire(loop.time() + deadline_s, wait=wait)
        return await self.submit(slot, fn, task, loop.time() + deadline_s)""",
           """        end = loop.time() + deadline_s
        slot = await self.acquire(end, wait=wait)
        return await self.submit(slot, fn, task, end)""",
           ("tests/serve/test_hygiene.py::test_a_queued_task_gets_its_whole_budget_once_a_worker_starts_it",
            "tests/serve/test_mutant_kills_pool.py"),
           "a request queued behind others is killed for its queue wait: its items time out under "
           "load (the status depends on the host's load)"),
    Mutant("pool_budget_wall_clock_only", "serve/pool.py",
           ("""                if cpu_start is None or cpu is None or cpu - cpu_start >= budget """
            """or now >= hard_end:"""),
           """                if True:""",
           ("tests/serve/test_hygiene.py::test_the_run_budget_is_the_workers_cpu_time_with_a_wall_clock_cap",),
           "the run budget is wall-clock time: on a loaded host a task gets less than its budget of "
           "computation and times out"),
    Mutant("pool_queue_unbounded", "serve/pool.py",
           """        if self._idle.empty() and self._waiting >= self.max_queue and not wait:""",
           """        if self._idle.empty() and self._waiting > self.max_queue and not wait:""",
           ("tests/serve/test_pool.py",),
           "one more request than --max-queue waits instead of getting 429"),
    Mutant("worker_changed_against_the_first_query", "serve/worker.py",
           """        a, b = queries[f.name].to_numpy()[owner], cfs[f.name].to_numpy()""",
           """        a, b = queries[f.name].to_numpy()[np.zeros_like(owner)], cfs[f.name].to_numpy()""",
           ("tests/serve/test_mutant_kills_worker.py",),
           "each served CE's 'changed' features are counted against the first applicant: the "
           "answer tells an applicant to change what they need not"),
    Mutant("worker_certify_valid_not_checked", "serve/worker.py",
           """    return [{"valid": bool(pred[i] == target[i]), "prediction": int(pred[i]),""",
           """    return [{"valid": True, "prediction": int(pred[i]),""",
           ("tests/serve/test_mutant_kills_worker.py",),
           "certify calls a supplied counterfactual valid whatever the model predicts"),
    # EnsembleShift's ε, ActionableRecourse's grid, MACE's z3 determinism
    Mutant("ensemble_negative_epsilon_accepted", "robustness/ensemble.py",
           """        if eps is None or eps.ndim > 1 or eps.size == 0 or not np.all(np.isfinite(eps)) \\
                or np.any(eps < 0):""",
           """        if eps is None or eps.ndim > 1 or eps.size == 0 or not np.all(np.isfinite(eps)):""",
           ("tests/robustness/test_ensemble_certificate.py::test_bad_sets_are_refused",),
           "a negative ε shrinks the threshold set below the model itself: a 'robust' certificate "
           "for a set that does not even hold the user's model"),
    Mutant("ensemble_bool_epsilon_accepted", "robustness/ensemble.py",
           """            ok = isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)""",
           """            ok = isinstance(value, numbers.Real)""",
           ("tests/robustness/test_ensemble_certificate.py::test_non_numeric_epsilon_is_refused_by_name",),
           "epsilon=True is read as ε = 1: a certificate for a shift nobody asked about"),
    Mutant("ensemble_epsilon_length_unchecked", "robustness/ensemble.py",
           """        if eps.shape != (d,):""",
           """        if eps.shape[0] < d:""",
           ("tests/robustness/test_ensemble_certificate.py::test_bad_inputs_get_typed_errors",
            "tests/robustness/test_mutant_kills_ensemble_shift.py"),
           "a per-column ε longer than the model's columns is accepted: each ε is read against "
           "whichever column its position happens to name"),
    Mutant("ar_grid_size_unbounded", "methods/actionable_recourse.py",
           """        check_integer(self.grid_size, "grid_size", low=2, high=MAX_GRID_SIZE)""",
           """        check_integer(self.grid_size, "grid_size", low=2)""",
           ("tests/methods/test_actionable_recourse.py::test_a_grid_size_out_of_range_is_refused_by_name",),
           "grid_size=10**18 asks numpy for exabytes: a crash (or a machine swapped to death) "
           "instead of a refusal"),
    Mutant("ar_grid_size_one_allowed", "methods/actionable_recourse.py",
           """        check_integer(self.grid_size, "grid_size", low=2, high=MAX_GRID_SIZE)""",
           """        check_integer(self.grid_size, "grid_size", low=1, high=MAX_GRID_SIZE)""",
           ("tests/methods/test_actionable_recourse.py::test_a_grid_size_out_of_range_is_refused_by_name",),
           "grid_size=1 divides by zero on integer columns: an error status instead of a refusal"),
    Mutant("smt_seed_not_passed", "solvers/smt/oracle.py",
           """    solver.set("random_seed", int(seed))""",
           """    solver.set("random_seed", 0)""",
           ("tests/solvers/test_mutant_kills_smt.py::test_check_gives_z3_the_seed_it_is_given",
            "tests/methods/test_mace_determinism.py::test_two_fresh_processes_give_identical_ces_"
            "bounds_and_work"),
           "MACE's random_state never reaches z3: the seed a user sets (and records) is not the "
           "one that produced the CEs"),
    Mutant("smt_work_counted_from_the_contexts_start", "solvers/smt/oracle.py",
           """        work = _rlimit_count(solver) - w0""",
           """        work = _rlimit_count(solver)""",
           ("tests/solvers/test_mutant_kills_smt.py::test_a_calls_work_is_its_own_not_what_its_"
            "context_spent_before", "tests/methods/test_mace_determinism.py"),
           "a call is charged every z3 unit its context ever spent: budgets run out early and "
           "queries time out that would have been proven"),
    Mutant("smt_spent_budget_is_unlimited", "solvers/smt/oracle.py",
           """    if rlimit is not None and rlimit < 1:
        return SMTResult("unknown", None, "work limit reached")""",
           """    if rlimit is not None and rlimit < 0:
        return SMTResult("unknown", None, "work limit reached")""",
           ("tests/methods/test_mace_determinism.py::test_check_maps_an_exhausted_rlimit_to_unknown_work_limit",),
           "a spent budget (rlimit 0) is z3's 'no limit': the call runs unbounded"),
    Mutant("smt_context_not_fresh", "solvers/smt/terms.py",
           """        z3_module._main_ctx = ctx""",
           """        ctx = previous or ctx""",
           ("tests/methods/test_mace_determinism.py::test_a_query_is_solved_the_same_after_other_queries",
            "tests/solvers/test_mutant_kills_smt.py::test_fresh_context_installs_a_new_default_"
            "context_and_restores_the_old"),
           "queries share one z3 context: a query's CEs and work depend on the queries before it"),
    Mutant("mace_one_layer_network_gets_the_mlp_rate", "methods/mace_work.py",
           """    rate = WORK_PER_SECOND["logistic" if kind == "network" and len(parts) == 1 else kind]""",
           """    rate = WORK_PER_SECOND[kind]""",
           ("tests/methods/test_mutant_kills_mace_work.py",),
           "logistic regression gets the ReLU MLP's budget (a tenth): its queries time out that "
           "would be proven within time_limit"),
    Mutant("mace_default_work_ignores_time_limit", "methods/mace_work.py",
           """    return max(1, round(time_limit * rate))""",
           """    return max(1, round(rate))""",
           ("tests/methods/test_mutant_kills_mace_work.py",),
           "time_limit no longer sets MACE's work budget: a larger time_limit proves nothing more"),
    # dataset constraints: relations, their compiled rows, conditionals
    Mutant("relation_subtraction_added", "data/relations.py",
           """        s = 1.0 if isinstance(node.op, ast.Add) else -1.0""",
           """        s = 1.0""",
           ("tests/data/test_constraints.py",),
           "'a - b <= c' is read as 'a + b <= c': CEs kept to a constraint the user did not write"),
    Mutant("relation_equality_one_sided", "data/relations.py",
           """        return np.abs(d)""",
           """        return np.maximum(d, 0.0)""",
           ("tests/data/test_constraints.py", "tests/methods/test_pinned_equalities.py",
            "tests/data/test_mutant_kills_relations.py"),
           "the evaluator of 'a + b == c' accepts a + b < c: CEs breaking the equality pass the "
           "check"),
    Mutant("relation_constant_side_flipped", "data/relations.py",
           """        return cls(text.strip(), tuple((f, float(coefs[f])) for f in names), op, kr - kl)""",
           """        return cls(text.strip(), tuple((f, float(coefs[f])) for f in names), op, kl - kr)""",
           ("tests/data/test_constraints.py",),
           "'debt <= income - 100' is read as 'debt <= income + 100'"),
    Mutant("compiled_equality_upper_only", "data/constraints.py",
           """            if r.op in (">=", "=="):
                lo[i] = rhs
        return CompiledConstraints(""",
           """            if r.op == ">=":
                lo[i] = rhs
        return CompiledConstraints(""",
           ("tests/data/test_constraints.py", "tests/methods/test_pinned_equalities.py"),
           "an equality relation is compiled as '<=' only: the exact methods return CEs that break it"),
    Mutant("compiled_offset_dropped", "data/constraints.py",
           """                const += a * flo""",
           """                const += 0.0""",
           ("tests/data/test_constraints.py",),
           "the compiled rows forget the features' lower bounds: MILP and SMT keep another "
           "relation than the one stated"),
    Mutant("compiled_max_changes_counts_columns", "data/constraints.py",
           """        return per.sum(axis=1)""",
           """        return moved.sum(axis=1)""",
           ("tests/data/test_constraints.py",
            "tests/methods/test_constraints_methods.py::test_milp_optimum_equals_brute_force",
            "tests/data/test_mutant_kills_compiled.py"),
           "a one-hot category change counts twice against max_changes in model space: CEs "
           "within the cap are rejected"),
    Mutant("conditional_decrease_compiled_as_increase", "data/conditionals.py",
           """            sign = 1.0 if self.cons_kind == "increases" else -1.0""",
           """            sign = 1.0""",
           ("tests/methods/test_pinned_conditionals.py",),
           "'then f decreases by >= k' is compiled as an increase: exact methods' CEs break the rule"),
    Mutant("conditional_raw_decrease_as_increase", "data/conditionals.py",
           """            d = (a - b) if self.cons_kind == "increases" else (b - a)""",
           """            d = a - b""",
           ("tests/methods/test_pinned_conditionals.py",),
           "the evaluator reads a decreasing consequence as an increase: rule-breaking CEs pass, "
           "rule-keeping ones are dropped"),
    Mutant("conditional_ordinal_level_upper_column_dropped", "data/conditionals.py",
           """                if idx + 1 <= k - 1:
                    cond[cb.start + idx] = -1.0""",
           """                if idx + 1 <= k - 1:
                    pass""",
           ("tests/methods/test_pinned_conditionals.py::test_an_ordinal_equality_condition_on_every_level",),
           "'level == v' is compiled as 'level >= v': the rule binds CEs on every higher level too"),
    Mutant("conditional_compiled_implication_dropped", "data/conditionals.py",
           """        ok = (v >= self.lower + shift - tol) & (v <= self.upper + shift + tol)
        return ~on | ok""",
           """        ok = (v >= self.lower + shift - tol) & (v <= self.upper + shift + tol)
        return ok""",
           ("tests/methods/test_pinned_conditionals.py", "tests/data/test_mutant_kills_compiled.py"),
           "a conditional's consequence is required even where its condition is false: valid CEs "
           "are dropped as breaking it"),
    # audits: the executor and the report's files
    Mutant("audit_resume_recomputes_done_partitions", "audits/execute.py",
           """    todo = ((i, f) for i, f in enumerate(partitions) if not store.done(i))""",
           """    todo = ((i, f) for i, f in enumerate(partitions))""",
           ("tests/audits/test_audit.py::test_killed_and_resumed_audit_gives_the_same_report",),
           "a resumed audit recomputes (and rewrites) the partitions already on disk"),
    Mutant("audit_joblib_results_written_by_position", "audits/execute.py",
           """            done(idx[k], frame)""",
           """            done(k, frame)""",
           ("tests/audits/test_mutant_kills_audit_execute.py",),
           "a resumed joblib audit writes partition i's rows under the index of the i-th "
           "partition left: finished partitions are overwritten, others never written"),
    Mutant("audit_report_csv_rounded", "audits/report.py",
           """        _write(out / name, df.to_csv(index=False, float_format="%.10g"))""",
           """        _write(out / name, df.to_csv(index=False, float_format="%.3g"))""",
           ("tests/audits/test_mutant_kills_audit_report.py",),
           "the audit's saved tables (group_metrics.csv, fairness_gaps.csv) are rounded to 3 "
           "digits: a gap or interval read back is not the one computed"),
    Mutant("audit_report_too_few_groups_hidden", "audits/report.py",
           """                                     for r in t["groups_too_few"]) or "none") + "\\n",""",
           """                                     for r in []) or "none") + "\\n",""",
           ("tests/audits/test_mutant_kills_audit_report.py",),
           "report.md says no group was too small to compare when some were"),
    # --- the recourse ledger (ledger/), issue 49 ------------------------------------------
    Mutant("ledger_rescore_trusts_the_promise", "ledger/check.py",
           """    return targets, wanted, np.asarray(model.predict(targets)) == wanted""",
           """    return targets, wanted, np.ones(len(wanted), dtype=bool)""",
           ("tests/ledger/test_check.py", "tests/serve/test_ledger_serve.py"),
           "a broken promise is counted as honoured (the new model is never asked)"),
    Mutant("ledger_gate_ignores_groups", "ledger/report.py",
           """                if rate is not None and rate < r:""",
           """                if False:""",
           ("tests/ledger/test_check.py", "tests/ledger/test_cli.py"),
           "the deployment gate passes while a group falls below the honour rate asked"),
    Mutant("ledger_interval_not_widened_to_its_point", "utils.py",
           """        lo, hi = min(lo, point), max(hi, point)""",
           """        lo, hi = lo, hi""",
           ("tests/ledger/test_check.py", "tests/ledger/test_only_valid_and_intervals.py"),
           "an honour rate outside its own interval"),
    Mutant("ledger_records_invalid_ces", "ledger/promises.py",
           """    valid = np.asarray(model.predict(expl.counterfactuals_encoded)) == targets""",
           """    valid = np.ones(len(targets), dtype=bool)""",
           ("tests/ledger/test_only_valid_and_intervals.py", "tests/ledger/test_cli.py"),
           "a CE the model does not accept is recorded as a promise"),
    # --- the (δ, α) retrain certificate (robustness/retrain.py), issue 50 ------------------
    Mutant("retrain_certificate_full_error_every_look", "robustness/retrain.py",
           """        return (1.0 - self.confidence) / len(getattr(self, "looks_", ())""",
           """        return (1.0 - self.confidence) / 1 or len(getattr(self, "looks_", ())""",
           ("tests/robustness/test_retrain_certificate.py",),
           "early stopping tests every look at the full error: the stated confidence fails"),
    Mutant("retrain_certificate_at_the_share", "robustness/retrain.py",
           """            cert, ref = lo > self.share, hi < self.share""",
           """            cert, ref = lo >= self.share - 0.05, hi < self.share""",
           ("tests/robustness/test_retrain_certificate.py",),
           "a CE is certified when its lower bound is only near the share"),
    Mutant("retrain_certificate_counts_rejections", "robustness/retrain.py",
           """                k[rows] += np.asarray(m.predict(rows_for(m)[rows])) == t[rows]""",
           """                k[rows] += 1""",
           ("tests/robustness/test_retrain_certificate.py",),
           "every retrained model counts as keeping the CE"),
    # --- CPU budgets (solvers/clock.py, the HiGHS callbacks), issue 51 ---------------------
    Mutant("budget_wall_clock_only", "solvers/clock.py",
           """        return self.limit - self.cpu(), (""",
           """        return self.limit - self.wall(), (""",
           ("tests/solvers/test_clock.py",),
           "the budget is wall-clock time again: a loaded host turns proofs into timeouts"),
    Mutant("highs_interrupt_flag_left_set", "solvers/milp/highs.py",
           """        event.interrupt(stop)""",
           """        if stop:
            event.interrupt(True)""",
           ("tests/solvers/test_clock.py",),
           "after one interrupted run, every later run of the instance stops at once"),
)


# --- running ---------------------------------------------------------------------------------

#: the module every mutated copy imports just before the mutated statement runs: it creates the
#: file named by ``ROBUSTCE_MUTANT_MARK`` once per process (subprocesses and joblib workers
#: inherit the variable and the PYTHONPATH), so "the mutated line executed" is a fact on disk
MARK_MODULE = "_robustce_mutant_mark"
_MARK_SOURCE = (
    '"""Touches $ROBUSTCE_MUTANT_MARK on first import (tools/mutants.py\'s reach marker)."""\n'
    "import os\n\n"
    '_path = os.environ.get("ROBUSTCE_MUTANT_MARK")\n'
    "if _path:\n"
    '    open(_path, "a").close()\n')

#: outcomes that mean the check itself needs attention (not a verdict on the tests)
DRIFT = "PATTERN NOT FOUND"
AMBIGUOUS = "PATTERN AMBIGUOUS"
INVALID = "MUTANT INVALID"


@dataclass
class Outcome:
    """One mutant's result: ``verdict`` is ``killed``, ``SURVIVED``, ``UNREACHED`` (the tests
    passed and never executed the mutated statement), ``killed (timeout)``, ``ERROR`` (pytest
    could not run the selection) or one of :data:`DRIFT`, :data:`AMBIGUOUS`, :data:`INVALID`;
    ``reached``: True / False, None where nothing ran or no marker could be placed."""

    mutant: Mutant
    verdict: str
    reached: bool | None
    seconds: float
    detail: str = ""


def mutate(text: str, m: Mutant) -> tuple[str | None, str]:
    """``text`` with the mutant planted and a reach marker before the statement holding its
    first changed line, or ``(None, reason)`` when the snippet is missing, ambiguous, or the
    result does not compile. The reason is "" on success, or a note when only the marker
    could not be placed (the mutant still runs; reach is then unknown)."""
    count = text.count(m.old)
    if count == 0:
        return None, f"{DRIFT}: the snippet is not in {m.file} (the code moved) — update the mutant"
    if count > 1:
        return None, f"{AMBIGUOUS}: the snippet occurs {count} times in {m.file} — anchor it"
    at = text.index(m.old)
    mutated = text[:at] + m.new + text[at + len(m.old):]
    try:
        compile(mutated, m.file, "exec")
    except SyntaxError as exc:
        return None, f"{INVALID}: the mutated {m.file} does not compile ({exc.msg}, line {exc.lineno})"
    # the first line that really changed (a shared head such as "else:" is skipped)
    end = at + len(m.new)
    start = at + len(os.path.commonprefix([m.old, m.new]))
    if start >= end:  # the change is a cut at the end: the line it ends on
        start = mutated.rfind("\n", 0, max(end - 1, 0)) + 1
    elif mutated[start] == "\n":
        start += 1
    eol = mutated.find("\n", start)
    first = _first_code_line(mutated, start, max(end, len(mutated) if eol < 0 else eol))
    marked = _place_marker(mutated, first) if first is not None else None
    if marked is None:
        return mutated, "no reach marker could be placed (reach unknown)"
    return marked, ""


def _first_code_line(text: str, start: int, end: int) -> int | None:
    """1-based number of the first line of ``text[start:end]`` holding code (not blank, not a
    comment)."""
    line = text.count("\n", 0, start) + 1
    for chunk in text[start:end].split("\n"):
        body = chunk.strip()
        if body and not body.startswith("#"):
            return line
        line += 1
    return None


def _place_marker(text: str, line: int) -> str | None:
    """``text`` with ``import _robustce_mutant_mark`` run just before the innermost statement
    that holds ``line`` (for an ``elif`` header: inside its condition, evaluated first), or
    None where no such statement starts its own line."""
    tree = ast.parse(text)
    best: ast.stmt | None = None
    for node in ast.walk(tree):  # breadth first: a nested statement of the same span wins
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or (node.end_lineno or 0) - node.lineno <= (best.end_lineno or 0) - best.lineno:
                best = node
    if best is None:
        return None
    lines = text.split("\n")
    head = lines[best.lineno - 1].encode()
    indent = head[:best.col_offset]
    if isinstance(best, ast.If) and head.lstrip().startswith(b"elif"):
        test = best.test  # elif c:  ->  elif (__import__(mark) and False) or (c):
        if test.lineno != best.lineno or test.end_lineno != test.lineno:
            return None  # a condition over several lines: no marker (reach unknown)
        start, end = test.col_offset, test.end_col_offset
        new = (head[:start] + f'(__import__("{MARK_MODULE}") and False) or ('.encode()
               + head[start:end] + b")" + head[end:])
        lines[best.lineno - 1] = new.decode()
        return "\n".join(lines)
    if indent.strip():  # the statement does not start its line (e.g. after "if x:" on it)
        return None
    lines.insert(best.lineno - 1, f"{indent.decode()}import {MARK_MODULE}  # noqa: mutant reach marker")
    return "\n".join(lines)


#: the marker expression of a mutant run: every listed test, ``slow`` or not (the project's
#: addopts deselect ``slow`` tests; a later ``-m`` replaces that one)
ANY_MARKER = "slow or not slow"


def pytest_command(m: Mutant) -> list[str]:
    """The pytest call that runs ``m``'s guarding tests: stop at the first failure, and run
    every listed file or node id whatever its marker (``-m 'slow or not slow'`` overrides the
    addopts' ``-m 'not slow'``, which would silently deselect a slow guarding test)."""
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
            "-m", ANY_MARKER, *m.tests]


def run(mutants: list[Mutant], timeout: float, verbose: bool = False) -> list[Outcome]:
    """Each mutant on its own copy of ``src/`` (this checkout's), its guarding tests run with
    the copy first on ``PYTHONPATH``; the working tree is never written."""
    results = []
    env = dict(os.environ, MPLBACKEND="Agg")
    env.setdefault("ROBUSTCE_DATA", str((REPO / ".." / "shared" / "datasets").resolve()))
    for m in mutants:
        with tempfile.TemporaryDirectory(prefix="robustce-mutant-") as tmp:
            src = Path(tmp) / "src"
            shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
            marks = Path(tmp) / "mark"
            marks.mkdir()
            (marks / f"{MARK_MODULE}.py").write_text(_MARK_SOURCE)
            flag = Path(tmp) / "reached"
            target = src / "robustce" / m.file
            if not target.is_file():
                results.append(_report(Outcome(m, DRIFT, None, 0.0, f"{m.file} does not exist")))
                continue
            mutated, note = mutate(target.read_text(), m)
            if mutated is None:
                verdict = note.split(":", 1)[0]
                results.append(_report(Outcome(m, verdict, None, 0.0, note)))
                continue
            target.write_text(mutated)
            placed = not note
            t0 = time.perf_counter()
            cmd = pytest_command(m)
            run_env = dict(env, PYTHONPATH=os.pathsep.join([str(src), str(marks)]),
                           ROBUSTCE_MUTANT_MARK=str(flag))
            tail = ""
            try:
                proc = subprocess.run(cmd, cwd=REPO, env=run_env, capture_output=True, text=True,
                                      timeout=timeout)
                lines = (proc.stdout + proc.stderr).strip().splitlines()
                tail = lines[-1] if lines else ""
                if proc.returncode == 0:
                    verdict = "SURVIVED"
                elif proc.returncode == 1:
                    verdict = "killed"
                else:  # 2 interrupted / collection error, 4 usage, 5 nothing collected
                    verdict = f"ERROR (pytest exit {proc.returncode})"
                if verbose and proc.returncode:
                    print(proc.stdout[-3000:], proc.stderr[-2000:], sep="\n")
            except subprocess.TimeoutExpired:
                verdict = "killed (timeout)"
            dt = time.perf_counter() - t0
            reached = flag.exists() if placed else None
            if verdict == "SURVIVED" and reached is False:
                verdict = "UNREACHED"
        results.append(_report(Outcome(m, verdict, reached, dt, note or tail)))
    return results


def _report(o: Outcome) -> Outcome:
    reach = {True: "reached", False: "unreached", None: "reach ?"}[o.reached]
    print(f"{o.verdict:<18} {reach:<9} {o.seconds:6.1f} s  {o.mutant.name}: {o.mutant.why}"
          + (f"\n    {o.detail}" if o.verdict not in ("killed", "SURVIVED") and o.detail else ""),
          flush=True)
    return o


def markdown(results: list[Outcome]) -> str:
    """The table docs/mutation.md records: mutant, file, reached, verdict, guarding tests, time."""
    rows = ["| mutant | file | reached | verdict | guarding tests | time (s) |",
            "|---|---|---|---|---|---:|"]
    for o in results:
        reach = {True: "yes", False: "**no**", None: "?"}[o.reached]
        tests = ", ".join(f"`{t.removeprefix('tests/')}`" for t in o.mutant.tests)
        verdict = o.verdict if o.verdict == "killed" else f"**{o.verdict}**"
        rows.append(f"| {o.mutant.name} | `{o.mutant.file}` | {reach} | {verdict} | {tests} | "
                    f"{o.seconds:.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-k", default="", help="only mutants whose name contains this")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--check", action="store_true",
                   help="only check that every snippet is found once and the mutants compile")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant")
    p.add_argument("--markdown", metavar="FILE", help="also write the result table to FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="show pytest's output of kills")
    args = p.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k in m.name]
    if args.list:
        for m in chosen:
            print(f"{m.name:<40} {m.file:<35} {m.why}")
        return 0
    if args.check:
        bad = 0
        for m in chosen:
            path = REPO / "src" / "robustce" / m.file
            mutated, note = mutate(path.read_text(), m) if path.is_file() else (None, f"{DRIFT}: no {m.file}")
            if mutated is None or note:
                bad += mutated is None
                print(f"{m.name}: {note}")
        print(f"{len(chosen) - bad} of {len(chosen)} mutants apply")
        return 1 if bad else 0
    t0 = time.perf_counter()
    results = run(chosen, args.timeout, args.verbose)
    total = time.perf_counter() - t0
    counts: dict[str, int] = {}
    for o in results:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    print(f"\n{len(results)} mutants in {total:.0f} s: "
          + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    if args.markdown:
        Path(args.markdown).write_text(markdown(results) + f"\n\nTotal: {total:.0f} s.\n")
    return 0 if all(o.verdict.startswith("killed") for o in results) else 1


if __name__ == "__main__":
    sys.exit(main())
