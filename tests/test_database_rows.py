"""Rows as dicts (db.rows): each result is keyed by its own column names, whatever statement ran
before on the same connection, and a statement that fails leaves the next one answered."""
from __future__ import annotations

import psycopg
import pytest


def test_rows_are_keyed_by_their_own_columns(db):
    with db.pinned():  # one connection, one cursor: every shape below goes through it in turn
        assert db.one("SELECT 1 AS a, 2 AS b") == {"a": 1, "b": 2}
        assert db.one("SELECT 3 AS b, 4 AS a") == {"b": 3, "a": 4}
        assert db.one("SELECT 5 AS a, 6 AS b") == {"a": 5, "b": 6}
        assert db.one('SELECT 7 AS "durée", 8 AS "名前"') == {"durée": 7, "名前": 8}
        assert db.one("SELECT") == {}
        assert db.one("SELECT 1 AS a WHERE false") is None
    with db.connection() as conn:
        assert conn.execute("SELECT 9 AS a, 10 AS b").fetchall() == [{"a": 9, "b": 10}]


def test_a_failed_statement_leaves_the_next_one_answered(db):
    with db.pinned():
        assert db.one("SELECT 1 AS a") == {"a": 1}
        with pytest.raises(psycopg.errors.DivisionByZero):
            db.one("SELECT 1 / 0 AS a")
        assert db.one("SELECT %(n)s::int AS n", {"n": 2}) == {"n": 2}
    with pytest.raises(psycopg.errors.DivisionByZero):
        db.one("SELECT 1 / 0 AS a")
    assert db.one("SELECT 3 AS n") == {"n": 3}
