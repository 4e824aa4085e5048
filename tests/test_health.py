"""/healthz answers within a bound whatever the database does.

The API's database connections go through a TCP relay this test owns, in front of the test's
own database: the relay can pass bytes, hang (accept and never answer, connections open) or
close (every connection dropped, the port closed). The shared server is never touched.
"""
from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from conftest import conninfo, settings
from db import Database, Store
from relay import Relay
from web.app import create_app
from web.health import TIMEOUT_SECONDS

BOUND_SECONDS = 2 * TIMEOUT_SECONDS + 1  # "about 2 s", with room for a loaded machine


@pytest.fixture
def relayed(postgresql):
    info = postgresql.info
    relay = Relay((str(info.host), info.port))
    db = Database(conninfo("127.0.0.1", relay.port, info.user, info.dbname, info.password), max_size=4)
    client = TestClient(create_app(Store(db), settings()))
    yield relay, client
    relay.close()
    client.close()
    db._pool.close(timeout=5)


def timed_health(client) -> tuple[float, object]:
    started = time.monotonic()
    answer = client.get("/healthz")
    return time.monotonic() - started, answer


def wait_healthy(client, seconds=60):
    deadline = time.monotonic() + seconds
    while client.get("/healthz").status_code != 200:
        assert time.monotonic() < deadline, "the database never came back"
        time.sleep(0.1)


def assert_unavailable(elapsed, answer):
    assert elapsed < BOUND_SECONDS, elapsed
    assert answer.status_code == 503
    body = answer.json()
    assert body["database"] is False and body["status"] == "degraded"
    assert body["error"] == "database_unavailable" and "database" in body["message"]


def test_healthz_is_bounded_while_the_database_hangs(relayed):
    """A database that accepts and never answers (pooled connections and new
    ones alike): /healthz says 503 within about 2 s, every time, and 200 once it answers again."""
    relay, client = relayed
    elapsed, answer = timed_health(client)
    assert answer.status_code == 200 and answer.json() == {"status": "ok", "database": True}
    relay.hang()
    for _ in range(3):
        assert_unavailable(*timed_health(client))
    relay.resume()
    wait_healthy(client)


def test_healthz_is_bounded_while_the_database_is_down(relayed):
    """The database's port closed, its connections dropped: 503 within about 2 s."""
    relay, client = relayed
    assert client.get("/healthz").status_code == 200
    relay.close()
    for _ in range(3):
        assert_unavailable(*timed_health(client))


def test_healthz_with_a_listener_that_never_answers(postgresql):
    """Pooled connections that were fine, then every new connection goes to a
    listener that accepts and never answers (the address now names a hung server)."""
    info = postgresql.info
    relay = Relay((str(info.host), info.port))
    db = Database(conninfo("127.0.0.1", relay.port, info.user, info.dbname, info.password), max_size=2)
    try:
        with TestClient(create_app(Store(db), settings())) as client:
            assert client.get("/healthz").status_code == 200
            # the pooled connections go away; new ones meet a listener that never speaks
            relay.hang()
            relay.drop_connections()
            for _ in range(3):
                assert_unavailable(*timed_health(client))
    finally:
        relay.close()
        db._pool.close(timeout=5)
