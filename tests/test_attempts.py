"""Attempts, a growing pause, and halting when they run out or the stage takes too long (P4)."""
from __future__ import annotations


from conftest import add_record, kinds, policy, save_result
from domain.claims import NO_WORK, HaltReason
from domain.stages import Step


def fail_once(store, step_policy, error):
    """What a worker does with a failed run: count it, or halt once attempts are exhausted."""
    claim = store.claim(Step.CONVERT, step_policy)
    failures = store.read_record(claim.record_id)["failures"] + 1
    if step_policy.exhausted(failures):
        assert store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, error, count_failure=True)
    else:
        assert store.record_failure(claim, error, step_policy.pause_after(failures))
    return claim


def test_pause_grows_with_the_count():
    """P4: the retry pause doubles with each failure and is capped."""
    p = policy(backoff=10)
    assert [p.pause_after(n) for n in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert p.pause_after(40) == 24 * 3600


def test_failure_counts_and_pauses_the_record(store, owner, db):
    """P4: a failed run counts on the record, sets a growing pause, and the record is not
    eligible until the pause is over."""
    record_id = add_record(store, owner)
    p = policy(backoff=100, max_attempts=5)
    fail_once(store, p, "first")
    row = store.read_record(record_id)
    assert row["failures"] == 1 and row["claim_token"] is None
    first_pause = (row["retry_after"] - row["updated_at"]).total_seconds()
    assert 99 <= first_pause <= 101
    assert store.claim(Step.CONVERT, p) is NO_WORK  # waiting out the pause

    with db.transaction() as conn:  # let the pause pass
        conn.execute("UPDATE steps SET retry_after = now() - interval '1 second'")
    fail_once(store, p, "second")
    row = store.read_record(record_id)
    assert row["failures"] == 2
    assert 199 <= (row["retry_after"] - row["updated_at"]).total_seconds() <= 201


def test_exhausted_attempts_halt_with_last_error(store, owner, db):
    """P4: when failures are exhausted the claimer halts the record with attempts_exhausted and
    the last error text; the stage reached is kept."""
    record_id = add_record(store, owner)
    p = policy(backoff=0, max_attempts=3)
    for attempt in range(3):
        fail_once(store, p, f"error number {attempt + 1}")
    row = store.read_record(record_id)
    assert row["halt_reason"] == "attempts_exhausted"
    assert row["halt_error"] == "error number 3"
    assert row["failures"] == 3
    assert row["stage"] == "created"
    assert store.claim(Step.CONVERT, p) is NO_WORK
    assert kinds(store, record_id).count("failed") == 2
    assert kinds(store, record_id)[-1] == "halted"


def test_stage_time_limit_halts_on_claim(store, owner, db):
    """P4: a record past its stage's time limit is halted by the claimer that finds it, with its
    own reason; the claim goes on to the next record."""
    old_id = add_record(store, owner)
    fresh_id = add_record(store, owner)
    with db.transaction() as conn:
        conn.execute("UPDATE steps SET entered_at = now() - interval '2 hours' WHERE record_id = %s", [old_id])
    claim = store.claim(Step.CONVERT, policy(time_limit=3600))
    assert claim.record_id == fresh_id
    old = store.read_record(old_id)
    assert old["halt_reason"] == HaltReason.STAGE_TIME_LIMIT
    assert "3600" in old["halt_error"]
    assert kinds(store, old_id)[-2:] == ["claimed", "halted"]


def test_status_counts_what_the_operator_needs(store, owner, db):
    """`status`: per stage, how many are active, claimed, waiting out a pause, halted, and the
    age of the oldest eligible record."""
    for _ in range(4):
        add_record(store, owner)
    with db.transaction() as conn:
        conn.execute("UPDATE steps SET entered_at = now() - interval '90 seconds'")
    claimed = store.claim(Step.CONVERT, policy())
    failed = store.claim(Step.CONVERT, policy())
    assert store.record_failure(failed, "x", 600)
    halted = store.claim(Step.CONVERT, policy())
    assert store.halt(halted, HaltReason.UNDECODABLE_AUDIO, "y")
    (created,) = store.status()
    assert created["stage"] == "created"
    assert (created["active"], created["claimed"], created["waiting"], created["halted"]) == (3, 1, 1, 1)
    assert 89 <= created["oldest_eligible_seconds"] < 100  # the one record nobody holds
    assert claimed.record_id not in (failed.record_id, halted.record_id)


def test_successful_save_resets_failures_and_pause(store, owner):
    """P4: a save after failed runs resets the failure count and the retry pause: the
    next stage starts with every attempt and no pause, and its own first failure is attempt 1."""
    record_id = add_record(store, owner)
    p = policy(backoff=0, max_attempts=3)
    for error in ("first", "second"):
        fail_once(store, p, error)
    row = store.read_record(record_id)
    assert row["failures"] == 2 and row["retry_after"] is not None
    claim = store.claim(Step.CONVERT, p)
    assert save_result(store, claim, {"duration_seconds": 1.0})
    row = store.read_record(record_id)
    assert (row["stage"], row["failures"], row["retry_after"]) == ("converted", 0, None)
    recognition = store.claim(Step.RECOGNIZE, policy(backoff=100, max_attempts=3))
    assert recognition.record_id == record_id
    assert store.record_failure(recognition, "recognizer crashed", 100)
    assert store.read_record(record_id)["failures"] == 1
