"""db/schema.txt, the description a reader takes the schema from, is the schema the migrations
build: on the suite's server, PostgreSQL 15 here or the embedded 16 (the server's words for the
definitions are the same in both)."""
from __future__ import annotations

import difflib

from db import schema

CHECKED_IN = schema.SCHEMA_FILE


def _differences(expected: str, found: str) -> str:
    return "".join(difflib.unified_diff(expected.splitlines(keepends=True), found.splitlines(keepends=True),
                                        "db/schema.txt (checked in)", "built by the migrations"))


def test_the_checked_in_description_is_the_schema_the_migrations_build(db):
    """A migration that changes the schema changes db/schema.txt with it; the failure says how
    to rewrite the file."""
    found = schema.describe(db)
    expected = CHECKED_IN.read_text()
    assert found == expected, (
        f"db/schema.txt differs from the schema the migrations build; rewrite it with `{schema.REWRITE}`:\n"
        + _differences(expected, found))


def test_the_command_rewrites_the_description_from_a_fresh_database(db, database_url, tmp_path, monkeypatch,
                                                                     capsys):
    """`python -m db.schema --fresh --write URL` writes what the check above compares with, from a
    database of its own that it drops afterwards; without --fresh it prints the database at URL."""
    written = tmp_path / "schema.txt"
    monkeypatch.setattr(schema, "SCHEMA_FILE", written)
    assert schema.main(["--fresh", "--write", database_url]) == 0
    assert written.read_text() == CHECKED_IN.read_text()
    with db.connection() as conn:
        left = conn.execute("SELECT datname FROM pg_database WHERE datname = %s", [schema.SCRATCH_NAME]).fetchall()
    assert left == []
    capsys.readouterr()
    assert schema.main([database_url]) == 0
    assert capsys.readouterr().out == CHECKED_IN.read_text()
