"""Named queries, loaded from the `.sql` files beside this module, and the one place where SQL
is composed in Python.

Each statement sits under a `-- name: NAME` line; the text up to the next such line is its body.
A few bodies hold a `{placeholder}` for a SET list whose columns the code names (the columns a
step owns, the guards the domain's resume resets): `compose` fills it with `assignments`. No
identifier or value from user input is ever formatted into a statement; values always travel as
parameters.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import cache
from pathlib import Path

from psycopg import sql

_HERE = Path(__file__).parent
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def named_statements(path: Path) -> dict[str, str]:
    """The statements of one `.sql` file by name, read as the packaged ones are: for SQL that is
    not the service's and so is not shipped with it (the benchmarks' own)."""
    path = Path(path)
    parts = _NAME.split(path.read_text())
    found: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in found:
            raise ValueError(f"query {name!r} is defined twice ({path.name})")
        found[name] = body.strip()
    return found


@cache
def _statements() -> dict[str, str]:
    queries: dict[str, str] = {}
    for path in sorted((_HERE / "queries").glob("*.sql")):
        for name, body in named_statements(path).items():
            if name in queries:
                raise ValueError(f"query {name!r} is defined twice ({path.name})")
            queries[name] = body
    return queries


def query(name: str) -> sql.SQL:
    """The statement called `name`, ready to execute."""
    return sql.SQL(_statements()[name])


@cache
def text(name: str) -> bytes:
    """The statement called `name` as bytes, for the statements of every claim cycle. psycopg
    sends bytes as they are; a str it encodes again at each execution, and the new bytes are
    hashed again for its caches of converted and prepared statements: together more client CPU
    than decoding the cycle's rows. A sql.SQL costs more still, converted again
    at every execution. These statements are ASCII, which reads the same in every client
    encoding."""
    return _statements()[name].encode("ascii")


def compose(name: str, **parts: sql.Composable) -> sql.Composed:
    """The statement called `name` with its `{placeholders}` filled by `parts`."""
    return query(name).format(**parts)


def assignments(columns: Iterable[str], param_prefix: str, *, set_to_now: Collection[str] = ()) -> sql.Composed:
    """The SET list `column = %(<param_prefix>column)s, …` for columns the code names, each
    quoted as an identifier; a column in `set_to_now` is set to `now()` instead of a parameter."""
    return sql.SQL(", ").join(
        sql.SQL("{} = now()").format(sql.Identifier(column))
        if column in set_to_now
        else sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(param_prefix + column))
        for column in columns
    )


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
