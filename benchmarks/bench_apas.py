"""Speed of APΔS on a 20-10 ReLU network (8 inputs, the diabetes width), α = 0.999, R = 0.995
(n = 1379 draws per tested δ), against straightforward per-sample Python loops measured in the
same run:

* ``apas_max_delta`` (Algorithm 1) for one CE at a time — median over CEs (and, for reference,
  the per-CE time when all of them go in one vectorised call); the baseline is
  Algorithm 1 written plainly: per tested δ, per draw, perturb every weight, forward the CE,
  stop at the first flip (target: < 10 ms median);
* ``apas_certify`` for 1 000 CEs at one δ; the baseline loops over the n draws and forwards all
  CEs through each (target: < 1 s).

Medians of wall time; ``cpu_s`` is the median process CPU time of the same calls (on a shared
machine the wall time includes waiting for a core). The certificates are checked against a per-draw forward of
  the very realisations ``ParameterShift(δ).sample`` draws with the same seed.

    python benchmarks/bench_apas.py                # 25 CEs for δ_max, 5 repeats of certify
    python benchmarks/bench_apas.py --quick        # 9 CEs, 3 repeats
    python benchmarks/bench_apas.py --repeats 5    # the 25 one-CE calls 5 times (same seeds):
                                                   # median over all 125 calls, and per pass

``run(quick, repeats)`` returns one dict per configuration (for ``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

from robustce.models.network import ReLUNetwork, class_margin
from robustce.robustness import ParameterShift, apas_certify, apas_max_delta, apas_sample_size

ALPHA, R = 0.999, 0.995
DELTA_INIT = 1e-4
DELTA_CERTIFY = 0.01
N_CERTIFY = 1000


def _network(n_in: int = 8, hidden: tuple[int, ...] = (20, 10), seed: int = 0) -> ReLUNetwork:
    rng = np.random.default_rng(seed)
    sizes = [n_in, *hidden, 1]
    return ReLUNetwork([(rng.normal(0, 1 / np.sqrt(a), size=(b, a)), rng.normal(0, 0.1, size=b))
                        for a, b in zip(sizes[:-1], sizes[1:], strict=True)])


def _loop_keeps(net: ReLUNetwork, x: np.ndarray, t: int, delta: float, n: int,
                rng: np.random.Generator) -> bool:
    """One probabilistic test, per draw: perturb, forward, stop at the first flip."""
    last = len(net.weights) - 1
    for _ in range(n):
        h = x
        for i, (W, b) in enumerate(net.weights):
            h = (W + rng.uniform(-delta, delta, W.shape)) @ h + b + rng.uniform(-delta, delta, b.shape)
            if i < last:
                h = np.maximum(h, 0.0)
        if class_margin(h[None], t)[0] <= 0:
            return False
    return True


def _loop_max_delta(net: ReLUNetwork, x: np.ndarray, n: int, seed: int) -> float:
    """Algorithm 1 as printed in the paper, one CE, one draw at a time."""
    rng = np.random.default_rng(seed)
    t = int(net.predict(x[None])[0])
    if not _loop_keeps(net, x, t, DELTA_INIT, n, rng):
        return 0.0
    delta = DELTA_INIT
    while _loop_keeps(net, x, t, delta, n, rng) and delta < 10.0:
        delta *= 2.0
    best = delta / 2.0
    while abs(delta - best) > DELTA_INIT:
        mid = 0.5 * (best + delta)
        if _loop_keeps(net, x, t, mid, n, rng):
            best = mid
        else:
            delta = mid
    return best


def _loop_certify(net: ReLUNetwork, X: np.ndarray, delta: float, n: int, seed: int) -> np.ndarray:
    """Per draw: perturb every layer, forward all CEs; returns the min margin per CE."""
    rng = np.random.default_rng(seed)
    t = net.predict(X)
    sign = np.where(t == 1, 1.0, -1.0)
    worst = np.full(len(X), np.inf)
    last = len(net.weights) - 1
    for _ in range(n):
        h = X
        for i, (W, b) in enumerate(net.weights):
            h = h @ (W + rng.uniform(-delta, delta, W.shape)).T + b + rng.uniform(-delta, delta, b.shape)
            if i < last:
                h = np.maximum(h, 0.0)
        worst = np.minimum(worst, sign * h[:, 0])
    return worst


def run(quick: bool = False, repeats_one_ce: int = 1) -> list[dict[str, Any]]:
    n_ces = 9 if quick else 25
    n_loop_ces = 2 if quick else 4
    repeats = 3 if quick else 5
    n = apas_sample_size(ALPHA, R)
    net = _network()
    X = np.random.default_rng(1).uniform(size=(max(n_ces, N_CERTIFY), 8))
    rows = []

    # --- δ_max, one CE per call ----------------------------------------------------------------
    apas_max_delta(net, X[:1], ALPHA, R, DELTA_INIT, random_state=0)  # warm-up
    times, cpu, deltas, samples, pass_medians = [], [], [], [], []
    for k in range(max(1, repeats_one_ce)):  # the same calls again: only the timing varies
        pass_times = []
        for i in range(n_ces):
            t0, c0 = time.perf_counter(), time.process_time()
            res = apas_max_delta(net, X[i:i + 1], ALPHA, R, DELTA_INIT, random_state=i)
            pass_times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            if k == 0:
                deltas.append(float(res.delta[0]))
                samples.append(int(res.n_samples[0]))
        times += pass_times
        pass_medians.append(statistics.median(pass_times))
    t0, c0 = time.perf_counter(), time.process_time()
    batch = apas_max_delta(net, X[:n_ces], ALPHA, R, DELTA_INIT, random_state=0)
    batch_s, batch_cpu = time.perf_counter() - t0, time.process_time() - c0
    loop_times, loop_deltas = [], []
    for i in range(n_loop_ces):
        t0 = time.perf_counter()
        loop_deltas.append(_loop_max_delta(net, X[i], n, seed=i))
        loop_times.append(time.perf_counter() - t0)
    med, loop_med = statistics.median(times), statistics.median(loop_times)
    rows.append({
        "name": f"apas_max_delta one CE, {'-'.join(map(str, net.layer_sizes))}, n={n} "
                f"(median of {n_ces} CEs"
                f"{f' x {repeats_one_ce} passes' if repeats_one_ce > 1 else ''}) vs per-draw loop",
        "seconds": med, "baseline_seconds": loop_med, "ratio": loop_med / med,
        "benchmark": "apas_max_delta_one_ce", "network": "-".join(map(str, net.layer_sizes)),
        "n": n, "n_ces": n_ces, "repeats": max(1, repeats_one_ce),
        "repeat_medians_s": pass_medians, "min_s": min(times), "max_s": max(times),
        "cpu_s": statistics.median(cpu), "target_s": 0.010, "meets_target": med < 0.010,
        "mean_draws_evaluated": float(np.mean(samples)),
        "batch_per_ce_s": batch_s / n_ces, "batch_per_ce_cpu_s": batch_cpu / n_ces,
        "batch_delta_max_mean": float(batch.delta.mean()), "delta_max_mean_all": float(np.mean(deltas)),
        "delta_max_mean": float(np.mean(deltas[:n_loop_ces])),
        "loop_delta_max_mean": float(np.mean(loop_deltas)),
    })

    # --- 1 000 CEs at one δ -------------------------------------------------------------------
    Xc = X[:N_CERTIFY]
    apas_certify(net, Xc[:10], DELTA_CERTIFY, ALPHA, R, random_state=0)  # warm-up
    cert_times, cert_cpu = [], []
    for k in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        res = apas_certify(net, Xc, DELTA_CERTIFY, ALPHA, R, random_state=k)
        cert_times.append(time.perf_counter() - t0)
        cert_cpu.append(time.process_time() - c0)
    t0 = time.perf_counter()
    _loop_certify(net, Xc, DELTA_CERTIFY, n, seed=0)
    loop_s = time.perf_counter() - t0
    # exactness: the same realisations, forwarded one network at a time
    res = apas_certify(net, Xc[:50], DELTA_CERTIFY, ALPHA, R, random_state=3)
    draws = ParameterShift(DELTA_CERTIFY).sample(net, n, random_state=3)
    t = net.predict(Xc[:50])
    ref = np.min([np.where(t == 1, 1.0, -1.0) * draws.network(i).forward(Xc[:50])[:, 0]
                  for i in range(n)], axis=0)
    med = statistics.median(cert_times)
    rows.append({
        "name": f"apas_certify {N_CERTIFY} CEs at delta={DELTA_CERTIFY}, n={n} vs per-draw loop",
        "seconds": med, "baseline_seconds": loop_s, "ratio": loop_s / med,
        "benchmark": "apas_certify_1000", "network": "-".join(map(str, net.layer_sizes)),
        "n": n, "n_queries": N_CERTIFY, "repeats": repeats, "min_s": min(cert_times),
        "cpu_s": statistics.median(cert_cpu), "target_s": 1.0, "meets_target": med < 1.0,
        "max_abs_diff_vs_per_draw": float(np.abs(res.min_margin - ref).max()),
    })
    return rows


def _print(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        print(f"{r['name']}\n    ours {r['seconds'] * 1e3:9.2f} ms (min {r['min_s'] * 1e3:.2f} ms, "
              f"CPU {r['cpu_s'] * 1e3:.2f} ms)  "
              f"loop {r['baseline_seconds'] * 1e3:10.2f} ms  ratio {r['ratio']:7.1f}x  "
              f"target {r['target_s'] * 1e3:.0f} ms met: {r['meets_target']}")
        extra = {k: v for k, v in r.items() if k in (
            "mean_draws_evaluated", "delta_max_mean", "loop_delta_max_mean", "batch_per_ce_s",
            "batch_per_ce_cpu_s", "max_abs_diff_vs_per_draw")}
        if extra:
            print("    " + ", ".join(f"{k}={v:.4g}" for k, v in extra.items()))
        if len(r.get("repeat_medians_s", [])) > 1:
            print(f"    medians of the {r['repeats']} passes over the {r['n_ces']} CEs (ms): "
                  + " ".join(f"{m * 1e3:.2f}" for m in r["repeat_medians_s"]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer CEs and repeats")
    parser.add_argument("--repeats", type=int, default=1,
                        help="passes over the one-CE δ_max calls (default 1)")
    args = parser.parse_args()
    _print(run(quick=args.quick, repeats_one_ce=args.repeats))
