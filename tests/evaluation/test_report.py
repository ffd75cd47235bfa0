"""Reports: plain-text and Markdown tables, self-contained HTML with embedded PNG figures."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

import robustce as rc
from robustce.evaluation.report import (
    default_figures,
    figure_bars,
    figure_cost_robustness,
    figure_png,
    figure_to_data_uri,
    figure_toy,
    format_table,
    markdown_table,
    pick_metric,
    render_html,
    write_report,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _table() -> pd.DataFrame:
    rows = {
        ("loan", "nn"): {("coverage", "mean"): 0.9, ("coverage", "std"): 0.1,
                         ("proximity_l1", "mean"): 1.23456, ("proximity_l1", "std"): 0.5,
                         ("vr", "mean"): 0.75, ("vr", "std"): 0.25,
                         ("time", "mean"): 0.00123, ("time", "std"): 0.0001,
                         ("n", "mean"): 18.0, ("n", "std"): np.nan},
        ("loan", "wachter"): {("coverage", "mean"): 1.0, ("coverage", "std"): 0.0,
                              ("proximity_l1", "mean"): 0.2, ("proximity_l1", "std"): 0.05,
                              ("vr", "mean"): 0.5, ("vr", "std"): np.nan,
                              ("time", "mean"): 0.5, ("time", "std"): 0.1,
                              ("n", "mean"): 20.0, ("n", "std"): np.nan},
    }
    t = pd.DataFrame.from_dict(rows, orient="index")
    t.index = pd.MultiIndex.from_tuples(t.index, names=["dataset", "method"])
    t.columns = pd.MultiIndex.from_tuples(t.columns, names=["metric", "stat"])
    return t


def test_plain_text_table():
    text = format_table(_table())
    lines = text.splitlines()
    assert lines[0].split() == ["dataset", "method", "coverage", "proximity_l1", "vr", "time", "n"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split()[:2] == ["loan", "nn"]
    assert "0.900 ± 0.100" in lines[2] and "1.235 ± 0.500" in lines[2]
    assert "0.00123 ± 0.0001" in lines[2]  # small times keep significant digits
    assert lines[2].rstrip().endswith("18")  # counts without ±
    assert re.split(r"\s{2,}", lines[3].strip()) == [
        "loan", "wachter", "1.000 ± 0.000", "0.200 ± 0.050", "0.500", "0.5 ± 0.1", "20"]
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule aligned
    assert format_table(_table().iloc[:0]) == "(no results)"


def test_markdown_table():
    md = markdown_table(_table()).splitlines()
    assert md[0] == "| dataset | method | coverage | proximity_l1 | vr | time | n |"
    assert md[1] == "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    assert md[2].startswith("| loan | nn | 0.900 ± 0.100 | 1.235 ± 0.500 | 0.750 ± 0.250 |")
    assert len(md) == 4


def test_pick_metric_prefers_known_names():
    assert pick_metric(_table(), ("v_delta", "vr")) == "vr"
    assert pick_metric(["a_l1_b", "c"], ("x",), ("l1",)) == "a_l1_b"
    assert pick_metric(["c"], ("x",)) is None


def test_figures_render_to_png():
    t = _table()
    for fig in (figure_cost_robustness(t), figure_bars(t, "vr"), figure_bars(t, "time", log=True)):
        assert fig is not None
        assert figure_png(fig).startswith(PNG_MAGIC)
    assert figure_bars(t, "no_such_metric") is None
    assert figure_cost_robustness(t[["coverage"]]) is None
    assert [title for title, _, _ in default_figures(t)] == [
        "Cost vs robustness", "Validity after retraining", "Runtime"]
    uri = figure_to_data_uri(figure_bars(t, "vr"))
    assert base64.b64decode(uri.split(",", 1)[1]).startswith(PNG_MAGIC)


def test_toy_figure_on_moons():
    data = rc.datasets.load("moons", n_samples=200, random_state=0)
    train, test = data.split(test_size=0.2, random_state=0)
    model = rc.models.MLP((8,), epochs=20, lr=0.02, random_state=0).fit(train)
    queries = test.frame[model.predict(test.frame) == 0].iloc[:4]
    from robustce.methods.registry import get_method

    nn = get_method("nearest_neighbour")(model, train).explain(queries)
    fig = figure_toy(model, train, {"nearest_neighbour": nn})
    assert figure_png(fig).startswith(PNG_MAGIC)
    with pytest.raises(ValueError, match="two features"):
        figure_toy(model, rc.datasets.load("synthetic_loan", n_samples=50), {})


def test_html_is_self_contained_and_figures_decode(tmp_path):
    t = _table()
    paths = write_report(t, tmp_path, title="T <&>", notes=["a note"])
    html = paths["html"].read_text()
    assert html.startswith("<!DOCTYPE html>") and "T &lt;&amp;&gt;" in html
    images = IMG.findall(html)
    assert len(images) == 3
    for b64 in images:
        assert base64.b64decode(b64, validate=True).startswith(PNG_MAGIC)
    # nothing is loaded from elsewhere: every src/href is a data URI
    assert not re.search(r'(src|href)="(?!data:)', html)
    assert "<td class=\"key\">wachter</td>" in html and "a note" in html
    md = paths["markdown"].read_text()
    assert "| loan | wachter |" in md
    for link in re.findall(r"\]\((figures/[^)]+\.png)\)", md):
        assert (tmp_path / link).read_bytes().startswith(PNG_MAGIC)
    assert not list(tmp_path.rglob("*.tmp"))


def test_render_html_without_figures_or_rows():
    html = render_html("empty", _table().iloc[:0])
    assert "no results" in html and "<img" not in html
