"""The benchmarks' own named statements (bench/queries.sql): setting up, filling and measuring a
scratch database. They are no part of the service, so they are read from here, beside the
benchmarks, with the parser the service reads its packaged statements with, and never ship
with the installed package."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from psycopg import sql

from db.queries import named_statements

QUERIES = Path(__file__).resolve().parent / "queries.sql"


@cache
def _statements() -> dict[str, str]:
    return named_statements(QUERIES)


def query(name: str) -> sql.SQL:
    """The benchmark statement called `name`, ready to execute."""
    return sql.SQL(_statements()[name])


def compose(name: str, **parts: sql.Composable) -> sql.Composed:
    """The benchmark statement called `name` with its `{placeholders}` filled by `parts`."""
    return query(name).format(**parts)
