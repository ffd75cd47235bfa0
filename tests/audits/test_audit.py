"""Portfolio audit: group gaps by hand, global actions checked by applying them, Dask equals
serial row for row, kill-and-resume gives the same report, bad input."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.audits import GroupAccumulator, apply_action, audit
from robustce.audits.global_actions import Action, frame_from_columns
from robustce.audits.partitions import PartitionStore
from robustce.errors import ProtectedFeatureError, SchedulerUnavailableError, ValidationError


@pytest.fixture(scope="module")
def loan():
    data = rc.datasets.load("synthetic_loan")
    train, test = data.split(test_size=0.3, random_state=0)
    model = rc.models.MLP((10,), epochs=40, random_state=0).fit(train)
    return train, test, model


def _run(loan, tmp, **kw):
    train, test, model = loan
    kw.setdefault("partition_rows", 150)
    kw.setdefault("n_boot", 40)
    # age is banded without being listed in groups: it is a group all the same
    return audit(model, test.frame, train=train, groups=["housing"],
                 bands={"age": [30, 50]}, out=tmp, **kw)


def _parts(directory):
    store = PartitionStore(directory, {})
    store.suffix = ".parquet" if list((directory / "parts").glob("*.parquet")) else ".csv"
    return pd.concat([store.read(i) for i in store.indices()], ignore_index=True)


def test_group_gaps_match_a_hand_computation():
    rows = pd.DataFrame({
        "sex": ["F"] * 4 + ["M"] * 6,
        "found": [True, True, False, True, True, True, True, False, True, True],
        "cost_l1_model": [1.0, 3.0, np.nan, 2.0, 1.0, 1.0, 2.0, np.nan, 4.0, 2.0],
        "cost_l1_raw": [0.5, 1.5, np.nan, 1.0, 0.2, 0.4, 0.6, np.nan, 0.8, 1.0],
        "n_changed": [1, 2, np.nan, 3, 1, 1, 1, np.nan, 2, 2],
        "valid": [1.0, 1, np.nan, 1, 1, 1, 1, np.nan, 1, 1],
        "vr": [1.0, 0.5, np.nan, 0.0, 1, 1, 0.5, np.nan, 1, 0.5],
        "delta_valid": [np.nan] * 10,
    })
    acc = GroupAccumulator(["sex"], n_boot=20, seed=0, hist_bins=np.linspace(0, 5, 6))
    acc.add(rows.iloc[:5], 0)
    acc.add(rows.iloc[5:], 1)
    t = acc.table(min_group=1).set_index(["level", "metric"])
    # by hand: F coverage 3/4, M 5/6; F burden (0.5+1.5+1.0)/3 = 1.0, M (0.2+0.4+0.6+0.8+1.0)/5 = 0.6
    assert t.loc[("F", "coverage"), "value"] == pytest.approx(0.75)
    assert t.loc[("M", "coverage"), "value"] == pytest.approx(5 / 6)
    assert t.loc[("F", "burden"), "gap"] == pytest.approx(1.0 - 0.6)  # M is the reference
    assert t.loc[("F", "coverage"), "gap"] == pytest.approx(0.75 - 5 / 6)
    assert t.loc[("F", "vr"), "value"] == pytest.approx(0.5)
    assert t.loc[("M", "vr"), "value"] == pytest.approx(0.8)
    assert "delta_validity" not in t.index.get_level_values("metric")  # not measured
    lo, hi = t.loc[("F", "burden"), ["gap_low", "gap_high"]]
    assert lo < hi  # the replicates vary
    f = acc.fairness_gaps(min_group=1).set_index("measure")
    assert f.loc["burden_spread", "value"] == pytest.approx(0.4)
    # a group below min_group is reported but not compared
    t5 = acc.table(min_group=5).set_index(["level", "metric"])
    assert t5.loc[("F", "coverage"), "too_few"] and np.isnan(t5.loc[("F", "coverage"), "gap"])


def test_audit_reports_and_global_actions_cover_when_applied(loan, tmp_path):
    train, test, model = loan
    res = _run(loan, tmp_path / "a")
    assert res.totals["declined_audited"] == int((model.predict(test.frame) == 0).sum())
    assert set(res.groups["group"]) == {"housing", "age_band"}
    assert (tmp_path / "a" / "report.html").exists() and (tmp_path / "a" / "report.md").exists()
    assert 1 <= len(res.actions) <= 5
    # re-check each action's coverage by applying it to the same sample with the model
    parts = _parts(tmp_path / "a")
    # the headline totals add up every partition's applicants (there are several)
    assert res.totals["partitions"] >= 2 and len(parts) == res.totals["declined_audited"]
    assert res.totals["found"] == int(parts["found"].sum())
    assert res.totals["coverage"] == pytest.approx(parts["found"].mean())
    sample = parts.nsmallest(res.totals["global_sample"], "key")
    schema = model.encoder.schema
    X = frame_from_columns(sample, "x:", schema)
    covered_any = np.zeros(len(X), bool)
    for _, row in res.actions.iterrows():
        text = row["action"]
        changes = []
        for part in text.split(" and "):
            words = part.split()
            if words[0] == "set":
                feat = schema[words[1]]
                lookup = {str(c): c for c in feat.categories}
                lookup.update({str(float(c)): c for c in feat.categories
                               if isinstance(c, int | float)})
                changes.append((words[1], "set", lookup[words[3]]))
            else:
                sign = 1 if words[0] == "increase" else -1
                changes.append((words[1], "add", sign * float(words[3])))
        new, ok = apply_action(Action(tuple(changes)), X, schema)
        cov = ok & (model.predict(new[schema.names]) == 1)
        covered_any |= cov
        assert cov.mean() == pytest.approx(row["coverage"])
        assert covered_any.mean() == pytest.approx(row["cumulative_coverage"])
        assert not any(c[0] in schema.immutable for c in changes)


def test_dask_local_cluster_equals_serial_row_for_row(loan, tmp_path):
    distributed = pytest.importorskip("distributed")
    serial = _run(loan, tmp_path / "s", report=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = _run(loan, tmp_path / "d", backend="dask", scheduler=client, report=False)
    a, b = _parts(tmp_path / "s"), _parts(tmp_path / "d")
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(serial.groups, dask.groups)
    pd.testing.assert_frame_equal(serial.actions, dask.actions)


@pytest.mark.slow
def test_joblib_processes_equal_serial(loan, tmp_path):
    _run(loan, tmp_path / "s", report=False)
    _run(loan, tmp_path / "j", backend="joblib", n_jobs=2, report=False)
    pd.testing.assert_frame_equal(_parts(tmp_path / "s"), _parts(tmp_path / "j"))


def test_killed_and_resumed_audit_gives_the_same_report(loan, tmp_path):
    full = _run(loan, tmp_path / "full")

    class Killed(Exception):
        pass

    def kill_after_two(i):
        if i == 1:
            raise Killed

    with pytest.raises(Killed):
        _run(loan, tmp_path / "r", on_partition=kill_after_two)
    assert len(list((tmp_path / "r" / "parts").iterdir())) == 2
    seen = []
    resumed = _run(loan, tmp_path / "r", on_partition=seen.append)
    assert 0 not in seen and 1 not in seen and seen  # finished partitions not recomputed
    pd.testing.assert_frame_equal(full.groups, resumed.groups)
    pd.testing.assert_frame_equal(full.actions, resumed.actions)
    for name in ("group_metrics.csv", "global_actions.csv", "fairness_gaps.csv"):
        assert (tmp_path / "full" / name).read_text() == (tmp_path / "r" / name).read_text()


def test_resume_with_other_settings_is_refused(loan, tmp_path):
    _run(loan, tmp_path / "x", report=False)
    with pytest.raises(ValidationError, match="another configuration"):
        _run(loan, tmp_path / "x", partition_rows=100, report=False)


def test_unknown_group_column_is_a_clear_error(loan, tmp_path):
    train, test, model = loan
    with pytest.raises(ValidationError, match="unknown group column 'gender'"):
        audit(model, test.frame, train=train, groups=["gender"], out=tmp_path)


def test_small_group_is_reported_not_an_error(loan, tmp_path):
    res = _run(loan, tmp_path / "g", min_group=100, report=True)
    n = res.groups.drop_duplicates(["group", "level"])
    small = {(g, lv) for g, lv, k in zip(n["group"], n["level"], n["n_declined"], strict=True)
             if k < 100}
    assert small and len(small) < len(n)  # some groups are small, some are not
    assert {(r["group"], r["level"]) for r in res.totals["groups_too_few"]} == small
    for g, lv in small:  # reported, not compared
        rows = res.groups[(res.groups["group"] == g) & (res.groups["level"] == lv)]
        assert rows["too_few"].all() and rows["gap"].isna().all()
        assert rows["value"].notna().any()
    assert "reported, not compared" in (tmp_path / "g" / "report.md").read_text()


@pytest.mark.slow  # moved out of `make test` (issue 53: ≤ 10 min quiet); CI runs it in `make test-slow`
def test_scheduler_that_does_not_answer_fails_fast(loan, tmp_path):
    pytest.importorskip("distributed")
    t0 = time.perf_counter()
    with pytest.raises(SchedulerUnavailableError, match="did not answer within 2 s"):
        _run(loan, tmp_path / "n", backend="dask", scheduler="tcp://127.0.0.1:9",
             connect_timeout=2, report=False)
    # a guard against a hang, not a timing: the message proves the 2 s limit was used, and a
    # host at load 20 still ends far below this (issue 53)
    assert time.perf_counter() - t0 < 300


def test_protected_only_mutable_feature_stops_the_audit(loan, tmp_path):
    train, test, model = loan
    schema = model.encoder.schema
    acts = {n: "immutable" for n in schema.names if n != "housing"}
    acts["housing"] = "protected"
    model.encoder.schema, old = schema.with_actionability(**acts), schema
    try:
        with pytest.raises(ProtectedFeatureError, match="housing"):
            audit(model, test.frame, train=train, groups=["housing"], out=tmp_path)
    finally:
        model.encoder.schema = old


def test_a_second_audit_in_one_process_explains_its_own_model(tmp_path):
    """The worker's cached explainer is keyed by the configuration; it did not include the
    model, so a second audit with the same settings reused the first model's explainer (and
    its actionability). Here the second model holds income fixed: none of its CEs change it."""
    data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    train, test = data.split(test_size=0.25, random_state=0)
    model = rc.models.MLP((8,), epochs=20, random_state=0).fit(train)
    fixed = model.with_actionability(income="immutable")
    kw = {"train": train, "method": "milp_nearest", "groups": ["housing"], "n_boot": 5,
          "min_group": 2, "sample_fraction": 0.2, "report": False}
    audit(model, test.frame, out=tmp_path / "a", **kw)
    audit(fixed, test.frame, out=tmp_path / "b", **kw)
    first, second = _parts(tmp_path / "a"), _parts(tmp_path / "b")
    first, second = first[first["found"].astype(bool)], second[second["found"].astype(bool)]
    assert (first["cf:income"] != first["x:income"]).any()  # the first model's CEs do
    assert len(second) and (second["cf:income"] == second["x:income"]).all()
