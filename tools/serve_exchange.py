"""Regenerate the example exchange of docs/serve.md ("A real exchange") from a real run.

Starts ``robustce serve`` (the demo model, a token file, an audit log) on a free loopback port,
sends the documented requests — ``/ready``, an explain with certificates, a malformed explain —
and writes the section between ``<!-- exchange:begin -->`` and ``<!-- exchange:end -->`` with
the requests as run and the responses as received (bodies byte for byte; the explain's pretty-
printed as ``python -m json.tool`` does), and the audit log (the explain's record and the refusal's).

The page keeps every value as it came, request ids, times and hashes included. ``--check`` (and
tests/serve/test_docs_exchange.py) regenerates the section and compares it with the page's with
the volatile values masked (:data:`VOLATILE_KEYS`: ids, timestamps, timings, hashes, version
numbers) and the other numbers equal to a relative 1e-3 (last-bit differences between machines);
any other difference — a CE, a margin, a status, a field added or renamed — fails.

    python tools/serve_exchange.py --write       # rewrite docs/serve.md's section
    python tools/serve_exchange.py --check       # exit 1 (and a diff) when the page has drifted
    python tools/serve_exchange.py --write --doc COPY.md --demo-dir DIR
"""

from __future__ import annotations

import argparse
import difflib
import importlib.machinery
import json
import math
import os
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def served_src() -> Path:
    """The ``src`` folder the server runs: the robustce that PYTHONPATH names first (a test's
    checkout, or the mutated copy ``tools/mutants.py`` puts there), else this checkout's."""
    spec = importlib.machinery.PathFinder.find_spec(
        "robustce", [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return Path(spec.origin).resolve().parents[1] if spec and spec.origin else ROOT / "src"

DOC = ROOT / "docs" / "serve.md"
BEGIN = "<!-- exchange:begin -->"
END = "<!-- exchange:end -->"
MODEL_ID = "synthetic_loan"

#: the documented explain request: a rejected demo applicant, the robust method, certificates
REQUEST = {
    "items": [{"id": "a1", "features": {"age": 40, "education": "high_school", "years_employed": 11,
                                        "income": 21387.54, "housing": "mortgage", "debt": 1875.27,
                                        "has_guarantor": 0, "prior_default": "no"}}],
    "method": "milp_robust", "params": {"shift": 0.03}, "target_class": "approved",
    "time_limit_s": 10, "certify": {"delta": 0.03, "apas": {"alpha": 0.999, "R": 0.995}},
}
#: a record with every kind of mistake at once (an unknown category, a value out of bounds, a
#: missing feature), sent as written
MALFORMED = ('{"items": [{"id": "b2", "features": {"age": 40, "education": "phd", "years_employed": 11, '
             '"income": 1e9, "housing": "mortgage", "debt": 1875.27, "has_guarantor": 0}}]}')

#: JSON keys whose values differ from run to run (ids, clocks, timings, hashes, versions): kept
#: on the page as received, masked when the page is compared with a new run
VOLATILE_KEYS = r"request_id|job_id|ts|time|time_s|versions|prev|\w*hash\w*|\w*_at"
_VOLATILE = re.compile(rf'"(?P<key>{VOLATILE_KEYS})"(?P<sep>\s*:\s*)'
                       r'(?P<value>"[^"]*"|\{[^{}]*\}|-?[0-9][0-9.eE+-]*|null)')
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
REL_TOL = 1e-3
#: keys whose figures come from a family of models retrained from scratch (the certificate's
#: retrained-model check): training amplifies the last-bit differences of the CPU's float
#: kernels, so another host's family gives a lowest margin a few parts in 1 000 away (1.18626
#: against 1.18872 on two hosts of this project); compared to 5 %
FAMILY_KEYS = re.compile(r'"(?:lowest_margin)"\s*:\s*$')
FAMILY_REL_TOL = 5e-2


# ----------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------


class Server:
    """``robustce serve`` on the demo model with a token file and an audit log in ``workdir``
    (:class:`~robustce.serve.launcher.ServeProcess`, running :func:`served_src`'s robustce)."""

    def __init__(self, workdir: Path, demo_dir: Path) -> None:
        src = served_src()
        if str(src) not in sys.path:  # the launcher of the robustce the server runs
            sys.path.insert(0, str(src))
        from robustce.serve.launcher import ServeProcess

        self.token = secrets.token_hex(16)
        self.token_file = workdir / "token"
        self.token_file.write_text(self.token + "\n")
        self.audit_log = workdir / "audit.jsonl"
        self.process = ServeProcess(["--demo-dir", str(demo_dir), "--token-file", str(self.token_file),
                                     "--audit-log", str(self.audit_log)], log=workdir / "serve.log", src=src)
        self.url = self.process.url

    def wait_ready(self, timeout: float = 600.0) -> None:
        self.process.wait_ready(timeout)

    def stop(self) -> None:
        self.process.stop()


def _json_tool(body: str) -> str:
    """``body`` as ``python -m json.tool`` prints it."""
    return json.dumps(json.loads(body), indent=4)


def _wrap_json(obj: dict, width: int = 96) -> str:
    """Compact JSON of ``obj`` broken after commas (outside strings) to lines of ``width``."""
    text = json.dumps(obj)
    lines, start, last_break, in_string, escaped = [], 0, None, False, False
    for i, ch in enumerate(text):
        if in_string:
            in_string = not (ch == '"' and not escaped)
            escaped = ch == "\\" and not escaped
            continue
        if ch == '"':
            in_string = True
        elif ch == "," and i + 1 < len(text) and text[i + 1] == " ":
            if i + 1 - start > width and last_break is not None:
                lines.append(text[start:last_break + 1])
                start = last_break + 2
            last_break = i
    if len(text) - start > width and last_break is not None and last_break + 2 > start:
        lines.append(text[start:last_break + 1])
        start = last_break + 2
    lines.append(text[start:])
    return "\n ".join(lines)


def capture(demo_dir: Path | None = None) -> str:
    """Run the exchange against a fresh server and return the section's Markdown (between the
    markers, markers excluded). ``demo_dir``: where the demo model is written, or reused from."""
    import httpx

    with tempfile.TemporaryDirectory(prefix="robustce-exchange-") as tmp:
        work = Path(tmp)
        server = Server(work, demo_dir or work / "demo")
        try:
            server.wait_ready()
            auth = {"Authorization": f"Bearer {server.token}"}
            with httpx.Client(base_url=server.url, timeout=300) as client:
                ready = client.get("/ready")
                explain = client.post(f"/v1/models/{MODEL_ID}/explain", json=REQUEST, headers=auth)
                bad = client.post(f"/v1/models/{MODEL_ID}/explain", content=MALFORMED,
                                  headers={**auth, "content-type": "application/json"})
        finally:
            server.stop()
        if ready.status_code != 200 or explain.status_code != 200 or bad.status_code != 422:
            raise RuntimeError(f"unexpected answers: /ready {ready.status_code}, explain "
                               f"{explain.status_code} {explain.text[:500]}, malformed {bad.status_code}")
        request_id = explain.json()["request_id"]
        audit = server.audit_log.read_text().splitlines()  # /ready is open: no record
        ids = [json.loads(line).get("request_id") for line in audit]
        if ids != [request_id, bad.headers.get("x-request-id")]:
            raise RuntimeError(f"expected the audit records of the explain and the refusal, got {ids}")
    return _render(ready.text, explain.text, bad.text, bad.status_code, "\n".join(audit))


def _render(ready: str, explain: str, bad: str, bad_code: int, audit_lines: str) -> str:
    curl = (f"curl -s -X POST localhost:8000/v1/models/{MODEL_ID}/explain "
            '-H "authorization: Bearer $TOKEN"')
    return f"""
Generated by `python tools/serve_exchange.py --write` from a real run of

```
robustce serve --demo-dir demo --token-file token --audit-log audit.jsonl
```

(the token file holds `$TOKEN`); a test reruns it and fails when this section no longer matches
what the service answers (request ids, times, hashes and version numbers excepted).
`request.json` being:

```json
{_wrap_json(REQUEST)}
```

```
$ curl -s localhost:8000/ready
{ready}
$ {curl} \\
    -H 'content-type: application/json' -d @request.json | python -m json.tool
{_json_tool(explain)}
```

A malformed record gets every bad field at once:

```
$ {curl} \\
    -H 'content-type: application/json' -w '\\n[HTTP %{{http_code}}]\\n' \\
    -d '{MALFORMED}'
{bad}
[HTTP {bad_code}]
```

The audit log then holds one hash-chained line per request, the refused one included (`prev`:
the SHA-256 of the line before; `robustce audit-log verify audit.jsonl` checks the chain):

```
{audit_lines}
```
"""


# ----------------------------------------------------------------------------------------
# The page
# ----------------------------------------------------------------------------------------


def section(text: str) -> str:
    """The text between the markers (:class:`ValueError` naming them when they are not there
    once each, in order)."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"the page must hold {BEGIN} and then {END}, once each")
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


def replace_section(text: str, new: str) -> str:
    """``text`` with its section replaced by ``new``; everything else unchanged."""
    section(text)  # checks the markers
    return text[:text.index(BEGIN) + len(BEGIN)] + new + text[text.index(END):]


def masked(text: str) -> str:
    """``text`` with the values of :data:`VOLATILE_KEYS` replaced by ``…``."""
    return _VOLATILE.sub(lambda m: f'"{m["key"]}"{m["sep"]}"…"', text)


def differences(page: str, run: str, rel_tol: float = REL_TOL) -> list[str]:
    """How two sections differ once masked (numbers equal within ``rel_tol``): unified-diff
    lines, empty when they agree."""
    a, b = masked(page), masked(run)
    if _same(a, b, rel_tol):
        return []
    return list(difflib.unified_diff(a.splitlines(), b.splitlines(), "docs/serve.md (page)",
                                     "a new run", lineterm=""))


def _same(a: str, b: str, rel_tol: float) -> bool:
    split_a, split_b = _NUMBER.split(a), _NUMBER.split(b)
    nums_a, nums_b = list(_NUMBER.finditer(a)), list(_NUMBER.finditer(b))
    if split_a != split_b or len(nums_a) != len(nums_b):
        return False
    return all(math.isclose(float(x[0]), float(y[0]), abs_tol=1e-9,
                            rel_tol=FAMILY_REL_TOL if FAMILY_KEYS.search(a, 0, x.start()) else rel_tol)
               for x, y in zip(nums_a, nums_b, strict=True))


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the page's section")
    mode.add_argument("--check", action="store_true", help="exit 1 when the page has drifted")
    ap.add_argument("--doc", type=Path, default=DOC, help="the page (default docs/serve.md)")
    ap.add_argument("--demo-dir", type=Path, default=None,
                    help="where the demo model is written (reused when present; default: a temporary folder)")
    args = ap.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    section(text)  # the markers, before the run
    started = time.monotonic()
    run = capture(args.demo_dir)
    elapsed = time.monotonic() - started
    if args.write:
        atomic_write_text(args.doc, replace_section(text, run))
        print(f"{args.doc}: exchange section written ({elapsed:.0f} s)")
        return 0
    diff = differences(section(text), run)
    if diff:
        print("\n".join(diff))
        print(f"{args.doc}: the exchange has drifted; run python tools/serve_exchange.py --write",
              file=sys.stderr)
        return 1
    print(f"{args.doc}: the exchange matches a new run ({elapsed:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
