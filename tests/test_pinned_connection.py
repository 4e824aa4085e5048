"""A worker's run keeps one connection: inside `Database.pinned`, a thread's
statements share one pooled connection instead of taking one from the pool for each, another
thread's do not share it, and a connection lost meanwhile is replaced at the next statement, as
the pool would replace it."""
from __future__ import annotations

import threading

import psycopg
import pytest

from conftest import add_record, policy, run_together, save_result
from domain.stages import Step


def backend(db) -> int:
    """The server process behind the connection a statement of this thread would use now."""
    with db.connection() as conn:
        return conn.info.backend_pid


def checkouts(db) -> int:
    return db._pool.get_stats()["requests_num"]


def test_a_cycle_takes_one_connection_from_the_pool(db, store, owner):
    add_record(store, owner)
    before = checkouts(db)
    with db.pinned():
        claim = store.claim(Step.CONVERT, policy())
        store.read_record(claim.record_id)
        assert save_result(store, claim, {"duration_seconds": 1.0})
    assert checkouts(db) - before == 1
    store.read_record(claim.record_id)  # outside: a checkout per statement, as before
    assert checkouts(db) - before == 2


def test_a_thread_keeps_one_connection_inside_pinned(db, store, owner):
    add_record(store, owner)
    both_pinned = threading.Barrier(2)

    def run(_):
        with db.pinned():
            first = backend(db)
            claim = store.claim(Step.CONVERT, policy())
            if claim:
                store.read_record(claim.record_id)
            both_pinned.wait(timeout=30)  # each holds its own while the other holds its own
            return first, backend(db)

    (first_a, last_a), (first_b, last_b) = run_together(2, run)
    assert first_a == last_a and first_b == last_b
    assert first_a != first_b


def test_a_lost_pinned_connection_is_replaced_at_the_next_statement(db, store, owner, database_url):
    record_id = add_record(store, owner)
    with db.pinned():
        lost = backend(db)
        with psycopg.connect(database_url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (lost,)).fetchone()[0]
        with pytest.raises(psycopg.OperationalError):
            store.read_record(record_id)
        assert store.read_record(record_id)["id"] == record_id
        assert backend(db) != lost
    assert store.stage_of(record_id) == "created"


def test_a_lone_worker_keeps_one_connection_beside_idle_ones(db):
    """The pool hands out the connection returned last: once three threads made it hold three
    connections, a lone thread's successive runs all get the same one (and its server process)
    instead of taking the idle ones in turn."""
    all_pinned = threading.Barrier(3)

    def hold(_):
        with db.pinned():
            all_pinned.wait(timeout=30)  # three at once: the pool opens three connections
            return backend(db)

    assert len(set(run_together(3, hold))) == 3
    runs = []
    for _ in range(6):
        with db.pinned():
            runs.append(backend(db))
    assert len(set(runs)) == 1
