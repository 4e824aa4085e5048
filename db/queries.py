"""Named queries, loaded from the `.sql` files beside this module.

Each statement sits under a `-- name: NAME` line; the text up to the next such line is its body.
A body may hold `{placeholders}` for column lists that the store composes from identifiers
the code names (never from user input).
"""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from psycopg import sql

_HERE = Path(__file__).parent
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def _parse(text: str) -> dict[str, str]:
    parts = _NAME.split(text)
    found: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"query {name!r} is defined twice")
        found[name] = body.strip()
    return found


@cache
def _all() -> dict[str, str]:
    queries: dict[str, str] = {}
    for path in sorted((_HERE / "queries").glob("*.sql")):
        for name, body in _parse(path.read_text()).items():
            if name in queries:
                raise ValueError(f"query {name!r} is defined twice ({path.name})")
            queries[name] = body
    return queries


def query(name: str) -> sql.SQL:
    """The statement called `name`, ready to execute."""
    return sql.SQL(_all()[name])


def template(name: str) -> str:
    """The statement called `name` as text, for one holding `{placeholders}`."""
    return _all()[name]


def migrations(*directories: Path) -> list[tuple[int, str, str]]:
    """Numbered migrations `NNNN_name.sql` from the packaged folder and any extra ones, in order."""
    found: dict[int, tuple[str, str]] = {}
    for directory in (_HERE / "migrations", *directories):
        for path in sorted(Path(directory).glob("*.sql")):
            number, _, name = path.stem.partition("_")
            version = int(number)
            if version in found:
                raise ValueError(f"migration {version} is defined twice ({path})")
            found[version] = (name, path.read_text())
    return [(version, *found[version]) for version in sorted(found)]
