"""Dataset registry, file loaders (offline copy, cache, download, checksums) and built-ins."""

from __future__ import annotations

import gzip
import hashlib
import urllib.error

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.data import Encoder, FeatureKind
from robustce.data import download as dl
from robustce.data.registry import list_datasets
from robustce.errors import (
    ChecksumError,
    DatasetUnavailableError,
    SchemaError,
    UnknownDatasetError,
    ValidationError,
)

pytestmark = pytest.mark.usefixtures("shared_datasets")

# name -> (rows, raw features, rows of class 1) as documented in ../shared/datasets/README.md
EXPECTED = {
    "adult": (48_832, 13, 11_687),
    "compas": (6_172, 7, 5_028),
    "give_me_some_credit": (115_527, 10, 107_686),
    "heloc": (9_871, 21, 4_735),
    "diabetes": (768, 8, 268),
    "no2": (500, 7, 251),
    "german": (1_000, 20, 700),
    "german_corrected": (1_000, 20, 700),
    "german_raw": (1_000, 20, 700),
    "spambase": (4_601, 57, 1_813),
    "spam": (4_600, 57, 1_812),
    "sba": (2_102, 22, 1_416),
    "taiwan_credit": (30_000, 23, 23_364),
    "taiwan_credit_processed": (30_000, 17, 23_364),
    "student": (649, 29, 100),
    "student_math": (395, 29, 130),
    "rocoursenet_german": (2_000, 9, 1_400),
    "rocoursenet_student": (649, 15, 194),
    "loan": (514_850, 12, None),
}
CARLA_SPLITS = {
    "adult": (36_624, 12_208),
    "compas": (4_629, 1_543),
    "give_me_some_credit": (86_645, 28_882),
    "heloc": (7_403, 2_468),
}


@pytest.fixture
def fetch_log(monkeypatch):
    """Replace the downloader by one that records calls and fails."""
    calls: list[str] = []

    def fetch(url, timeout=60.0):
        calls.append(url)
        raise AssertionError(f"network access attempted: {url}")

    monkeypatch.setattr(dl, "fetch_url", fetch)
    return calls


# ----------------------------------------------------------------------------------------
# The offline copy
# ----------------------------------------------------------------------------------------


def test_registry_lists_every_dataset():
    names = {s.name for s in list_datasets()}
    assert set(EXPECTED) | {"online_news"} <= names
    assert {"synthetic_loan", "moons", "circles", "blobs", "breast_cancer", "iris",
            "wine", "covariate_shift", "label_shift"} <= names
    for s in list_datasets():
        assert s.description
        assert s.builtin == (not s.files)
        for f in s.files:
            assert f in dl.SOURCES, f


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_file_dataset_loads_with_documented_counts(name, fetch_log):
    rows, n_features, positives = EXPECTED[name]
    data = rc.datasets.load(name)
    assert len(data) == rows
    assert len(data.schema) == n_features
    assert data.frame.columns.tolist() == data.schema.names
    assert data.target.index.equals(data.frame.index)
    assert set(np.unique(data.y)) == {0, 1} and len(data.class_names) == 2
    if positives is not None:
        assert int(data.y.sum()) == positives
    assert "class 1" in data.description.lower()
    data.schema.validate(data.frame)
    assert fetch_log == []  # files present: no network


@pytest.mark.parametrize("name", sorted(CARLA_SPLITS))
def test_carla_splits_share_one_schema(name, fetch_log):
    n_train, n_test = CARLA_SPLITS[name]
    train = rc.datasets.load(name, split="train")
    test = rc.datasets.load(name, split="test")
    assert (len(train), len(test)) == (n_train, n_test)
    assert train.schema == test.schema
    enc = Encoder(train.schema).fit(train.frame)
    X = enc.transform(test.frame)  # the test split is within the shared bounds
    assert 0 <= X.min() and X.max() <= 1
    with pytest.raises(ValidationError, match="split must be None, 'train' or 'test'"):
        rc.datasets.load(name, split="validation")


@pytest.mark.parametrize(
    "name", sorted(set(EXPECTED) - {"loan"}) + ["synthetic_loan", "breast_cancer", "wine"]
)
def test_encoder_round_trips_each_dataset(name):
    data = rc.datasets.load(name)
    for ordinal in ("thermometer", "integer"):
        enc = Encoder(data.schema, ordinal_encoding=ordinal).fit(data.frame)
        X = enc.transform(data.frame)
        assert X.min() >= 0 and X.max() <= 1
        np.testing.assert_array_equal(enc.project(X), X)
        pd.testing.assert_frame_equal(enc.inverse_transform(X), data.frame, check_exact=False,
                                      rtol=1e-9)


def test_loan_years_groups_and_paper_subset(fetch_log):
    data = rc.datasets.load("loan", years=range(1994, 2010))
    assert len(data) == 449_152
    assert sorted(data.groups.unique()) == list(range(1994, 2010))
    one = rc.datasets.load("loan", years=2007)
    assert len(one) == int((data.groups == 2007).sum())
    assert one.meta["files"] == ["rocoursenet/loan/year=2007.csv.gz"]
    assert one.schema["State"].immutable
    with pytest.raises(ValidationError, match="years must be within 1988-2012"):
        rc.datasets.load("loan", years=[1980])
    assert fetch_log == []


@pytest.mark.slow
def test_loan_full_encoding_round_trip():
    data = rc.datasets.load("loan")
    enc = Encoder(data.schema).fit(data.frame)
    X = enc.transform(data.frame)
    pd.testing.assert_frame_equal(enc.inverse_transform(X), data.frame, check_exact=False)


def test_groups_of_shift_datasets():
    assert rc.datasets.load("sba").groups.value_counts().to_dict() == {"pre": 1159, "post": 943}
    rg = rc.datasets.load("rocoursenet_german")
    assert rg.groups.value_counts().to_dict() == {"original": 1000, "corrected": 1000}
    parts = rg.by_group()
    assert set(parts) == {"original", "corrected"} and len(parts["corrected"]) == 1000
    rs = rc.datasets.load("rocoursenet_student")
    assert rs.groups.value_counts().to_dict() == {"GP": 423, "MS": 226}
    assert int(rs.by_group()["GP"].y.sum()) == 146
    st = rc.datasets.load("student")
    assert st.groups.value_counts().to_dict() == {"GP": 423, "MS": 226}
    assert "school" not in st.frame.columns and "G3" not in st.frame.columns


def test_schemas_follow_the_catalogues():
    adult = rc.datasets.load("adult")
    assert set(adult.schema.immutable) == {"age", "sex", "race", "marital-status",
                                           "native-country"}
    assert adult.schema["workclass"].kind is FeatureKind.BINARY
    assert adult.class_names == ("<=50K", ">50K")
    german = rc.datasets.load("german")
    assert german.schema["purpose"].kind is FeatureKind.CATEGORICAL
    assert german.schema["employment_duration"].kind is FeatureKind.ORDINAL
    assert set(german.schema.immutable) == {"age", "personal_status_sex", "foreign_worker"}
    taiwan = rc.datasets.load("taiwan_credit")
    assert "ID" not in taiwan.frame.columns and taiwan.class_names[1] == "no_default"
    assert taiwan.schema["PAY_0"].kind is FeatureKind.ORDINAL
    sba = rc.datasets.load("sba")
    for leak in ("MIS_Status", "Default", "ChgOffDate", "ChgOffPrinGr", "LoanNr_ChkDgt"):
        assert leak not in sba.frame.columns
    assert "ChgOffDate" in rc.datasets.load("sba", drop_leaks=False).frame.columns
    assert rc.datasets.load("no2").class_names == ("N", "P")
    diabetes = rc.datasets.load("diabetes")
    assert diabetes.class_names[1] == "diabetic" and "Age" in diabetes.schema.immutable


def test_checksums_json_matches_the_offline_copy(shared_datasets):
    recorded = dl.checksums()
    assert dl.compute_checksums(shared_datasets) == {
        k: v for k, v in recorded.items() if (shared_datasets / k).is_file()
    }
    assert len(recorded) == 53
    for rel, entry in recorded.items():
        assert len(entry["sha256"]) == 64
        assert rel in dl.SOURCES
        assert all(u.startswith("https://") for u in dl.SOURCES[rel].urls)


# ----------------------------------------------------------------------------------------
# Cache, download and checksum
# ----------------------------------------------------------------------------------------


def _source_bytes(shared, relpath: str) -> bytes:
    data = (shared / relpath).read_bytes()
    return gzip.decompress(data) if relpath.endswith(".gz") else data


def test_download_fills_cache_and_verifies(tmp_path, monkeypatch, shared_datasets):
    calls: list[str] = []
    by_url = {src.urls[0]: rel for rel, src in dl.SOURCES.items()}

    def fetch(url, timeout=60.0):
        calls.append(url)
        return _source_bytes(shared_datasets, by_url[url])

    monkeypatch.setattr(dl, "fetch_url", fetch)
    data = rc.datasets.load("diabetes", data_home=tmp_path)
    assert len(data) == 768
    cached = tmp_path / "diabetes" / "diabetes.csv"
    assert cached.read_bytes() == (shared_datasets / "diabetes/diabetes.csv").read_bytes()
    assert calls == [dl.SOURCES["diabetes/diabetes.csv"].urls[0]]
    rc.datasets.load("diabetes", data_home=tmp_path)
    assert len(calls) == 1  # second load is served from the cache

    # a gzip-stored file: the source is uncompressed, we compress and verify its content
    loan = rc.datasets.load("loan", data_home=tmp_path, years=[1990])
    stored = tmp_path / "rocoursenet" / "loan" / "year=1990.csv.gz"
    assert gzip.decompress(stored.read_bytes()) == _source_bytes(
        shared_datasets, "rocoursenet/loan/year=1990.csv.gz")
    dl.verify_file(stored, "rocoursenet/loan/year=1990.csv.gz")
    assert len(loan) == len(rc.datasets.load("loan", years=[1990]))
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


def test_env_cache_is_used_when_no_data_home(tmp_path, monkeypatch, shared_datasets):
    monkeypatch.delenv("ROBUSTCE_DATA", raising=False)
    monkeypatch.setenv("ROBUSTCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(dl, "fetch_url",
                        lambda url, timeout=60.0: _source_bytes(shared_datasets, "no2/no2.csv"))
    assert len(rc.datasets.load("no2")) == 500
    assert (tmp_path / "cache" / "no2" / "no2.csv").is_file()
    assert dl.search_dirs() == ([tmp_path / "cache"], tmp_path / "cache")


def test_wrong_bytes_raise_checksum_error_and_leave_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(dl, "fetch_url", lambda url, timeout=60.0: b"not,the,data\n1,2,3\n")
    with pytest.raises(ChecksumError, match="does not match its recorded checksum") as info:
        rc.datasets.load("diabetes", data_home=tmp_path)
    assert "diabetes/diabetes.csv" in str(info.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_corrupted_local_file_is_refused_without_network(tmp_path, fetch_log,
                                                         shared_datasets):
    target = tmp_path / "no2" / "no2.csv"
    target.parent.mkdir(parents=True)
    target.write_bytes((shared_datasets / "no2/no2.csv").read_bytes() + b"\n1,2,3,4,5,6,7,P")
    with pytest.raises(ChecksumError, match="does not match the recorded SHA-256") as info:
        rc.datasets.load("no2", data_home=tmp_path)
    assert str(target) in str(info.value) and "delete it" in str(info.value)
    assert fetch_log == []


def test_offline_download_error_explains_where_to_put_the_file(tmp_path, monkeypatch):
    def offline(url, timeout=60.0):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(dl, "fetch_url", offline)
    with pytest.raises(DatasetUnavailableError) as info:
        rc.datasets.load("heloc", data_home=tmp_path)
    msg = str(info.value)
    assert "could not be downloaded (you may be offline)" in msg
    assert "raw.githubusercontent.com/carla-recourse/cf-data/2d56677" in msg
    assert str(tmp_path / "carla" / "heloc.csv") in msg
    assert not isinstance(info.value, ChecksumError)


def test_online_news_offline_message(monkeypatch):
    """Not in the offline copy: the loader tries UCI and explains what to do."""
    with pytest.raises(DatasetUnavailableError) as info:
        rc.datasets.load("online_news")  # conftest: the network is off
    msg = str(info.value)
    assert "'online_news/OnlineNewsPopularity.csv' is not at" in msg
    assert "you may be offline" in msg
    assert "archive.ics.uci.edu" in msg
    assert "extract OnlineNewsPopularity/OnlineNewsPopularity.csv" in msg


def test_online_news_from_a_local_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame({
        "url": [f"http://mashable.com/{i}" for i in range(n)],
        " timedelta": rng.integers(8, 700, n).astype(float),
        " n_tokens_title": rng.integers(3, 20, n).astype(float),
        " global_subjectivity": rng.uniform(0, 1, n),
        " data_channel_is_bus": rng.integers(0, 2, n).astype(float),
        " shares": np.r_[np.full(20, 800), np.full(20, 5000)],
    })
    path = tmp_path / "online_news" / "OnlineNewsPopularity.csv"
    path.parent.mkdir()
    frame.to_csv(path, index=False)
    data = rc.datasets.load("online_news", data_home=tmp_path)
    assert data.frame.columns.tolist() == ["n_tokens_title", "global_subjectivity",
                                           "data_channel_is_bus"]
    assert data.y.tolist() == [0] * 20 + [1] * 20
    assert data.schema["data_channel_is_bus"].kind is FeatureKind.BINARY


def test_url_reader_without_network(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"hello")
    assert dl._read_url(f.as_uri(), timeout=5) == b"hello"


def test_sha256_file(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"abc" * 1000)
    assert dl.sha256_file(f) == hashlib.sha256(b"abc" * 1000).hexdigest()


# ----------------------------------------------------------------------------------------
# Registry errors
# ----------------------------------------------------------------------------------------


def test_unknown_dataset_name():
    with pytest.raises(UnknownDatasetError, match="unknown dataset 'adlt'; available: adult,"):
        rc.datasets.load("adlt")


def test_unknown_parameter_is_a_validation_error():
    with pytest.raises(ValidationError, match=r"dataset 'adult' does not take \['years'\]"):
        rc.datasets.load("adult", years=[2000])
    with pytest.raises(ValidationError, match=r"'moons' does not take \['colour'\]"):
        rc.datasets.load("moons", colour="red")


# ----------------------------------------------------------------------------------------
# Built-in datasets
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["moons", "circles", "blobs"])
def test_toy_sets(name):
    a = rc.datasets.load(name, n_samples=200, noise=0.1, random_state=3)
    b = rc.datasets.load(name, n_samples=200, noise=0.1, random_state=3)
    c = rc.datasets.load(name, n_samples=200, noise=0.1, random_state=4)
    assert a.frame.shape == (200, 2) and a.frame.columns.tolist() == ["x1", "x2"]
    assert all(f.kind is FeatureKind.CONTINUOUS for f in a.schema)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame.equals(c.frame)
    assert a.class_names == (0, 1) and np.bincount(a.y).tolist() == [100, 100]
    g = rc.datasets.load(name, random_state=np.random.default_rng(0))
    assert len(g) == 500
    enc = Encoder(a.schema).fit(a.frame)
    X = enc.transform(a.frame)
    assert X.min() > 0 and X.max() < 1  # padded bounds leave room around the data
    with pytest.raises(ValidationError, match="n_samples must be at least"):
        rc.datasets.load(name, n_samples=1)
    with pytest.raises(ValidationError, match="noise must be"):
        rc.datasets.load(name, noise=-1)


def test_blobs_multiclass():
    data = rc.datasets.load("blobs", centers=3, n_samples=300)
    assert data.class_names == (0, 1, 2) and np.bincount(data.y).tolist() == [100, 100, 100]


def test_covariate_shift_moves_p_x_and_keeps_p_y_given_x():
    data = rc.datasets.load("covariate_shift", n_samples=4000, random_state=1)
    parts = data.by_group()
    assert sorted(parts) == ["D1", "D2"] and all(len(p) == 4000 for p in parts.values())
    # p(x): the appendix's means and standard deviations per part (4000 draws: se ≤ 0.008)
    for part, (mu, sd) in {"D1": ((0.5, 0.0), (0.5, 0.3)), "D2": ((0.0, 0.5), (0.3, 0.5))}.items():
        X = parts[part].frame.to_numpy()
        np.testing.assert_allclose(X.mean(axis=0), mu, atol=0.04)
        np.testing.assert_allclose(X.std(axis=0), sd, atol=0.03)
    # p(y | x) is one rule in both parts: y = 1[x1³ − x2 + N(−0.1, 0.1) > 0]; rows farther than
    # 4 noise sds from the boundary always follow it
    for p in parts.values():
        x1, x2 = p.frame["x1"].to_numpy(), p.frame["x2"].to_numpy()
        s = x1 ** 3 - x2 - 0.1
        far = np.abs(s) > 0.4
        assert far.mean() > 0.3
        assert np.array_equal(p.y[far], (s[far] > 0).astype(int))
    assert not parts["D1"].y.mean() == pytest.approx(parts["D2"].y.mean(), abs=0.2)


def test_label_shift_moves_p_y_and_keeps_p_x_given_y():
    from scipy.stats import ks_2samp

    data = rc.datasets.load("label_shift", n_samples=4000, p=(0.6, 0.3), random_state=2)
    parts = data.by_group()
    assert parts["D1"].y.mean() == pytest.approx(0.6, abs=0.03)  # se 0.008
    assert parts["D2"].y.mean() == pytest.approx(0.3, abs=0.03)
    for c in (0, 1):  # p(x | y) is the same distribution in both parts
        for col in ("x1", "x2"):
            a = parts["D1"].frame[col].to_numpy()[parts["D1"].y == c]
            b = parts["D2"].frame[col].to_numpy()[parts["D2"].y == c]
            assert ks_2samp(a, b).pvalue > 1e-3, (c, col)
    # and it differs between the classes (z ≈ ±1 gives E[x2 | y=0] ≈ −1.6, E[x2 | y=1] ≈ −0.6)
    x2 = parts["D1"].frame["x2"].to_numpy()
    assert x2[parts["D1"].y == 1].mean() - x2[parts["D1"].y == 0].mean() > 0.8


@pytest.mark.parametrize("name", ["covariate_shift", "label_shift"])
def test_simulated_shifts_are_seeded_and_checked(name):
    a, b = rc.datasets.load(name, random_state=5), rc.datasets.load(name, random_state=5)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame.equals(rc.datasets.load(name, random_state=6).frame)
    assert len(a) == 2000 and a.groups.value_counts().to_dict() == {"D1": 1000, "D2": 1000}
    X = Encoder(a.schema).fit(a.frame).transform(a.frame)
    assert X.min() > 0 and X.max() < 1
    with pytest.raises(ValidationError, match="n_samples must be at least"):
        rc.datasets.load(name, n_samples=2)
    if name == "label_shift":
        with pytest.raises(ValidationError, match="p must be two probabilities"):
            rc.datasets.load(name, p=(0.6, 1.2))


@pytest.mark.parametrize(
    ("name", "rows", "features", "classes"),
    [("breast_cancer", 569, 30, ("malignant", "benign")),
     ("iris", 150, 4, ("setosa", "versicolor", "virginica")),
     ("wine", 178, 13, ("class_0", "class_1", "class_2"))],
)
def test_sklearn_tables(name, rows, features, classes):
    data = rc.datasets.load(name)
    assert data.frame.shape == (rows, features)
    assert data.class_names == classes
    assert np.bincount(data.y).sum() == rows
    data.schema.validate(data.frame)


def test_subset_rejects_non_integer_positions():
    data = rc.datasets.load("synthetic_loan", n_samples=50)
    with pytest.raises(ValidationError, match="boolean mask, integer positions"):
        data.subset(["a", "b"])
    assert len(data.subset(np.array([0, 2, 4]))) == 3
    assert len(data.subset(pd.Index(data.frame.index[:5]))) == 5


def test_with_kinds_retypes_features_and_keeps_actionability():
    data = rc.datasets.load("synthetic_loan", n_samples=300)
    out = data.with_kinds({"age": "categorical", "has_guarantor": "integer",
                           "years_employed": "continuous"})
    age = out.schema["age"]
    assert age.kind is FeatureKind.CATEGORICAL and age.actionability == "immutable"
    assert list(age.categories) == sorted(data.frame["age"].unique().tolist())
    g = out.schema["has_guarantor"]
    assert g.kind is FeatureKind.INTEGER and (g.lower, g.upper) == (0.0, 1.0)
    years = out.schema["years_employed"]
    assert years.kind is FeatureKind.CONTINUOUS and (years.lower, years.upper) == (0, 57)
    assert years.actionability == "increase"
    width = Encoder(data.schema).fit(data.frame).transform(data.frame).shape[1]
    enc = Encoder(out.schema).fit(out.frame)  # age: one one-hot column per observed value
    assert enc.transform(out.frame).shape[1] == width - 1 + len(age.categories)
    assert data.schema["age"].kind is FeatureKind.INTEGER  # the original is untouched
    with pytest.raises(ValidationError, match=r"no feature named \['salary'\]"):
        data.with_kinds({"salary": "integer"})
    with pytest.raises(ValidationError, match="non-numeric levels"):
        data.with_kinds({"education": "integer"})
    with pytest.raises(ValidationError, match="expected 'categorical', 'integer' or"):
        data.with_kinds({"income": "ordinal"})
    with pytest.raises(SchemaError, match="'years_employed' is categorical .* increase-only"):
        data.with_kinds({"years_employed": "categorical"})  # an unordered kind cannot increase
    with pytest.raises(ValidationError, match="'debt' is integer but has fractional values"):
        data.with_kinds({"debt": "integer"})  # the frame is checked against the new schema



@pytest.mark.parametrize(("name", "params"), [
    ("loan", {"years": [2007, 1990]}), ("loan", {"years": 1995}),
    ("compas", {}), ("compas", {"split": "train"}), ("diabetes", {}),
])
def test_files_for_names_the_files_a_loader_reads(name, params):
    from robustce.data.loaders import files_for

    files = files_for(name, params)
    assert list(files) == list(rc.datasets.load(name, **params).meta["files"])


def test_files_for_rejects_what_the_loader_rejects():
    from robustce.data.loaders import files_for

    with pytest.raises(ValidationError, match="years must be within"):
        files_for("loan", {"years": [1980]})
    with pytest.raises(ValidationError, match="split must be"):
        files_for("compas", {"split": "all"})
