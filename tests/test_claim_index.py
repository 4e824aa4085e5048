"""The claim index holds claimable rows only: done and halted rows are not in it,
and paused or leased records are not scanned ahead of the eligible ones."""
from __future__ import annotations

import json

from psycopg.types.json import Jsonb

from conftest import add_record, policy, save_result
from db.queries import compose, query
from domain.stages import Step

PARAMS = {"step": "convert", "lease_seconds": 60, "time_limit_seconds": 3600, "holder": "a test"}


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
            "WITH accepted AS (INSERT INTO records (owner_id, original_blob_id) "
            "                  SELECT %(owner)s, %(blob)s FROM generate_series(1, %(count)s) RETURNING id) "
            "INSERT INTO steps (record_id, step, stage, owner_id, entered_at, retry_after, failures) "
            "SELECT id, 'convert', 'created', %(owner)s, now() - interval '1 hour', now() + interval '1 hour', 1 "
            "FROM accepted",
            {"owner": owner["id"], "blob": blob, "count": count})
        conn.execute("ANALYZE steps")
    return add_record(store, owner)


def test_the_claim_uses_the_partial_indexes_in_a_generic_plan(store, owner):
    """EXPLAIN of the claim (generic plan, as prepared statements get)
    scans steps_turns and steps_retrying, whose rows are claimable ones only, and steps_held,
    the claimed ones; none holds the lease."""
    add_record(store, owner)
    with store.db.transaction() as conn:
        plan = _plan(conn)
        definitions = [conn.execute("SELECT pg_get_indexdef(%s::regclass) AS d", [name]).fetchone()["d"]
                       for name in ("steps_turns", "steps_retrying", "steps_held")]
    assert {"steps_turns", "steps_retrying", "steps_held"} <= {n.get("Index Name") for n in _nodes(plan["Plan"])}
    assert "WHERE ((queued_at IS NOT NULL) AND (failures = 0))" in definitions[0]
    assert "lease" not in " ".join(definitions) and "available_at" not in " ".join(definitions)


def test_lease_renewals_and_checkpoints_are_hot_updates(store, owner):
    """Renewing a lease or saving a checkpoint writes no index of steps (a HOT
    update): the claim's indexes do not hold the lease, so a running step costs one heap tuple a
    renewal. Counted by the server in one transaction."""
    record_id = add_record(store, owner)
    claim = store.claim(Step.CONVERT, policy())
    assert claim.record_id == record_id
    renew = query("renew_lease")
    checkpoint = compose("checkpoint", kept=query("checkpoint_recognize"))
    counted = ("SELECT pg_stat_get_xact_tuples_updated('steps'::regclass) AS updated, "
               "pg_stat_get_xact_tuples_hot_updated('steps'::regclass) AS hot")
    with store.db.transaction() as conn:
        # the counts pending in this backend (an earlier statement's, not yet reported) come first
        before = conn.execute(counted).fetchone()
        for n in range(5):
            conn.execute(renew, {"id": record_id, "step": "convert", "token": claim.token, "lease_seconds": 60 + n,
                                 "progress_seconds": float(n)})
        conn.execute(checkpoint, {"id": record_id, "step": "convert", "token": claim.token, "from_seconds": 0.0,
                                  "to_seconds": 1.0, "segments": Jsonb([]), "language": None,
                                  "language_probability": None, "suppressed": Jsonb([]), "english": None,
                                  "lease_seconds": 60,
                                  "detail": Jsonb({})})
        after = conn.execute(counted).fetchone()
    assert (after["updated"] - before["updated"], after["hot"] - before["hot"]) == (6, 6)


def test_done_and_halted_rows_are_not_in_the_index(store, owner):
    """A done or halted record leaves the claim index; a resumed one comes back."""
    from domain.claims import HaltReason
    from domain.resume import resume

    first, second = add_record(store, owner), add_record(store, owner)

    def indexed() -> set[int]:
        with store.db.transaction() as conn:
            conn.execute("SET enable_seqscan = off")
            rows = conn.execute("SELECT record_id FROM steps WHERE queued_at IS NOT NULL").fetchall()
        return {row["record_id"] for row in rows}

    claim = store.claim(Step.CONVERT, policy())
    assert claim.record_id == first
    store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "no")
    assert indexed() == {second}
    claim = store.claim(Step.CONVERT, policy())
    assert indexed() == set()  # claimed: in steps_held, not queued
    save_result(store, claim, {"duration_seconds": 1.0})
    claim = store.claim(Step.RECOGNIZE, policy())
    save_result(store, claim, {"engine": "x"})
    assert indexed() == set()
    resume(store, first)
    assert indexed() == {first}


def test_paused_records_at_the_head_are_not_scanned(store, owner):
    """With 5000 paused records ahead of one eligible record, the claim reads a
    handful of index pages, not the paused rows, and claims the eligible one."""
    eligible = _paused_at_the_head(store, owner, 5000)
    with store.db.transaction() as conn, conn.transaction(force_rollback=True):
        plan = _plan(conn, analyze=True)
    buffers = plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"]
    # reading the paused rows would cost hundreds of pages (5000 rows); the claim's own update
    # touches one heap page and each index of records, whose number grows with the features
    assert buffers < 80, json.dumps(plan)[:2000]
    assert store.claim(Step.CONVERT, policy()).record_id == eligible
