"""scikit-learn adapters: the Model protocol, network() views, TreeView arrays."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, PolynomialFeatures, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import robustce as rc
from robustce.errors import NotFittedError, UnsupportedModelError, ValidationError
from robustce.models import SklearnModel, TreeView, forest_predict_proba, wrap
from robustce.models.trees import float32_threshold

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def loan():
    data = rc.datasets.load("synthetic_loan", n_samples=600, random_state=2)
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    return data, enc, enc.transform(data.frame)


@pytest.fixture(scope="module")
def iris():
    data = rc.datasets.load("iris")
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    return data, enc, enc.transform(data.frame)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("make", [
    lambda: LogisticRegression(max_iter=1000),
    lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
    lambda: make_pipeline(MinMaxScaler(), MaxAbsScaler(), LogisticRegression(max_iter=1000)),
    lambda: SGDClassifier(loss="log_loss", random_state=0),
])
def test_linear_models_binary(loan, make):
    data, enc, X = loan
    est = make().fit(X, data.y)
    m = wrap(est, enc, class_names=data.class_names)
    assert isinstance(m, SklearnModel) and m.class_names == data.class_names
    np.testing.assert_array_equal(m.predict(data.frame), est.predict(X))
    np.testing.assert_array_equal(m.predict(X), est.predict(X))
    net = m.network()
    assert net.layer_sizes == [X.shape[1], 1]
    np.testing.assert_allclose(net.forward(X)[:, 0], est.decision_function(X), atol=1e-5)
    np.testing.assert_allclose(m.logits(X)[:, 0], est.decision_function(X), atol=1e-12)
    if hasattr(est, "predict_proba"):
        np.testing.assert_allclose(m.predict_proba(data.frame), est.predict_proba(X))
    assert m.differentiable
    np.testing.assert_array_equal(m.margin(X, 1) > 0, est.predict(X) == 1)


def test_multinomial_logistic_regression_has_k_logits(iris):
    data, enc, X = iris
    est = LogisticRegression(max_iter=2000).fit(X, data.y)
    m = wrap(est, enc)
    net = m.network()
    assert net.n_outputs == 3
    np.testing.assert_allclose(net.forward(X), est.decision_function(X), atol=1e-5)
    np.testing.assert_allclose(_softmax(net.forward(X)), est.predict_proba(X), atol=1e-5)
    np.testing.assert_array_equal(m.predict(X), est.predict(X))
    np.testing.assert_allclose(m.predict_proba(X), est.predict_proba(X))


@pytest.mark.parametrize("scaled", [False, True])
def test_relu_mlp_classifier_binary(loan, scaled):
    data, enc, X = loan
    clf = MLPClassifier(hidden_layer_sizes=(12, 6), max_iter=200, random_state=0)
    est = make_pipeline(StandardScaler(), clf) if scaled else clf
    est.fit(X, data.y)
    m = wrap(est, enc)
    net = m.network()
    assert net.layer_sizes == [X.shape[1], 12, 6, 1]
    np.testing.assert_allclose(_sigmoid(net.forward(X)[:, 0]), est.predict_proba(X)[:, 1], atol=1e-5)
    np.testing.assert_array_equal(m.predict(data.frame), est.predict(X))
    np.testing.assert_allclose(m.predict_proba(X), est.predict_proba(X))
    np.testing.assert_allclose(m.logits(X), net.forward(X), atol=1e-10)


def test_relu_mlp_classifier_multiclass(iris):
    data, enc, X = iris
    est = MLPClassifier(hidden_layer_sizes=(8,), max_iter=500, random_state=0).fit(X, data.y)
    m = wrap(est, enc)
    z = m.network().forward(X)
    assert z.shape == (len(X), 3)
    np.testing.assert_allclose(_softmax(z), est.predict_proba(X), atol=1e-5)
    np.testing.assert_array_equal(m.predict(X), est.predict(X))


@pytest.mark.parametrize("activation", ["tanh", "logistic", "identity"])
def test_non_relu_mlp_is_rejected(loan, activation):
    data, enc, X = loan
    est = MLPClassifier(hidden_layer_sizes=(4,), activation=activation, max_iter=20, random_state=0)
    est.fit(X, data.y)
    with pytest.raises(UnsupportedModelError, match=f"activation='{activation}'"):
        wrap(est, enc)


def test_non_affine_preprocessing_keeps_predictions_but_has_no_network(loan):
    data, enc, X = loan
    est = make_pipeline(PolynomialFeatures(2), LogisticRegression(max_iter=500)).fit(X, data.y)
    m = wrap(est, enc)
    np.testing.assert_array_equal(m.predict(data.frame), est.predict(X))
    with pytest.raises(UnsupportedModelError, match="affine"):
        m.network()
    assert not m.differentiable


def test_string_labels_map_to_positions(loan):
    data, enc, X = loan
    labels = np.asarray(data.class_names, dtype=object)[data.y]
    est = LogisticRegression(max_iter=1000).fit(X, labels)
    m = wrap(est, enc)
    assert m.class_names == tuple(est.classes_)
    np.testing.assert_array_equal(np.asarray(m.class_names, dtype=object)[m.predict(X)], est.predict(X))


def test_wrap_validates_its_inputs(loan):
    data, enc, X = loan
    with pytest.raises(NotFittedError, match="not fitted"):
        wrap(LogisticRegression(), enc)
    with pytest.raises(ValidationError, match="features"):
        wrap(LogisticRegression().fit(X[:, :3], data.y), enc)
    with pytest.raises(ValidationError, match="Encoder"):
        wrap(LogisticRegression().fit(X, data.y), "encoder")
    with pytest.raises(NotFittedError, match="encoder is not fitted"):
        wrap(LogisticRegression().fit(X, data.y), rc.data.Encoder(data.schema))
    from sklearn.svm import SVC

    with pytest.raises(UnsupportedModelError, match="cannot wrap SVC"):
        wrap(SVC().fit(X[:50], data.y[:50]), enc)
    with pytest.raises(ValidationError, match="class_names"):
        wrap(LogisticRegression().fit(X, data.y), enc, class_names=("a", "b", "c"))
    with pytest.raises(UnsupportedModelError, match="tree ensemble"):
        wrap(LogisticRegression().fit(X, data.y), enc).trees()


# --- trees ------------------------------------------------------------------------------


def _near_threshold_inputs(view: TreeView, X: np.ndarray, rng) -> np.ndarray:
    """Rows whose tested features sit exactly at, just below and just above thresholds."""
    rows = []
    internal = np.flatnonzero(view.left >= 0)
    for node in rng.choice(internal, size=min(40, len(internal)), replace=False):
        f, t = view.feature[node], view.threshold[node]
        for v in (t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf), np.float32(t), t + 1e-9,
                  t - 1e-9):
            x = X[rng.integers(len(X))].copy()
            x[f] = v
            rows.append(x)
    return np.array(rows)


@pytest.mark.parametrize("make", [
    lambda: DecisionTreeClassifier(random_state=0),
    lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
    lambda: RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0),
    lambda: ExtraTreesClassifier(n_estimators=10, random_state=0),
    lambda: make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=8, random_state=0)),
])
def test_tree_views_reproduce_sklearn(loan, make):
    data, enc, X = loan
    est = make().fit(X, data.y)
    m = wrap(est, enc)
    trees = m.trees()
    assert all(isinstance(t, TreeView) for t in trees)
    rng = np.random.default_rng(0)
    probe = np.vstack([X, rng.uniform(0, 1, size=(300, X.shape[1])),
                       _near_threshold_inputs(trees[0], X, rng)])
    np.testing.assert_allclose(forest_predict_proba(trees, probe), est.predict_proba(probe), atol=1e-12)
    np.testing.assert_allclose(m.tree_predict_proba(probe), est.predict_proba(probe), atol=1e-12)
    np.testing.assert_array_equal(m.predict(probe), est.predict(probe))
    np.testing.assert_allclose(m.predict_proba(data.frame), est.predict_proba(X))
    if len(trees) == 1 and not hasattr(est, "steps"):
        np.testing.assert_array_equal(trees[0].apply(probe), est.apply(probe))
    with pytest.raises(UnsupportedModelError, match="no ReLU-network view"):
        m.network()


def test_tree_view_structure_and_paths(iris):
    data, enc, X = iris
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, data.y)
    (view,) = wrap(est, enc).trees()
    assert view.n_nodes == est.tree_.node_count and view.n_classes == 3
    assert view.depth() == est.get_depth()
    assert len(view.leaves) == est.get_n_leaves()
    np.testing.assert_allclose(view.value.sum(axis=1), 1.0)
    assert np.all(view.feature[view.leaves] == -1) and np.all(np.isnan(view.threshold[view.leaves]))
    np.testing.assert_array_equal(view.predict(X), est.predict(X))
    # each leaf's path conditions hold exactly for the rows that reach it
    leaf_of = view.apply(X)
    for leaf, path in view.paths():
        ok = np.ones(len(X), dtype=bool)
        for f, t, went_left in path:
            ok &= (X[:, f] <= t) if went_left else (X[:, f] > t)
        np.testing.assert_array_equal(ok, leaf_of == leaf)


def test_float32_threshold_reproduces_float32_comparisons():
    rng = np.random.default_rng(0)
    t = np.concatenate([rng.uniform(-2, 2, 200), rng.uniform(0, 1, 200).astype(np.float32),
                        [0.0, -0.0, 1.0, 0.5]])
    adj = float32_threshold(t)
    assert np.all(np.abs(adj - t) <= 1e-7 * np.maximum(1, np.abs(t)))
    for ti, ai in zip(t, adj, strict=True):
        xs = np.array([ai, np.nextafter(ai, np.inf), np.nextafter(ai, -np.inf), ti,
                       np.nextafter(ti, np.inf), np.nextafter(ti, -np.inf)])
        np.testing.assert_array_equal(xs <= ai, xs.astype(np.float32) <= ti)


def test_tree_view_validation():
    with pytest.raises(ValidationError, match="one child"):
        TreeView(np.array([0, -1, -1]), np.array([0.5, np.nan, np.nan]), np.array([1, -1, -1]),
                 np.array([-1, -1, -1]), np.ones((3, 2)) / 2, n_features=1)
    view = TreeView(np.array([0, -1, -1]), np.array([0.5, np.nan, np.nan]), np.array([1, -1, -1]),
                    np.array([2, -1, -1]), np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]), n_features=1)
    np.testing.assert_array_equal(view.predict(np.array([[0.2], [0.5], [0.7]])), [0, 0, 1])
    with pytest.raises(ValidationError, match="shape"):
        view.apply(np.zeros((2, 3)))
    with pytest.raises(ValidationError, match="at least one tree"):
        forest_predict_proba([], np.zeros((1, 1)))


def test_convergence_warning_is_not_an_error():
    assert issubclass(ConvergenceWarning, Warning)
