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
    body = []
    for block in md:
        if block.startswith("!["):
            name = block[2:block.index("]")]
            b64 = base64.b64encode(figs[name]).decode()
            body.append(f"<img alt='{name}' src='data:image/png;base64,{b64}'>")
        elif block.startswith("|"):
            body.append(_html_table(block))
        elif block.startswith("```"):
            body.append("<pre>" + html.escape(block.strip("`\n").removeprefix("json\n")) + "</pre>")
        elif block.startswith("#"):
            level = len(block) - len(block.lstrip("#"))
            body.append(f"<h{level}>{html.escape(block.lstrip('# ').strip())}</h{level}>")
        else:
            body.append(f"<p>{html.escape(block.strip())}</p>")
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Recourse "
            "audit</title><style>body{font-family:sans-serif;max-width:72em;margin:2em auto}"
            "table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #aaa;"
            "padding:2px 6px}img{max-width:100%}</style></head><body>" + "\n".join(body)
            + "</body></html>")
    _write(out / "report.html", page)
    files["report.html"] = out / "report.html"
    return files


def _html_table(md: str) -> str:
    rows = [r.strip().strip("|").split("|") for r in md.strip().splitlines()]
    head, data = rows[0], rows[2:]
    out = ["<table><tr>" + "".join(f"<th>{html.escape(c.strip())}</th>" for c in head) + "</tr>"]
    for r in data:
        out.append("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in r) + "</tr>")
    return "".join(out) + "</table>"
