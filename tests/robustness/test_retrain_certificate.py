"""The (δ, α) certificate from sampled retrains (robustness/retrain.py), its retrain procedure
(models/families/procedure.py) and the black-box model path (models/opaque.py).

Soundness is checked on synthetic procedures whose true share is known: a "retrain" is a coin
model that accepts row j with probability p_j, independently per model and row, so one
certification of many rows is many independent repetitions; no training happens there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from joblib import parallel_backend
from scipy import stats

import robustce as rc
from robustce.errors import UnsupportedModelError, ValidationError
from robustce.models import Model, RetrainProcedure
from robustce.robustness import RetrainCertifier, share_bounds
from robustce.robustness.certifier import CertStatus

ROWS = 2000


@pytest.fixture(scope="module")
def encoder():
    df = pd.DataFrame({"row": np.linspace(0.0, 1.0, 11)})
    schema = rc.data.infer_schema(df, kinds={"row": "continuous"})
    return rc.data.Encoder(schema).fit(df)


class Coin(Model):
    """Accepts (class 1) row j (encoded as j / (ROWS − 1)) with probability p[j], by a uniform
    draw of its own seed; counts its predict calls."""

    calls = 0

    def __init__(self, seed: int, p: np.ndarray, encoder):
        self.u = np.random.default_rng(seed).random(len(p))
        self.p, self.encoder = p, encoder

    def logits(self, X):
        Coin.calls += 1
        j = np.rint(np.asarray(X)[:, 0] * (len(self.p) - 1)).astype(int)
        return np.where(self.u[j] < self.p[j], 1.0, -1.0)[:, None]


def _coins(p: np.ndarray, encoder, random_state: int = 0) -> RetrainProcedure:
    return RetrainProcedure(lambda seed: Coin(seed, p, encoder), change="coin",
                            random_state=random_state)


def _rows(n: int) -> np.ndarray:
    return (np.arange(n) / (n - 1))[:, None]


def _tolerance(n: int, rate: float) -> int:
    """A count a Binomial(n, rate) exceeds with probability < 1e-4."""
    return int(stats.binom.ppf(1 - 1e-4, n, rate))


# --- soundness ------------------------------------------------------------------------------
@pytest.mark.parametrize("n_looks", [1, 4])
def test_false_certificates_stay_below_one_minus_alpha_just_below_the_share(encoder, n_looks):
    share, conf = 0.9, 0.9
    p = np.full(ROWS, 0.885)             # the true share, just below δ
    cert = RetrainCertifier(_coins(p, encoder), share=share, confidence=conf, max_models=120,
                            n_looks=n_looks)
    res = cert.certify(None, _rows(ROWS), 1)
    false = int((res.verdict == "certified").sum())
    assert false <= _tolerance(ROWS, 1 - conf), (false, ROWS)
    assert not (res.verdict == "certified").all() and res.robust.sum() == false


def test_naive_repeated_testing_would_break_the_claim_the_looks_keep(encoder):
    """The test above can fail: on the same draws, testing after every model at the full error
    (naive early stopping) certifies far more than 1 − α of rows whose share is below δ."""
    share, conf, n_max = 0.9, 0.9, 120
    p = np.full(ROWS, 0.885)
    proc = _coins(p, encoder)
    accept = np.stack([m.predict(_rows(ROWS)) == 1 for m in proc.models(range(n_max))])
    k = np.cumsum(accept, axis=0)
    n = np.arange(1, n_max + 1)[:, None]
    lower = np.where(k > 0, stats.beta.ppf(1 - conf, np.maximum(k, 1), n - k + 1), 0.0)
    naive = (lower > share).any(axis=0).sum()
    assert naive > _tolerance(ROWS, 1 - conf)
    ours = RetrainCertifier(proc, share=share, confidence=conf, max_models=n_max).certify(
        None, _rows(ROWS), 1)
    assert (ours.verdict == "certified").sum() <= _tolerance(ROWS, 1 - conf)


def test_well_above_the_share_it_certifies_and_well_below_it_refutes(encoder):
    p = np.r_[np.full(500, 0.995), np.full(500, 0.5)]
    res = RetrainCertifier(_coins(p, encoder), share=0.9, confidence=0.9,
                           max_models=100).certify(None, _rows(1000), 1)
    assert (res.verdict[:500] == "certified").mean() >= 0.95
    assert (res.verdict[500:] == "refuted").all()
    # early stopping: the refuted rows were decided at the first look, with fewer models
    assert (res.columns["n"][500:] == res.params["looks"][0]).all()


def test_beta_posterior_holds_on_average_over_its_prior(encoder):
    """The paper's bound is Bayesian: with shares drawn from its uniform prior, the certified
    rows whose share is below δ are at most 1 − α of the certified ones."""
    p = np.random.default_rng(1).uniform(0.6, 1.0, ROWS)   # the prior, where it matters
    res = RetrainCertifier(_coins(p, encoder), share=0.9, confidence=0.9, max_models=100,
                           bound="beta").certify(None, _rows(ROWS), 1)
    cert = res.verdict == "certified"
    assert cert.sum() > 100
    assert (p[cert] < 0.9).sum() <= _tolerance(int(cert.sum()), 0.1)


def test_bounds_are_the_beta_quantiles(encoder):
    k, n, e = np.array([0, 3, 10, 10]), np.array([10, 10, 10, 12]), 0.05
    lo, hi = share_bounds(k, n, e)
    np.testing.assert_allclose(lo, [0.0, *[stats.beta.ppf(e, a, b - a + 1)
                                           for a, b in zip(k[1:], n[1:], strict=True)]])
    np.testing.assert_allclose(hi[:2], [stats.beta.ppf(1 - e, a + 1, b - a)
                                        for a, b in zip(k[:2], n[:2], strict=True)])
    assert hi[2] == 1.0
    blo, _ = share_bounds(10, 10, e, "beta", prior=(0.5, 0.5))
    assert blo == pytest.approx(stats.beta.ppf(e, 10.5, 0.5))


def test_default_looks_start_where_certification_first_becomes_possible(encoder):
    cert = RetrainCertifier(_coins(np.ones(3), encoder), share=0.9, confidence=0.9,
                            max_models=80, n_looks=4)
    e = 0.1 / 4
    assert cert.error_ == pytest.approx(e)
    # n of n accepting: the Clopper–Pearson lower bound is e ** (1 / n)
    n_min = next(n for n in range(1, 500) if e ** (1 / n) > 0.9)
    assert cert.looks_[0] == n_min and cert.looks_[-1] == 80 and len(cert.looks_) == 4


def test_a_budget_that_can_never_certify_is_refused_with_the_budget_needed(encoder):
    with pytest.raises(ValidationError, match="needs at least 22 models"):
        RetrainCertifier(_coins(np.ones(3), encoder), share=0.9, confidence=0.9,
                         max_models=10, n_looks=1)
    for bad in ({"share": 1.0}, {"confidence": 0.0}, {"bound": "wilson"}, {"looks": [5, 3]}):
        with pytest.raises(ValidationError):
            RetrainCertifier(_coins(np.ones(3), encoder), **bad)


def test_undecided_rows_are_never_robust(encoder):
    p = np.full(200, 0.92)               # near δ: a 40-model budget decides few of them
    res = RetrainCertifier(_coins(p, encoder), share=0.9, confidence=0.9, looks=[40]).certify(
        None, _rows(200), 1)
    undecided = res.verdict == "undecided"
    assert undecided.sum() > 100
    assert all(s is CertStatus.INCONCLUSIVE for s in res.status[undecided])
    assert not res.robust[undecided].any()
    # verdicts agree with a recount of k against the bound
    k = res.columns["k"]
    lo, hi = share_bounds(k, 40, 0.1)
    np.testing.assert_array_equal(res.verdict == "certified", lo > 0.9)
    np.testing.assert_array_equal(res.verdict == "refuted", hi < 0.9)


def test_one_predict_per_model_over_all_rows(encoder):
    proc = _coins(np.full(300, 0.97), encoder)
    cert = RetrainCertifier(proc, share=0.9, confidence=0.9, max_models=100)
    Coin.calls = 0
    res = cert.certify(None, _rows(300), 1)
    assert Coin.calls == res.columns["n"].max() == res.meta["n_fitted"]
    assert res.meta["models"] == [0, int(res.columns["n"].max())]
    # the same certificate again: every model is cached, none is fitted
    again = cert.certify(None, _rows(300), 1)
    assert again.meta["n_fitted"] == 0
    np.testing.assert_array_equal(again.verdict, res.verdict)


def test_k_counts_the_models_that_give_the_target(encoder):
    p = np.linspace(0.0, 1.0, 50)
    proc = _coins(p, encoder)
    res = RetrainCertifier(proc, share=0.5, confidence=0.8, looks=[30]).certify(
        None, _rows(50), 1)
    votes = np.stack([m.predict(_rows(50)) for m in proc.models(range(30))])
    np.testing.assert_array_equal(res.columns["k"], (votes == 1).sum(axis=0))
    res0 = RetrainCertifier(proc, share=0.5, confidence=0.8, looks=[30]).certify(
        None, _rows(50), 0)
    np.testing.assert_array_equal(res0.columns["k"], (votes == 0).sum(axis=0))


# --- the retrain procedure --------------------------------------------------------------------
@pytest.fixture(scope="module")
def moons():
    return rc.datasets.load("moons", n_samples=120, random_state=0)


def _coef(m) -> np.ndarray:
    return np.asarray(m.estimator.coef_)


def test_bootstrap_model_i_is_the_same_model_when_asked_again(moons):
    from sklearn.linear_model import LogisticRegression

    proc = RetrainProcedure.from_model(LogisticRegression(), moons, "bootstrap", random_state=3)
    first = proc.models([0, 1, 2])
    assert proc.model(1) is first[1] and proc.n_fitted == 3
    assert proc.models([2, 0]) == [first[2], first[0]] and proc.n_fitted == 3
    # a fresh procedure (other order, two workers: threads, so no process start-up) refits
    # the same models
    other = RetrainProcedure.from_model(LogisticRegression(), moons, "bootstrap",
                                        random_state=3, n_jobs=2)
    with parallel_backend("threading", n_jobs=2):
        again = other.models([2, 0, 1])
    for i, m in zip([2, 0, 1], again, strict=True):
        np.testing.assert_array_equal(_coef(m), _coef(first[i]))
    assert not np.allclose(_coef(first[0]), _coef(first[1]))   # other rows: other models
    # bootstrap rows: a LogisticRegression fit on the same resample gives the same model
    rng = np.random.default_rng(np.random.SeedSequence([3, 1, 1]))
    rows = np.sort(rng.integers(0, len(moons), size=len(moons)))
    Z = first[1].encoder.transform(moons.frame.iloc[rows])
    ref = LogisticRegression(random_state=proc.seed(1)).fit(Z, moons.y[rows])
    np.testing.assert_allclose(_coef(first[1]), ref.coef_)


def test_seed_change_refits_on_all_rows_with_new_seeds(moons):
    from sklearn.ensemble import RandomForestClassifier

    spec = RandomForestClassifier(n_estimators=3, max_depth=3)
    proc = RetrainProcedure.from_model(spec, moons, "seed", random_state=0)
    a, b = proc.models([0, 1])
    X = a.encoder.transform(moons.frame)
    ref = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=proc.seed(0)).fit(
        X, moons.y)
    np.testing.assert_array_equal(a.final_.predict_proba(X), ref.predict_proba(X))
    assert proc.seed(0) != proc.seed(1)
    assert not np.array_equal(a.final_.predict_proba(X), b.final_.predict_proba(X))


def test_refit_of_a_fitted_model_keeps_its_model_space(moons):
    from sklearn.linear_model import LogisticRegression

    enc = rc.data.Encoder(moons.schema).fit(moons.frame)
    user = rc.models.wrap(LogisticRegression().fit(enc.transform(moons.frame), moons.y), enc)
    proc = RetrainProcedure.from_model(user, moons, "subsample", fraction=0.25)
    m = proc.model(0)
    assert m.encoder is enc and m.estimator is not user.estimator
    assert m.estimator.n_features_in_ == enc.n_features_out_


def test_window_change_retrains_on_one_of_the_windows(moons):
    from sklearn.linear_model import LogisticRegression

    w1, w2 = moons.subset(np.arange(60)), moons.subset(np.arange(60, 120))
    proc = RetrainProcedure.from_model(LogisticRegression(), moons, "window", windows=[w1, w2])
    enc = proc.encoder
    fits = [LogisticRegression(random_state=proc.seed(i)).fit(enc.transform(w.frame), w.y).coef_
            for i in range(4) for w in (w1, w2)]
    for m in proc.models(range(4)):
        assert any(np.allclose(_coef(m), c) for c in fits)
    with pytest.raises(ValidationError, match="windows"):
        RetrainProcedure.from_model(LogisticRegression(), moons, "window")


# --- black boxes --------------------------------------------------------------------------------
class OnlyProba:
    """A scorer with nothing but predict_proba over raw rows (no attributes to read)."""

    __slots__ = ("_f",)

    def __init__(self, f):
        self._f = f

    def predict_proba(self, frame):
        return self._f(frame)


def _scorer(shift: float = 0.0) -> OnlyProba:
    def f(frame: pd.DataFrame) -> np.ndarray:
        z = 3.0 * (frame["x1"].to_numpy() - 0.25 + shift) - 2.0 * frame["x2"].to_numpy()
        p1 = 1.0 / (1.0 + np.exp(-z))
        return np.column_stack([1.0 - p1, p1])
    return OnlyProba(f)


def test_a_predict_proba_only_model_works_with_nearest_neighbour(moons):
    scorer = _scorer()
    model = rc.models.black_box(scorer, moons)
    queries = moons.frame[model.predict(moons.frame) == 0].head(5)
    res = rc.methods.NearestNeighbour(model, moons).explain(queries)
    assert (res.status == "found").all()
    own = scorer.predict_proba(res.counterfactuals[moons.schema.names]).argmax(axis=1)
    assert (own == 1).all()


def test_a_predict_proba_only_model_gets_the_retrain_certificate(moons):
    model = rc.models.black_box(_scorer(), moons)
    # the user's procedure: retrains move the boundary by a seeded amount
    proc = RetrainProcedure(lambda s: _scorer(np.random.default_rng(s).normal(0, 0.1)),
                            encoder=model.encoder)
    rows = moons.frame.head(40)
    res = RetrainCertifier(proc, share=0.8, confidence=0.9, looks=[60]).certify(model, rows, 1)
    scorers = [_scorer(np.random.default_rng(proc.seed(i)).normal(0, 0.1)) for i in range(60)]
    k = sum((s.predict_proba(rows).argmax(axis=1) == 1).astype(int) for s in scorers)
    np.testing.assert_array_equal(res.columns["k"], k)
    assert isinstance(proc.model(0), rc.models.BlackBoxModel)


@pytest.mark.parametrize("build", [
    lambda m, d: rc.methods.MILPNearest(m, d),
    lambda m, d: rc.methods.MILPRobust(m, d),
    lambda m, d: rc.robustness.is_delta_robust(m, d.frame.head(2),
                                               rc.robustness.ParameterShift(0.01)),
])
def test_exact_methods_refuse_a_black_box_saying_they_need_an_open_model(moons, build):
    model = rc.models.black_box(_scorer(), moons)
    with pytest.raises(UnsupportedModelError, match="need an open model"):
        build(model, moons)


def test_black_box_probe_and_refit_errors(moons):
    with pytest.raises(UnsupportedModelError, match="predict_proba"):
        rc.models.black_box(object(), moons)
    bad = OnlyProba(lambda frame: np.ones((len(frame), 3)) / 3)
    with pytest.raises(UnsupportedModelError, match="shape"):
        rc.models.black_box(bad, moons)
    with pytest.raises(UnsupportedModelError, match="cannot refit a black-box"):
        RetrainProcedure.from_model(rc.models.black_box(_scorer(), moons), moons)
