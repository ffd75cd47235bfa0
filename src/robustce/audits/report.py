"""The audit report: Markdown and a self-contained HTML page (figures embedded), with the
cost distributions by group, the coverage of the global actions and robust validity by
group, plus the tables as CSV. Every file is written atomically."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from robustce.utils import atomic_write

__all__ = ["write_report"]

_CITES = ("Burden: Sharma, Henderson & Ghosh (2020), CERTIFAI, AIES. Equal recourse across "
          "groups: Gupta, Nokhiz, Roy & Venkatasubramanian (2019), arXiv:1909.03166. Fairness "
          "of (causal) recourse: von Kügelgen, Karimi, Bhatt, Valera, Weller & Schölkopf "
          "(2022), AAAI. Global actions: Rawal & Lakkaraju (2020), AReS, NeurIPS; Ley, Mishra "
          "& Magazzeni (2023), GLOBE-CE, ICML.")


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _figures(result: Any, acc: Any) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    figs: dict[str, bytes] = {}
    groups = acc.groups
    if groups:
        fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.2), squeeze=False)
        centres = (acc.bins[:-1] + acc.bins[1:]) / 2
        for ax, g in zip(axes[0], groups, strict=True):
            for (c, lv), h in sorted(acc.hist.items()):
                if c == g and h.sum():
                    ax.plot(centres, h / h.sum(), drawstyle="steps-mid", label=f"{lv} (n={h.sum()})")
            ax.set_title(f"recourse cost by {g}")
            ax.set_xlabel("burden (normalised raw ℓ1)")
            ax.set_ylabel("share")
            ax.legend(fontsize=7)
            nz = [centres[h > 0].max() for (c, _), h in acc.hist.items() if c == g and h.sum()]
            if nz:
                ax.set_xlim(0, max(nz) * 1.1 + 1e-9)
        figs["cost_by_group.png"] = _png(fig)
    if len(result.actions):
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        a = result.actions
        ax.bar(a["rank"].astype(str), a["cumulative_coverage"], color="#9ab", label="cumulative")
        ax.plot(a["rank"].astype(str), a["coverage"], "ko-", label="action alone")
        ax.set_xlabel("global action (rank)")
        ax.set_ylabel("coverage of the declined sample")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
        figs["global_actions.png"] = _png(fig)
    t = result.groups
    metric = "vr" if len(t) and (t["metric"] == "vr").any() else "validity"
    sub = t[t["metric"] == metric] if len(t) else t
    if len(sub):
        fig, ax = plt.subplots(figsize=(6.5, 3.2))
        labels = [f"{g}={lv}" for g, lv in zip(sub["group"], sub["level"], strict=True)]
        err = np.vstack([sub["value"] - sub["ci_low"], sub["ci_high"] - sub["value"]])
        ax.bar(labels, sub["value"], yerr=np.nan_to_num(err), color="#c96", capsize=3)
        ax.set_ylabel(f"{metric} (mean, 95% CI)")
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="x", rotation=45, labelsize=7)
        figs["robust_validity_by_group.png"] = _png(fig)
    return figs


def _md_table(df: pd.DataFrame) -> str:
    if not len(df):
        return "(none)\n"
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return "" if np.isnan(v) else f"{v:.4g}"
    return str(v)


def _write(path: Path, data: str | bytes) -> None:
    with atomic_write(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def write_report(result: Any, acc: Any) -> dict[str, Path]:
    """Write ``report.md``, ``report.html``, the figures and the CSV tables into
    ``result.directory``; returns their paths."""
    out = Path(result.directory)
    figs = _figures(result, acc)
    files: dict[str, Path] = {}
    for name, data in figs.items():
        _write(out / name, data)
        files[name] = out / name
    tables = {"group_metrics.csv": result.groups, "fairness_gaps.csv": result.fairness,
              "global_actions.csv": result.actions,
              "global_actions_by_group.csv": result.actions_by_group}
    for name, df in tables.items():
        _write(out / name, df.to_csv(index=False, float_format="%.10g"))
        files[name] = out / name
    t = result.totals
    main = result.groups[result.groups["metric"].isin(["coverage", "burden", "vr",
                                                       "delta_validity"])] \
        if len(result.groups) else result.groups
    cfg = result.record["config"]
    md = [f"# Recourse audit — method `{cfg['method']}`\n",
          f"Rows read: {t['rows']}; declined applicants audited: {t['declined_audited']}; "
          f"with a counterfactual: {t['found']} (coverage {t['coverage']:.3f}); partitions: "
          f"{t['partitions']}; global actions chosen on a seeded sample of "
          f"{t['global_sample']} declined applicants.\n",
          "## Metrics by group (95% Poisson-bootstrap CIs; gap = group − reference)\n",
          _md_table(main.drop(columns=["too_few"]) if len(main) else main),
          "Groups with fewer than the minimum number of declined applicants (reported, not "
          "compared): " + (", ".join(f"{r['group']}={r['level']} (n={r['n_declined']})"
                                     for r in t["groups_too_few"]) or "none") + "\n",
          "## Fairness of recourse (spread between groups)\n", _md_table(result.fairness),
          "## Global actions\n", _md_table(result.actions),
          "### Global actions by group\n", _md_table(result.actions_by_group)]
    for name in figs:
        md.append(f"![{name}]({name})\n")
    md += ["## Measures and sources\n", _CITES + "\n",
           "## Audit record\n", "```json\n" + json.dumps(result.record, indent=1,
                                                         default=str) + "\n```\n",
           "All metrics by group: `group_metrics.csv`.\n"]
    _write(out / "report.md", "\n".join(md))
    files["report.md"] = out / "report.md"
    _write(out / "report.html", _html_page(result, figs, main))
    files["report.html"] = out / "report.html"
    return files


_CAPTIONS = {
    "cost_by_group.png": "Recourse cost by group: the distribution of the burden (normalised "
                         "raw ℓ1) of each group's counterfactuals.",
    "global_actions.png": "Global actions: the share of the declined sample each action "
                          "covers alone and all actions up to it together.",
    "robust_validity_by_group.png": "Robust validity by group: mean with its 95 % "
                                    "Poisson-bootstrap interval.",
}


def _html_page(result: Any, figs: dict[str, bytes], main: pd.DataFrame) -> str:
    """The report as one self-contained page, styled like the benchmark and demo report
    (:mod:`robustce.evaluation.report`): wide tables scroll inside the page, figures embedded
    with captions, code names as code."""
    from robustce.evaluation.report import _CSS, _scrollable

    t, cfg = result.totals, result.record["config"]
    method = html.escape(str(cfg["method"]))
    few = ", ".join(f"{r['group']}={r['level']} (n={r['n_declined']})"
                    for r in t["groups_too_few"]) or "none"
    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             f"<title>Recourse audit — {method}</title><style>{_CSS}</style></head><body>",
             f"<h1>Recourse audit — method <code>{method}</code></h1>",
             f"<p class='meta'>Rows read: {t['rows']}; declined applicants audited: "
             f"{t['declined_audited']}; with a counterfactual: {t['found']} (coverage "
             f"{t['coverage']:.3f}); partitions: {t['partitions']}; global actions chosen on a "
             f"seeded sample of {t['global_sample']} declined applicants.</p>",
             "<h2>Metrics by group</h2>",
             "<p>95 % Poisson-bootstrap intervals; gap = group − reference group (the largest "
             "of its column).</p>",
             _frame_html(main.drop(columns=["too_few"]) if len(main) else main, _scrollable),
             f"<p>Groups with fewer than the minimum number of declined applicants (reported, "
             f"not compared): {html.escape(few)}.</p>",
             "<h2>Fairness of recourse (spread between groups)</h2>",
             "<p>value = highest − lowest group; the interval is that of the difference "
             "between the two groups named in <em>compared</em>.</p>",
             _frame_html(result.fairness, _scrollable),
             "<h2>Global actions</h2>", _frame_html(result.actions, _scrollable),
             "<h3>Global actions by group</h3>", _frame_html(result.actions_by_group, _scrollable)]
    for name, data in figs.items():
        b64 = base64.b64encode(data).decode()
        parts += ["<figure>", f"<img alt='{html.escape(name)}' src='data:image/png;base64,{b64}'>",
                  f"<figcaption>{html.escape(_CAPTIONS.get(name, name))}</figcaption></figure>"]
    parts += ["<h2>Measures and sources</h2>", f"<p>{html.escape(_CITES)}</p>",
              "<h2>Audit record</h2>",
              f"<pre>{html.escape(json.dumps(result.record, indent=1, default=str))}</pre>",
              "<p>All metrics by group: <code>group_metrics.csv</code>.</p>", "</body></html>"]
    return "\n".join(parts)


def _frame_html(df: pd.DataFrame, wrap: Any) -> str:
    if not len(df):
        return "<p><em>none</em></p>"
    return wrap(df.to_html(index=False, border=0, na_rep="–",
                           float_format=lambda v: f"{v:.4g}"))
