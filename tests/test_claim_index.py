"""The claim index holds claimable rows only (issue 10 §2): done and halted rows are not in it,
and paused or leased records are not scanned ahead of the eligible ones."""
from __future__ import annotations

import json

from conftest import add_record, policy
from db.queries import query
from domain.stages import Step

PARAMS = {"stage": "created", "lease_seconds": 60, "time_limit_seconds": 3600}


def _plan(conn, analyze: bool = False) -> dict:
    options = "ANALYZE, BUFFERS, " if analyze else ""
    conn.execute("SET plan_cache_mode = force_generic_plan")
    statement = query("claim").as_string(conn)
    row = conn.execute(f"EXPLAIN ({options}FORMAT JSON) " + statement, PARAMS).fetchone()
    return row["QUERY PLAN"][0]


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _paused_at_the_head(store, owner, count: int) -> int:
    """`count` records paused after a failure, accepted before one eligible record; its id."""
    blob, _ = store.store_blob([b"x"], "application/octet-stream")
    with store.db.transaction() as conn:
        conn.execute(
            "INSERT INTO records (owner_id, original_blob_id, stage_entered_at, retry_after) "
            "SELECT %(owner)s, %(blob)s, now() - interval '1 hour', now() + interval '1 hour' "
            "FROM generate_series(1, %(count)s)",
            {"owner": owner["id"], "blob": blob, "count": count})
        conn.execute("ANALYZE records")
    return add_record(store, owner)


def test_the_claim_uses_the_partial_index_in_a_generic_plan(store, owner):
    """issue 10 §2: EXPLAIN of the claim (generic plan, as prepared statements get) scans
    records_claimable, an index whose rows are claimable ones only."""
    add_record(store, owner)
    with store.db.transaction() as conn:
        plan = _plan(conn)
        definition = conn.execute(
            "SELECT pg_get_indexdef('records_claimable'::regclass) AS d").fetchone()["d"]
    assert "records_claimable" in {n.get("Index Name") for n in _nodes(plan["Plan"])}
    assert "WHERE (available_at IS NOT NULL)" in definition


def test_done_and_halted_rows_are_not_in_the_index(store, owner):
    """issue 10 §2: a done or halted record leaves the claim index; a resumed one comes back."""
    from domain.claims import HaltReason
    from domain.resume import resume

    first, second = add_record(store, owner), add_record(store, owner)

    def indexed() -> set[int]:
        with store.db.transaction() as conn:
            conn.execute("SET enable_seqscan = off")
            rows = conn.execute("SELECT id FROM records WHERE available_at IS NOT NULL").fetchall()
        return {row["id"] for row in rows}

    claim = store.claim(Step.CONVERT, policy())
    assert claim.record_id == first
    store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "no")
    assert indexed() == {second}
    claim = store.claim(Step.CONVERT, policy())
    store.save_result(claim, {"duration_seconds": 1.0})
    claim = store.claim(Step.RECOGNIZE, policy())
    store.save_result(claim, {"engine": "x"})
    assert indexed() == set()
    resume(store, first)
    assert indexed() == {first}


def test_paused_records_at_the_head_are_not_scanned(store, owner):
    """issue 10 §2: with 5000 paused records ahead of one eligible record, the claim reads a
    handful of index pages, not the paused rows, and claims the eligible one."""
    eligible = _paused_at_the_head(store, owner, 5000)
    with store.db.transaction() as conn, conn.transaction(force_rollback=True):
        plan = _plan(conn, analyze=True)
    buffers = plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"]
    assert buffers < 40, json.dumps(plan)[:2000]
    assert store.claim(Step.CONVERT, policy()).record_id == eligible
