"""Speed of parameter-shift sampling: n realisations of a 20-10 ReLU network on 100 inputs.

Measures, in one run, the vectorised path (``ParameterShift.sample`` + ``SampledNetworks.forward``)
against a per-sample Python loop (draw one perturbed network, forward it, repeat), and checks
that the vectorised logits equal a per-sample forward of the same realisations.

    python benchmarks/bench_sampling.py            # 10 000 samples, 7 repeats
    python benchmarks/bench_sampling.py --quick    # 2 000 samples, 3 repeats

``run(quick)`` returns one dict per configuration (for ``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from robustce.models.network import ReLUNetwork
from robustce.robustness.shift import ParameterShift

DELTA = 0.05
N_INPUTS = 100


def _network(n_in: int, hidden: tuple[int, ...] = (20, 10), seed: int = 0) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    sizes = [n_in, *hidden, 1]
    return ReLUNetwork([(rng.normal(0, 1 / np.sqrt(a), size=(b, a)), rng.normal(0, 0.1, size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


def _loop_baseline(net: ReLUNetwork, X: np.ndarray, n: int, seed: int) -> np.ndarray:
    """What one writes without batching: per sample, perturb every layer and forward."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, len(X), net.n_outputs))
    last = len(net.weights) - 1
    for s in range(n):
        h = X
        for i, (W, b) in enumerate(net.weights):
            Wp = W + rng.uniform(-DELTA, DELTA, size=W.shape)
            bp = b + rng.uniform(-DELTA, DELTA, size=b.shape)
            h = h @ Wp.T + bp
            if i < last:
                h = np.maximum(h, 0.0)
        out[s] = h
    return out


def _timed(fn: Any, repeats: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def run(quick: bool = False) -> list[dict[str, Any]]:
    n = 2_000 if quick else 10_000
    repeats = 3 if quick else 7
    loop_repeats = 1 if quick else 3
    shift = ParameterShift(DELTA)
    rows = []
    for n_in in (8, 13):
        net = _network(n_in)
        X = np.random.default_rng(1).uniform(size=(N_INPUTS, n_in))

        t0 = time.perf_counter()
        shift.sample(net, n, random_state=0).forward(X)
        first = time.perf_counter() - t0

        sample_times, samples = _timed(lambda net=net: shift.sample(net, n, random_state=0), repeats)
        forward_times, logits = _timed(lambda X=X, samples=samples: samples.forward(X), repeats)
        total_times, _ = _timed(lambda net=net, X=X: shift.sample(net, n, random_state=0).forward(X),
                                repeats)
        loop_times, _ = _timed(lambda net=net, X=X: _loop_baseline(net, X, n, seed=0), loop_repeats)

        check = min(n, 300)  # exactness: vectorised == per-sample forward of the same draws
        ref = np.stack([samples.network(i).forward(X) for i in range(check)])
        max_diff = float(np.abs(logits[:check] - ref).max())

        vec = statistics.median(total_times)
        loop = statistics.median(loop_times)
        rows.append({
            "name": f"ParameterShift.sample+forward {'-'.join(map(str, net.layer_sizes))} "
                    f"({n} samples x {N_INPUTS} inputs) vs per-sample loop",
            "seconds": vec,
            "baseline_seconds": loop,
            "ratio": loop / vec,
            "benchmark": "parameter_shift_sampling",
            "network": "-".join(map(str, net.layer_sizes)),
            "n_samples": n,
            "n_inputs": N_INPUTS,
            "repeats": repeats,
            "first_call_s": first,
            "sample_s": statistics.median(sample_times),
            "forward_s": statistics.median(forward_times),
            "vectorised_s": vec,
            "loop_s": loop,
            "speedup_vs_loop": loop / vec,
            "max_abs_diff_vs_per_sample": max_diff,
        })
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    print(f"{'network':>12} {'samples':>8} {'first':>8} {'sample':>8} {'forward':>8} "
          f"{'total':>8} {'loop':>8} {'speedup':>8} {'max|diff|':>10}")
    for r in rows:
        print(f"{r['network']:>12} {r['n_samples']:>8} {r['first_call_s']:>7.3f}s {r['sample_s']:>7.3f}s "
              f"{r['forward_s']:>7.3f}s {r['vectorised_s']:>7.3f}s {r['loop_s']:>7.3f}s "
              f"{r['speedup_vs_loop']:>7.1f}x {r['max_abs_diff_vs_per_sample']:>10.1e}")
    print(f"(median wall times over repeats, {N_INPUTS} inputs, delta={DELTA}; 'loop' is a per-sample "
          "Python loop measured in the same run)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 000 samples, fewer repeats")
    _print(run(quick=parser.parse_args().quick))
