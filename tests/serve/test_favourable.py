"""Recourse toward the model's own favourable class (issue 46, point 1).

A model whose favourable label is class 0 (``approved`` / ``denied``, numbered alphabetically)
used to be served with the last class as its target: the page offered applicants the model
*approves* as rejected, and explained them toward ``denied``. Here real servers serve such a
model: ``/v1/models`` reports the favourable class by label, a request without
``target_class`` is explained toward it, and the applicants offered are those the model denies.
A model saved without a favourable class is not served unless ``--favourable`` names one.
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.errors import ValidationError

from .conftest import launch, wait_ready

TARGET = "_target"


def _decisions(labels: tuple[str, str], n: int = 300) -> pd.DataFrame:
    """Two numeric features; ``labels[0]`` where income exceeds debt."""
    rng = np.random.default_rng(0)
    income, debt = rng.uniform(0, 10, n).round(2), rng.uniform(0, 10, n).round(2)
    return pd.DataFrame({"income": income, "debt": debt,
                         "decision": np.where(income - debt > 0, labels[0], labels[1])})


def _served_dir(root, labels: tuple[str, str]):
    """A saved model trained on ``labels`` plus its ``train.csv``: a served-model directory."""
    data = rc.data.from_frame(_decisions(labels), "decision")
    model = rc.models.MLP((8,), epochs=80, lr=5e-3, random_state=0).fit(data)
    assert set(model.predict(data.frame)) == {0, 1}  # the model tells the classes apart
    model.save(root)
    data.frame.assign(**{TARGET: data.y}).to_csv(root / "train.csv", index=False)
    return root


@pytest.fixture(scope="module")
def approvals_dir(tmp_path_factory):
    """Favourable ``approved`` = class 0, saved with the model (from the labels' words)."""
    root = _served_dir(tmp_path_factory.mktemp("fav") / "approvals", ("approved", "denied"))
    assert rc.models.load(root).favourable_label == "approved"
    return root


@pytest.fixture(scope="module")
def unlabelled_dir(tmp_path_factory):
    """Labels ``B`` (good) / ``A`` that say nothing: saved without a favourable class."""
    root = _served_dir(tmp_path_factory.mktemp("fav") / "unlabelled", ("B", "A"))
    assert rc.models.load(root).favourable is None
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory, approvals_dir, unlabelled_dir):
    """``loan``: the approvals model as saved; ``other``: the unlabelled one, given its
    favourable class by ``--favourable other=B``."""
    srv = launch(tmp_path_factory.mktemp("fav-server"), approvals_dir, "fav", "--workers", "1",
                 "--model", f"other={unlabelled_dir}", "--favourable", "other=B")
    try:
        wait_ready(srv)
        yield srv
    finally:
        srv.stop()


def _frame(model, records):
    return pd.DataFrame.from_records(records)[model.encoder.schema.names]


def test_models_report_the_favourable_class_by_label(server):
    with server.client() as c:
        models = {m["id"]: m for m in c.get("/v1/models").json()["models"]}
        loan = c.get("/v1/models/loan").json()
    assert loan == models["loan"]
    assert loan["class_names"] == ["approved", "denied"]
    assert loan["favourable_class"] == "approved" and loan["default_target_class"] == 0


def test_serve_favourable_sets_the_class_of_a_model_saved_without_one(server):
    with server.client() as c:
        other = c.get("/v1/models/other").json()
    assert other["class_names"] == ["A", "B"]
    assert other["favourable_class"] == "B" and other["default_target_class"] == 1


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_served_hash_tells_the_favourable_class_apart(approvals_dir):
    """A model served with the favourable class saved in it keeps the SHA-256 of its
    ``model.json`` as its hash; served toward another class (``--favourable``), it gets
    another hash: /v1/models, audit records and jobs never mix the two servings."""
    from robustce.serve.registry import load_served_model, model_spec

    spec = model_spec(approvals_dir, "loan")
    as_saved = load_served_model(spec, with_methods=False)
    named = load_served_model(replace(spec, favourable="approved"), with_methods=False)
    other = load_served_model(replace(spec, favourable="denied"), with_methods=False)
    assert as_saved.hash == named.hash == _sha256(approvals_dir / "model.json")
    assert other.favourable == 1 and other.hash != as_saved.hash and len(other.hash) == 64


def test_models_report_a_hash_that_includes_a_served_favourable_class(server, approvals_dir,
                                                                      unlabelled_dir):
    """Over HTTP: ``loan`` (its saved class) reports its ``model.json``'s SHA-256; ``other``
    (saved without one, served with ``--favourable other=B``) does not."""
    with server.client() as c:
        models = {m["id"]: m for m in c.get("/v1/models").json()["models"]}
    assert models["loan"]["hash"] == _sha256(approvals_dir / "model.json")
    assert models["other"]["hash"] != _sha256(unlabelled_dir / "model.json")
    assert len(models["other"]["hash"]) == 64


def test_applicants_offered_are_those_the_model_denies(server, approvals_dir):
    model = rc.models.load(approvals_dir)
    with server.client() as c:
        rows = [a["features"] for a in c.get("/v1/models/loan/applicants").json()["applicants"]]
    assert len(rows) >= 10
    assert (model.predict(_frame(model, rows)) == 1).all()  # all predicted `denied`


def test_explain_and_jobs_without_a_target_aim_at_the_favourable_class(server, approvals_dir):
    model = rc.models.load(approvals_dir)
    with server.client() as c:
        rows = c.get("/v1/models/loan/applicants").json()["applicants"][:5]
        items = [{"id": f"a{i}", "features": r["features"]} for i, r in enumerate(rows)]
        body = {"items": items, "method": "nearest_neighbour"}
        r = c.post("/v1/models/loan/explain", json=body)
        assert r.status_code == 200, r.text
        job = c.post("/v1/models/loan/jobs", json=body).json()
        end = time.monotonic() + 60
        while job["status"] in ("queued", "running") and time.monotonic() < end:
            time.sleep(0.2)
            job = c.get(f"/v1/jobs/{job['job_id']}").json()
    out = r.json()
    assert out["target_class"] == 0
    assert [it["status"] for it in out["items"]] == ["found"] * len(items)
    cfs = [cf for it in out["items"] for cf in it["counterfactuals"]]
    assert (model.predict(_frame(model, cfs)) == 0).all()  # re-checked here: `approved`
    assert job["status"] == "done", job
    assert job["result"]["target_class"] == 0
    job_cfs = [cf for it in job["result"]["items"] for cf in it["counterfactuals"]]
    assert job_cfs and (model.predict(_frame(model, job_cfs)) == 0).all()


def _refused(tmp_path, model_dir, *extra) -> str:
    """Start ``robustce serve`` expecting it to stop by itself with exit 2; its output."""
    srv = launch(tmp_path, model_dir, "refused", *extra)
    try:
        code = srv.proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        srv.stop()
        raise
    log = srv.log.read_text()
    assert code == 2, log
    return log


def test_a_model_without_a_favourable_class_is_not_served(tmp_path, unlabelled_dir):
    log = _refused(tmp_path, unlabelled_dir)
    lines = [line for line in log.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in log, log
    assert lines[0].startswith("robustce: error: model 'loan'")
    assert "declares no favourable class (its classes: 0 = A, 1 = B)" in lines[0]
    assert "--favourable loan=LABEL" in lines[0]


def test_an_unknown_favourable_label_is_refused(tmp_path, approvals_dir):
    log = _refused(tmp_path, approvals_dir, "--favourable", "granted")
    assert "--favourable for model 'loan': unknown class 'granted'" in log
    assert "Traceback" not in log


def test_favourable_flags_by_model_id_or_for_every_model():
    from robustce.cli.serve import _favourables

    ids = ["loan", "other"]
    assert _favourables([], ids) == {}
    assert _favourables(["approved"], ids) == {"loan": "approved", "other": "approved"}
    assert _favourables(["approved", "other=B"], ids) == {"loan": "approved", "other": "B"}
    assert _favourables(["a=b"], ids) == {"loan": "a=b", "other": "a=b"}  # no model `a`: a label
    with pytest.raises(ValidationError, match="two labels for every model"):
        _favourables(["approved", "B"], ids)
    with pytest.raises(ValidationError, match="model 'other' is given twice"):
        _favourables(["other=A", "other=B"], ids)


def test_the_demo_saves_its_favourable_class_and_a_stale_demo_is_rebuilt(tmp_path):
    """``robustce serve --demo-dir`` reuses the directory it wrote: one written before the
    favourable class was saved would no longer start, so it is rebuilt."""
    import json

    from robustce.serve.registry import build_demo_model

    root = build_demo_model(tmp_path / "demo", n_applicants=5, n_family=1)
    meta_file = root / "model" / "model.json"
    meta = json.loads(meta_file.read_text())
    assert meta["class_names"] == ["rejected", "approved"] and meta["favourable"] == "approved"
    del meta["favourable"]  # a demo directory of an earlier version
    meta_file.write_text(json.dumps(meta))
    build_demo_model(root, n_applicants=5, n_family=1)
    assert json.loads(meta_file.read_text())["favourable"] == "approved"
