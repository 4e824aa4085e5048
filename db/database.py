"""The connection pool, the embedded server for machines without one, and migrations."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import psycopg
from loguru import logger
from psycopg import errors
from psycopg.abc import Params, PQGen, QueryNoTemplate
from psycopg.rows import DictRow, TupleRow, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from db.bounds import NoAnswer, thread_bound
from db.queries import migrations, query
from db.rows import dict_row
from domain.errors import TranscriberError
from domain.redact import redact_url

CONNECT_TIMEOUT_SECONDS = 10
# Every connection of the service's is bounded by the operating system too, so that a peer gone
# silent (a network cut, a half-open connection after a failover) ends it instead of a statement
# waiting forever: an idle connection is probed after 10 s, three unanswered probes 5 s apart end
# it, and bytes sent but unacknowledged for 20 s end it. libpq connection parameters.
CONNECTION_BOUNDS: dict[str, Any] = dict(
    keepalives=1, keepalives_idle=10, keepalives_interval=5, keepalives_count=3, tcp_user_timeout=20_000
)
# How long a thread waits for a pooled connection: well under any lease (one second at least).
POOL_WAIT_SECONDS = 5.0
# A pool that cannot reconnect gives up its backoff (1, 2, 4, 8 s) after this and starts afresh at
# the next demand: a worker is back at work seconds after the database is, whatever the outage.
POOL_RECONNECT_SECONDS = 15.0

Answer = TypeVar("Answer")


class DatabaseUnavailable(TranscriberError, code="database_unavailable"):
    """The database could not be reached within a bounded wait."""


# the errors that say the database could not be reached (the connection, not the statement)
UNREACHABLE = (psycopg.OperationalError, PoolTimeout, DatabaseUnavailable)


def unreachable(error: BaseException) -> bool:
    """Whether `error` says the database could not be reached, rather than a statement failed."""
    return isinstance(error, UNREACHABLE) and not isinstance(error, errors.QueryCanceled)


class PooledConnection(psycopg.Connection[DictRow]):
    """A pooled connection that keeps a cursor for each statement given to `Database.one` as
    bytes (`db.queries.text`: the claim cycle's). A cursor run again on its statement reuses what
    it set up for that statement's parameters and rows the time before; the fresh cursor of each
    `Connection.execute` cost the claim cycle more client instructions than all its rows, and one
    cursor shared by the cycle's three statements still a tenth more than one each. A kept
    cursor holds its statement's last row until its next run, no more."""

    KEPT_CURSORS = 32  # the claim cycle's statements are a handful; more are not kept

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.statement_cursors: dict[tuple[bytes, bool], psycopg.Cursor[Any]] = {}

    def one(
        self, statement: QueryNoTemplate, params: Params | None = None, *, positional: bool = False
    ) -> DictRow | TupleRow | None:
        """Run one statement; its first row (see `Database.one`)."""
        key = (statement, positional) if isinstance(statement, bytes) else None
        cursor = self.statement_cursors.get(key) if key is not None else None
        if cursor is None:
            cursor = self.cursor(row_factory=tuple_row) if positional else self.cursor()
            if key is not None and len(self.statement_cursors) < self.KEPT_CURSORS:
                self.statement_cursors[key] = cursor
        return cursor.execute(statement, params).fetchone()

    def wait(self, gen: PQGen[Answer], *args: Any, **kwargs: Any) -> Answer:
        """psycopg's wait for an answer, bounded by the thread's bound (`bounded`). A database
        that keeps the connection open and answers nothing (a relay, a firewall, a half-open
        connection the keepalives have not ended yet) would otherwise hold the thread forever."""
        bound = thread_bound()
        return super().wait(gen if bound is None else self._within(gen, bound), *args, **kwargs)

    def _within(self, gen: PQGen[Answer], seconds: float) -> PQGen[Answer]:
        """`gen`, ended with NoAnswer once nothing has come for `seconds`: psycopg's wait resumes
        it with "nothing ready" every tenth of a second while it waits."""
        deadline = time.monotonic() + seconds
        try:
            state = next(gen)
            while True:
                ready = yield state
                if not ready and time.monotonic() >= deadline:
                    self.pgconn.finish()  # the statement's fate is unknown: the connection is not reused
                    raise NoAnswer(f"no answer from the database within {seconds:g}s")
                state = gen.send(ready)
        except StopIteration as stop:
            answer: Answer = stop.value
            return answer


class RecentFirstPool(ConnectionPool[PooledConnection]):
    """A pool that hands out the connection returned last, where psycopg's hands out the one
    idle longest. A lone busy worker beside idle ones then keeps one warm connection and server
    process instead of taking each of them in turn: in turn, its claim cycles ran 0.7-0.9x as
    fast as on one connection. The connections idle longest stay at the end the
    pool shrinks from."""

    def _get_ready_connection(self, timeout: float | None) -> PooledConnection | None:
        # called under the pool's lock; psycopg takes the longest idle, put back in its place
        conn = super()._get_ready_connection(timeout)
        if conn is not None and self._pool:
            self._pool.appendleft(conn)
            conn = self._pool.pop()
        return conn


class Database:
    """A pool of connections to one database. Every connection returns rows as dicts."""

    def __init__(self, url: str, *, max_size: int = 10, name: str = "transcriber"):
        self.url = url
        self._pool = RecentFirstPool(
            url,
            connection_class=PooledConnection,
            min_size=1,
            max_size=max_size,
            kwargs=self.connection_parameters(),
            name=name,
            open=False,
            timeout=POOL_WAIT_SECONDS,
            reconnect_timeout=POOL_RECONNECT_SECONDS,
        )
        # a thread's connection while it works one record (`pinned`)
        self._pinned = threading.local()
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
        except PoolTimeout as error:
            self._pool.close()
            raise DatabaseUnavailable(
                f"database unreachable at {redact_url(url)} within {CONNECT_TIMEOUT_SECONDS}s"
            ) from error

    @staticmethod
    def connection_parameters(connect_timeout: float = CONNECT_TIMEOUT_SECONDS) -> dict[str, Any]:
        # autocommit: a statement run on its own is its own transaction, one round trip with
        # no BEGIN and COMMIT around it; `transaction()` opens one explicitly
        return {
            "row_factory": dict_row,
            "connect_timeout": max(2, round(connect_timeout)),  # libpq's least
            "autocommit": True,
            **CONNECTION_BOUNDS,
        }

    def own_connection(self, timeout: float) -> PooledConnection:
        """A connection of the caller's own, outside the pool, made within `timeout` seconds
        (two at least): for a thread that must not wait behind the pool's users (a lease's
        renewals). The caller closes it."""
        return PooledConnection.connect(self.url, **self.connection_parameters(timeout))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PooledConnection]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        with self._pool.connection(timeout=_pool_wait()) as conn, conn.transaction():
            yield conn

    def connection(self) -> contextlib.AbstractContextManager[PooledConnection]:
        """A connection outside any transaction: each statement on it is its own transaction,
        sent in a single round trip. For statements that need not commit together. Inside
        `pinned`, the thread's own connection."""
        conn = self._pinned_connection()
        return self._pool.connection(timeout=_pool_wait()) if conn is None else contextlib.nullcontext(conn)

    def pinned(self) -> contextlib.AbstractContextManager[None]:
        """Within this block, every `connection()` and `one()` of this thread is on one and the
        same pooled connection, taken once: a worker's claim, read and save cost one pool
        checkout instead of three (the checkout and return were a quarter of the claim cycle's
        client CPU). `transaction()` still takes a connection of its own. Nested blocks share
        the outermost one's connection."""
        return _Pinned(self._pool, self._pinned)

    @overload
    def one(
        self, statement: QueryNoTemplate, params: Params | None = None, *, positional: Literal[False] = False
    ) -> DictRow | None: ...

    @overload
    def one(
        self, statement: QueryNoTemplate, params: Params | None = None, *, positional: Literal[True]
    ) -> TupleRow | None: ...

    @overload
    def one(
        self, statement: QueryNoTemplate, params: Params | None = None, *, positional: bool
    ) -> DictRow | TupleRow | None: ...

    def one(
        self, statement: QueryNoTemplate, params: Params | None = None, *, positional: bool = False
    ) -> DictRow | TupleRow | None:
        """Run one statement as its own transaction (a single round trip); its first row, a dict,
        or with `positional` a tuple in the statement's column order: cheaper to make, for the
        claim cycle's statements whose few columns the caller unpacks."""
        conn = self._pinned_connection()
        if conn is None:
            with self._pool.connection(timeout=_pool_wait()) as conn:
                return conn.one(statement, params, positional=positional)
        return conn.one(statement, params, positional=positional)

    @contextlib.contextmanager
    def on(self, conn: PooledConnection) -> Iterator[None]:
        """Within this block, every `connection()` and `one()` of this thread run on `conn`, a
        connection of the caller's own (`own_connection`): lost, it is not replaced from the
        pool, and a statement on it fails."""
        outer = self._pinned.__dict__.pop("conn", None)
        self._pinned.conn, self._pinned.own = conn, True
        try:
            yield
        finally:
            del self._pinned.own
            self._pinned.conn = outer

    def _pinned_connection(self) -> PooledConnection | None:
        """This thread's connection inside `pinned` (None outside), replaced if it was lost."""
        conn = getattr(self._pinned, "conn", None)
        if conn is None or not conn.closed:
            return conn
        if getattr(self._pinned, "own", False):
            raise psycopg.OperationalError("the connection is closed")
        return self._replace_pinned()

    def _replace_pinned(self) -> PooledConnection:
        """The pinned connection was lost meanwhile (a restarted server; broken ones are closed
        too): back to the pool, which replaces it, and a fresh one in its place."""
        self._pool.putconn(self._pinned.__dict__.pop("conn"))
        self._pinned.conn = conn = self._pool.getconn(_pool_wait())
        return conn

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def migrate(self, *extra_directories: Path) -> list[int]:
        """Apply the migrations not yet recorded, in order, each in its own transaction.

        Idempotent, and safe beside running workers: an advisory lock keeps two migrators apart.
        Returns the versions applied now.
        """
        applied_now = []
        with self.transaction() as conn:
            conn.execute(query("create_migrations_table"))
        for version, name, text in migrations(*extra_directories):
            with self.transaction() as conn:
                conn.execute(query("lock_migrations"))
                applied = {row["version"] for row in conn.execute(query("applied_migrations"))}
                if version in applied:
                    continue
                conn.execute(text)
                conn.execute(query("record_migration"), {"version": version, "name": name})
                applied_now.append(version)
                logger.info("migration {} ({}) applied", version, name)
        return applied_now

    def ping(self, timeout: float | None = None) -> bool:
        """Whether the database answers; `timeout` bounds the wait for a pooled connection."""
        try:
            with self._pool.connection(timeout=timeout) as conn:
                row = conn.execute(query("ping")).fetchone()
                return row is not None and row["ok"] == 1
        except (psycopg.Error, PoolTimeout):
            return False


class _Pinned:
    """`Database.pinned`'s block: a class rather than a generator, which costs a claim cycle
    more to enter and leave."""

    def __init__(self, pool: ConnectionPool[PooledConnection], pinned: threading.local):
        self._pool, self._state, self._outermost = pool, pinned, False

    def __enter__(self) -> None:
        if getattr(self._state, "conn", None) is None:
            self._state.conn = self._pool.getconn(_pool_wait())
            self._outermost = True

    def __exit__(self, *exc: object) -> None:
        if self._outermost:
            # gone already when a lost connection's replacement could not be had (connection())
            conn = self._state.__dict__.pop("conn", None)
            if conn is not None:
                self._pool.putconn(conn)


def _pool_wait() -> float:
    """How long this thread waits for a pooled connection: the pool's wait, or less within
    `bounded`."""
    bound = thread_bound()
    return POOL_WAIT_SECONDS if bound is None else min(bound, POOL_WAIT_SECONDS)


def embedded_url(home: Path) -> str:
    """Start (or join) the embedded PostgreSQL under `home` and return its URL.

    The server stops when the last process using it exits. Its socket lives in its data folder,
    so `home` should be a short path (unix sockets allow about 100 characters).
    """
    home.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # it falls back to a runtime folder in /tmp when XDG_RUNTIME_DIR is unset: that is fine
        warnings.simplefilter("ignore")
        import pgserver  # a heavy import, needed only without a configured server

        server = pgserver.get_server(home / "pgdata", cleanup_mode="stop")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute(query("database_exists"), {"name": "transcriber"}).fetchone():
            conn.execute(query("create_embedded_database"))
    os.environ.setdefault("PGAPPNAME", "transcriber")
    return server.get_uri("transcriber")
