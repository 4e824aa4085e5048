"""Cheap observation: /metrics reads counts the database keeps as records move,
never a count of all records, and needs an operator's token."""
from __future__ import annotations

from fastapi.testclient import TestClient

from conftest import add_record, policy, run_together, save_result, settings
from domain.claims import HaltReason
from domain.resume import resume
from domain.stages import Step
from web.app import create_app


def truth(store) -> dict[tuple[str, str | None], int]:
    """Records per stage and halt reason, counted the slow way from the records themselves."""
    with store.db.connection() as conn:
        rows = conn.execute("SELECT r.stage, s.halt_reason AS reason, count(*) AS n FROM records r "
                            "LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done' GROUP BY 1, 2").fetchall()
    return {(row["stage"], row["reason"]): row["n"] for row in rows}


def kept(store) -> dict[tuple[str, str | None], int]:
    return {(row["stage"], row["reason"]): row["records"] for row in store.queue_counts()}


def test_kept_counts_follow_every_transition(store, owner):
    """Accepted, claimed, saved, failed and paused, halted, resumed, deleted, and
    accepted by 8 threads at once: the kept counts always equal a full count of the records; a
    fold leaves no change behind."""
    ids = [add_record(store, owner) for _ in range(4)]
    assert kept(store) == truth(store) == {("created", None): 4}
    claim = store.claim(Step.CONVERT, policy())
    save_result(store, claim, {"duration_seconds": 1.0})
    assert kept(store) == truth(store) == {("created", None): 3, ("converted", None): 1}
    failing = store.claim(Step.CONVERT, policy())
    store.record_failure(failing, "boom", pause_seconds=600)
    halting = store.claim(Step.CONVERT, policy())
    store.halt(halting, HaltReason.UNDECODABLE_AUDIO, "not audio")
    assert kept(store) == truth(store)
    assert kept(store)[("created", "undecodable_audio")] == 1
    waiting = {row["stage"]: row["waiting"] for row in store.queue_counts() if row["reason"] is None}
    assert waiting["created"] == 1
    assert resume(store, halting.record_id, by="test")
    assert kept(store) == truth(store) and ("created", "undecodable_audio") not in kept(store)
    store.delete_record(ids[0], owner["id"], by="alice", role="owner")
    assert kept(store) == truth(store)
    run_together(8, lambda i: add_record(store, owner))
    assert kept(store) == truth(store)
    assert sum(kept(store).values()) == 3 + 8
    add_record(store, owner)
    store.fold_record_counts()  # what the sweep does, for where nobody scrapes
    with store.db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM record_count_changes").fetchone()["n"] == 0
    assert kept(store) == truth(store)


def test_a_scrape_never_scans_records(store, owner):
    """With 20,000 records, the plans of what a scrape runs hold no sequential scan
    of records."""
    add_record(store, owner)
    with store.db.transaction() as conn:
        conn.execute("INSERT INTO records (owner_id, original_blob_id, stage) "
                     "SELECT owner_id, original_blob_id, 'done' FROM records, generate_series(1, 20000)")
        conn.execute("ANALYZE records")
    assert sum(kept(store).values()) == 20001
    from db.queries import query

    with store.db.connection() as conn:
        for name in ("fold_record_counts", "queue_counts"):
            plan = "\n".join(row["QUERY PLAN"] for row in conn.execute("EXPLAIN " + query(name).as_string(conn)))
            assert "Seq Scan on records" not in plan, plan


def test_metrics_need_an_operator_token(store, owner):
    """/metrics answers 401 without a token and with an owner's; 200 with an operator's."""
    owner_token = store.new_token("alice")
    operator = store.add_operator("ops")
    with TestClient(create_app(store, settings())) as client:
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": f"Bearer {owner_token}"}).status_code == 401
        answer = client.get("/metrics", headers={"Authorization": f"Bearer {operator}"})
    assert answer.status_code == 200 and "transcriber_records" in answer.text
