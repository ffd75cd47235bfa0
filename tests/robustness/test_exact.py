"""The exact Δ-test: sound against independent evidence, exact against brute force, honest
about timeouts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import robustce as rc
from robustce.errors import ValidationError
from robustce.models import ReLUNetwork
from robustce.models.network import class_margin
from robustce.robustness import (
    DeltaStatus,
    ParameterShift,
    exact_worst_case,
    is_delta_robust,
)
from robustce.robustness import exact as exact_module
from robustce.solvers import MILP, SolveResult, SolveStatus, available_solvers

# --- independent evidence -----------------------------------------------------------------------


def pgd_weight_attack(net: ReLUNetwork, x: np.ndarray, shift: ParameterShift, target: int,
                      steps: int = 30, restarts: int = 8, seed: int = 0) -> float:
    """Projected gradient descent on the weights (torch autograd; projection = clamp onto the
    box), batched over random restarts. Returns the lowest target margin found."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only add overhead
    try:
        return _pgd(net, x, shift, target, steps, restarts, seed)
    finally:
        torch.set_num_threads(threads)


def _pgd(net, x, shift, target, steps, restarts, seed) -> float:
    gen = torch.Generator().manual_seed(seed)
    d, db = shift.delta, shift.delta if shift.biases else 0.0
    base = [(torch.tensor(W), torch.tensor(b)) for W, b in net.weights]
    params = []
    for W, b in base:
        sw = (torch.rand((restarts,) + W.shape, generator=gen, dtype=torch.float64) * 2 - 1) * d
        sb = (torch.rand((restarts,) + b.shape, generator=gen, dtype=torch.float64) * 2 - 1) * db
        sw[0], sb[0] = 0.0, 0.0  # restart 0 starts at the base network
        params += [(W + sw).requires_grad_(True), (b + sb).requires_grad_(True)]
    xt = torch.tensor(x, dtype=torch.float64)
    best = np.inf
    for k in range(steps + 1):
        h = xt.expand(restarts, -1)
        for li in range(len(base)):
            W, b = params[2 * li], params[2 * li + 1]
            h = torch.einsum("roi,ri->ro", W, h) + b
            if li < len(base) - 1:
                h = torch.relu(h)
        if h.shape[1] == 1:
            margin = h[:, 0] if target == 1 else -h[:, 0]
        else:
            others = torch.cat([h[:, :target], h[:, target + 1:]], dim=1)
            margin = h[:, target] - others.max(dim=1).values
        best = min(best, float(margin.detach().min()))
        if k == steps:
            break
        grads = torch.autograd.grad(margin.sum(), params)
        step = 0.25 * d * (1 - k / steps) + 1e-3 * d
        with torch.no_grad():
            for li, (W0, b0) in enumerate(base):
                W, b = params[2 * li], params[2 * li + 1]
                W -= step * torch.sign(grads[2 * li])
                b -= step * (db / d) * torch.sign(grads[2 * li + 1])
                W.copy_(torch.clamp(W, W0 - d, W0 + d))
                b.copy_(torch.clamp(b, b0 - db, b0 + db))
    return best


def sampled_margins(net, x, shift, target, n=10_000, seed=0) -> np.ndarray:
    return shift.sample(net, n, random_state=seed).margin(x[None, :], target)[:, 0]


def random_case(rng: np.random.Generator, multiclass: bool | None = None):
    n_in = int(rng.integers(2, 5))
    hidden = [int(rng.integers(3, 7)) for _ in range(int(rng.integers(1, 3)))]
    if multiclass is None:
        multiclass = rng.random() < 0.3
    n_out = 3 if multiclass else 1
    sizes = [n_in, *hidden, n_out]
    net = ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                       for i, o in zip(sizes[:-1], sizes[1:], strict=True)])
    x = rng.normal(size=n_in)  # both signs
    delta = float(np.exp(rng.uniform(np.log(0.01), np.log(0.3))))
    pred = int(net.predict(x[None])[0])
    target = pred if rng.random() < 0.85 else int((pred + 1) % max(2, n_out))
    return net, x, ParameterShift(delta, biases=bool(rng.random() < 0.9)), target


# --- soundness --------------------------------------------------------------------------------


def test_soundness_against_sampling_and_pgd():
    rng = np.random.default_rng(2024)
    counts = {"robust": 0, "not_robust": 0}
    for case in range(200):
        net, x, shift, t = random_case(rng)
        res = exact_worst_case(net, x[None], shift, t)
        st = res.status[0]
        assert st in (DeltaStatus.ROBUST, DeltaStatus.NOT_ROBUST), (case, st)
        counts[st.value] += 1
        samples = sampled_margins(net, x, shift, t, seed=case)
        attack = pgd_weight_attack(net, x, shift, t, seed=case)
        if st is DeltaStatus.ROBUST:
            assert samples.min() > 0, case
            assert attack > 0, case
            assert min(samples.min(), attack) >= res.lower[0] - 1e-9
        else:
            w = res.witness[0]
            assert shift.contains(net, w)
            assert int(w.predict(x[None])[0]) != t
        # the exact value (MILP for everything) lies below all independent evidence and is
        # attained by its witness
        full = exact_worst_case(net, x[None], shift, t, precheck=False)
        assert full.status[0] is st
        v = full.value[0]
        assert v <= samples.min() + 1e-9 and v <= attack + 1e-9
        w = full.witness[0]
        assert shift.contains(net, w)
        assert class_margin(w.forward(x[None]), t)[0] == pytest.approx(v, abs=1e-6)
        assert full.lower[0] <= v + 1e-9 and full.upper[0] == pytest.approx(v, abs=1e-6)
    assert counts["robust"] >= 20 and counts["not_robust"] >= 20, counts


# --- exactness --------------------------------------------------------------------------------


def brute_force_vertices(net: ReLUNetwork, x: np.ndarray, delta: float, target: int) -> float:
    """min of the target margin over all vertices of the weight box (≤ ~14 parameters)."""
    flat = net.flat()
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=flat.size)))
    thetas = flat[None] + delta * signs
    h = np.broadcast_to(x, (len(thetas), x.size))
    o = 0
    for li, (W, b) in enumerate(net.weights):
        Ws = thetas[:, o:o + W.size].reshape((-1,) + W.shape)
        o += W.size
        bs = thetas[:, o:o + b.size]
        o += b.size
        h = np.einsum("noi,ni->no", Ws, h) + bs
        if li < len(net.weights) - 1:
            h = np.maximum(h, 0)
    return float(class_margin(h, target).min())


@pytest.mark.parametrize("multiclass", [False, True])
def test_one_hidden_layer_matches_vertex_brute_force(multiclass):
    """One hidden layer: for a fixed input the worst case sits at a vertex of the box, so the
    MILP value must equal the brute-force minimum over all 2^P vertex networks."""
    rng = np.random.default_rng(7 + multiclass)
    for _ in range(25):
        sizes = [1, 2, 3] if multiclass else [2, 3, 1]
        net = ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                           for i, o in zip(sizes[:-1], sizes[1:], strict=True)])
        x = rng.normal(size=sizes[0])
        delta = float(rng.uniform(0.05, 0.4))
        t = int(rng.integers(0, 3 if multiclass else 2))
        res = exact_worst_case(net, x[None], ParameterShift(delta), t, precheck=False)
        assert res.value[0] == pytest.approx(brute_force_vertices(net, x, delta, t), abs=1e-6)


def test_deeper_networks_never_exceed_vertex_brute_force():
    """Two hidden layers: the true worst case may lie inside the box (a hidden activation
    between its extremes), so the MILP value is <= the vertex minimum, and is attained."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        sizes = [2, 2, 2, 1]
        net = ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                           for i, o in zip(sizes[:-1], sizes[1:], strict=True)])
        x = rng.normal(size=2)
        shift = ParameterShift(float(rng.uniform(0.05, 0.4)))
        t = int(rng.integers(0, 2))
        res = exact_worst_case(net, x[None], shift, t, precheck=False)
        assert res.value[0] <= brute_force_vertices(net, x, shift.delta, t) + 1e-9
        assert class_margin(res.witness[0].forward(x[None]), t)[0] == pytest.approx(res.value[0], abs=1e-6)


def test_rebuild_and_reuse_modes_agree():
    rng = np.random.default_rng(3)
    net = ReLUNetwork([(rng.normal(size=(6, 4)), rng.normal(size=6)),
                       (rng.normal(size=(5, 6)), rng.normal(size=5)),
                       (rng.normal(size=(1, 5)), rng.normal(size=1))])
    X = rng.uniform(size=(30, 4))
    shift = ParameterShift(0.05)
    a = exact_worst_case(net, X, shift, None, precheck=False, mode="rebuild")
    b = exact_worst_case(net, X, shift, None, precheck=False, mode="reuse")
    assert np.allclose(a.value, b.value, atol=1e-6)
    assert list(a.status) == list(b.status)


@pytest.mark.skipif("gurobi" not in available_solvers(), reason="gurobipy is not installed")
def test_highs_and_gurobi_agree():
    rng = np.random.default_rng(5)
    for case in range(20):
        net, x, shift, t = random_case(rng)
        h = exact_worst_case(net, x[None], shift, t, precheck=False, solver="highs")
        g = exact_worst_case(net, x[None], shift, t, precheck=False, solver="gurobi")
        if g.status[0] is DeltaStatus.ERROR:
            pytest.skip(f"gurobi could not solve (licence limit?): {g.solver_status[0]}")
        assert g.value[0] == pytest.approx(h.value[0], abs=1e-6), case
        assert g.status[0] is h.status[0]


# --- statuses, timeouts, decisions ------------------------------------------------------------


def _hard_case():
    rng = np.random.default_rng(0)
    sizes = [4, 8, 8, 1]
    net = ReLUNetwork([(rng.normal(size=(o, i)), rng.normal(size=o) * 0.5)
                       for i, o in zip(sizes[:-1], sizes[1:], strict=True)])
    return net, rng.uniform(size=(10, 4))


def test_a_timeout_is_never_robust(monkeypatch):
    net, X = _hard_case()
    shift = ParameterShift(0.3)

    def timed_out(self, time_limit=None, *, cutoff=None, target=None):
        return SolveResult(SolveStatus.TIME_LIMIT, time=0.0, solver="highs", message="Time limit reached")

    monkeypatch.setattr(MILP, "solve", timed_out)
    res = exact_worst_case(net, X, shift, 1, precheck=False)
    # only the (sound) interval bound may still prove robustness; everything else times out
    interval_proof = shift.interval(net).margin_lower_bound(X, 1) > 0
    assert interval_proof.sum() < len(X)
    for s, proof in zip(res.status, interval_proof, strict=True):
        assert s is (DeltaStatus.ROBUST if proof else DeltaStatus.TIMEOUT)
    assert not res.robust[~interval_proof].any()
    assert all(s is SolveStatus.TIME_LIMIT for s in res.solver_status)
    robust = is_delta_robust(net, X, shift, 1, precheck=False)
    assert np.array_equal(robust, interval_proof)


def test_a_timed_out_milp_still_decides_by_its_bound(monkeypatch):
    net, X = _hard_case()
    shift = ParameterShift(0.05)

    def bound_only(self, time_limit=None, *, cutoff=None, target=None):
        return SolveResult(SolveStatus.TIME_LIMIT, bound=0.5, time=0.0, solver="highs")

    monkeypatch.setattr(MILP, "solve", bound_only)
    res = exact_worst_case(net, X, shift, 1, precheck=False)
    # a positive dual bound proves robustness even without optimality
    assert all(s is DeltaStatus.ROBUST for s in res.status)


def test_prechecks_decide_and_report_who_decided():
    rng = np.random.default_rng(9)
    net = ReLUNetwork([(rng.normal(size=(5, 3)), rng.normal(size=5)),
                       (rng.normal(size=(1, 5)), rng.normal(size=1))])
    X = rng.uniform(size=(40, 3))
    shift = ParameterShift(0.02)
    res = exact_worst_case(net, X, shift, None)
    assert set(res.decided_by) <= {"interval", "attack", "bounds", "milp"}
    full = exact_worst_case(net, X, shift, None, precheck=False)
    assert list(res.status) == list(full.status)
    interval = res.decided_by == "interval"
    assert (res.lower[interval] > 0).all()
    assert set(full.decided_by) == {"milp"}
    dec = exact_worst_case(net, X, shift, None, decide_only=True, precheck=False)
    assert list(dec.status) == list(full.status)


def test_value_is_the_exact_worst_case_for_every_decided_row():
    """Rows decided by the interval pre-check or the attack still get the exact value: finite,
    equal to the MILP's value without prechecks; the decision-only path leaves it NaN."""
    rng = np.random.default_rng(9)
    for k in (1, 3):
        net = ReLUNetwork([(rng.normal(size=(5, 3)), rng.normal(size=5)),
                           (rng.normal(size=(k, 5)), rng.normal(size=k))])
        X = rng.uniform(size=(40, 3))
        shift = ParameterShift(0.2)
        res = exact_worst_case(net, X, shift, None)
        full = exact_worst_case(net, X, shift, None, precheck=False)
        decided = np.isin(res.status, [DeltaStatus.ROBUST, DeltaStatus.NOT_ROBUST])
        assert {"interval", "attack"} <= set(res.decided_by[decided])  # both prechecks decided some
        assert np.isfinite(res.value[decided]).all()
        np.testing.assert_allclose(res.value[decided], full.value[decided], atol=1e-6)
        assert np.all(res.lower <= res.value + 1e-6) and np.all(res.value <= res.upper + 1e-6)
        assert (res.value[res.robust] > 0).all() and (res.value[res.not_robust] <= 1e-6).all()
        for i in np.flatnonzero(res.not_robust):  # the witness still flips the prediction
            assert res.witness[i].predict(X[i:i + 1])[0] != res.target_class[i]
        fast = exact_worst_case(net, X, shift, None, decide_only=True)
        assert list(fast.status) == list(res.status)
        assert np.isnan(fast.value[fast.decided_by != "milp"]).all()


def test_base_flip_is_not_robust_with_the_base_as_witness():
    net = ReLUNetwork([(np.array([[1.0]]), np.array([0.0])), (np.array([[1.0]]), np.array([-1.0]))])
    x = np.array([[0.5]])  # logit -0.5: class 0
    res = exact_worst_case(net, x, ParameterShift(0.01), 1)
    assert res.status[0] is DeltaStatus.NOT_ROBUST and res.decided_by[0] == "attack"
    assert res.witness[0].predict(x)[0] == 0


def test_certificates_and_frame():
    rng = np.random.default_rng(4)
    net, x, shift, t = random_case(rng, multiclass=False)
    res = exact_worst_case(net, np.vstack([x, x]), shift, t, precheck=False)
    cert = res.certificate(0)
    for key in ("delta", "p", "solver", "status", "time", "value", "lower", "upper", "decided_by"):
        assert key in cert
    assert cert["delta"] == shift.delta and cert["p"] == "inf" and cert["solver"] == "highs"
    frame = res.to_frame()
    assert len(frame) == 2 and set(frame["status"]) <= {"robust", "not_robust"}


def test_bad_inputs():
    rng = np.random.default_rng(0)
    net, x, shift, _ = random_case(rng, multiclass=False)
    X = np.vstack([x, np.full_like(x, np.nan)])
    res = exact_worst_case(net, X, shift, 1)
    assert res.status[1] is DeltaStatus.ERROR and not res.robust[1]
    with pytest.raises(ValidationError):
        exact_worst_case(net, X, 0.1, 1)
    with pytest.raises(ValidationError):
        exact_worst_case(net, x[None], shift, 2)
    with pytest.raises(ValidationError):
        exact_worst_case(net, x[None], shift, 1, time_limit=0)
    with pytest.raises(ValidationError):
        exact_worst_case(net, np.ones((1, x.size + 1)), shift, 1)
    with pytest.raises(rc.errors.SolverError):
        exact_worst_case(net, x[None], shift, 1, solver="nope")


def test_error_rows_carry_no_bounds():
    # a NaN row is certified on a zero stand-in internally; its certificate must not report
    # the stand-in's (possibly positive) bounds as if they were about the row
    rng = np.random.default_rng(0)
    net, x, shift, _ = random_case(rng, multiclass=False)
    X = np.vstack([x, np.full_like(x, np.nan)])
    for precheck in (True, False):
        res = exact_worst_case(net, X, shift, 1, precheck=precheck)
        cert = res.certificate(1)
        assert cert["status"] == "error"
        assert cert["lower"] is None and cert["upper"] is None and cert["value"] is None
        assert res.witness[1] is None


def test_is_delta_robust_on_a_model_with_raw_frames():
    data = rc.datasets.load("synthetic_loan")
    train, test = data.split(test_size=0.1, random_state=0)
    model = rc.models.MLP((8,), epochs=5, random_state=0).fit(train)
    frame = test.frame.iloc[:15]
    shift = ParameterShift(0.005)
    robust, res = is_delta_robust(model, frame, shift, return_result=True)
    assert robust.dtype == bool and robust.shape == (15,)
    assert np.array_equal(res.target_class, model.predict(frame))
    assert np.array_equal(robust, res.robust)
    # a larger shift can only remove robustness
    robust_big = is_delta_robust(model, frame, ParameterShift(0.5))
    assert not np.any(robust_big & ~robust)


def test_sign_attack_stays_in_delta():
    rng = np.random.default_rng(8)
    net, x, shift, t = random_case(rng, multiclass=True)
    margins, weights = exact_module.sign_attack(net, np.vstack([x, x]), shift, t)
    for w in weights:
        assert shift.contains(net, ReLUNetwork(w))
    assert margins[0] == pytest.approx(class_margin(ReLUNetwork(weights[0]).forward(x[None]), t)[0])


def _sign_attack_reference(net: ReLUNetwork, x: np.ndarray, delta: float, biases: bool,
                           t: int, steps: int) -> tuple[float, list]:
    """The attack as defined, one row, every step run: forward, keep the best, move each
    weight to θ − δ·sign(∂margin/∂θ) at the current weights."""
    base = net.weights
    Ws = [(W.copy(), b.copy()) for W, b in base]
    best, best_w = np.inf, None
    for it in range(steps + 1):
        hs, pre, h = [x], [], x
        for li, (W, b) in enumerate(Ws):
            z = W @ h + b
            pre.append(z)
            h = np.maximum(z, 0.0) if li < len(Ws) - 1 else z
            if li < len(Ws) - 1:
                hs.append(h)
        m = float(class_margin(h[None], t)[0])
        if m < best:
            best, best_w = m, [(W.copy(), b.copy()) for W, b in Ws]
        if it == steps:
            break
        if len(h) == 1:
            g = np.array([1.0 if t == 1 else -1.0])
        else:
            other = h.copy()
            other[t] = -np.inf
            g = np.zeros_like(h)
            g[t], g[int(other.argmax())] = 1.0, -1.0
        new = [None] * len(Ws)
        for li in range(len(Ws) - 1, -1, -1):
            W0, b0 = base[li]
            new[li] = (W0 - delta * np.sign(np.outer(g, hs[li])),
                       b0 - (delta if biases else 0.0) * np.sign(g))
            if li > 0:
                g = (Ws[li][0].T @ g) * (pre[li - 1] > 0)
        Ws = new
    return best, best_w


def test_sign_attack_matches_its_definition_step_for_step():
    """Batched, and stopping once a step repeats itself (a fixed point), the attack returns what
    running every step on each row returns."""
    rng = np.random.default_rng(12)
    for _ in range(60):
        net, x, shift, t = random_case(rng)
        X = np.vstack([x, x + rng.normal(scale=0.3, size=x.shape)])
        T = np.array([t, int(net.predict(X[1:])[0])])
        for steps in (1, 4, 9):
            margins, weights = exact_module.sign_attack(net, X, shift, T, steps=steps)
            for r in range(2):
                m_ref, w_ref = _sign_attack_reference(net, X[r], shift.delta, shift.biases,
                                                      int(T[r]), steps)
                assert margins[r] == pytest.approx(m_ref, abs=1e-12)
                for (Wa, ba), (Wb, bb) in zip(weights[r], w_ref, strict=True):
                    assert np.allclose(Wa, Wb, atol=1e-12) and np.allclose(ba, bb, atol=1e-12)


@pytest.mark.slow
def test_soundness_on_larger_networks():
    """Heavier variant: 8 inputs, two hidden layers of 8-12, 150 cases, stronger attack."""
    rng = np.random.default_rng(77)
    for case in range(150):
        sizes = [8, int(rng.integers(8, 13)), int(rng.integers(8, 13)), 1 if rng.random() < 0.7 else 3]
        net = ReLUNetwork([(rng.normal(size=(o, i)) / np.sqrt(i), rng.normal(size=o) * 0.2)
                           for i, o in zip(sizes[:-1], sizes[1:], strict=True)])
        x = rng.normal(size=8)
        t = int(net.predict(x[None])[0])
        shift = ParameterShift(float(np.exp(rng.uniform(np.log(0.005), np.log(0.1)))))
        res = exact_worst_case(net, x[None], shift, t, time_limit=60)
        st = res.status[0]
        assert st in (DeltaStatus.ROBUST, DeltaStatus.NOT_ROBUST), (case, st)
        if st is DeltaStatus.ROBUST:
            assert sampled_margins(net, x, shift, t, seed=case).min() > 0
            assert pgd_weight_attack(net, x, shift, t, steps=60, restarts=16, seed=case) > 0
        else:
            assert shift.contains(net, res.witness[0])
            assert int(res.witness[0].predict(x[None])[0]) != t
