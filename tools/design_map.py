"""The map of robustce's rooms, generated from the code: which packages and modules there are, and
which way they call.

A *room* is a package (a folder with ``__init__.py``; a sub-package is a room of its own) or a
module at the top of ``robustce`` (``errors.py``, ``distance.py``, …). Room A *calls* room B when a
module of A imports a module of B — every ``import`` / ``from … import`` counts, at module level
or inside a function, as in ``tests/test_layering.py``. Nothing is listed by hand: a new package
or a split file appears on the next run.

    python tools/design_map.py              # the Markdown page on stdout
    python tools/design_map.py --out FILE   # written to FILE

The documentation build runs it (``docs/hooks/design_map.py``) and publishes the page as
``design-map.md``, so the map cannot drift from the code.
"""

import argparse
import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "robustce"


@dataclass
class Module:
    """One source file: its dotted name, room, size, first docstring line and imports."""

    name: str
    path: Path
    room: str
    lines: int
    summary: str
    imports: set[str] = field(default_factory=set)


def module_names(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted name -> file for every ``.py`` file of ``package`` under ``src``."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def room_of(name: str, path: Path, package: str = PACKAGE) -> str:
    """The room of a module: its package, or itself when it is a module at the package's top."""
    if path.name == "__init__.py":
        return name
    parent = name.rsplit(".", 1)[0]
    return name if parent == package else parent


def import_lines(name: str, path: Path, modules: dict[str, Path],
                 package: str = PACKAGE) -> list[tuple[str, int]]:
    """(imported ``package`` module, line) for every import statement in the file, itself
    excluded; an attribute import counts as its module. A name that is no module of
    ``modules`` is kept (``tests/test_layering.py`` reports it as in no layer)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from pkg import sub` imports the sub-module pkg.sub when it is one
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
        else:
            continue
        for target in targets:
            if target == package or target.startswith(package + "."):
                while target not in modules and "." in target:  # an attribute, not a module
                    target = target.rsplit(".", 1)[0]
                if target != name:
                    found.append((target, node.lineno))
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path], package: str = PACKAGE) -> set[str]:
    """The ``package`` modules that the file imports (itself excluded)."""
    return {t for t, _ in import_lines(name, path, modules, package) if t in modules}


_ROLE = re.compile(r":(?:class|func|mod|meth|attr|data|exc|obj):`~?\.?([^`]+)`")


def first_line(path: Path) -> str:
    """The first sentence of a file's docstring, as Markdown ('' when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    sentence = re.split(r"(?<=[.!?])\s", paragraph, maxsplit=1)[0]
    return _ROLE.sub(r"`\1`", sentence).replace("``", "`")


def scan(src: Path = SRC, package: str = PACKAGE) -> dict[str, Module]:
    """Every module of ``package``, with its room and imports."""
    names = module_names(src, package)
    out = {}
    for name, path in names.items():
        text = path.read_text(encoding="utf-8")
        out[name] = Module(name, path, room_of(name, path, package), len(text.splitlines()),
                           first_line(path), imports_of(name, path, names, package))
    return out


def room_calls(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Room -> the other rooms it calls."""
    calls: dict[str, set[str]] = {m.room: set() for m in modules.values()}
    for m in modules.values():
        calls[m.room] |= {modules[t].room for t in m.imports} - {m.room}
    return calls


def bottom_up(calls: dict[str, set[str]]) -> list[str]:
    """Rooms, those that call nothing first: each room after every room it calls, as far as
    circles allow (a circle is broken at its alphabetically first room)."""
    done: list[str] = []
    left = dict(calls)
    while left:
        ready = sorted(r for r, c in left.items() if not (c & left.keys()))
        if not ready:  # a circle between rooms: take the room with fewest open calls
            ready = [min(left, key=lambda r: (len(left[r] & left.keys()), r))]
        for r in ready:
            done.append(r)
            del left[r]
    return done


def _short(name: str, package: str) -> str:
    return name[len(package) + 1:] if name.startswith(package + ".") else name


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _names(items: Iterable[str], package: str) -> str:
    return ", ".join(f"`{_short(i, package)}`" for i in items) or "–"


def render(modules: dict[str, Module], package: str = PACKAGE) -> str:
    """The Markdown page: rooms bottom-up with their calls, then every module."""
    calls = room_calls(modules)
    called_by: dict[str, set[str]] = {r: set() for r in calls}
    for room, targets in calls.items():
        for t in targets:
            called_by[t].add(room)
    order = bottom_up(calls)
    rank = {r: i for i, r in enumerate(order)}
    members: dict[str, list[Module]] = {r: [] for r in calls}
    for m in modules.values():
        members[m.room].append(m)

    out = [
        "# Design map",
        "",
        "Generated from the code by `tools/design_map.py` when the site is built; do not edit. "
        "A *room* is a package of `src/" + package + "` (a sub-package is a room of its own) or a "
        "module at its top; room A *calls* room B when a module of A imports one of B (lazy "
        "imports inside functions included). Rooms are listed bottom-up: each after the rooms it "
        "calls; a call marked *(circle)* goes to a room listed later, which only an import circle "
        "between rooms makes possible. The layering rule "
        "itself is enforced by `tests/test_layering.py`; the reasons are in "
        "[Design decisions](design.md).",
        "",
        f"{len(calls)} rooms, {len(modules)} modules, "
        f"{sum(m.lines for m in modules.values())} lines.",
        "",
        "## Rooms and which way they call",
        "",
        "| room | what it is | modules | calls | called by |",
        "|---|---|---|---|---|",
    ]
    for room in order:
        own = sorted(members[room], key=lambda m: m.name)
        head = next((m for m in own if m.name == room), None)
        inner = [_short(m.name, room) for m in own if m.name != room]
        mods = ", ".join(f"`{n}`" for n in inner) if inner else "(one file)"
        against = [t for t in calls[room] if rank[t] > rank[room]]
        call_list = sorted(calls[room], key=lambda r: rank[r])
        call_text = ", ".join(f"`{_short(t, package)}`" + (" (circle)" if t in against else "")
                              for t in call_list) or "–"
        out.append(f"| `{_short(room, package)}` | {_cell(head.summary if head else '')} | {mods} "
                   f"| {call_text} | {_names(sorted(called_by[room], key=lambda r: rank[r]), package)} |")

    out += [
        "",
        "## Modules",
        "",
        "Each module of each room, with the rooms it calls (its own room's modules are not listed).",
        "",
        "| module | lines | what it is | calls |",
        "|---|---|---|---|",
    ]
    for room in order:
        for m in sorted(members[room], key=lambda m: m.name):
            others = sorted({modules[t].room for t in m.imports} - {room}, key=lambda r: rank[r])
            out.append(f"| `{_short(m.name, package)}` | {m.lines} | {_cell(m.summary)} "
                       f"| {_names(others, package)} |")
    return "\n".join(out) + "\n"


def build(src: Path = SRC, package: str = PACKAGE) -> str:
    """The map of ``package`` under ``src`` as Markdown."""
    return render(scan(src, package), package)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the page here (default: stdout)")
    parser.add_argument("--src", type=Path, default=SRC, help="the folder that holds the package")
    args = parser.parse_args(argv)
    text = build(args.src)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
