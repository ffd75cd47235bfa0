"""CounterNet and RoCourseNet: architecture, constraints, determinism, VDS, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch.func import functional_call

import robustce as rc
from robustce.errors import NotFittedError, ValidationError
from robustce.methods.counternet import CounterNet
from robustce.methods.counternet_network import CEConstraints, CounterNetModule, _PredictorView
from robustce.methods.rocoursenet import (
    RoCourseNet,
    unrolled_adversarial_loss,
    virtual_data_shift,
)

TINY = ((16, 8), (8,), (8,))


@pytest.fixture(scope="module")
def loan_small():
    data = rc.datasets.load("synthetic_loan", n_samples=600, random_state=1)
    return data.split(test_size=0.25, random_state=0)


@pytest.fixture(scope="module")
def fitted(loan_small):
    train, _ = loan_small
    # constraints=None: these tests are about the network's own CEs; synthetic_loan's shipped
    # relations (applied by default since issue 53) would filter most of them
    return CounterNet(hidden=TINY, epochs=25, batch_size=32, lambdas=(1, 1, 0.1),
                      random_state=0, progress=False, constraints=None).fit(train)


def _gradient_matches_finite_difference(loss, delta, u, h=1e-6):
    """∇loss(δ) by autograd; asserts its directional derivative along u equals the central
    finite difference. Returns the gradient."""
    d = delta.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(d), d)
    fd = (loss(delta + h * u) - loss(delta - h * u)) / (2 * h)
    assert torch.isclose((g * u).sum(), fd, rtol=1e-4, atol=1e-9), ((g * u).sum().item(), fd.item())
    return g


def test_same_seed_same_model_and_other_seed_differs(loan_small):
    train, _ = loan_small
    small = train.subset(np.arange(120))
    kw = dict(hidden=TINY, epochs=2, batch_size=32, progress=False)
    a = CounterNet(random_state=3, **kw).fit(small)
    b = CounterNet(random_state=3, **kw).fit(small)
    c = CounterNet(random_state=4, **kw).fit(small)
    sa, sb, sc = (m.net_.state_dict() for m in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_model_view_is_the_trained_predictor(fitted, loan_small):
    _, test = loan_small
    assert isinstance(fitted.model, rc.models.NetworkModel)
    X = fitted.encoder.transform(test.frame)
    with torch.no_grad():
        torch_p = torch.sigmoid(fitted.predictor_view()(torch.tensor(X, dtype=torch.float32)))
    np.testing.assert_allclose(fitted.predict_proba(test.frame)[:, 1], torch_p.numpy(), atol=1e-5)
    np.testing.assert_array_equal(fitted.predict(test.frame), fitted.model.predict(X))
    # it learned something: better than the majority class on held-out rows
    majority = max(test.y.mean(), 1 - test.y.mean())
    assert (fitted.predict(test.frame) == test.y).mean() > majority


def test_ces_respect_encoding_immutables_and_flip_the_predictor(fitted, loan_small):
    _, test = loan_small
    enc = fitted.encoder
    X = enc.transform(test.frame)
    C = fitted.counterfactuals(X)
    np.testing.assert_array_equal(C, enc.project(C))  # exact encodings
    for b in enc.blocks_:
        if b.encoding == "onehot":
            assert np.all(C[:, b.slice].sum(1) == 1)
    np.testing.assert_array_equal(C[:, enc.immutable_mask_], X[:, enc.immutable_mask_])
    assert np.all(C[:, enc.increasing_mask_] >= X[:, enc.increasing_mask_])
    assert C.min() >= 0 and C.max() <= 1
    validity = (fitted.model.predict(C) != fitted.model.predict(X)).mean()
    assert validity >= 0.9
    e = fitted.explain(test.frame)
    found = e.status == "found"
    assert found.mean() >= 0.9
    assert set(e.status) <= {"found", "not_found"}


def test_soft_constraints_are_valid_relaxations(fitted):
    enc = fitted.encoder
    cons = CEConstraints(enc, torch.device("cpu"))
    g = torch.Generator().manual_seed(0)
    x = torch.tensor(enc.project(torch.rand(50, enc.n_features_out_, generator=g).numpy()),
                     dtype=torch.float32)
    raw = (3 * torch.randn(50, enc.n_features_out_, generator=g)).requires_grad_()
    soft = cons.soft(x, raw)
    assert soft.min() >= 0 and soft.max() <= 1
    for b in enc.blocks_:
        block = soft[:, b.slice]
        if b.encoding == "onehot":
            torch.testing.assert_close(block.sum(1), torch.ones(50))
        if b.encoding == "thermometer":
            assert torch.all(block[:, 1:] <= block[:, :-1] + 1e-6)
    imm = torch.tensor(enc.immutable_mask_)
    torch.testing.assert_close(soft[:, imm], x[:, imm])
    soft.sum().backward()  # differentiable
    assert raw.grad is not None and torch.isfinite(raw.grad).all()


def test_explain_before_fit_and_bad_params():
    with pytest.raises(NotFittedError):
        CounterNet(progress=False).explain(np.zeros((1, 3)))
    for bad in (dict(epochs=0), dict(lr=-1), dict(lambdas=(1, 2)), dict(dropout=1.0),
                dict(hidden=((8,), (8,))), dict(hidden=((0,), (8,), (8,))), dict(batch_size=0)):
        with pytest.raises(ValidationError):
            CounterNet(**bad)


def test_params_round_trip_without_a_model():
    m = RoCourseNet(hidden=TINY, epsilon=0.2, n_steps=3, progress=False)
    assert m.model is None  # no model goes in: it trains its own
    assert type(m)(**m.get_params()).get_params() == m.get_params()
    assert {"epsilon", "n_steps", "k", "hidden", "lambdas"} <= set(RoCourseNet.param_names())


def test_multiclass_is_rejected():
    with pytest.raises(ValidationError, match="binary"):
        CounterNet(hidden=TINY, epochs=1, progress=False).fit(rc.datasets.load("iris"))


# --- virtual data shift (Algorithm 1) ----------------------------------------------------------
def _robust_validity(view, theta, x_cf, y_cf):
    with torch.no_grad():
        return ((functional_call(view, theta, (x_cf,)) > 0).float() == y_cf).float().mean().item()


def test_vds_lowers_robust_validity_of_a_fixed_counternet(fitted, loan_small):
    train, _ = loan_small
    X = fitted.encoder.transform(train.frame)
    x = torch.tensor(X, dtype=torch.float32)
    y = torch.tensor(train.y, dtype=torch.float32)
    x_cf = torch.tensor(fitted.counterfactuals(X), dtype=torch.float32)
    view, theta = fitted.predictor_view(), fitted.predictor_params()
    with torch.no_grad():
        y_cf = 1 - (functional_call(view, theta, (x,)) > 0).float()
    before = _robust_validity(view, theta, x_cf, y_cf)
    kw = dict(epsilon=0.3, n_steps=10, shift_mask=fitted.constraints_.continuous)
    attacked, delta = virtual_data_shift(view, theta, x, y, x_cf, y_cf,
                                         generator=torch.Generator().manual_seed(0), **kw)
    # the same retraining on a random (not optimised) shift of the same size
    random_shift, _ = virtual_data_shift(view, theta, x, y, x_cf, y_cf, alpha=1e-12,
                                         generator=torch.Generator().manual_seed(0), **kw)
    after = _robust_validity(view, attacked, x_cf, y_cf)
    baseline = _robust_validity(view, random_shift, x_cf, y_cf)
    assert before >= 0.9
    assert after < baseline - 0.2, (before, baseline, after)
    # δ stays in the ε-ball and on the continuous columns
    assert delta.abs().max() <= 0.3 + 1e-6
    assert torch.all(delta[:, ~torch.tensor(fitted.constraints_.continuous)] == 0)


@pytest.mark.parametrize("inner_optimizer", ["sgd", "adam"])
def test_vds_gradient_flows_through_unrolled_steps(inner_optimizer):
    """∇δ of the adversarial loss (autograd through K unrolled steps) matches central finite
    differences on a tiny float64 network. x_cf does not depend on δ, so any non-zero gradient
    has come through the unrolled predictor updates."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = CounterNetModule(3, ((5,), (4,), (2,)), 0.0).double()
        x = torch.rand(6, 3, dtype=torch.float64)
        x_cf = torch.rand(6, 3, dtype=torch.float64)
        delta = 0.1 * torch.randn(6, 3, dtype=torch.float64)
        u = torch.randn(6, 3, dtype=torch.float64)
    view = _PredictorView(net)
    theta = {n: p.detach() for n, p in view.named_parameters()}
    y = torch.tensor([0, 1, 0, 1, 1, 0], dtype=torch.float64)
    y_cf = 1 - y
    kw = dict(k=3, inner_lr=0.5 if inner_optimizer == "sgd" else 0.05,
              inner_optimizer=inner_optimizer)

    g = _gradient_matches_finite_difference(
        lambda d: unrolled_adversarial_loss(d, view, theta, x, y, x_cf, y_cf, **kw)[0], delta, u)
    assert g.abs().max() > 1e-6


def test_unbounded_constraints_leave_numeric_columns_free_and_integers_on_grid():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"income": rng.uniform(0, 100, 60), "years": rng.integers(0, 10, 60),
                       "colour": rng.choice(["red", "blue"], 60), "label": rng.integers(0, 2, 60)})
    data = rc.data.from_frame(df, "label")
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    blocks = {b.feature.name: b for b in enc.blocks_}
    inc, yrs = blocks["income"].start, blocks["years"].start
    steps = blocks["years"].n_steps
    x = torch.tensor(enc.transform(data.frame.iloc[:4]), dtype=torch.float32)
    raw = torch.full_like(x, 2.7)  # beyond the training range
    free = CEConstraints(enc, torch.device("cpu"), bounded=False)
    soft = free.soft(x, raw)
    assert torch.all(soft[:, inc] == 2.7) and torch.all(soft[:, yrs] == 2.7)
    hard = free.hard(x.numpy().astype(float), soft.detach().numpy().astype(float))
    np.testing.assert_allclose(hard[:, inc], 2.7, rtol=1e-6)
    np.testing.assert_allclose(hard[:, yrs] * steps, np.round(2.7 * steps))  # on the grid
    onehot = hard[:, blocks["colour"].slice]
    np.testing.assert_array_equal(onehot.sum(1), 1)
    bounded = CEConstraints(enc, torch.device("cpu"))
    assert bounded.hard(x.numpy().astype(float),
                        bounded.soft(x, raw).detach().numpy().astype(float)).max() <= 1


def test_predictor_view_with_dropout_thins_in_training_mode_only():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = CounterNetModule(5, ((32,), (16,), (4,)), 0.5)
        x = torch.rand(64, 5)
    plain, thinned = _PredictorView(net), _PredictorView(net, dropout=True)
    net.train()
    assert torch.equal(plain(x), plain(x))  # the default view ignores dropout in any mode
    assert not torch.allclose(thinned(x), plain(x))
    assert not torch.allclose(thinned(x), thinned(x))
    net.eval()
    assert torch.equal(thinned(x), plain(x))


def test_validity_dropout_changes_the_explainer_training(loan_small):
    """validity_dropout=True trains the explainer against the thinned predictor: same seed,
    different explainer weights (the view's semantics are tested above)."""
    train, _ = loan_small
    kw = dict(hidden=TINY, epochs=3, batch_size=32, random_state=0, progress=False)
    a = CounterNet(**kw).fit(train)
    b = CounterNet(validity_dropout=True, **kw).fit(train)
    c = CounterNet(validity_dropout=True, **kw).fit(train)
    assert not torch.equal(a.net_.explainer[0].weight, b.net_.explainer[0].weight)
    assert torch.equal(b.net_.explainer[0].weight, c.net_.explainer[0].weight)
    with pytest.raises(ValidationError, match="validity_dropout"):
        CounterNet(validity_dropout="yes")


def test_vds_rejects_bad_input():
    view = _PredictorView(CounterNetModule(3, ((4,), (3,), (2,)), 0.0))
    theta = {n: p.detach() for n, p in view.named_parameters()}
    x, y = torch.rand(4, 3), torch.ones(4)
    for bad in (dict(epsilon=0), dict(epsilon=-0.1), dict(n_steps=0), dict(k=0),
                dict(norm="l1"), dict(shift_mask=np.zeros(3, bool)), dict(shift_mask=np.ones(2, bool))):
        with pytest.raises(ValidationError):
            virtual_data_shift(view, theta, x, y, x, 1 - y, **bad)


@pytest.mark.parametrize("norm", ["inf", "l2"])
@pytest.mark.parametrize("softmax", [False, True])
def test_vds_delta_stays_in_the_epsilon_ball_and_on_the_shifted_columns(norm, softmax):
    """The attacker's own output: every step (α = 3ε) overshoots the ε-ball, yet every row of
    δ lies in the ball of ``norm`` on the projected column, on its boundary (the projection
    binds), and δ is 0 on the columns the shift mask leaves out. With softmax blocks only the
    block's δ escapes the ball (the authors' unprojected one-hot part)."""
    net, x, y, x_cf, y_cf = _mixed_batch()
    view = _PredictorView(net)
    theta = {n: p.detach() for n, p in view.named_parameters()}
    eps = 0.05
    mask = np.array([True, False, False, False, False, False, False])  # column 1 stays put
    blocks = [(2, 5)] if softmax else []
    _, delta = virtual_data_shift(view, theta, x, y, x_cf, y_cf, epsilon=eps, n_steps=5, k=1,
                                  alpha=3 * eps, norm=norm, shift_mask=mask, softmax_blocks=blocks,
                                  generator=torch.Generator().manual_seed(0))
    assert delta.shape == x.shape
    projected = torch.tensor(mask)
    assert torch.all(delta[:, 1] == 0) and torch.all(delta[:, 5:] == 0)
    if softmax:
        assert torch.all(delta[:, 2:5] != 0)  # the block is shifted whatever the mask says
    else:
        assert torch.all(delta[:, 2:] == 0)
    d = delta[:, projected]
    size = d.abs().max(dim=1).values if norm == "inf" else d.norm(dim=1)
    assert torch.all(size <= eps * (1 + 1e-6)), size.max().item()
    assert torch.all(size >= eps * (1 - 1e-6))  # every step overshoots: the ball binds


class _RecordingView(_PredictorView):
    """The predictor view, recording every input it is evaluated on (same parameter names)."""

    def __init__(self, net):
        super().__init__(net)
        self.seen = []

    def forward(self, x):
        self.seen.append(x.detach().clone())
        return super().forward(x)


def _mixed_batch():
    """2 continuous columns, then one-hot blocks [2, 5) and [5, 7); a tiny network over them."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = CounterNetModule(7, ((6,), (4,), (2,)), 0.0)
        x = torch.cat([torch.rand(12, 2), torch.eye(3)[torch.randint(3, (12,))],
                       torch.eye(2)[torch.randint(2, (12,))]], dim=1)
        x_cf = torch.rand(12, 7)
    y = (torch.arange(12) % 2).float()
    return net, x, y, x_cf, 1 - y


def test_vds_softmax_blocks_train_on_softmax_of_shifted_codes_with_unclipped_delta():
    """The authors' shifted inputs (relax cat_normalize(x + δ)): each one-hot block of the K
    steps' inputs is softmax(x_b + δ_b), the rest x + δ; after an attacker step the block δ is
    unclipped (α = 2.5ε for T = 1 carries it past ε) while the continuous δ stays in the ε-ball.
    The default (no blocks) trains on x + δ with the blocks untouched."""
    net, x, y, x_cf, y_cf = _mixed_batch()
    eps, blocks = 0.1, [(2, 5), (5, 7)]
    cont = np.array([True, True, False, False, False, False, False])
    view = _RecordingView(net)
    theta = {n: p.detach() for n, p in view.named_parameters()}
    kw = dict(epsilon=eps, n_steps=1, k=2, shift_mask=cont)
    _, delta = virtual_data_shift(view, theta, x, y, x_cf, y_cf, softmax_blocks=blocks,
                                  generator=torch.Generator().manual_seed(0), **kw)
    u = torch.rand(x.shape, generator=torch.Generator().manual_seed(0))
    delta0 = (2 * u - 1) * eps  # the initial δ, on every column (blocks included)
    z = x + delta0
    expected = torch.cat([z[:, :2], torch.softmax(z[:, 2:5], 1), torch.softmax(z[:, 5:7], 1)], 1)
    assert len(view.seen) == 3  # K = 2 training steps, then f(x_cf; θ')
    for inputs in view.seen[:2]:
        torch.testing.assert_close(inputs, expected)
    torch.testing.assert_close(view.seen[2], x_cf)
    # continuous δ clipped to ε (each moved by α = 0.25 > 2ε, so it sits on the boundary)
    assert delta[:, :2].abs().max() <= eps + 1e-6
    assert torch.isclose(delta[:, :2].abs(), torch.tensor(eps)).float().mean() > 0.9
    # block δ not clipped: δ0 ± α exactly, so past ε wherever it moved
    moved = (delta[:, 2:] - delta0[:, 2:]).abs()
    assert torch.all(torch.isclose(moved, torch.tensor(0.25)) | (moved < 1e-7))
    assert (moved > 0).float().mean() > 0.5
    assert delta[:, 2:][moved > 0].abs().min() >= 0.15 - 1e-6

    # the default shifted inputs: x + δ on the masked columns, one-hot blocks as they are
    view = _RecordingView(net)
    _, delta = virtual_data_shift(view, theta, x, y, x_cf, y_cf,
                                  generator=torch.Generator().manual_seed(0), **kw)
    plain = x + delta0 * torch.tensor(cont, dtype=x.dtype)
    torch.testing.assert_close(view.seen[0], plain)
    torch.testing.assert_close(view.seen[0][:, 2:], x[:, 2:])
    assert delta.abs().max() <= eps + 1e-6 and torch.all(delta[:, 2:] == 0)


def test_vds_softmax_blocks_gradient_matches_finite_differences():
    """∇δ through softmax(x_b + δ_b) and the unrolled steps agrees with finite differences."""
    net, x, y, x_cf, y_cf = _mixed_batch()
    net = net.double()
    view = _PredictorView(net)
    theta = {n: p.detach() for n, p in view.named_parameters()}
    x, y, x_cf, y_cf = x.double(), y.double(), x_cf.double(), y_cf.double()
    with torch.random.fork_rng():
        torch.manual_seed(1)
        delta = 0.2 * torch.randn(x.shape, dtype=torch.float64)
        u = torch.randn(x.shape, dtype=torch.float64)
    kw = dict(k=2, inner_lr=0.05, softmax_blocks=[(2, 5), (5, 7)])

    g = _gradient_matches_finite_difference(
        lambda d: unrolled_adversarial_loss(d, view, theta, x, y, x_cf, y_cf, **kw)[0], delta, u)
    assert g[:, 2:].abs().max() > 1e-8  # the blocks' δ does reach the loss


def test_vds_rejects_bad_softmax_blocks():
    view = _PredictorView(CounterNetModule(4, ((4,), (3,), (2,)), 0.0))
    theta = {n: p.detach() for n, p in view.named_parameters()}
    x, y = torch.rand(4, 4), torch.ones(4)
    for bad in ([(2, 5)], [(1, 3), (2, 4)], [(3, 3)]):
        with pytest.raises(ValidationError, match="softmax_blocks"):
            virtual_data_shift(view, theta, x, y, x, 1 - y, softmax_blocks=bad)


# --- RoCourseNet (Algorithm 2) ------------------------------------------------------------------
def test_rocoursenet_bad_parameters():
    for bad in (dict(epsilon=0), dict(epsilon=-0.1), dict(n_steps=0), dict(k=0), dict(alpha=0),
                dict(norm="l3"), dict(inner_optimizer="rmsprop"), dict(epsilon_schedule="cosine")):
        with pytest.raises(ValidationError):
            RoCourseNet(progress=False, **bad)


def test_rocoursenet_rejects_data_without_continuous_features():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], 40),
                       "size": rng.choice(["s", "m"], 40), "label": rng.integers(0, 2, 40)})
    data = rc.data.from_frame(df, "label")
    with pytest.raises(ValidationError, match="continuous features"):
        RoCourseNet(hidden=TINY, epochs=1, progress=False).fit(data)


def test_rocoursenet_shift_features_all_trains_on_categorical_only_data():
    """shift_features="all": δ may move every model-space column, so a dataset whose features
    are all categorical trains (the continuous-only attacker rejects it, test above)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"colour": rng.choice(["red", "green", "blue"], 40),
                       "size": rng.choice(["s", "m"], 40), "label": rng.integers(0, 2, 40)})
    data = rc.data.from_frame(df, "label")
    m = RoCourseNet(hidden=TINY, epochs=1, progress=False, shift_features="all",
                    random_state=0).fit(data)
    assert bool(m._shift_mask.all()) and m._shift_mask.numel() == m.encoder.n_features_out_
    with pytest.raises(ValidationError, match="shift_features"):
        RoCourseNet(progress=False, shift_features="categorical").fit(data)


@pytest.mark.parametrize("mode", ["continuous", "all", "softmax"])
def test_rocoursenet_shift_features_reach_the_attacker(mode, monkeypatch):
    """What RoCourseNet hands VDS per mode: "softmax" shifts every mutable column and names the
    mutable one-hot blocks as softmax blocks (the immutable block stays out of both)."""
    import robustce.methods.rocoursenet as rcn

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"income": rng.uniform(0, 100, 48), "colour": rng.choice(["r", "g", "b"], 48),
                       "size": rng.choice(["s", "m"], 48), "label": rng.integers(0, 2, 48)})
    data = rc.data.from_frame(df, "label", immutable=["size"])
    calls, real = [], rcn.virtual_data_shift

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(rcn, "virtual_data_shift", spy)
    m = RoCourseNet(hidden=TINY, epochs=1, batch_size=48, n_steps=2, progress=False,
                    shift_features=mode, random_state=0).fit(data)
    assert len(calls) == 1
    blocks = {b.feature.name: b for b in m.encoder.blocks_}
    mask = np.asarray(calls[0]["shift_mask"].cpu(), dtype=bool)
    got = [tuple(b) for b in calls[0]["softmax_blocks"]]
    expected_mask = {"continuous": m.constraints_.continuous, "all": np.ones_like(mask),
                     "softmax": ~m.encoder.immutable_mask_}[mode]
    np.testing.assert_array_equal(mask, expected_mask)
    colour = blocks["colour"]
    assert got == ([(colour.start, colour.stop)] if mode == "softmax" else [])
    assert not mask[blocks["size"].slice].any() or mode == "all"


def test_rocoursenet_schedules_epsilon_linearly_and_is_deterministic(loan_small):
    train, _ = loan_small
    small = train.subset(np.arange(64))
    kw = dict(hidden=TINY, epochs=3, batch_size=32, epsilon=0.3, n_steps=2, progress=False)
    a = RoCourseNet(random_state=5, **kw).fit(small)
    b = RoCourseNet(random_state=5, **kw).fit(small)
    np.testing.assert_allclose(a.epsilons_, [0.1, 0.2, 0.3])
    sa, sb = a.net_.state_dict(), b.net_.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    constant = RoCourseNet(random_state=5, epsilon_schedule="constant", **kw).fit(small)
    np.testing.assert_allclose(constant.epsilons_, [0.3, 0.3, 0.3])


@pytest.mark.slow
def test_rocoursenet_resists_vds_better_than_counternet():
    """Trained against VDS, RoCourseNet keeps its recourse valid under a fresh VDS attack more
    often than CounterNet: the share of CEs valid on the trained predictor that stay valid on
    the attacked one, averaged over four seeds (same data, seeds, architecture and epochs).

    Like for like: the attack moves continuous features within the ε that RoCourseNet trains
    against (0.1, the authors' ε), the figure counts the CEs that were valid before the shift
    (the paper's claim: valid recourse stays valid), and it is a mean over seeds on 1 125
    training rows. The earlier version (one seed, 450 rows, attacked at ε = 0.3 after training
    at 0.1) followed its seed, not the method: RoCourseNet 0.77 vs CounterNet 0.28 before
    synthetic_loan capped debt at one income (commit 3498155), 0.21 vs 0.70 after it, bit for
    bit the same since then with no change to either method's training; over six seeds on
    those 450 rows RoCourseNet was not ahead (ε = 0.3, the old figure: 0.51 vs 0.46; ε = 0.1,
    the share kept: 0.66 vs 0.82). Measured here (seeds 0-5, this setup): CounterNet
    0.79, RoCourseNet 0.96 (docs/results/rocoursenet.md: RoCourseNet ahead of CounterNet on
    average, with a seed spread larger than the gap on the two-part datasets).
    """
    data = rc.datasets.load("synthetic_loan", n_samples=1500, random_state=1)
    train, _ = data.split(test_size=0.25, random_state=0)
    eps = 0.1
    kept: dict[str, list[float]] = {"CounterNet": [], "RoCourseNet": []}
    for seed in range(4):
        kw = dict(hidden=TINY, epochs=25, batch_size=32, lambdas=(1, 1, 0.1), random_state=seed,
                  progress=False, constraints=None)
        for cls, extra in ((CounterNet, {}), (RoCourseNet, dict(epsilon=eps))):
            m = cls(**kw, **extra).fit(train)
            X = m.encoder.transform(train.frame)
            x = torch.tensor(X, dtype=torch.float32)
            y = torch.tensor(train.y, dtype=torch.float32)
            x_cf = torch.tensor(m.counterfactuals(X), dtype=torch.float32)
            view, theta = m.predictor_view(), m.predictor_params()
            with torch.no_grad():
                y_cf = 1 - (functional_call(view, theta, (x,)) > 0).float()
                valid = (functional_call(view, theta, (x_cf,)) > 0).float() == y_cf
            attacked, _ = virtual_data_shift(view, theta, x, y, x_cf, y_cf, epsilon=eps,
                                             n_steps=10, shift_mask=m.constraints_.continuous,
                                             generator=torch.Generator().manual_seed(0))
            with torch.no_grad():
                still = (functional_call(view, attacked, (x_cf,)) > 0).float() == y_cf
            assert valid.any(), (cls.__name__, seed)
            kept[cls.__name__].append((still & valid).float().sum().item() / valid.sum().item())
    mean = {k: float(np.mean(v)) for k, v in kept.items()}
    assert mean["RoCourseNet"] > mean["CounterNet"] + 0.1, kept


def test_build_explainer_trains_a_counternet_without_a_model(loan_small):
    train, test = loan_small
    small = train.subset(np.arange(80))
    ex = rc.methods.build_explainer("counternet", None, small, seed=2, hidden=TINY, epochs=1,
                                    progress=False)
    assert isinstance(ex, CounterNet) and ex.random_state == 2 and ex.is_fitted_
    assert len(ex.explain(test.frame.iloc[:3]).status) == 3
    model = rc.models.NetworkModel(ex.model.network(), ex.encoder)
    with pytest.raises(rc.errors.ConfigError, match="takes none"):
        rc.methods.build_explainer("rocoursenet", model, small, progress=False)


def test_delta_certificates_on_the_own_predictor_hold_against_sampled_weights(fitted, loan_small):
    """The exact Δ-test on ``.model`` (what benchmarks report as v_delta for CounterNet) is about
    the torch predictor that made the CEs: its view computes the same logits, a CE certified
    robust keeps its class on every sampled network in Δ, a non-robust one has a witness that
    flips it."""
    from robustce.robustness import ParameterShift
    from robustce.robustness.exact import DeltaStatus, exact_worst_case

    _, test = loan_small
    X = fitted.encoder.transform(test.frame)
    C = fitted.counterfactuals(X)
    net = fitted.model.network()
    with torch.no_grad():
        logits, _ = fitted.net_.eval()(torch.as_tensor(C, dtype=torch.float32))
    np.testing.assert_allclose(net.forward(C)[:, 0], logits.double().numpy(), atol=1e-4)
    targets = fitted.model.predict(C)
    seen = set()
    for delta in (0.005, 0.05):
        shift = ParameterShift(delta)
        res = exact_worst_case(net, C, shift, targets)
        samples = shift.sample(net, 2000, random_state=1)
        for i, st in enumerate(res.status):
            seen.add(st)
            if st is DeltaStatus.ROBUST:
                assert (samples.margin(C[i:i + 1], int(targets[i]))[:, 0] > 0).all(), i
            else:
                assert st is DeltaStatus.NOT_ROBUST, st
                w = res.witness[i]
                assert shift.contains(net, w) and int(w.predict(C[i:i + 1])[0]) != targets[i]
    assert seen == {DeltaStatus.ROBUST, DeltaStatus.NOT_ROBUST}
