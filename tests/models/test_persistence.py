"""save/load: a directory with model.json + weights.pt, no pickle, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import robustce as rc
from robustce.errors import RobustCEError, UnsupportedModelError, ValidationError
from robustce.models import MLP, ModelFileError, load
from robustce.models.persistence import FORMAT_VERSION


@pytest.fixture(scope="module")
def data():
    return rc.datasets.load("synthetic_loan", n_samples=300, random_state=1)


@pytest.fixture(scope="module")
def model(data):
    return MLP(hidden_layers=(6, 3), epochs=2, batch_size=32, random_state=0).fit(data)


def test_round_trip_keeps_weights_predictions_and_metadata(model, data, tmp_path):
    path = model.save(tmp_path / "m")
    assert sorted(p.name for p in path.iterdir()) == ["model.json", "weights.pt"]
    meta = json.loads((path / "model.json").read_text())
    assert meta["class"] == "MLP" and meta["format_version"] == FORMAT_VERSION
    assert meta["params"]["hidden_layers"] == [6, 3]
    assert meta["class_names"] == list(data.class_names)
    assert meta["layer_sizes"] == model.network().layer_sizes
    # the weights are a plain state dict that weights_only loading accepts
    state = torch.load(path / "weights.pt", weights_only=True)
    assert set(state) == set(model.torch_module().state_dict())

    loaded = load(path)
    assert isinstance(loaded, MLP)
    np.testing.assert_array_equal(loaded.network().flat(), model.network().flat())
    np.testing.assert_array_equal(loaded.predict(data.frame), model.predict(data.frame))
    np.testing.assert_array_equal(loaded.predict_proba(data.frame), model.predict_proba(data.frame))
    assert loaded.class_names == model.class_names
    assert loaded.encoder.columns_ == model.encoder.columns_
    assert loaded.get_params() == model.get_params()
    # decoded rows keep their dtypes
    X = loaded.encoder.transform(data.frame.iloc[:5])
    back = loaded.encoder.inverse_transform(X)
    assert list(back.dtypes) == list(data.frame.dtypes)
    # the loaded model trains on
    loaded.fit_more(data, epochs=1, random_state=0)


def test_multiclass_and_string_class_names_round_trip(tmp_path):
    data = rc.datasets.load("iris")
    m = MLP(hidden_layers=(4,), epochs=1, random_state=0).fit(data)
    loaded = load(m.save(tmp_path / "iris"))
    assert loaded.class_names == m.class_names and len(loaded.class_names) == 3
    np.testing.assert_array_equal(loaded.logits(data.frame), m.logits(data.frame))


def test_save_replaces_a_saved_model_atomically(model, data, tmp_path):
    path = tmp_path / "m"
    model.save(path)
    other = MLP(hidden_layers=(6, 3), epochs=1, random_state=9).fit(data)
    other.save(path)
    np.testing.assert_array_equal(load(path).network().flat(), other.network().flat())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temporary leftovers
    with pytest.raises(ValidationError, match="overwrite"):
        model.save(path, overwrite=False)


def test_a_failed_save_leaves_the_previous_model_intact(model, data, tmp_path, monkeypatch):
    path = tmp_path / "m"
    model.save(path)

    def broken_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    other = MLP(hidden_layers=(6, 3), epochs=1, random_state=9).fit(data)
    with pytest.raises(OSError, match="disk full"):
        other.save(path)
    monkeypatch.undo()
    np.testing.assert_array_equal(load(path).network().flat(), model.network().flat())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_save_refuses_to_clobber_other_directories(model, tmp_path):
    target = tmp_path / "notes"
    target.mkdir()
    (target / "important.txt").write_text("keep me")
    with pytest.raises(ValidationError, match="not a saved robustce model"):
        model.save(target)
    assert (target / "important.txt").read_text() == "keep me"
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(ValidationError, match="not a saved robustce model"):
        model.save(f)


def test_missing_files_give_clear_errors(model, tmp_path):
    with pytest.raises(ModelFileError, match="no saved model"):
        load(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFileError, match="model.json"):
        load(tmp_path / "empty")
    path = model.save(tmp_path / "m")
    (path / "weights.pt").unlink()
    with pytest.raises(ModelFileError, match="no weights file"):
        load(path)
    f = tmp_path / "plain.txt"
    f.write_text("x")
    with pytest.raises(ModelFileError, match="not a directory"):
        load(f)
    assert issubclass(ModelFileError, RobustCEError)


def test_model_file_error_lives_in_errors():
    import robustce.errors
    import robustce.models.persistence

    assert robustce.errors.ModelFileError is ModelFileError
    assert robustce.models.persistence.ModelFileError is ModelFileError


@pytest.mark.parametrize("edit, message", [
    (lambda meta: "{not json", "not valid JSON"),
    (lambda meta: json.dumps({**meta, "format": "other"}), "not a robustce model"),
    (lambda meta: json.dumps({**meta, "format_version": FORMAT_VERSION + 1}), "format_version"),
    (lambda meta: json.dumps({k: v for k, v in meta.items() if k != "encoder"}), "lacks the keys"),
    (lambda meta: json.dumps({**meta, "class": "Forest"}), "unknown model class"),
    (lambda meta: json.dumps({**meta, "encoder": {"schema": {}}}), "encoder is invalid"),
    (lambda meta: json.dumps({**meta, "params": {**meta["params"], "hidden_layers": [5, 3]}}),
     "do not fit"),
    (lambda meta: json.dumps({**meta, "layer_sizes": [1, 2, 3]}), "architecture"),
])
def test_corrupt_descriptions_give_clear_errors(model, tmp_path, edit, message):
    path = model.save(tmp_path / "m")
    meta = json.loads((path / "model.json").read_text())
    (path / "model.json").write_text(edit(meta))
    with pytest.raises(ModelFileError, match=message):
        load(path)


def test_corrupt_or_pickled_weights_are_rejected(model, tmp_path):
    path = model.save(tmp_path / "m")
    weights = path / "weights.pt"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="checksum"):
        load(path)

    # a pickle payload with a matching checksum is still refused by weights_only loading
    class Evil:
        def __reduce__(self):
            return (print, ("executed!",))

    path = model.save(tmp_path / "m2")
    torch.save({"x": Evil()}, path / "weights.pt")
    from robustce.models.persistence import _sha256

    meta = json.loads((path / "model.json").read_text())
    meta["weights_sha256"] = _sha256(path / "weights.pt")
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFileError, match="cannot be read"):
        load(path)


def test_unfitted_and_wrapped_models_cannot_be_saved(data, tmp_path):
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(rc.errors.NotFittedError):
        MLP().save(tmp_path / "x")
    enc = rc.data.Encoder(data.schema).fit(data.frame)
    lr = LogisticRegression().fit(enc.transform(data.frame), data.y)
    with pytest.raises(UnsupportedModelError, match="skops"):
        rc.models.wrap(lr, enc).save(tmp_path / "lr")
    assert not (tmp_path / "lr").exists()


def test_saveable_classes_register_themselves():
    from robustce.models.persistence import _registry, register_model

    assert _registry()["MLP"] is MLP  # registered by its own module, not imported here
    with pytest.raises(UnsupportedModelError, match="_state_dict"):
        register_model(type("NoState", (), {}))
