"""The claim: atomic, fenced by a unique token, deterministic in order (P1, P2, INV-2)."""
from __future__ import annotations

import threading
import time

import pytest
from loguru import logger

from conftest import add_record, kinds, policy, run_together, save_result
from domain.claims import NO_WORK, Claim, HaltReason
from domain.resume import resume
from domain.stages import Step
from test_fence_every_write import lease_ran_out, waiting_for


def test_empty_claim_is_no_work_not_an_error(store):
    """P1: an empty claim returns the distinct no-work value; it raises nothing, logs nothing."""
    result = store.claim(Step.CONVERT, policy())
    assert result is NO_WORK
    assert not result
    assert repr(result) == "NO_WORK"


def test_three_claims_at_once_one_wins(store, owner):
    """P2-S1: three concurrent claims for one eligible record: exactly one gets it."""
    record_id = add_record(store, owner)
    for _ in range(5):  # repeat the race: a lucky interleaving must not make it pass
        results = run_together(3, lambda i: store.claim(Step.CONVERT, policy()))
        winners = [r for r in results if isinstance(r, Claim)]
        assert len(winners) == 1
        assert winners[0].record_id == record_id
        assert results.count(NO_WORK) == 2
        assert store.release(winners[0])  # free it for the next round
    assert kinds(store, record_id).count("claimed") == 5


def test_claimed_record_not_issued_twice(store, owner):
    """P2-S2: a record claimed under an unexpired lease is not issued to the next claim."""
    first_id = add_record(store, owner)
    second_id = add_record(store, owner)
    first = store.claim(Step.CONVERT, policy())
    assert first.record_id == first_id
    second = store.claim(Step.CONVERT, policy())
    assert second.record_id == second_id
    assert store.claim(Step.CONVERT, policy()) is NO_WORK

@pytest.mark.parametrize("step", list(Step), ids=[s.value for s in Step])
def test_a_live_lease_keeps_the_row_and_a_lapsed_one_is_claimed_anew(store, owner, step):
    """P2-S2 and P2-S4 at every step, the diarize step's too: a step row claimed under a live
    lease is not issued to the next claim (no work now), and once that lease has run out the next
    claim takes it under a new token, which the row now carries."""
    record_id = waiting_for(store, owner, step)
    first = store.claim(step, policy())
    assert (first.record_id, first.step) == (record_id, step)
    assert store.claim(step, policy()) is NO_WORK
    lease_ran_out(store, record_id, step)
    again = store.claim(step, policy())
    assert (again.record_id, again.step) == (record_id, step) and again.token > first.token
    with store.db.connection() as conn:
        row = conn.execute("SELECT claim_token FROM steps WHERE record_id = %s AND step = %s",
                           [record_id, step.value]).fetchone()
    assert row["claim_token"] == again.token


def test_claim_returns_id_and_token_only(store, owner):
    """P2-S3: the claim returns the record id and this claim's token; the step reads columns separately."""
    record_id = add_record(store, owner, title="meeting")
    claim = store.claim(Step.CONVERT, policy())
    assert isinstance(claim, Claim)
    assert (claim.record_id, claim.step) == (record_id, Step.CONVERT)
    assert isinstance(claim.token, int)
    assert not hasattr(claim, "title") and not hasattr(claim, "stage")
    row = store.read_record(claim.record_id)
    assert row["title"] == "meeting"
    assert row["claim_token"] == claim.token
    assert row["lease_expires_at"] is not None


def test_reissued_claim_has_a_new_token(store, owner):
    """P2-S4: after a human resumes a claimed record, another worker's claim carries a new token."""
    add_record(store, owner)
    first = store.claim(Step.CONVERT, policy())
    assert store.halt(first, HaltReason.UNDECODABLE_AUDIO, "bad header")
    resume(store, first.record_id)
    second = store.claim(Step.CONVERT, policy())
    assert second.record_id == first.record_id
    assert second.token != first.token
    assert second.token > first.token  # tokens order: the stale holder is recognisably older


def test_reissued_after_lease_expiry_has_a_new_token(store, owner):
    """P2-S4 (lease variant): a claim re-issued after the lease ran out has a new token."""
    add_record(store, owner)
    first = store.claim(Step.CONVERT, policy(lease=0.2))
    time.sleep(0.3)
    second = store.claim(Step.CONVERT, policy())
    assert second.record_id == first.record_id and second.token > first.token


def test_lease_belongs_to_the_stage(store, owner):
    """P2: the lease is written at claim time from the claimed step's policy, as a value."""
    record_id = add_record(store, owner)
    claim = store.claim(Step.CONVERT, policy(lease=1234))
    row = store.read_record(record_id)
    seconds = (row["lease_expires_at"] - row["updated_at"]).total_seconds()
    assert 1200 < seconds < 1300
    assert store.claim(Step.RECOGNIZE, policy()) is NO_WORK  # a created record is not recognised
    assert claim.step is Step.CONVERT


def test_selection_order_is_turn_then_id(store, owner, db):
    """P2: records in the same turn are claimed in id order."""
    ids = [add_record(store, owner) for _ in range(5)]
    with db.transaction() as conn:
        # The same turn for all, written in reverse id order so that the table's physical order
        # is the reverse too: only the id tie-breaker gives ascending ids.
        for record_id in reversed(ids):
            conn.execute("UPDATE steps SET turn = 1 WHERE record_id = %s", [record_id])
    claimed = [store.claim(Step.CONVERT, policy()).record_id for _ in ids]
    assert claimed == sorted(ids)


# How each branch of the claim order is made to tie on its sort key, given the same past moment
# %(at)s: new work by turn, retrying work by the end of its pause, a holder gone by its lease end.
_TIED = {
    "new": "UPDATE steps SET turn = 1 WHERE record_id = %(id)s",
    "retrying": "UPDATE steps SET failures = 1, entered_at = %(at)s, retry_after = %(at)s WHERE record_id = %(id)s",
    "lease_ran_out": "UPDATE steps SET lease_expires_at = %(at)s WHERE record_id = %(id)s",
}


@pytest.mark.parametrize("branch", list(_TIED))
def test_id_breaks_ties_in_every_branch_of_the_claim_order(store, database_url, branch):
    """P2: the selection order is fully determined, the record id breaking every tie, in each
    branch of the order: new work whose owners' records share one turn, retrying work whose pauses
    end at the same moment, work whose holders' leases ran out at the same moment. The rows of two
    owners tie, lie in the table in reverse id order, and the claimer's plan reads no index (a
    sequential scan and a sort): the smaller id is claimed first, every time."""
    from psycopg.conninfo import make_conninfo

    from db import Database, Store

    for name in ("alice", "bob"):
        store.add_owner(name)
    owners = [store.owner_by_name(name)["id"] for name in ("alice", "bob")]
    ids = [store.accept(owners[i % 2], [b"audio %d" % i], source_name="a.bin") for i in range(6)]
    if branch == "lease_ran_out":
        assert sorted(store.claim(Step.CONVERT, policy()).record_id for _ in ids) == ids
    with store.db.transaction() as conn:
        at = conn.execute("SELECT date_trunc('minute', now()) - interval '1 minute' AS at").fetchone()["at"]
        for record_id in reversed(ids):  # each row's new version lands after the last one written
            conn.execute(_TIED[branch], {"id": record_id, "at": at})
        physical = [r["record_id"] for r in conn.execute("SELECT record_id FROM steps ORDER BY ctid").fetchall()]
    assert physical == ids[::-1]
    no_index = "-c enable_indexscan=off -c enable_indexonlyscan=off -c enable_bitmapscan=off"
    with Database(make_conninfo(database_url, options=no_index), max_size=1) as scanning:
        claimed = [Store(scanning).claim(Step.CONVERT, policy()).record_id for _ in ids]
    assert claimed == ids


def test_stress_every_record_claimed_and_saved_once(store, owner):
    """P2-S1 at scale: 200 records, 8 concurrent claimers looping until empty: each record claimed
    and saved exactly once, no save refused, every claimer ends with no work."""
    ids = {add_record(store, owner) for _ in range(200)}
    saved: list[int] = []
    lock = threading.Lock()

    def claimer(_):
        while True:
            claim = store.claim(Step.CONVERT, policy())
            if claim is NO_WORK:
                return claim
            assert save_result(store, claim, {"duration_seconds": 1.0})
            with lock:
                saved.append(claim.record_id)

    results = run_together(8, claimer)
    assert results == [NO_WORK] * 8
    assert sorted(saved) == sorted(ids)
    for record_id in ids:
        journal = kinds(store, record_id)
        assert journal.count("claimed") == 1
        assert journal.count("advanced") == 1
        assert "save_refused" not in journal
    assert store.claim(Step.CONVERT, policy()) is NO_WORK


def test_claim_and_save_log_lines_carry_the_record(store, owner):
    """A line about a record carries its id, stage and event, the claim's and the save's too
    (their context travels with the call, not through a bound logger)."""
    record_id = add_record(store, owner)
    lines = []
    sink = logger.add(lambda message: lines.append(message.record), level="DEBUG")
    try:
        claim = store.claim(Step.CONVERT, policy())
        assert save_result(store, claim, {"duration_seconds": 1.0})
    finally:
        logger.remove(sink)
    about = [(line["level"].name, line["extra"]) for line in lines if line["extra"].get("record_id") == record_id]
    assert about == [("DEBUG", {"record_id": record_id, "stage": "created", "event": "claimed", "step": "convert"}),
                     ("DEBUG", {"record_id": record_id, "stage": "converted", "event": "advanced",
                                "step": "convert"})]
