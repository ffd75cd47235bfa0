"""Δ-certificates of imported models are about the user's own parameters (issue 29, finding 3).

A lender reads "robust to ±δ on my model's weights". For a scikit-learn pipeline that is the
final estimator's ``coefs_`` / ``intercepts_``, for a torch module its Linear weights and biases
and BatchNorm γ, β — not the network robustce folds them into (scaler merged into layer 1,
Linear→Linear multiplied, BatchNorm absorbed). Every certified CE here is attacked on the
user's own parameters — uniform sampling of the box and a projected sign-gradient (PGD) search
— and scored by the user's own ``pipe.predict`` / module forward; none may flip.

The MILPRobust tests fail on the folded certificates of robustce ≤ the commit before this
file (CEs certified at δ on the folded network that a user-weight shift within δ flips).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.compose import ColumnTransformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from torch import nn

import robustce as rc
from robustce.methods import MILPRobust
from robustce.models import from_sklearn, from_torch
from robustce.models.network import ReLUNetwork
from robustce.robustness import ParameterShift, exact_worst_case, is_delta_robust

DELTA = 0.05
N_SAMPLES = 400
PGD_STEPS = 40


# --- data and models ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame({
        "income": rng.uniform(1_000, 9_000, n).round(0),
        "debt": rng.uniform(0, 40, n).round(1),
        "years": rng.integers(0, 30, n),
        "region": rng.choice(["north", "south", "east"], n),
    })
    score = (frame.income / 1_000 - frame.debt / 8 + frame.years / 10
             + (frame.region == "north") + rng.normal(0, 0.5, n))
    frame["approved"] = (score > 3.5).astype(int)
    ds = rc.datasets.from_frame(frame, target="approved")
    num = ["income", "debt", "years"]
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["region"]),
                             ("num", StandardScaler(), num)])
    return ds, pre


@pytest.fixture(scope="module")
def pipeline(data):
    """The README's pattern: Pipeline([ColumnTransformer, MLPClassifier])."""
    ds, pre = data
    pipe = Pipeline([("pre", copy.deepcopy(pre)),
                     ("clf", MLPClassifier((8,), max_iter=3000, random_state=0))])
    pipe.fit(ds.frame, ds.y)
    return pipe, from_sklearn(pipe, ds)


@pytest.fixture(scope="module")
def torch_model(data):
    """A torch module with BatchNorm (after a Linear, and after a ReLU) and a Linear→Linear
    pair, behind a ColumnTransformer."""
    ds, pre = data
    ct = copy.deepcopy(pre).fit(ds.frame)
    Z = torch.as_tensor(np.asarray(ct.transform(ds.frame), dtype=np.float32))
    y = torch.tensor(np.asarray(ds.y), dtype=torch.float32)
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(Z.shape[1], 8), nn.BatchNorm1d(8), nn.ReLU(),
                           nn.Linear(8, 6), nn.Linear(6, 5), nn.ReLU(), nn.BatchNorm1d(5),
                           nn.Linear(5, 1))
    opt = torch.optim.Adam(module.parameters(), lr=0.02)
    for _ in range(300):
        opt.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(module(Z)[:, 0], y)
        loss.backward()
        opt.step()
    module.eval()
    return module, ct, from_torch(module, ct, ds)


# --- attacks on the user's own parameters --------------------------------------------------------


def _sk_params(pipe):
    clf = pipe[-1]
    return [p.copy() for p in clf.coefs_] + [p.copy() for p in clf.intercepts_]


def _sk_set(pipe, params):
    clf = pipe[-1]
    k = len(clf.coefs_)
    clf.coefs_, clf.intercepts_ = list(params[:k]), list(params[k:])


def _sk_logit(params, Z):
    """The MLPClassifier's own forward (logistic output: the logit), in torch."""
    k = len(params) // 2
    h = Z
    for i in range(k):
        h = h @ params[i] + params[k + i]
        if i < k - 1:
            h = torch.relu(h)
    return h[:, 0]


def _torch_params(module):
    """The module's own parameters: Linear weights/biases and BatchNorm γ, β."""
    return [p for m in module for p in m.parameters(recurse=False)]


def _flips_sklearn(pipe, raw: pd.DataFrame, labels: np.ndarray, delta: float, seed: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(flipped by uniform sampling, flipped by PGD) per row: shifts of the pipeline's own
    ``coefs_``/``intercepts_`` within ±δ, scored by the pipeline's own ``predict``."""
    user = copy.deepcopy(pipe)
    base = _sk_params(user)
    rng = np.random.default_rng(seed)
    sampled = np.zeros(len(raw), dtype=bool)
    for _ in range(N_SAMPLES):
        _sk_set(user, [p + rng.uniform(-delta, delta, p.shape) for p in base])
        sampled |= user.predict(raw) != labels
    Z = torch.as_tensor(np.asarray(pipe[:-1].transform(raw), dtype=np.float64))
    sign = torch.as_tensor(np.where(labels == pipe[-1].classes_[1], 1.0, -1.0))
    pgd = np.zeros(len(raw), dtype=bool)
    for r in range(len(raw)):
        theta0 = [torch.as_tensor(p) for p in base]
        theta = [p.clone().requires_grad_(True) for p in theta0]
        for _ in range(PGD_STEPS):
            m = sign[r] * _sk_logit(theta, Z[r:r + 1])[0]
            grads = torch.autograd.grad(m, theta)
            with torch.no_grad():
                for p, p0, g in zip(theta, theta0, grads, strict=True):
                    p -= 0.25 * delta * torch.sign(g)
                    p.copy_(torch.clamp(p, p0 - delta, p0 + delta))
        _sk_set(user, [p.detach().numpy().copy() for p in theta])
        pgd[r] = user.predict(raw.iloc[r:r + 1])[0] != labels[r]
    _sk_set(user, base)
    return sampled, pgd


def _flips_torch(module, ct, raw: pd.DataFrame, targets: np.ndarray, delta: float, seed: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The same on a torch module: Linear weights/biases and BatchNorm γ, β within ±δ (running
    statistics are data), scored by the module's own forward (class 1 iff logit > 0)."""
    user = copy.deepcopy(module).double().eval()
    params = _torch_params(user)
    base = [p.detach().clone() for p in params]
    Z = torch.as_tensor(np.asarray(ct.transform(raw), dtype=np.float64))
    t = torch.as_tensor(targets)
    gen = torch.Generator().manual_seed(seed)

    def predict(x):
        with torch.no_grad():
            return (user(x)[:, 0] > 0).long()

    sampled = np.zeros(len(raw), dtype=bool)
    for _ in range(N_SAMPLES):
        with torch.no_grad():
            for p, p0 in zip(params, base, strict=True):
                p.copy_(p0 + delta * (2 * torch.rand(p0.shape, generator=gen, dtype=p0.dtype) - 1))
        sampled |= (predict(Z) != t).numpy()
    sign = torch.where(t == 1, 1.0, -1.0).double()
    pgd = np.zeros(len(raw), dtype=bool)
    for r in range(len(raw)):
        with torch.no_grad():
            for p, p0 in zip(params, base, strict=True):
                p.copy_(p0)
        for _ in range(PGD_STEPS):
            m = sign[r] * user(Z[r:r + 1])[0, 0]
            grads = torch.autograd.grad(m, params)
            with torch.no_grad():
                for p, p0, g in zip(params, base, grads, strict=True):
                    p -= 0.25 * delta * torch.sign(g)
                    p.copy_(torch.clamp(p, p0 - delta, p0 + delta))
        pgd[r] = bool(predict(Z[r:r + 1])[0] != t[r])
    with torch.no_grad():
        for p, p0 in zip(params, base, strict=True):
            p.copy_(p0)
    return sampled, pgd


def _queries(model, ds, target: int, k: int) -> pd.DataFrame:
    X = ds.frame
    return X[model.predict(X) != target].iloc[:k]


# --- the network robustce certifies on ------------------------------------------------------------


def test_pipeline_network_keeps_the_estimators_own_layers(pipeline, data):
    pipe, model = pipeline
    net = model.network()
    clf = pipe[-1]
    assert not net.plain and net.input_map is not None
    assert len(net.layers) == len(clf.coefs_)
    for (W, b), C, c in zip(net.layers, clf.coefs_, clf.intercepts_, strict=True):
        np.testing.assert_array_equal(W, C.T)
        np.testing.assert_array_equal(b, c)
    # the input map is the pipeline's own preprocessing, standardised (negative) values included
    ds, _ = data
    Z = net.map_inputs(model.encode(ds.frame))
    np.testing.assert_allclose(Z, pipe[:-1].transform(ds.frame), atol=1e-9)
    assert (Z < 0).any()
    # the folded weights compute the same function
    np.testing.assert_array_equal(model.predict(ds.frame), model.estimator_predict(ds.frame))


def test_torch_network_keeps_linear_pairs_and_batchnorm(torch_model, data):
    module, ct, model = torch_model
    net = model.network()
    # Linear+BN(γβ) | ReLU | Linear ~ Linear | ReLU | BN-normalise ~ BN(γβ) ~ Linear
    assert net.activations == ("identity", "relu", "identity", "relu", "identity", "identity")
    assert [W.shape[0] for W, _ in net.layers] == [8, 8, 6, 5, 5, 5, 1]
    sw, sb = net.shift_scale[1]  # BatchNorm γ, β: the diagonal and the bias move, nothing else
    np.testing.assert_array_equal(sw, np.eye(8))
    np.testing.assert_array_equal(sb, np.ones(8))
    assert not net.shift_scale[4][0].any() and not net.shift_scale[4][1].any()  # running stats
    ds, _ = data
    with torch.no_grad():
        z = module.double()(torch.as_tensor(np.asarray(ct.transform(ds.frame), dtype=np.float64)))
    module.float()
    np.testing.assert_allclose(net.forward(model.encode(ds.frame))[:, 0], z[:, 0].numpy(),
                               atol=1e-9)
    # Δ around the network holds the module's own shifts: γ, β, a Linear row moved by δ
    shift = ParameterShift(0.1)
    moved = [(W.copy(), b.copy()) for W, b in net.layers]
    moved[1][0][np.diag_indices(8)] += 0.1
    moved[3][1][:] -= 0.1
    assert shift.contains(net, net.with_layers(moved))
    off = [(W.copy(), b.copy()) for W, b in net.layers]
    off[1][0][0, 1] += 0.01  # off BatchNorm's diagonal: not a parameter
    assert not shift.contains(net, net.with_layers(off))


def test_own_mlp_network_stays_plain():
    ds = rc.datasets.load("moons")
    model = rc.models.MLP(hidden_layers=(6,), epochs=5, random_state=0).fit(ds)
    net = model.network()
    assert net.plain and net.weights is net.layers and net.input_map is None


# --- certificates vs attacks on the user's parameters ---------------------------------------------


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_certified_points_of_a_pipeline_survive_user_weight_shifts(pipeline, data):
    pipe, model = pipeline
    ds, _ = data
    X = model.encode(ds.frame.iloc[:120])
    t = model.network().predict(X)
    ok = is_delta_robust(model, X, ParameterShift(DELTA), target_class=t)
    assert 5 <= ok.sum() < len(ok)  # some certified, some not: the test has teeth
    raw = ds.frame.iloc[:120][ok]
    labels = pipe[-1].classes_[t[ok]]
    sampled, pgd = _flips_sklearn(pipe, raw, labels, DELTA, seed=1)
    assert not (sampled | pgd).any(), (f"{sampled.sum()} (sampling), {pgd.sum()} (PGD) of "
                                       f"{ok.sum()} certified points flipped")
    # and the uncertified ones are (mostly) flipped by the same attacks: they are not vacuous
    raw_n = ds.frame.iloc[:120][~ok]
    s_n, p_n = _flips_sklearn(pipe, raw_n, pipe[-1].classes_[t[~ok]], DELTA, seed=2)
    assert (s_n | p_n).mean() > 0.5


def test_milp_robust_ces_of_a_pipeline_survive_user_weight_shifts(pipeline, data):
    """Regression (fails on the folded certificates): MILP-R's CEs sit just inside the region
    it certifies, so a certificate over the wrong parameters shows up as flips."""
    pipe, model = pipeline
    ds, _ = data
    shift = ParameterShift(DELTA)
    res = MILPRobust(model, ds, shift=shift, time_limit=20).explain(_queries(model, ds, 1, 6))
    found = res.status == "found"
    assert found.sum() >= 3
    cfs = res.counterfactuals
    raw = cfs[list(ds.frame.columns)]
    assert (pipe.predict(raw) == 1).all()
    assert is_delta_robust(model, raw, shift, target_class=1).all()
    sampled, pgd = _flips_sklearn(pipe, raw, np.ones(len(raw), dtype=int), DELTA, seed=3)
    assert not sampled.any(), f"{sampled.sum()} of {len(raw)} certified CEs flipped (sampling)"
    assert not pgd.any(), f"{pgd.sum()} of {len(raw)} certified CEs flipped (PGD)"


def test_certified_points_of_a_torch_module_survive_user_weight_shifts(torch_model, data):
    module, ct, model = torch_model
    ds, _ = data
    X = model.encode(ds.frame.iloc[:80])
    t = model.network().predict(X)
    ok = is_delta_robust(model, X, ParameterShift(DELTA), target_class=t)
    assert 3 <= ok.sum() < len(ok)
    sampled, pgd = _flips_torch(module, ct, ds.frame.iloc[:80][ok], t[ok], DELTA, seed=4)
    assert not (sampled | pgd).any(), (f"{sampled.sum()} (sampling), {pgd.sum()} (PGD) of "
                                       f"{ok.sum()} certified points flipped")


def test_milp_robust_ces_of_a_torch_module_survive_user_weight_shifts(torch_model, data):
    module, ct, model = torch_model
    ds, _ = data
    delta = 0.01  # this deeper module leaves few Δ-robust points at 0.05
    shift = ParameterShift(delta)
    res = MILPRobust(model, ds, shift=shift, time_limit=20).explain(_queries(model, ds, 1, 5))
    assert (res.status == "found").sum() >= 2
    raw = res.counterfactuals[list(ds.frame.columns)]
    assert is_delta_robust(model, raw, shift, target_class=1).all()
    sampled, pgd = _flips_torch(module, ct, raw, np.ones(len(raw), dtype=np.int64), delta,
                                seed=5)
    assert not sampled.any(), f"{sampled.sum()} of {len(raw)} certified CEs flipped (sampling)"
    assert not pgd.any(), f"{pgd.sum()} of {len(raw)} certified CEs flipped (PGD)"


def test_witnesses_are_user_weight_shifts_that_flip(pipeline, data):
    """A ``not_robust`` witness is the estimator's own layers moved within ±δ: put into a copy
    of the pipeline, it flips the pipeline's own prediction."""
    pipe, model = pipeline
    ds, _ = data
    X = model.encode(ds.frame.iloc[:60])
    shift = ParameterShift(DELTA)
    res = exact_worst_case(model, X, shift, target_class=None, decide_only=True)
    bad = np.flatnonzero(res.not_robust)
    assert bad.size
    user = copy.deepcopy(pipe)
    for i in bad[:10]:
        w = res.witness[i]
        assert shift.contains(model.network(), w)
        _sk_set(user, [W.T for W, _ in w.layers] + [b for _, b in w.layers])
        row = ds.frame.iloc[[i]]
        assert user.predict(row)[0] != pipe.predict(row)[0]


# --- the exact test with identity layers and an input map ----------------------------------------


def _random_net(rng, sizes, acts, with_map=True, scale=None):
    layers = [(rng.normal(size=(o, i)), rng.normal(size=o)) for i, o in itertools.pairwise(sizes)]
    A = rng.normal(size=(sizes[0], 3)) if with_map else None
    c = rng.normal(size=sizes[0]) if with_map else None
    return ReLUNetwork(layers, activations=acts, input_map=None if A is None else (A, c),
                       shift_scale=scale)


def test_exact_worst_case_equals_vertex_brute_force_with_an_identity_layer():
    """Input map → Linear → identity → Linear: the margin is multilinear in the parameters, so
    its minimum over the box sits at a vertex; the MILP must equal the vertex minimum."""
    rng = np.random.default_rng(7)
    shift = ParameterShift(0.3)
    for _ in range(6):
        net = _random_net(rng, [2, 2, 1], ["identity"])
        x = rng.uniform(size=(1, 3))
        res = exact_worst_case(net, x, shift, target_class=1, precheck=False)
        theta = net.flat()
        best = np.inf
        for signs in itertools.product((-1.0, 1.0), repeat=theta.size):
            p = theta + shift.delta * np.array(signs)
            W1, b1, W2, b2 = p[:4].reshape(2, 2), p[4:6], p[6:8].reshape(1, 2), p[8:9]
            best = min(best, float(net.with_layers([(W1, b1), (W2, b2)]).forward(x)[0, 0]))
        assert res.value[0] == pytest.approx(best, abs=1e-6)
        w = res.witness[0]
        assert shift.contains(net, w, atol=1e-9)
        assert w.forward(x)[0, 0] == pytest.approx(res.value[0], abs=1e-6)


@pytest.mark.parametrize("acts", [("identity", "relu"), ("relu", "identity"),
                                  ("identity", "identity")])
def test_exact_worst_case_is_below_sampling_and_attained(acts):
    rng = np.random.default_rng(11)
    shift = ParameterShift(0.15)
    for _ in range(5):
        net = _random_net(rng, [3, 4, 3, 2], list(acts))
        x = rng.uniform(size=(1, 3))
        t = int(net.predict(x)[0])
        res = exact_worst_case(net, x, shift, target_class=t, precheck=False)
        sampled = shift.sample(net, 20_000, random_state=0).margin(x, t).min()
        assert res.value[0] <= sampled + 1e-9
        w = res.witness[0]
        assert shift.contains(net, w, atol=1e-9)
        assert w.margin(x, t)[0] == pytest.approx(res.value[0], abs=1e-6)
        # interval bounds stay sound below it
        assert shift.interval(net).margin_lower_bound(x, t)[0] <= res.value[0] + 1e-9


def test_exact_worst_case_with_a_diagonal_layer_and_fixed_parameters():
    """A BatchNorm-like diagonal layer (only γ, β move) after a fixed layer (scale 0)."""
    rng = np.random.default_rng(3)
    shift = ParameterShift(0.2)
    sizes = [3, 4, 4, 4, 1]
    for _ in range(5):
        layers = [(rng.normal(size=(4, 3)), rng.normal(size=4)),
                  (np.diag(rng.uniform(0.5, 2, 4)), rng.normal(size=4)),  # fixed normalise
                  (np.diag(rng.normal(size=4)), rng.normal(size=4)),       # γ, β
                  (rng.normal(size=(1, 4)), rng.normal(size=1))]
        scale = [(np.ones((4, 3)), np.ones(4)), (np.zeros((4, 4)), np.zeros(4)),
                 (np.eye(4), np.ones(4)), (np.ones((1, 4)), np.ones(1))]
        net = ReLUNetwork(layers, activations=["relu", "identity", "identity"],
                          input_map=(rng.normal(size=(3, 2)), rng.normal(size=3)),
                          shift_scale=scale)
        assert net.parameter_sizes == sizes
        x = rng.uniform(size=(1, 2))
        t = int(net.predict(x)[0])
        res = exact_worst_case(net, x, shift, target_class=t, precheck=False)
        sampled = shift.sample(net, 20_000, random_state=1).margin(x, t).min()
        assert res.value[0] <= sampled + 1e-9
        w = res.witness[0]
        assert shift.contains(net, w, atol=1e-9)
        np.testing.assert_array_equal(w.layers[1][0], layers[1][0])  # fixed stays fixed
        assert w.margin(x, t)[0] == pytest.approx(res.value[0], abs=1e-6)


def test_apas_and_attack_range_over_the_users_parameters(torch_model, data):
    """APΔS draws and the weight attack move the module's own parameters: their networks lie
    in Δ and agree with the exact test."""
    _, _, model = torch_model
    ds, _ = data
    X = model.encode(ds.frame.iloc[:30])
    t = model.network().predict(X)
    shift = ParameterShift(DELTA)
    rob = is_delta_robust(model, X, shift, target_class=t)
    ap = rc.robustness.apas_certify(model, X, shift, target_class=t, random_state=0, n=300)
    assert not (rob & ~ap.passed).any()  # a proven CE passes every draw
    md = rc.robustness.apas_max_delta(model, X[:5], target_class=t[:5], random_state=0, n=200,
                                      delta_init=1e-3, delta_max=1.0)
    assert md.status.tolist().count("error") == 0
    from robustce.robustness.attack import sign_attack

    _, ws = sign_attack(model.network(), X, shift, t)
    for w in ws[:5]:
        assert shift.contains(model.network(), model.network().with_layers(w))


# --- save / load ---------------------------------------------------------------------------------


def test_structured_network_round_trips_through_save_and_load(torch_model, data, tmp_path):
    """The certified view (layers, activations, input map, shift scale) saves and loads; the
    imported model itself points to the right way to save it."""
    _, _, model = torch_model
    ds, _ = data
    with pytest.raises(rc.errors.UnsupportedModelError, match="NetworkModel"):
        model.save(tmp_path / "torch")
    view = rc.models.NetworkModel(model.network(), model.encoder, model.class_names)
    loaded = rc.models.load(view.save(tmp_path / "view"))
    a, b = model.network(), loaded.network()
    assert b.same_structure(a) and b.activations == a.activations
    for (Wa, ba), (Wb, bb) in zip(a.layers, b.layers, strict=True):
        np.testing.assert_array_equal(Wa, Wb)
        np.testing.assert_array_equal(ba, bb)
    X = model.encode(ds.frame.iloc[:20])
    np.testing.assert_array_equal(loaded.logits(X), model.logits(X))
    shift = ParameterShift(DELTA)
    r_a = exact_worst_case(model, X, shift, target_class=1, precheck=False)
    r_b = exact_worst_case(loaded, X, shift, target_class=1, precheck=False)
    np.testing.assert_allclose(r_a.value, r_b.value, atol=1e-9)


# --- linear models and wrapped estimators ---------------------------------------------------------


def test_logistic_regression_worst_case_is_the_closed_form_on_its_own_coefficients(data):
    """For a linear model the worst case over its own ``coef_``/``intercept_`` is
    w·z + b − δ(‖z‖₁ + 1) with z the pipeline's transformed input — the MILP must give it."""
    from sklearn.linear_model import LogisticRegression

    ds, pre = data
    pipe = Pipeline([("pre", copy.deepcopy(pre)), ("clf", LogisticRegression(max_iter=500))])
    pipe.fit(ds.frame, ds.y)
    model = from_sklearn(pipe, ds)
    rows = ds.frame.iloc[:15]
    Z = np.asarray(pipe[:-1].transform(rows), dtype=np.float64)
    clf = pipe[-1]
    shift = ParameterShift(0.03)
    expected = Z @ clf.coef_[0] + clf.intercept_[0] - shift.delta * (np.abs(Z).sum(axis=1) + 1)
    res = exact_worst_case(model, rows, shift, target_class=1, precheck=False)
    np.testing.assert_allclose(res.value, expected, atol=1e-6)


def test_wrapped_pipeline_scalers_are_a_fixed_input_map(data):
    """``wrap``: an estimator fitted on model space behind a StandardScaler; Δ moves its own
    ``coefs_``, not the scaler."""
    ds, _ = data
    enc = rc.data.Encoder(ds.schema).fit(ds.frame)
    X = enc.transform(ds.frame)
    pipe = Pipeline([("sc", StandardScaler()),
                     ("clf", MLPClassifier((6,), max_iter=2000, random_state=0))]).fit(X, ds.y)
    model = rc.models.wrap(pipe, enc)
    net = model.network()
    assert net.input_map is not None
    np.testing.assert_array_equal(net.layers[0][0], pipe[-1].coefs_[0].T)
    np.testing.assert_allclose(net.map_inputs(X[:5]), pipe[0].transform(X[:5]), atol=1e-12)
    t = net.predict(X[:60])
    ok = is_delta_robust(model, X[:60], ParameterShift(DELTA), target_class=t)
    assert ok.any()
    user = copy.deepcopy(pipe)
    base = _sk_params(user)
    rng = np.random.default_rng(0)
    for _ in range(200):
        _sk_set(user, [p + rng.uniform(-DELTA, DELTA, p.shape) for p in base])
        assert (user.predict(X[:60][ok]) == t[ok]).all()


def test_shifted_encoding_over_an_input_box_is_sound_with_map_and_identity_layers():
    """Over a box of inputs (input variables, as a reused model or a search encodes them) the
    shifted encoding's least output lower end is ≤ every sampled (network, input) pair, and at
    a point it equals the point encoding."""
    from robustce.solvers import MILP
    from robustce.solvers.encodings import InputVars, encode_shifted_network

    rng = np.random.default_rng(5)
    shift = ParameterShift(0.1)
    for _ in range(4):
        net = _random_net(rng, [3, 4, 3, 1], ["identity", "relu"])
        lo, hi = np.zeros(3), np.full(3, 1.0)
        m = MILP(time_limit=20)
        x = m.add_vars(3, lo, hi)
        enc = encode_shifted_network(m, net, shift, InputVars(x, lo, hi))
        m.set_objective([enc.out_lower[0]], [1.0], sense="min")
        res = m.solve()
        X = rng.uniform(size=(400, 3))
        sampled = shift.sample(net, 400, random_state=1).forward(X)[..., 0].min()
        assert res.objective <= sampled + 1e-7
        # the minimiser is attained: fix the inputs there and solve the point problem
        xs = np.clip(res.values[x], lo, hi)
        point = exact_worst_case(net, xs[None], shift, target_class=1, precheck=False)
        assert point.value[0] == pytest.approx(res.objective, abs=1e-5)


def test_multiclass_pipeline_certificates_survive_user_weight_sampling():
    ds = rc.datasets.load("iris")
    pipe = Pipeline([("sc", StandardScaler()),
                     ("clf", MLPClassifier((6,), max_iter=3000, random_state=0))]).fit(ds.frame, ds.y)
    model = from_sklearn(pipe, ds)
    X = model.encode(ds.frame)
    t = model.network().predict(X)
    shift = ParameterShift(0.1)
    ok, res = is_delta_robust(model, X, shift, target_class=t, return_result=True)
    assert 10 <= ok.sum() < len(ok)
    user = copy.deepcopy(pipe)
    base = _sk_params(user)
    rng = np.random.default_rng(0)
    flipped = np.zeros(len(X), dtype=bool)
    for _ in range(300):
        _sk_set(user, [p + rng.uniform(-0.1, 0.1, p.shape) for p in base])
        flipped |= user.predict(ds.frame) != pipe[-1].classes_[t]
    assert not (flipped & ok).any()
    # every not_robust witness, put into the pipeline, flips its row
    for i in np.flatnonzero(res.not_robust)[:8]:
        w = res.witness[i]
        _sk_set(user, [W.T for W, _ in w.layers] + [b for _, b in w.layers])
        assert user.predict(ds.frame.iloc[[i]])[0] != pipe[-1].classes_[t[i]]


def test_enumeration_volumes_agree_with_sampling_on_a_structured_network():
    """APΔS Algorithm 3 over an input map, identity layers and fixed entries: the volume proven
    robust ≤ the sampled keep rate ≤ 1 − the volume proven non-robust."""
    from robustce.robustness import enumerate_delta

    rng = np.random.default_rng(2)
    shift = ParameterShift(0.25)
    scale = [(np.ones((4, 3)), np.ones(4)), (np.zeros((4, 4)), np.zeros(4)),
             (np.eye(4), np.ones(4)), (np.ones((1, 4)), np.ones(1))]
    checked = 0
    for _ in range(8):
        layers = [(rng.normal(size=(4, 3)), rng.normal(size=4)),
                  (np.diag(rng.uniform(0.5, 2, 4)), rng.normal(size=4)),
                  (np.diag(rng.normal(size=4)), rng.normal(size=4)),
                  (rng.normal(size=(1, 4)), rng.normal(size=1))]
        net = ReLUNetwork(layers, activations=["relu", "identity", "identity"],
                          input_map=(rng.normal(size=(3, 2)), rng.normal(size=3)),
                          shift_scale=scale)
        x = rng.uniform(size=(1, 2))
        t = int(net.predict(x)[0])
        res = enumerate_delta(net, x, shift, max_splits=8, target_class=t)
        keep = (shift.sample(net, 4000, random_state=0).margin(x, t) > 0).mean()
        assert res.robust - 0.04 <= keep <= 1 - res.non_robust + 0.04
        checked += res.robust + res.non_robust > 0
    assert checked
