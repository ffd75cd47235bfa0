"""Planted-bug (mutation) check of the core: does the test suite catch the bugs that matter?

Each mutant is one small, plausible bug in a core place (a flipped comparison, a dropped
constraint, a skipped projection, a non-atomic write). For each, the script copies ``src/`` to
a temporary folder, applies the edit there (the working tree is never touched), runs the tests
that guard that place with the mutated copy first on ``PYTHONPATH``, and records whether the
suite failed ("killed") or passed ("survived").

    make mutants                       # all mutants, their guarding tests
    python tools/mutants.py -k atomic  # only mutants whose name contains "atomic"
    python tools/mutants.py --list

The last full run is recorded in ``docs/mutation.md``; a surviving mutant that changes a
certificate, a status, a saved file or a returned CE's validity is a gap in the tests.
Not part of CI (each mutant reruns a slice of the suite: minutes in all).
"""

from __future__ import annotations

import argparse
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
    tests: tuple[str, ...]
    why: str  # what would go wrong for a user


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
    # --- the Explainer base --------------------------------------------------------------
    Mutant("base_skips_projection", "methods/base.py",
           """cfs = self.encoder.project(np.vstack(""",
           """cfs = (np.vstack(""",
           ("tests/methods/test_revalidation.py", "tests/methods/test_base.py"),
           "off-grid CEs (half a category) reach the user"),
    Mutant("base_skips_forward_pass", "methods/base.py",
           """            valid = self.model.predict(cfs) == targets[owner]""",
           """            valid = np.ones(len(cfs), dtype=bool)""",
           ("tests/methods/test_revalidation.py", "tests/methods/test_base.py"),
           "an invalid CE is returned as found"),
    Mutant("base_skips_actionability", "methods/base.py",
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
    Mutant("milp_nearest_no_margin", "methods/milp_nearest.py",
           """m.add_constrs_coo([0], [y[0]], [1.0], 1, tau, np.inf)""",
           """m.add_constrs_coo([0], [y[0]], [1.0], 1, -np.inf, np.inf)""",
           ("tests/methods/test_milp_methods.py",),
           "the nearest-CE MILP ignores validity"),
    Mutant("milp_robust_accepts_undecided", "methods/milp_robust.py",
           """            if status is CertStatus.ROBUST:""",
           """            if status in (CertStatus.ROBUST, CertStatus.TIMEOUT, CertStatus.INCONCLUSIVE):""",
           ("tests/methods/test_milp_methods.py",),
           "MILP-R returns a CE whose Δ-test timed out as Δ-robust"),
    Mutant("milp_robust_no_raise", "methods/milp_robust.py",
           """            if status is not CertStatus.NOT_ROBUST:
                undecided += 1""",
           """            if status is not CertStatus.NOT_ROBUST:
                undecided += 1
            return QueryResult("found", cf[None], cert)""",
           ("tests/methods/test_milp_methods.py",),
           "MILP-R returns the first (non-robust) CE"),
)


def _apply(root: Path, m: Mutant) -> None:
    path = root / "robustce" / m.file
    text = path.read_text()
    count = text.count(m.old)
    if count != 1:
        raise SystemExit(f"mutant {m.name}: the snippet occurs {count} times in {m.file} "
                         "(the code moved; update tools/mutants.py)")
    path.write_text(text.replace(m.old, m.new))


def run(mutants: list[Mutant], timeout: float) -> list[tuple[Mutant, str, float]]:
    results = []
    env = dict(os.environ, MPLBACKEND="Agg")
    env.setdefault("ROBUSTCE_DATA", str((REPO / ".." / "shared" / "datasets").resolve()))
    for m in mutants:
        with tempfile.TemporaryDirectory(prefix="robustce-mutant-") as tmp:
            src = Path(tmp) / "src"
            shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
            _apply(src, m)
            t0 = time.perf_counter()
            cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests]
            try:
                proc = subprocess.run(cmd, cwd=REPO, env=dict(env, PYTHONPATH=str(src)),
                                      capture_output=True, text=True, timeout=timeout)
                outcome = "killed" if proc.returncode != 0 else "SURVIVED"
                if proc.returncode not in (0, 1):
                    outcome = f"killed (pytest exit {proc.returncode})"
            except subprocess.TimeoutExpired:
                outcome = "killed (timeout)"
            dt = time.perf_counter() - t0
        results.append((m, outcome, dt))
        print(f"{outcome:<10} {dt:6.1f} s  {m.name}: {m.why}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-k", default="", help="only mutants whose name contains this")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant")
    args = p.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k in m.name]
    if args.list:
        for m in chosen:
            print(f"{m.name:<40} {m.file:<35} {m.why}")
        return 0
    results = run(chosen, args.timeout)
    survived = [m.name for m, outcome, _ in results if outcome == "SURVIVED"]
    print(f"\n{len(results) - len(survived)} killed, {len(survived)} survived"
          + (f": {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
