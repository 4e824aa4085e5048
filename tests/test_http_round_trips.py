"""HTTP with the fewest database round trips: an authenticated card is one
statement that checks the token and reads the card together, so a new token, a disabled owner
or another owner's record count from the very next request; /healthz runs one statement outside
any transaction."""
from __future__ import annotations

import psycopg
import pytest
from fastapi.testclient import TestClient

from conftest import add_record, settings
from web.app import create_app


@pytest.fixture
def client(store):
    with TestClient(create_app(store, settings())) as test_client:
        yield test_client


@pytest.fixture
def statements(monkeypatch):
    """The statements this process sends, counted as they are executed."""
    sent: list[str] = []
    execute = psycopg.Cursor.execute  # a connection's own execute runs on a cursor too

    def counting(self, query, params=None, **kwargs):
        conn = self.connection
        if not conn.autocommit or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            sent.append("BEGIN")  # inside a transaction: BEGIN and COMMIT cost round trips of their own
        text = query.as_string(conn) if hasattr(query, "as_string") else query
        sent.append(text.decode() if isinstance(text, bytes) else str(text))
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counting)
    return sent


def _auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_a_card_is_one_statement(store, client, statements):
    """GET /records/{id} with a valid token runs exactly one statement, in autocommit
    (no BEGIN/COMMIT round trips)."""
    token = store.add_owner("alice")
    record = add_record(store, store.owner_by_name("alice"))
    statements.clear()
    answer = client.get(f"/records/{record}", headers=_auth(token))
    assert answer.status_code == 200 and answer.json()["id"] == record
    assert len(statements) == 1 and "owners o LEFT JOIN cards c" in statements[0]


def test_revocation_counts_from_the_next_request(store, client):
    """No owner is cached: a replaced token is refused (401), a disabled owner is
    refused (403) and another owner's record is missing (404) on the very next card request."""
    token = store.add_owner("alice")
    record = add_record(store, store.owner_by_name("alice"))
    other = store.add_owner("bob")
    assert client.get(f"/records/{record}", headers=_auth(token)).status_code == 200
    assert client.get(f"/records/{record}", headers=_auth(other)).json()["error"] == "not_found"
    assert client.get(f"/records/{record + 1000}", headers=_auth(token)).status_code == 404
    fresh = store.new_token("alice")
    assert client.get(f"/records/{record}", headers=_auth(token)).status_code == 401
    assert client.get(f"/records/{record}", headers=_auth(fresh)).status_code == 200
    store.set_owner_disabled("alice", True)
    assert client.get(f"/records/{record}", headers=_auth(fresh)).status_code == 403
    for headers in ({}, _auth("wrong")):
        assert client.get(f"/records/{record}", headers=headers).status_code == 401
        assert client.get("/records/not-a-number", headers=headers).status_code == 401


def test_healthz_is_one_statement_outside_a_transaction(client, statements):
    """/healthz pings with one statement and no transaction around it."""
    statements.clear()
    answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json()["database"] is True
    assert len(statements) == 1 and statements[0] != "BEGIN"
