"""docs/ledger.md: the code the documentation build executes runs here too (one session, as
markdown-exec runs it), and what it prints is what the page says it is."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "ledger.md"
BLOCK = re.compile(r'^```python [^\n]*exec="on"[^\n]*\n(?P<code>.*?)^```', re.DOTALL | re.MULTILINE)


def test_the_ledger_page_runs(capsys):
    blocks = [m.group("code") for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]
    assert len(blocks) >= 5
    namespace: dict = {"__name__": "ledger_page"}
    for code in blocks:
        exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
    out = capsys.readouterr().out
    report, ids = namespace["report"], namespace["ids"]
    assert f"{len(ids)} promises recorded" in out
    assert report.outstanding == len(ids) and report.broken  # the walk-through shows a repair
    assert "passes at 0.5" in out or report.honour_rate < 0.5
    kept = namespace["kept"]
    assert kept.honoured == kept.outstanding == len(ids)  # v2 breaks only promises of v1
    assert namespace["v1"].predict is not None and "deciding version of applicant" in out
