"""The DiCE adapter: a clear error naming the extra when dice-ml is missing; otherwise valid,
reproducible CE sets on the same model and queries as every method."""

from __future__ import annotations

import builtins

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import RobustCEError, ValidationError
from robustce.methods.base import ACTION_TOL


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.uniform(size=(200, 2)), columns=["a", "b"])
    schema = rc.data.infer_schema(df, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(df)
    model = rc.models.NetworkModel([(np.array([[2.0, 1.0]]), np.array([-1.6]))], enc)
    data = rc.data.Dataset(df, pd.Series(model.predict(df)), schema)
    queries = df[model.predict(df) == 0].iloc[:3]
    return model, data, queries


def test_missing_extra_is_named(tiny, monkeypatch):
    model, data, _ = tiny
    real_import = builtins.__import__

    def no_dice(name, *args, **kwargs):
        if name == "dice_ml" or name.startswith("dice_ml."):
            raise ImportError("No module named 'dice_ml'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dice)
    from robustce.methods.dice import DiCE

    with pytest.raises(RobustCEError, match=r"robustce\[dice\]"):
        DiCE(model, data)
    # the same reason, asked without building (the benchmark runner skips DiCE cells with it)
    reason = DiCE.missing_dependency()
    assert reason is not None and "robustce[dice]" in reason and "dice_ml" in reason
    assert rc.methods.NearestNeighbour.missing_dependency() is None


def test_no_missing_dependency_when_dice_ml_imports():
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    assert DiCE.missing_dependency() is None


@pytest.mark.parametrize("method", ["random", "genetic"])
def test_valid_reproducible_sets(tiny, method):
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, queries = tiny
    res = DiCE(model, data, n_counterfactuals=3, method=method, random_state=0).explain(queries)
    assert (res.status == "found").all(), res.messages.tolist()
    assert (model.predict(res.counterfactuals_encoded) == 1).all()
    assert res.counterfactuals.groupby("query_id").size().le(3).all()
    again = DiCE(model, data, n_counterfactuals=3, method=method, random_state=0).explain(queries)
    assert np.allclose(res.counterfactuals_encoded, again.counterfactuals_encoded)


def test_bad_parameters(tiny):
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, _ = tiny
    with pytest.raises(ValidationError, match="method"):
        DiCE(model, data, method="annealing")
    with pytest.raises(ValidationError, match="n_counterfactuals"):
        DiCE(model, data, n_counterfactuals=0)
    with pytest.raises(ValidationError, match="data"):
        DiCE(model, None)



# --- the gradient method (dice-ml's PyTorch interface) -----------------------------------------


@pytest.fixture(scope="module")
def narrow():
    """Training rows on a ∈ [0, 0.5], b ∈ [0.2, 1] of a [0, 1]² model space (the schema's
    bounds come from a wider frame): DiCE's min-max scale is not the model's."""
    rng = np.random.default_rng(1)
    wide = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})
    schema = rc.data.infer_schema(wide, kinds={"a": "continuous", "b": "continuous"})
    enc = rc.data.Encoder(schema).fit(wide)
    df = pd.DataFrame({"a": rng.uniform(0, 0.5, 300), "b": rng.uniform(0.2, 1.0, 300)})
    model = rc.models.NetworkModel([(np.array([[2.0, 1.0]]), np.array([-1.2]))], enc)
    data = rc.data.Dataset(df, pd.Series(model.predict(df)), schema)
    return model, data


@pytest.mark.parametrize("two_logits", [False, True])
def test_gradient_module_maps_dice_scale_to_the_model(narrow, two_logits):
    """DiCE's normalised row z = (x − lo)/(hi − lo) fed to the module gives the model's
    probability of class 1 at x (one logit: sigmoid; two: softmax), on single rows too."""
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    torch = pytest.importorskip("torch")
    from robustce.methods.dice import DiCE

    model, data = narrow
    if two_logits:
        W = np.array([[-1.0, -0.5], [1.0, 0.5]])
        model = rc.models.NetworkModel([(W, np.array([0.6, -0.6]))], model.encoder)
    ex = DiCE(model, data, method="gradient")
    X = model.encoder.transform(data.frame)
    lo, hi = X.min(axis=0), X.max(axis=0)
    assert hi[0] < 0.6 and lo[1] > 0.1  # the training range is not [0, 1]
    x = np.array([[0.3, 0.5], [0.1, 0.9], [0.45, 0.25]])
    z = torch.tensor((x - lo) / (hi - lo), dtype=torch.float32)
    module = ex._torch_module(X)
    out = module(z).detach().numpy()
    want = model.predict_proba(x)[:, 1]
    np.testing.assert_allclose(out[:, -1], want, rtol=1e-5)
    one = module(z[0]).detach().numpy()  # dice-ml's own calls: one 1-D row
    np.testing.assert_allclose(one[-1], want[0], rtol=1e-5)


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_gradient_sets_valid_reproducible(tiny):
    """dice-ml's defaults (at least 500 Adam steps: ~8 s per query here), one query."""
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, queries = tiny
    q = queries.iloc[:1]
    res = DiCE(model, data, n_counterfactuals=3, method="gradient", random_state=0).explain(q)
    assert (res.status == "found").all(), res.messages.tolist()
    assert (model.predict(res.counterfactuals_encoded) == 1).all()
    sizes = res.counterfactuals.groupby("query_id").size()
    assert sizes.le(3).all() and sizes.ge(1).all()
    assert (res.certificates["n_returned"] == 3).all()
    again = DiCE(model, data, n_counterfactuals=3, method="gradient", random_state=0).explain(q)
    np.testing.assert_array_equal(res.counterfactuals_encoded, again.counterfactuals_encoded)


def test_gradient_not_found_when_no_iterate_crosses(tiny):
    """One optimiser step from far inside class 0: no iterate is valid; the adapter reports
    not_found (dice-ml's own message), not an error."""
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, _ = tiny
    far = pd.DataFrame({"a": [0.05], "b": [0.05]})
    assert model.predict(far)[0] == 0
    res = DiCE(model, data, n_counterfactuals=2, method="gradient", random_state=0,
               dice_params={"min_iter": 1, "max_iter": 1}).explain(far)
    assert res.status.iloc[0] == "not_found"
    assert "no counterfactuals found" in res.messages.iloc[0].lower()
    assert len(res.counterfactuals) == 0


@pytest.mark.parametrize("method", ["random", "gradient"])
def test_posthoc_sparsity_off_unless_asked(tiny, method, monkeypatch):
    """dice-ml's post-hoc sparsity pass is switched off by default (its 1e-10 steps at
    model-space precision); a caller's own value is passed through."""
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, queries = tiny
    seen = []
    for params in (None, {"posthoc_sparsity_param": 0.2}):
        ex = DiCE(model, data, n_counterfactuals=1, method=method, random_state=0,
                  dice_params=params)
        exp = ex._build()
        real = exp.generate_counterfactuals

        def spy(*args, _real=real, **kwargs):
            seen.append(kwargs.get("posthoc_sparsity_param", "absent"))
            raise RuntimeError("stop here")

        monkeypatch.setattr(exp, "generate_counterfactuals", spy)
        res = ex.explain(queries.iloc[:1])
        assert res.status.iloc[0] == "error" and "stop here" in res.messages.iloc[0]
    assert seen == [None, 0.2]


def test_gradient_bad_models(tiny):
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    model, data, _ = tiny

    class Step(rc.models.Model):  # a threshold rule: no network view, no gradient
        encoder = model.encoder

        def logits(self, X):
            return (self.encode(X)[:, :1] > 0.5) - 0.5

    with pytest.raises(ValidationError, match="differentiable"):
        DiCE(Step(), data, method="gradient")
    three = rc.models.NetworkModel([(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]),
                                     np.zeros(3))], model.encoder)
    with pytest.raises(ValidationError, match="binary"):
        DiCE(three, data, method="gradient")


@pytest.mark.parametrize("method", ["random", "genetic"])
def test_actionability_reaches_dice(method):
    """Immutable and monotone features become dice-ml's features_to_vary / permitted_range:
    DiCE's CEs keep them (and none is dropped by the actionability check), on a model whose
    cheapest flip would move the immutable feature. (``kdtree`` searches training rows with
    the query's immutable values: none here, where the immutable feature is continuous.)"""
    pytest.importorskip("dice_ml", reason="dice-ml (the 'dice' extra) is not installed")
    from robustce.methods.dice import DiCE

    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.uniform(size=(300, 3)), columns=["a", "b", "c"])
    kinds = {c: "continuous" for c in df.columns}
    schema = rc.data.infer_schema(df, kinds=kinds, immutable=["a"], increasing=["b"])
    enc = rc.data.Encoder(schema).fit(df)
    # class 1 iff 3a + b − c > 1.6: moving a would be cheapest, b may only grow, c shrink freely
    model = rc.models.NetworkModel([(np.array([[3.0, 1.0, -1.0]]), np.array([-1.6]))], enc)
    data = rc.data.Dataset(df, pd.Series(model.predict(df)), schema)
    queries = df[(model.predict(df) == 0) & (df.a > 0.35)].iloc[:4]  # b and c can flip them
    res = DiCE(model, data, n_counterfactuals=2, method=method, random_state=0).explain(queries)
    assert (res.status == "found").all(), res.messages.tolist()
    cfs = res.counterfactuals
    x = queries.loc[cfs["query_id"]]
    # within the actionability check's tolerance (dice-ml rounds to 10 decimals)
    np.testing.assert_allclose(cfs["a"].to_numpy(), x["a"].to_numpy(), atol=ACTION_TOL)
    assert (cfs["b"].to_numpy() >= x["b"].to_numpy() - ACTION_TOL).all()
    assert (model.predict(cfs[["a", "b", "c"]]) == 1).all()
