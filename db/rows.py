"""Rows as dicts whose column names are decoded once per result shape, not at every statement.

psycopg's own `dict_row` decodes every column name of every result: for the claim cycle's
`SELECT * FROM records` that is one decode per column per execution, and dict rows cost the cycle
more client CPU than its three statements' tuple rows. The names are still read from
each result, so a result of another shape (a migration that adds or renames a column) gets names
of its own: only their decoding is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import psycopg
from psycopg.pq import ExecStatus
from psycopg.rows import DictRow, RowMaker, no_result

# A connection of the pool (`db.database`) or any other made with `dict_row`: its rows are dicts.
DictConnection: TypeAlias = psycopg.Connection[DictRow]

_ROWS = (ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE, ExecStatus.TUPLES_CHUNK)


def dict_row(cursor: psycopg.Cursor[Any]) -> RowMaker[DictRow]:
    """The row factory of every pooled connection: rows as dicts keyed by column name."""
    result = cursor.pgresult
    if result is None or not (result.status in _ROWS or (result.status == ExecStatus.COMMAND_OK and result.nfields)):
        return no_result
    raw = tuple(map(result.fname, range(result.nfields)))
    return _MAKERS.get(raw) or _maker(raw, cursor)


def only_row(cursor: psycopg.Cursor[DictRow]) -> DictRow:
    """The row of a statement that always returns one (an aggregate, an INSERT ... RETURNING): a
    missing one is a broken statement, and says so rather than failing as a subscripted None."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("a statement that always returns a row returned none")
    return row


# a row maker per result shape met so far: a fixed set, the service's own statements
_MAKERS: dict[tuple[bytes | None, ...], RowMaker[DictRow]] = {}
_KEPT_SHAPES = 512


def _maker(raw: tuple[bytes | None, ...], cursor: psycopg.Cursor[Any]) -> RowMaker[DictRow]:
    """The row maker of a shape not met yet. ASCII names read the same in every client
    encoding, so one decoding serves every connection and is kept; names beyond ASCII are
    decoded at each result, in their connection's encoding."""
    # fname is None only for a field number past the last: never, for range(nfields)
    fields = tuple(name or b"" for name in raw)
    if not all(map(bytes.isascii, fields)):
        return _make_rows(tuple(name.decode(cursor.connection.info.encoding) for name in fields))
    maker = _make_rows(tuple(name.decode("ascii") for name in fields))
    if len(_MAKERS) < _KEPT_SHAPES:  # ad hoc statements of other shapes are decoded, not kept
        _MAKERS[raw] = maker
    return maker


def _make_rows(names: tuple[str, ...]) -> RowMaker[DictRow]:
    def make_row(values: Sequence[Any]) -> DictRow:
        return dict(zip(names, values, strict=True))

    return make_row
