"""Render a :class:`~robustce.notices.notice.Notice`: a JSON document (validated against
``notice.schema.json`` when ``jsonschema`` is installed) and a self-contained printable HTML
page (inline CSS, no scripts, no external assets; print it to PDF from any browser)."""

from __future__ import annotations

import html
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from robustce.errors import ValidationError
from robustce.utils import atomic_write

__all__ = ["notice_schema", "to_html", "to_json", "to_pdf", "validate_notice", "write_notice"]


def notice_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a notice document.

    Examples
    --------
    >>> schema = rc.notices.notice_schema()
    >>> schema["$schema"]
    'https://json-schema.org/draft/2020-12/schema'
    >>> sorted(schema["required"])[:5]
    ['applicant', 'applicant_id', 'decision', 'favourable_outcome', 'kind']
    """
    text = resources.files("robustce.notices").joinpath("notice.schema.json").read_text()
    return json.loads(text)


def validate_notice(doc: dict[str, Any]) -> None:
    """Check ``doc`` against :func:`notice_schema`.

    Parameters
    ----------
    doc : a notice's JSON document (``Notice.to_dict()``).

    Raises
    ------
    ValidationError
        Naming the first violation (path and message).
    ImportError
        Without the optional ``jsonschema`` package (extra ``notice``).

    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> doc = n.to_dict()
    >>> rc.notices.validate_notice(doc)  # passes: returns None
    >>> del doc["decision"]
    >>> rc.notices.validate_notice(doc)
    Traceback (most recent call last):
    ...
    robustce.errors.ValidationError: notice does not match its schema at (root): 'decision' is a ...
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(notice_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.path) or "(root)"
        raise ValidationError(f"notice does not match its schema at {where}: {e.message}")


def to_json(notice: Any, *, validate: bool = True) -> str:
    """The notice as indented JSON; validated first when ``jsonschema`` is available.

    Parameters
    ----------
    notice : a :class:`~robustce.notices.Notice` (or its dict).
    validate : check it against :func:`notice_schema` first.
    Examples
    --------
    >>> import json
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> doc = json.loads(rc.notices.to_json(n))
    >>> doc["kind"], doc["decision"], doc["reasons"][0]["feature"]
    ('robustce.adverse_action_notice', 'rejected', 'housing')
    """
    doc = notice.to_dict() if hasattr(notice, "to_dict") else notice
    if validate:
        try:
            validate_notice(doc)
        except ImportError:
            pass
    return json.dumps(doc, indent=2, ensure_ascii=False)


_CSS = """
body{font-family:Georgia,serif;max-width:46em;margin:2em auto;color:#111;line-height:1.45}
h1{font-size:1.5em;border-bottom:2px solid #333}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{border:1px solid #999;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eee}.small{font-size:.85em;color:#444}
.option{border:1px solid #bbb;padding:.5em 1em;margin:1em 0;page-break-inside:avoid}
h3{font-size:1em;margin-bottom:.2em}
#reviewers{border-top:2px solid #333;margin-top:2.5em}
@media print{body{margin:0}a{color:#111}#reviewers{page-break-before:always}}
"""


def _v(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:,.6g}"
    return html.escape(str(x))


def to_html(notice: Any) -> str:
    """A self-contained printable HTML page of the notice.

    Parameters
    ----------
    notice : a :class:`~robustce.notices.Notice` (or its dict).
    Examples
    --------
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> page = rc.notices.to_html(n)
    >>> page.startswith("<!DOCTYPE html>"), "http" in page  # one self-contained page
    (True, False)
    """
    d = notice.to_dict() if hasattr(notice, "to_dict") else notice
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Notice of adverse action — applicant {_v(d['applicant_id'])}</title>",
             f"<style>{_CSS}</style></head><body>", *_applicant_part(d),
             *_reviewers_part(d),
             f"<p class='small'>Notice format {_v(d['notice_version'])}.</p></body></html>"]
    return "\n".join(parts)


def _applicant_part(d: dict[str, Any]) -> list[str]:
    """The applicant's text: decision, reasons, options with how sure we are, why an option
    is missing, protected characteristics, what to do next (plain words, no symbols)."""
    favourable = _v(d["favourable_outcome"])
    parts = ["<section id='applicant'>", "<h1>Notice of adverse action</h1>",
             f"<p>Applicant: <b>{_v(d['applicant_id'])}</b>. Decision: <b>{_v(d['decision'])}"
             f"</b>.</p><p>{_v(d['statement'])}</p>"]
    if d["reasons"]:
        parts.append("<h2>Principal reasons</h2><table><tr><th></th><th>Reason</th>"
                     f"<th>Your value</th><th>Needed for {favourable}</th>"
                     "<th>Weight in the decision</th></tr>")
        for i, r in enumerate(d["reasons"], 1):
            share = "" if r["share"] is None else f"{100 * r['share']:.0f}%"
            parts.append(f"<tr><td>{i}</td><td>{_v(r['plain_name'])}</td><td>{_v(r['current'])}"
                         f"</td><td>{_v(r['required'])}</td><td>{share}</td></tr>")
        parts.append("</table>")
    if d["options"]:
        parts.append("<h2>What would change the decision</h2>")
    for i, o in enumerate(d["options"], 1):
        n = len(o["changes"])
        parts.append(f"<div class='option'><p><b>Option {i}</b>: change "
                     f"{'this' if n == 1 else f'these {n} things'}.</p>"
                     "<table><tr><th>What</th><th>Now</th><th>Change to</th></tr>")
        for c in o["changes"]:
            parts.append(f"<tr><td>{_v(c['plain_name'])}</td><td>{_v(c['current'])}</td>"
                         f"<td>{_v(c['required'])}</td></tr>")
        parts.append("</table><p>How sure we are:</p><ul>"
                     + "".join(f"<li>{_v(s)}</li>" for s in o["certificates"]) + "</ul></div>")
    if d.get("missing_options"):
        parts.append(f"<p>{_v(d['missing_options'])}</p>")
    if d["protected_features"]:
        parts.append("<p>We did not use these characteristics as reasons, and we never ask you "
                     "to change them: " + ", ".join(_v(p) for p in d["protected_features"])
                     + ".</p>")
    if d.get("next_steps"):
        parts.append(f"<h2>What you can do next</h2><p>{_v(d['next_steps'])}</p>")
    parts.append("</section>")
    return parts


def _reviewers_part(d: dict[str, Any]) -> list[str]:
    """The appendix for reviewers: each option's method, costs and certificates (the
    solver's own, the Δ-test's, vr), then the audit record."""
    rec = d["record"]
    parts = ["<section id='reviewers' class='small'><h2>Appendix for reviewers</h2>"]
    for entry in rec.get("options", []):
        parts.append(f"<h3>Option {entry['option']}</h3><table>")
        rows = [("method", entry["method"]),
                ("cost ℓ1, model space", entry.get("cost_l1_model")),
                ("cost ℓ1, normalised raw changes", entry.get("cost_l1_raw"))]
        if "vr" in entry:
            fam = entry.get("family", {})
            rows.append((f"robust validity vr over {fam.get('n_models')} retrained models "
                         f"({fam.get('protocol')})", entry["vr"]))
        if "shift" in entry:
            sh = entry["shift"]
            sizes = ", ".join(f"{k} {_v(sh[k])}" for k in ("delta", "epsilon") if k in sh)
            rows.append((f"Δ-robustness under {sh.get('kind')} ({sizes})",
                         f"{'proven' if sh.get('proven') else 'not proven'} "
                         f"(status: {sh.get('status')})"))
        for key, value in entry.get("method_certificate", {}).items():
            rows.append((f"{entry['method']} certificate: {key.replace('_', ' ')}", value))
        parts.extend(f"<tr><th>{_v(k)}</th><td>{_v(v)}</td></tr>" for k, v in rows)
        parts.append("</table>")
    parts.append("<h3>Audit record</h3><table>")
    for key in ("model_hash", "model_class", "schema_hash", "seed", "started_at", "created_at"):
        parts.append(f"<tr><th>{key.replace('_', ' ')}</th><td>{_v(rec.get(key))}</td></tr>")
    for m in rec["methods"]:
        parts.append(f"<tr><th>method</th><td>{_v(m['method'])} ({_v(m['status'])}): "
                     f"{_v(json.dumps(m['params'], sort_keys=True, default=str))}</td></tr>")
    versions = ", ".join(f"{k} {v}" for k, v in rec["versions"].items() if v)
    parts.append(f"<tr><th>versions</th><td>{_v(versions)}</td></tr></table></section>")
    return parts


def write_notice(notice: Any, directory: str | os.PathLike, *, stem: str | None = None
                 ) -> tuple[Path, Path]:
    """Write ``<stem>.json`` and ``<stem>.html`` atomically into ``directory``.

    Parameters
    ----------
    notice : the :class:`~robustce.notices.Notice`.
    directory : where to write (created if missing).
    stem : the files' name without suffix (default ``notice_<applicant_id>``).
    Examples
    --------
    >>> import tempfile
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> with tempfile.TemporaryDirectory() as out:
    ...     paths = rc.notices.write_notice(n, out)
    ...     print([p.name for p in paths])
    ['notice_1.json', 'notice_1.html']
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    stem = stem or f"notice_{notice.applicant_id}"
    paths = out / f"{stem}.json", out / f"{stem}.html"
    for path, text in zip(paths, (to_json(notice), to_html(notice)), strict=True):
        with atomic_write(path) as fh:
            fh.write(text)
    return paths


def to_pdf(notice: Any, path: str | os.PathLike, *, executable_path: str | None = None,
           timeout_s: float = 30.0) -> Path:
    """Print the notice's HTML page to a PDF (A4) with headless Chromium via Playwright
    (optional extra ``pdf``), written atomically.

    Parameters
    ----------
    notice : a Notice (or its dict).
    path : the PDF to write.
    executable_path : a Chromium binary; default: the system's ``chromium`` (Debian's
        ``/usr/bin/chromium``) found on ``PATH``.
    timeout_s : give up after this many seconds.

    Raises
    ------
    ImportError
        Without the ``playwright`` package.
    FileNotFoundError
        When no Chromium binary is given or on ``PATH``.

    Examples
    --------
    >>> import pathlib, shutil, tempfile
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> train, test = data.split(test_size=0.25, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(train)
    >>> declined = test.frame[model.predict(test.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, train).explain(declined)
    >>> n = rc.notices.notice(model, declined.index[0], expl, seed=0)
    >>> with tempfile.TemporaryDirectory() as out:  # needs Chromium (Debian's chromium package)
    ...     if shutil.which("chromium"):
    ...         pdf = rc.notices.to_pdf(n, pathlib.Path(out, "notice.pdf"))
    ...         assert pdf.read_bytes().startswith(b"%PDF-")  # an A4 PDF of the HTML page
    """
    import shutil

    from playwright.sync_api import sync_playwright

    if executable_path is None:
        executable_path = shutil.which("chromium") or shutil.which("chromium-browser")
        if executable_path is None:
            raise FileNotFoundError("no Chromium on PATH for the PDF (Debian: apt-get install "
                                    "chromium), or pass executable_path=")
    path = Path(path)
    page_html = to_html(notice)
    with atomic_write(path, "wb") as fh, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable_path, timeout=timeout_s * 1000,
                                     args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_content(page_html, timeout=timeout_s * 1000)
            fh.write(page.pdf(format="A4", print_background=True))
        finally:
            browser.close()
    return path
