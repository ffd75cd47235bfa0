"""Regenerate the README's constrained example output from a real run.

The README's "Example" block (data, model, rejected applicants, shift) and its "Constraints
between features" block run in one namespace, as a reader pasting them would; what the second
prints (``result.show(...)``) replaces the plain code block right after it. ``--check`` (and
tests/test_readme_example.py) compares instead: numbers equal to a relative 1e-3 (last-digit
differences between machines), everything else exactly.

    python tools/readme_example.py --write     # rewrite the README's output block
    python tools/readme_example.py --check     # exit 1 (and a diff) when it has drifted
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import math
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the example's first block and the constrained block are found by these lines
EXAMPLE_MARK = 'data = rc.datasets.load("synthetic_loan")'
CONSTRAINED_MARK = "c = rc.data.Constraints("
_BLOCK = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```\n", re.DOTALL | re.MULTILINE)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")
REL_TOL = 1e-3


def blocks(text: str) -> tuple[re.Match, re.Match, re.Match]:
    """The example block, the constrained block and the output block after it (a
    :class:`ValueError` saying which is missing)."""
    found = list(_BLOCK.finditer(text))
    try:
        example = next(b for b in found if b["lang"] == "python" and EXAMPLE_MARK in b["body"])
        k, constrained = next((k, b) for k, b in enumerate(found)
                              if b["lang"] == "python" and CONSTRAINED_MARK in b["body"])
    except StopIteration:
        raise ValueError(f"the README has no python block with {EXAMPLE_MARK!r} and one with "
                         f"{CONSTRAINED_MARK!r}") from None
    if k + 1 >= len(found) or found[k + 1]["lang"]:
        raise ValueError("the README's constrained example is not followed by a plain output block")
    return example, constrained, found[k + 1]


def run(text: str) -> str:
    """What the constrained block prints after the example block ran."""
    example, constrained, _ = blocks(text)
    namespace: dict = {"__name__": "__readme__"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(example["body"], "README example", "exec"), namespace)  # noqa: S102
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(constrained["body"], "README constrained example", "exec"), namespace)  # noqa: S102
    return out.getvalue()


def same(a: str, b: str, rel_tol: float = REL_TOL) -> bool:
    """``a`` and ``b`` equal but for numbers within ``rel_tol``."""
    nums_a, nums_b = _NUMBER.findall(a), _NUMBER.findall(b)
    return (_NUMBER.split(a) == _NUMBER.split(b) and len(nums_a) == len(nums_b)
            and all(math.isclose(float(x), float(y), rel_tol=rel_tol, abs_tol=1e-9)
                    for x, y in zip(nums_a, nums_b, strict=True)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the README's output block")
    mode.add_argument("--check", action="store_true", help="exit 1 when the README has drifted")
    ap.add_argument("--readme", type=Path, default=README)
    args = ap.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    output = blocks(text)[2]
    new = run(text)
    if args.write:
        updated = text[:output.start("body")] + new + text[output.end("body"):]
        tmp = args.readme.with_name(f".{args.readme.name}.{os.getpid()}.tmp")
        tmp.write_text(updated, encoding="utf-8")
        os.replace(tmp, args.readme)
        print(f"{args.readme}: example output written")
        return 0
    if same(output["body"], new):
        print(f"{args.readme}: the example output matches a new run")
        return 0
    print("\n".join(difflib.unified_diff(output["body"].splitlines(), new.splitlines(), "README.md",
                                         "a new run", lineterm="")))
    print(f"{args.readme}: the example output has drifted; run python tools/readme_example.py --write",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
