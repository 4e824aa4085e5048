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


def test_statements_kept_per_connection_answer_each_with_its_own_row(db):
    """A statement given as bytes keeps its own cursor on its connection: run in turn with others,
    by name and by position, pinned or not, each answers with its own row; one that failed
    answers at its next run."""
    pair = b"SELECT %(n)s::int AS n, 'pair' AS kind"
    double = b"SELECT %(n)s::int * 2 AS doubled"
    divide = b"SELECT 12 / %(n)s::int AS quotient"
    with db.pinned():
        for n in (1, 2, 3):
            assert db.one(pair, {"n": n}) == {"n": n, "kind": "pair"}
            assert db.one(double, {"n": n}, positional=True) == (2 * n,)
            assert db.one(pair, {"n": n}, positional=True) == (n, "pair")
            assert db.one(divide, {"n": n}) == {"quotient": 12 // n}
        with pytest.raises(psycopg.errors.DivisionByZero):
            db.one(divide, {"n": 0})
        assert db.one(divide, {"n": 4}) == {"quotient": 3}
    assert db.one(pair, {"n": 5}) == {"n": 5, "kind": "pair"}
    assert db.one(double, {"n": 5}, positional=True) == (10,)
