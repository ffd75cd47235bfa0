"""The HTML report keeps wide tables inside the page: every table sits in a horizontally
scrolling wrapper (issue 37: the MACE table ran off the right edge)."""

import re

import pandas as pd

from robustce.evaluation.report import render_html


def test_every_table_is_in_a_scroll_wrapper() -> None:
    wide = pd.DataFrame({f"metric_{i}": [0.123456, 0.5] for i in range(20)},
                        index=pd.Index(["a", "b"], name="method"))
    page = render_html("t", wide, extra_tables={"per dataset": wide})
    tables = re.findall(r"<table", page)
    wrapped = re.findall(r'<div class="table-wrap"><table', page)
    assert len(tables) == 2 and len(wrapped) == 2
    css = page[page.index("<style>"):page.index("</style>")]
    assert re.search(r"\.table-wrap\{[^}]*overflow-x:auto", css)


# --- issue 53 (7): the demo report -------------------------------------------------------------
def _table(vr=(0.95, 0.2), proximity=(0.1, 0.5)) -> pd.DataFrame:
    """A summary table as ``BenchmarkResult.table()`` gives it: one row per (dataset, method),
    columns (metric, mean | std)."""
    rows = {("loan", "nn"): {("vr", "mean"): vr[0], ("vr", "std"): vr[1],
                             ("proximity_l1", "mean"): proximity[0],
                             ("proximity_l1", "std"): proximity[1]},
            ("loan", "milp"): {("vr", "mean"): 0.05, ("vr", "std"): 0.3,
                               ("proximity_l1", "mean"): 2.0, ("proximity_l1", "std"): 0.5}}
    t = pd.DataFrame.from_dict(rows, orient="index")
    t.index = pd.MultiIndex.from_tuples(t.index, names=["dataset", "method"])
    t.columns = pd.MultiIndex.from_tuples(t.columns, names=["metric", "stat"])
    return t


def test_captions_and_notes_show_code_not_backticks() -> None:
    page = render_html("t", _table(), [("Fig", "data:image/png;base64,AA==",
                                        "`vr`: share of retrained models")],
                       notes=["`robustce demo` without --quick"])
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    items = re.findall(r"<li>(.*?)</li>", page)
    assert captions == ["<code>vr</code>: share of retrained models"]
    assert items == ["<code>robustce demo</code> without --quick"]
    assert "`" not in page


def test_the_default_captions_render_without_backticks() -> None:
    from robustce.evaluation.report import default_figures

    page = render_html("t", _table(), default_figures(_table()))
    assert all("`" not in c for c in re.findall(r"<figcaption>(.*?)</figcaption>", page, re.S))


def test_extra_tables_are_formatted_like_the_summary() -> None:
    page = render_html("t", _table(), extra_tables={"MACE and MO": _table()})
    section = page[page.index("<h2>MACE and MO</h2>"):]
    assert 'class="dataframe"' not in page  # not pandas' raw frame dump
    assert '0.950<span class="sd">± 0.200</span>' in section and '<th class="key">method</th>' in section
    assert "<th>mean</th>" not in section and "<th>std</th>" not in section


def test_wide_tables_wrap_their_headers_and_keep_the_key_column_in_view() -> None:
    page = render_html("t", _table())
    css = page[page.index("<style>"):page.index("</style>")]
    assert re.search(r"(^|[}\n])th\{[^}]*white-space:normal", css)
    assert re.search(r"td\.key,th\.key\{[^}]*position:sticky", css)
    # mean and std on two lines: the cell is half as wide
    assert '<td class="">0.950<span class="sd">± 0.200</span></td>' in page
    assert re.search(r"\.sd\{display:block", css)


def _bar_extents(ax) -> list[tuple[float, float]]:
    """(low, high) of every error bar drawn on ``ax`` (vertical and horizontal)."""
    out = []
    for container in ax.containers:
        bars = getattr(container, "errorbar", None) or container
        for coll in getattr(bars, "lines", (None, None, ()))[2]:
            for seg in coll.get_segments():
                out.append(seg)
    return out


def test_rate_error_bars_stay_in_0_1_and_cost_bars_above_0() -> None:
    from robustce.evaluation.report import figure_bars, figure_cost_robustness

    table = _table()
    fig = figure_cost_robustness(table, "proximity_l1", "vr")
    segments = _bar_extents(fig.axes[0])
    assert segments, "no error bars drawn"
    for seg in segments:
        (x0, y0), (x1, y1) = seg
        if x0 == x1:  # a vertical bar: vr, a rate
            assert 0.0 <= min(y0, y1) and max(y0, y1) <= 1.0 + 1e-12
        else:  # a horizontal bar: proximity, a cost
            assert min(x0, x1) >= 0.0
    # the bars reach the range's ends (clipped, not dropped): 0.95 + 0.2 → 1, 0.05 − 0.3 → 0
    ys = sorted(y for seg in segments for (x, y) in seg if seg[0][0] == seg[1][0])
    assert ys[0] == 0.0 and ys[-1] == 1.0
    bars = figure_bars(table, "vr")
    ys = [y for seg in _bar_extents(bars.axes[0]) for (_, y) in seg]
    assert ys and min(ys) == 0.0 and max(ys) == 1.0
