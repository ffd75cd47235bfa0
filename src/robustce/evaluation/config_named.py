"""The named benchmark configurations shipped with the package: one TOML file per paper in
``configs/`` (``robustce benchmark NAME``, ``robustce benchmark --list``), found by name or
given by path."""

from __future__ import annotations

import tomllib
from pathlib import Path

from robustce.errors import ConfigError

__all__ = ["CONFIG_DIR", "config_path", "named_config_path", "named_configs"]

#: the named benchmark configurations shipped with the package (``robustce benchmark NAME``)
CONFIG_DIR = Path(__file__).with_name("configs")


def named_configs() -> dict[str, str]:
    """Name -> one-line description (the ``description`` key) of every shipped configuration."""
    out = {}
    for path in sorted(CONFIG_DIR.glob("*.toml")):
        try:
            description = tomllib.loads(path.read_text()).get("description", "")
        except (OSError, tomllib.TOMLDecodeError) as exc:
            description = f"(unreadable: {exc})"
        out[path.stem] = str(description).strip().splitlines()[0] if description else ""
    return out


def named_config_path(name: str) -> Path:
    """The file of a shipped configuration; :class:`ConfigError` listing the names if unknown."""
    path = CONFIG_DIR / f"{name}.toml"
    if not name or "/" in name or "\\" in name or not path.is_file():
        raise ConfigError(f"no benchmark configuration named {name!r}; named ones: "
                          f"{', '.join(named_configs()) or '(none)'} (or give a path to a .toml file)")
    return path


def config_path(name_or_path: str | Path) -> Path:
    """The file of a configuration given by name or path: an argument that names an existing
    file, ends in ``.toml`` or contains a path separator is a path, anything else a name."""
    text = str(name_or_path)
    if (isinstance(name_or_path, Path) or Path(text).is_file() or text.endswith(".toml")
            or "/" in text or "\\" in text):
        return Path(text)
    return named_config_path(text)
