"""A scratch database for a benchmark: on TRANSCRIBER_DATABASE_URL's server if set, else on the
embedded one under TRANSCRIBER_HOME; dropped when the benchmark is done with it."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import psycopg
from psycopg import sql

from db.database import embedded_url
from service import config

# one of this process's own: two benchmarks running at once never drop each other's
NAME = f"transcriber_bench_{os.getpid()}"


def _admin(statement: sql.Composed, admin_url: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(statement)


@contextlib.contextmanager
def scratch_database(name: str = NAME) -> Iterator[str]:
    """A fresh database called `name` (a benchmark that runs long names its own, so that another
    one started meanwhile does not drop it)."""
    settings = config.load()
    admin_url = settings.database_url or embedded_url(settings.home)
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    _admin(drop, admin_url)
    _admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)), admin_url)
    info = psycopg.conninfo.conninfo_to_dict(admin_url)
    info["dbname"] = name
    try:
        yield psycopg.conninfo.make_conninfo(**info)
    finally:
        _admin(drop, admin_url)
