"""The favourable class travels with the model (issue 46, point 1): a model trained or imported
on a dataset takes the dataset's, ``model.json`` records it by label, loading restores it, and
a model saved before the key existed still loads (with none)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError
from robustce.models import MLP, ModelFileError, NetworkModel, load


def _decisions(labels: tuple[str, str] = ("approved", "denied"), n: int = 240) -> pd.DataFrame:
    """Two numeric features; ``labels[0]`` where their sum is high."""
    rng = np.random.default_rng(0)
    income, debt = rng.uniform(0, 10, n).round(2), rng.uniform(0, 10, n).round(2)
    return pd.DataFrame({"income": income, "debt": debt,
                         "decision": np.where(income - debt > 0, labels[0], labels[1])})


@pytest.fixture(scope="module")
def approvals():
    """Labels sorted alphabetically: ``approved`` is class 0, and it is the favourable one."""
    return rc.data.from_frame(_decisions(), "decision")


@pytest.fixture(scope="module")
def mlp(approvals):
    return MLP((6,), epochs=3, random_state=0).fit(approvals)


def test_mlp_takes_the_datasets_favourable_class_and_saves_it_by_label(approvals, mlp, tmp_path):
    assert approvals.class_names == ("approved", "denied") and approvals.favourable == 0
    assert mlp.favourable == 0 and mlp.favourable_label == "approved"
    path = mlp.save(tmp_path / "m")
    assert json.loads((path / "model.json").read_text())["favourable"] == "approved"
    loaded = load(path)
    assert loaded.favourable == 0 and loaded.favourable_label == "approved"


def test_set_favourable_by_label_or_index_round_trips(mlp, tmp_path):
    other = load(mlp.save(tmp_path / "m"))
    assert other.set_favourable("denied") is other and other.favourable == 1
    assert load(other.save(tmp_path / "m2")).favourable_label == "denied"
    assert other.set_favourable(0).favourable_label == "approved"
    with pytest.raises(ValidationError, match="unknown class 'maybe'.*0 = approved, 1 = denied"):
        other.set_favourable("maybe")
    assert load(other.set_favourable(None).save(tmp_path / "m3")).favourable is None


def test_a_model_saved_before_the_key_existed_loads_without_one(mlp, approvals, tmp_path):
    path = mlp.save(tmp_path / "old")
    meta_file = path / "model.json"
    meta = json.loads(meta_file.read_text())
    del meta["favourable"]  # what robustce wrote before the favourable class was saved
    meta_file.write_text(json.dumps(meta))
    old = load(path)
    assert old.favourable is None and old.favourable_label is None
    np.testing.assert_array_equal(old.predict(approvals.frame), mlp.predict(approvals.frame))


def test_a_favourable_label_that_is_no_class_is_refused(mlp, tmp_path):
    path = mlp.save(tmp_path / "bad")
    meta = json.loads((path / "model.json").read_text())
    meta["favourable"] = "granted"
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFileError, match="favourable class 'granted' is not one of its classes"):
        load(path)


def test_imported_models_take_the_datasets_favourable_class_and_their_network_saves_it(
        approvals, tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(approvals.frame, approvals.y)
    model = rc.models.from_sklearn(pipe, approvals)
    assert model.favourable_label == "approved"
    assert rc.models.from_sklearn(pipe, approvals, favourable="denied").favourable == 1
    assert rc.models.from_sklearn(pipe, approvals.frame).favourable is None  # a frame says none
    view = NetworkModel(model.network(), model.encoder, model.class_names, model.favourable)
    assert load(view.save(tmp_path / "net")).favourable_label == "approved"


@pytest.mark.filterwarnings("ignore::robustce.errors.ConstantModelWarning")  # untrained weights
def test_torch_import_takes_the_datasets_favourable_class(approvals):
    import torch

    enc = rc.data.Encoder(approvals.schema).fit(approvals.frame)
    module = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    assert rc.models.from_torch(module, enc, approvals).favourable_label == "approved"
    assert rc.models.from_torch(module, enc).favourable is None
