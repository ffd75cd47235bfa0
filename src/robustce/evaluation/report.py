"""Reports: the summary table as plain text and Markdown, and a self-contained HTML page.

Input is the table of :meth:`BenchmarkResult.table` — rows (dataset, method), columns
(metric, "mean"/"std") — or any frame of that shape. Figures are drawn with matplotlib's Agg
canvas (no pyplot, no display, thread-safe) and embedded in the HTML as base64 PNG, so the file
can be mailed around on its own; the Markdown report links PNG files written beside it.

Figures: cost vs robustness per method (a proximity metric against Δ-validity or validity
after retraining), validity after retraining, time per query, and — given a model on a 2-D
dataset — the decision boundary with each method's counterfactuals.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from robustce.errors import ValidationError
from robustce.utils import atomic_write

__all__ = [
    "COST_METRICS",
    "HEADLINE_COLUMNS",
    "RETRAIN_METRICS",
    "ROBUSTNESS_METRICS",
    "figure_bars",
    "figure_cost_robustness",
    "figure_toy",
    "figure_to_data_uri",
    "format_table",
    "markdown_table",
    "pick_metric",
    "render_html",
    "render_markdown",
    "write_report",
]

#: preferred metric names per role, most preferred first (first present one is used)
COST_METRICS = ("proximity_l1", "raw_l1", "k_distance_l1", "proximity_l2", "raw_l2", "l1")
ROBUSTNESS_METRICS = ("v_delta", "vr")
RETRAIN_METRICS = ("vr",)
TIME_METRICS = ("time", "time_s")
#: the columns a terminal summary shows when every metric was computed
HEADLINE_COLUMNS = ("coverage", "validity", "proximity_l1", "raw_l1", "sparsity", "lof", "vr",
                    "v_delta", "time", "time_s", "n", "uncertified", "errors")
#: counts, shown without ± (``uncertified``: CEs in ``n`` whose query did not end ``found``;
#: the column appears only where there are some)
COUNT_COLUMNS = ("n", "uncertified", "errors")


# --- tables -------------------------------------------------------------------------------------
def _metrics_of(table: pd.DataFrame) -> list[str]:
    if not isinstance(table.columns, pd.MultiIndex):
        return [str(c) for c in table.columns]
    out: list[str] = []
    for m in table.columns.get_level_values(0):
        if m not in out:
            out.append(str(m))
    return out


def _cell(table: pd.DataFrame, row: Any, metric: str, stat: str = "mean") -> float:
    try:
        v = table.loc[row, (metric, stat)] if isinstance(table.columns, pd.MultiIndex) \
            else (table.loc[row, metric] if stat == "mean" else float("nan"))
    except KeyError:
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _fmt_num(v: float, digits: int, fixed: bool = True) -> str:
    if v is None or not math.isfinite(v):
        return "–"
    if fixed:
        return f"{v:.{digits}f}"
    return f"{v:.{digits}g}"


def _fixed(values: Sequence[float], digits: int) -> bool:
    """Fixed decimals unless the column's magnitude is too small or too large for them."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if not finite:
        return True
    scale = max(finite)
    return 10 ** -(digits - 1) <= scale < 10 ** (digits + 3)


def _row_strings(table: pd.DataFrame, digits: int) -> tuple[list[str], list[list[str]]]:
    metrics = _metrics_of(table)
    index_names = [str(n) if n is not None else "" for n in table.index.names]
    header = [*index_names, *metrics]
    fixed = {m: m not in TIME_METRICS and _fixed([_cell(table, k, m) for k in table.index], digits)
             for m in metrics}
    rows = []
    for key in table.index:
        keys = list(key) if isinstance(key, tuple) else [key]
        cells = [str(k) for k in keys]
        for m in metrics:
            mean, std = _cell(table, key, m, "mean"), _cell(table, key, m, "std")
            if m in COUNT_COLUMNS:
                cells.append("–" if not math.isfinite(mean) else str(int(round(mean))))
            elif math.isfinite(std):
                if math.isfinite(mean) and abs(std) <= 1e-9 * max(abs(mean), 1e-300):
                    std = 0.0  # float noise of identical values
                cells.append(f"{_fmt_num(mean, digits, fixed[m])} ± {_fmt_num(std, digits, fixed[m])}")
            else:
                cells.append(_fmt_num(mean, digits, fixed[m]))
        rows.append(cells)
    return header, rows


def format_table(table: pd.DataFrame, digits: int = 3) -> str:
    """Plain-text table, ``mean ± std`` per metric, columns aligned.

    Parameters
    ----------
    table : a benchmark table (``BenchmarkResult.table()``: metrics with mean/std columns).
    digits : significant digits.

    Examples
    --------
    >>> import tempfile
    >>> config = {"seeds": [0], "model": {"kind": "logistic"}, "queries": {"n": 3},
    ...           "metrics": ["validity", "proximity_l1"],
    ...           "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...           "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]}
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = rc.evaluation.run_benchmark(config, out, progress=False)
    >>> print(rc.evaluation.format_table(result.table()[["coverage", "proximity_l1"]]))
    dataset         method                  coverage   proximity_l1
    --------------  -----------------  -------------  -------------
    synthetic_loan  nearest_neighbour  0.333 ± 0.000  1.026 ± 0.000
    synthetic_loan  milp_nearest       1.000 ± 0.000  1.809 ± 1.059
    """
    if table is None or len(table) == 0:
        return "(no results)"
    header, rows = _row_strings(table, digits)
    widths = [max(len(header[j]), *(len(r[j]) for r in rows)) for j in range(len(header))]
    n_index = table.index.nlevels

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if j < n_index else c.rjust(w)
                         for j, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def markdown_table(table: pd.DataFrame, digits: int = 3) -> str:
    """GitHub-flavoured Markdown table, ``mean ± std`` per metric.

    Parameters
    ----------
    table : a benchmark table, as :func:`format_table` takes.
    digits : significant digits.

    Examples
    --------
    >>> import tempfile
    >>> config = {"seeds": [0], "model": {"kind": "logistic"}, "queries": {"n": 3},
    ...           "metrics": ["validity", "proximity_l1"],
    ...           "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...           "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]}
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = rc.evaluation.run_benchmark(config, out, progress=False)
    >>> print(rc.evaluation.markdown_table(result.table()[["coverage", "proximity_l1"]]))
    | dataset | method | coverage | proximity_l1 |
    | --- | --- | ---: | ---: |
    | synthetic_loan | nearest_neighbour | 0.333 ± 0.000 | 1.026 ± 0.000 |
    | synthetic_loan | milp_nearest | 1.000 ± 0.000 | 1.809 ± 1.059 |
    """
    if table is None or len(table) == 0:
        return "_no results_"
    header, rows = _row_strings(table, digits)
    n_index = table.index.nlevels
    esc = [[c.replace("|", "\\|") for c in r] for r in [header, *rows]]
    align = ["---" if j < n_index else "---:" for j in range(len(header))]
    lines = ["| " + " | ".join(esc[0]) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines)


def pick_metric(table_or_names: pd.DataFrame | Sequence[str], candidates: Sequence[str],
                substrings: Sequence[str] = ()) -> str | None:
    """The first of ``candidates`` present (then the first name containing a substring)."""
    names = _metrics_of(table_or_names) if isinstance(table_or_names, pd.DataFrame) \
        else list(table_or_names)
    for c in candidates:
        if c in names:
            return c
    for sub in substrings:
        for n in names:
            if sub in n.lower():
                return n
    return None


# --- figures ------------------------------------------------------------------------------------
def _figure(width: float = 6.4, height: float = 4.2):  # noqa: ANN202 - matplotlib type kept lazy
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_to_data_uri(fig: Any) -> str:
    """``data:image/png;base64,...`` of a matplotlib figure."""
    return "data:image/png;base64," + base64.b64encode(figure_png(fig)).decode("ascii")


def figure_png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _methods_and_datasets(table: pd.DataFrame) -> tuple[list[Any], list[Any]]:
    if table.index.nlevels == 2:
        return list(dict.fromkeys(table.index.get_level_values(0))), \
            list(dict.fromkeys(table.index.get_level_values(1)))
    return [None], list(table.index)


def _key(dataset: Any, method: Any) -> Any:
    return method if dataset is None else (dataset, method)


#: metrics that are shares of queries or models: their error bars stay within [0, 1]
_RATE_WORDS = ("validity", "coverage", "v_delta", "vr", "inlier", "share", "rate", "robust")


def _metric_range(metric: str) -> tuple[float, float]:
    """The values ``metric`` can take: ``[0, 1]`` for a rate (validity, coverage, Δ-validity,
    ``vr``), ``[0, ∞)`` for everything else the reports plot (costs, distances, times)."""
    name = metric.lower()
    return (0.0, 1.0) if any(w in name for w in _RATE_WORDS) else (0.0, math.inf)


def _clipped_errors(means: Any, stds: Any, metric: str) -> np.ndarray:
    """Asymmetric error bars ``[[below], [above]]``: ±1 std cut at the metric's range
    (:func:`_metric_range`), so a rate's bar never runs below 0 or above 1 nor a cost's below
    0. Non-finite means or stds give no bar."""
    lo, hi = _metric_range(metric)
    m = np.atleast_1d(np.asarray(means, dtype=float))
    s = np.atleast_1d(np.asarray(stds, dtype=float))
    ok = np.isfinite(m) & np.isfinite(s)
    s = np.where(ok, s, 0.0)
    m = np.where(ok, m, 0.0)
    below = np.clip(np.minimum(s, m - lo), 0.0, None)
    above = np.clip(np.minimum(s, hi - m), 0.0, None)
    return np.vstack([below, above])


def figure_cost_robustness(table: pd.DataFrame, cost: str | None = None,
                           robustness: str | None = None) -> Any | None:
    """Scatter of mean cost against mean robustness, one point per method (with std bars),
    one panel per dataset. ``None`` when the table has neither metric."""
    cost = cost or pick_metric(table, COST_METRICS, ("l1", "proxim", "dist", "cost"))
    robustness = robustness or pick_metric(table, ROBUSTNESS_METRICS, ("delta", "robust", "retrain"))
    if cost is None or robustness is None:
        return None
    datasets, methods = _methods_and_datasets(table)
    fig = _figure(4.2 * len(datasets) + 1.2, 4.0)
    axes = fig.subplots(1, len(datasets), squeeze=False)[0]
    colors = _colors(len(methods))
    for ax, d in zip(axes, datasets, strict=True):
        for i, (color, m) in enumerate(zip(colors, methods, strict=True)):
            k = _key(d, m)
            x, y = _cell(table, k, cost), _cell(table, k, robustness)
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            xe, ye = _cell(table, k, cost, "std"), _cell(table, k, robustness, "std")
            ax.errorbar(x, y, xerr=_clipped_errors(x, xe, cost) if math.isfinite(xe) else None,
                        yerr=_clipped_errors(y, ye, robustness) if math.isfinite(ye) else None,
                        fmt=_MARKERS[i % len(_MARKERS)],
                        color=color, capsize=3, label=str(m), markersize=8, alpha=0.85)
        ax.set_xlabel(f"{cost} (lower is cheaper)")
        ax.set_ylabel(f"{robustness} (higher is more robust)")
        ax.set_title("cost vs robustness" + (f" — {d}" if d is not None else ""))
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize=8, loc="best")
    return fig


def figure_bars(table: pd.DataFrame, metric: str | None, *, title: str | None = None,
                log: bool = False, ylim: tuple[float, float] | None = None) -> Any | None:
    """Bar chart of one metric per method (± std), grouped by dataset."""
    if metric is None or metric not in _metrics_of(table):
        return None
    datasets, methods = _methods_and_datasets(table)
    means = np.array([[_cell(table, _key(d, m), metric) for m in methods] for d in datasets])
    if not np.isfinite(means).any():
        return None
    stds = np.array([[_cell(table, _key(d, m), metric, "std") for m in methods] for d in datasets])
    fig = _figure(max(4.5, 1.1 * len(methods) * len(datasets) + 1.5), 3.8)
    ax = fig.subplots()
    width = 0.8 / len(datasets)
    x = np.arange(len(methods))
    for i, d in enumerate(datasets):
        err = _clipped_errors(means[i], stds[i], metric)
        ax.bar(x + i * width - 0.4 + width / 2, np.nan_to_num(means[i]), width, yerr=err,
               capsize=3, label=str(d) if d is not None else None,
               color=_colors(len(datasets))[i] if len(datasets) > 1 else _colors(len(methods)))
    ax.set_xticks(x, [str(m) for m in methods], rotation=20, ha="right")
    ax.set_ylabel(metric)
    if log:
        ax.set_yscale("log")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_title(title or metric)
    ax.grid(axis="y", alpha=0.3)
    if len(datasets) > 1:
        ax.legend(fontsize=8)
    return fig


def figure_toy(model: Any, data: Any, explanations: Mapping[str, Any], *,
               features: Sequence[str] | None = None, resolution: int = 150,
               title: str = "counterfactuals on a 2-D toy dataset") -> Any:
    """Decision regions of ``model`` on a 2-D dataset, training points, queries and every
    method's counterfactuals (an arrow from each query to its first CE)."""
    frame = data.frame
    cols = list(features) if features is not None else list(frame.columns[:2])
    if len(cols) != 2 or len(frame.columns) != 2:
        raise ValidationError(
            f"figure_toy needs a dataset with exactly two features, got {list(frame.columns)}")
    x0, x1 = (frame[c].to_numpy(dtype=float) for c in cols)
    pad0, pad1 = 0.1 * np.ptp(x0), 0.1 * np.ptp(x1)
    g0 = np.linspace(x0.min() - pad0, x0.max() + pad0, resolution)
    g1 = np.linspace(x1.min() - pad1, x1.max() + pad1, resolution)
    G0, G1 = np.meshgrid(g0, g1)
    grid = pd.DataFrame({cols[0]: G0.ravel(), cols[1]: G1.ravel()})
    schema = getattr(model.encoder, "schema", None)
    if schema is not None:  # stay inside the encoder's bounds
        for c in cols:
            f = schema[c]
            grid[c] = grid[c].clip(f.lower, f.upper)
    proba = model.predict_proba(grid)[:, -1].reshape(G0.shape)
    fig = _figure(6.4, 5.0)
    ax = fig.subplots()
    cs = ax.contourf(G0, G1, proba, levels=np.linspace(0, 1, 11), cmap="RdBu", alpha=0.55)
    ax.contour(G0, G1, proba, levels=[0.5], colors="k", linewidths=1.5)
    fig.colorbar(cs, ax=ax, label="P(class 1)")
    y = data.y
    ax.scatter(x0, x1, c=np.where(y == 1, "#2166ac", "#b2182b"), s=6, alpha=0.25, linewidths=0)
    first = True
    for (label, expl), color, marker in zip(explanations.items(), _colors(len(explanations)),
                                            _MARKERS * 4, strict=False):
        q = expl.queries
        if first:
            ax.scatter(q[cols[0]], q[cols[1]], marker="x", c="k", s=40, label="queries", zorder=4)
            first = False
        cf = expl.counterfactuals
        cf0 = cf[cf["cf_rank"] == 0]
        ax.scatter(cf0[cols[0]], cf0[cols[1]], marker=marker, s=36, facecolors=color,
                   edgecolors="k", linewidths=0.5, label=str(label), zorder=5)
        for _, row in cf0.iterrows():
            src = q.loc[row["query_id"]]
            ax.annotate("", xy=(row[cols[0]], row[cols[1]]), xytext=(src[cols[0]], src[cols[1]]),
                        arrowprops={"arrowstyle": "->", "color": color, "lw": 0.8, "alpha": 0.8})
    ax.set_xlabel(cols[0])
    ax.set_ylabel(cols[1])
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best")
    return fig


_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(max(n, 1))][:n]


# --- documents ---------------------------------------------------------------------------------
def default_figures(table: pd.DataFrame) -> list[tuple[str, Any, str]]:
    """(title, figure, caption) of the standard plots this table supports."""
    out: list[tuple[str, Any, str]] = []
    fig = figure_cost_robustness(table)
    if fig is not None:
        out.append(("Cost vs robustness", fig,
                    "Mean proximity cost against mean robustness per method (bars: ±1 std over "
                    "seeds and queries). Up and to the left is better."))
    retrain = pick_metric(table, RETRAIN_METRICS, ("retrain",))
    fig = figure_bars(table, retrain, title="validity after retraining", ylim=(0, 1.05))
    if fig is not None:
        out.append(("Validity after retraining", fig,
                    f"`{retrain}`: share of retrained models that still give each CE its target class."))
    tm = pick_metric(table, TIME_METRICS, ("time",))
    fig = figure_bars(table, tm, title="time per query (s)", log=True)
    if fig is not None:
        out.append(("Runtime", fig, "Seconds per query (log scale)."))
    return out


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1400px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}
.table-wrap{overflow-x:auto;max-width:100%;margin:1em 0}
table{border-collapse:collapse;font-size:.8em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f3f3f3;white-space:normal;min-width:5em;vertical-align:bottom}
td.key,th.key{text-align:left;position:sticky;left:0;background:#fff}th.key{background:#f3f3f3}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}pre{background:#f7f7f7;padding:.8em;overflow:auto}
.meta{color:#666;font-size:.85em}.sd{display:block;font-size:.85em;color:#666}
"""


def _inline_html(text: str) -> str:
    """Escaped text with Markdown's inline code (`name`) as ``<code>``: captions and notes
    are written once for both reports, and the HTML shows no literal backticks."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _html_table(table: pd.DataFrame, digits: int) -> str:
    if table is None or len(table) == 0:
        return "<p><em>no results</em></p>"
    header, rows = _row_strings(table, digits)
    n_index = table.index.nlevels
    cls = ["key" if j < n_index else "" for j in range(len(header))]
    head = "".join(f'<th class="{c}">{html.escape(h)}</th>' for c, h in zip(cls, header, strict=True))
    body = "".join("<tr>" + "".join(f'<td class="{c}">{_cell_html(v)}</td>'
                                    for c, v in zip(cls, r, strict=True)) + "</tr>" for r in rows)
    return _scrollable(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _cell_html(text: str) -> str:
    """A ``mean ± std`` cell on two lines (the std smaller, below), so that a table of many
    metrics fits a 1 280 px window; other cells as they are."""
    mean, sep, std = text.partition(" ± ")
    if not sep:
        return html.escape(text)
    return f'{html.escape(mean)}<span class="sd">± {html.escape(std)}</span>'


def _scrollable(table_html: str) -> str:
    """A wide table scrolls inside the page's width instead of running off its right edge."""
    return f'<div class="table-wrap">{table_html}</div>'


def render_html(title: str, table: pd.DataFrame, figures: Sequence[tuple[str, Any, str]] = (), *,
                notes: Sequence[str] = (), extra_tables: Mapping[str, pd.DataFrame] | None = None,
                digits: int = 3) -> str:
    """A self-contained HTML page: the table, figures embedded as base64 PNG, notes."""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">generated {datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")} '
        f"by robustce {_version()}</p>",
    ]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{_inline_html(n)}</li>" for n in notes) + "</ul>")
    parts += ["<h2>Summary (mean ± std)</h2>", _html_table(table, digits)]
    for name, extra in (extra_tables or {}).items():
        parts += [f"<h2>{html.escape(name)}</h2>", _html_table(extra, digits)]
    for fig_title, fig, caption in figures:
        uri = fig if isinstance(fig, str) else figure_to_data_uri(fig)
        parts += [f"<h2>{html.escape(fig_title)}</h2>", "<figure>",
                  f'<img src="{uri}" alt="{html.escape(fig_title)}">',
                  f"<figcaption>{_inline_html(caption)}</figcaption></figure>"]
    parts.append("</body></html>")
    return "\n".join(parts)


def render_markdown(title: str, table: pd.DataFrame, figures: Sequence[tuple[str, str, str]] = (), *,
                    notes: Sequence[str] = (), digits: int = 3) -> str:
    """Markdown: the table, notes and links to figure files (title, relative path, caption)."""
    lines = [f"# {title}", ""]
    lines += [f"- {n}" for n in notes]
    if notes:
        lines.append("")
    lines += ["## Summary (mean ± std)", "", markdown_table(table, digits), ""]
    for fig_title, path, caption in figures:
        lines += [f"## {fig_title}", "", f"![{fig_title}]({path})", "", caption, ""]
    return "\n".join(lines)


def write_report(table: pd.DataFrame, out_dir: str | Path, *, title: str = "robustce benchmark",
                 figures: Sequence[tuple[str, Any, str]] | None = None,
                 notes: Sequence[str] = (), extra_tables: Mapping[str, pd.DataFrame] | None = None,
                 digits: int = 3) -> dict[str, Path]:
    """Write ``report.html`` (self-contained), ``report.md`` and ``figures/*.png`` to
    ``out_dir``. ``figures`` default to :func:`default_figures`; extra ones (e.g.
    :func:`figure_toy`) are (title, figure, caption) triples. Returns the paths.

    Parameters
    ----------
    table : the summary table (``BenchmarkResult.table()``).
    out_dir : the output directory.
    title : the report's title.
    figures : (title, figure, caption) triples (None: :func:`default_figures`).
    notes : lines shown under the title.
    extra_tables : more tables by heading (e.g. the demo's MACE table).
    digits : significant digits.

    Returns
    -------
    dict of str to Path
        ``html``, ``markdown`` and ``figures`` (the folder of the PNGs).

    Examples
    --------
    >>> import tempfile
    >>> config = {"seeds": [0], "model": {"kind": "logistic"}, "queries": {"n": 3},
    ...           "metrics": ["validity", "proximity_l1"],
    ...           "datasets": [{"name": "synthetic_loan", "params": {"n_samples": 200}}],
    ...           "methods": [{"name": "nearest_neighbour"}, {"name": "milp_nearest"}]}
    >>> with tempfile.TemporaryDirectory() as out:
    ...     result = rc.evaluation.run_benchmark(config, out, progress=False)
    ...     paths = rc.evaluation.write_report(result.table(), out, title="Loan baselines")
    ...     print(sorted(paths), paths["html"].name, paths["html"].stat().st_size > 0)
    ...     print("Loan baselines" in paths["markdown"].read_text())
    ['figures', 'html', 'markdown'] report.html True
    True
    """
    out = Path(out_dir)
    figs = list(default_figures(table) if figures is None else figures)
    md_figs = []
    for i, (fig_title, fig, caption) in enumerate(figs):
        png = figure_png(fig)
        name = f"figures/{i:02d}_{_slug(fig_title)}.png"
        with atomic_write(out / name, "wb") as fh:
            fh.write(png)
        md_figs.append((fig_title, name, caption))
    html_figs = []
    for (fig_title, _, caption), (_, name, _) in zip(figs, md_figs, strict=True):
        uri = "data:image/png;base64," + base64.b64encode((out / name).read_bytes()).decode("ascii")
        html_figs.append((fig_title, uri, caption))
    paths = {"html": out / "report.html", "markdown": out / "report.md"}
    with atomic_write(paths["html"]) as fh:
        fh.write(render_html(title, table, html_figs, notes=notes, extra_tables=extra_tables,
                             digits=digits))
    with atomic_write(paths["markdown"]) as fh:
        fh.write(render_markdown(title, table, md_figs, notes=notes, digits=digits))
    paths["figures"] = out / "figures"
    return paths


def _slug(text: str) -> str:
    s = "".join(c.lower() if c.isalnum() else "_" for c in text)
    return "_".join(p for p in s.split("_") if p)[:40] or "figure"


def _version() -> str:
    try:
        from robustce.utils import package_version

        return package_version()
    except Exception:  # noqa: BLE001
        return "?"
