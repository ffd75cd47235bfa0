"""Griffe extension for the API reference. robustce's docstrings write parameters as
``name : description`` (numpydoc puts a *type* after the colon) and cross-reference with Sphinx
roles. Before griffe parses a docstring, each ``name : description`` entry of a Parameters /
Other Parameters / Attributes section becomes ``name`` + an indented description line (the
type then comes from the signature's annotation), and ``:class:`~a.B``` becomes ```B```."""

from __future__ import annotations

import re
from typing import Any

import griffe

_SECTIONS = {"parameters", "other parameters", "attributes"}
_ENTRY = re.compile(r"^(?P<indent>\s*)(?P<names>\*{0,2}[A-Za-z_]\w*(?:, \*{0,2}[A-Za-z_]\w*)*)"
                    r" : (?P<rest>.+)$")
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|data|obj):`~?(?P<target>[^`]+)`")


def _role_text(match: re.Match[str]) -> str:
    target = match["target"]
    short = match.group(0).split("`")[1].startswith("~")
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def loosen(text: str) -> str:
    """The docstring with ``name : description`` entries rewritten as numpydoc name lines and
    Sphinx roles as code."""
    lines = text.splitlines()
    out: list[str] = []
    section, indent = None, ""
    for i, line in enumerate(lines):
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if line.strip() and len(nxt) >= 3 and set(nxt) == {"-"}:
            section, indent = line.strip().lower(), line[:len(line) - len(line.lstrip())]
        m = _ENTRY.match(line)
        if section in _SECTIONS and m and m["indent"] == indent:
            out += [f"{indent}{m['names']}", f"{indent}    {m['rest']}"]
        else:
            out.append(line)
    return _ROLE.sub(_role_text, "\n".join(out))


class LooseNumpyParameters(griffe.Extension):
    """Rewrite each docstring once the object tree is built (see the module docstring)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = loosen(obj.docstring.value)
