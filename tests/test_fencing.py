"""Only the claim holder writes, and only the fields its step owns (P3)."""
from __future__ import annotations

import time

import pytest

from conftest import add_record, checkpoint, kinds, policy, run_together, save_result
from domain.claims import NO_WORK, HaltReason
from domain.resume import resume
from domain.stages import Step


def test_owner_edit_survives_step_save(store, owner):
    """P3-S1: the owner edits title, summary and topics while a step holds the record; the save
    writes the step's result and the owner's edits stay."""
    record_id = add_record(store, owner, title="first title")
    claim = store.claim(Step.CONVERT, policy())
    snapshot = store.read_record(claim.record_id)
    assert store.edit(record_id, owner["id"], title="edited", summary="a call", topics=["budget"])
    assert save_result(store, claim, {"duration_seconds": 12.5})
    row = store.read_record(record_id)
    assert (row["stage"], row["duration_seconds"]) == ("converted", 12.5)
    assert (row["title"], row["summary"], row["topics"]) == ("edited", "a call", ["budget"])
    assert snapshot["title"] == "first title"


@pytest.mark.parametrize("field", ["title", "summary", "topics", "owner_id", "stage", "claim_token"])
def test_step_may_not_write_owner_or_queue_fields(store, owner, field):
    """P3: a save carrying a field the step does not own is rejected before anything is written."""
    record_id = add_record(store, owner, title="mine")
    claim = store.claim(Step.CONVERT, policy())
    with pytest.raises(ValueError):
        save_result(store, claim, {"duration_seconds": 1.0, field: "x"})
    row = store.read_record(record_id)
    assert (row["stage"], row["title"], row["claim_token"]) == ("created", "mine", claim.token)


def test_claim_moved_on_under_running_step(store, owner):
    """P3-S2: the lease ran out under a live step and another claim took the record; both holders
    save at the same moment: only the current holder's result is written."""
    record_id = add_record(store, owner)
    stale = store.claim(Step.CONVERT, policy(lease=0.2))
    time.sleep(0.3)
    current = store.claim(Step.CONVERT, policy())
    assert current.record_id == record_id
    results = run_together(2, lambda i: save_result(store, 
        (stale, current)[i], {"duration_seconds": (111.0, 222.0)[i]}))
    assert results == [False, True]
    row = store.read_record(record_id)
    assert (row["stage"], row["duration_seconds"]) == ("converted", 222.0)
    journal = kinds(store, record_id)
    assert journal.count("advanced") == 1 and journal.count("save_refused") == 1


def test_human_resumed_under_running_step(store, owner):
    """P3-S3: while a step runs, the record is halted, resumed by a human (claim released) and
    claimed by another worker; the first step's save is refused, the new holder's is written."""
    record_id = add_record(store, owner)
    stale = store.claim(Step.CONVERT, policy(lease=0.2))
    time.sleep(0.3)
    halter = store.claim(Step.CONVERT, policy())
    assert store.halt(halter, HaltReason.UNDECODABLE_AUDIO, "probe failed")
    resume(store, record_id)
    current = store.claim(Step.CONVERT, policy())
    results = run_together(2, lambda i: save_result(store, 
        (stale, current)[i], {"duration_seconds": (1.0, 2.0)[i]}))
    assert results == [False, True]
    row = store.read_record(record_id)
    assert (row["stage"], row["duration_seconds"], row["halted_at"]) == ("converted", 2.0, None)
    assert "save_refused" in kinds(store, record_id)


def test_human_resume_then_nobody_claimed_refuses_stale_save(store, owner):
    """P3-S3 (resume only): a resume releases the claim; the stale holder's save writes nothing."""
    record_id = add_record(store, owner)
    holder = store.claim(Step.CONVERT, policy())
    assert store.halt(holder, HaltReason.UNDECODABLE_AUDIO, "probe failed")
    resume(store, record_id)
    assert not save_result(store, holder, {"duration_seconds": 3.0})
    row = store.read_record(record_id)
    assert (row["stage"], row["duration_seconds"], row["claim_token"]) == ("created", None, None)


def _stale_and_current(store, owner):
    record_id = add_record(store, owner)
    stale = store.claim(Step.CONVERT, policy(lease=0.2))
    time.sleep(0.3)
    current = store.claim(Step.CONVERT, policy())
    return record_id, stale, current, store.read_record(record_id)


def test_stale_failure_count_refused(store, owner):
    """P3/P4: a stale holder's failure write is refused and leaves counters and pause untouched."""
    record_id, stale, current, before = _stale_and_current(store, owner)
    assert not store.record_failure(stale, "boom", 10)
    after = store.read_record(record_id)
    assert (after["failures"], after["retry_after"], after["claim_token"]) == (0, None, current.token)
    assert kinds(store, record_id)[-1] == "save_refused"


def test_stale_halt_refused(store, owner):
    """P3/P5: a stale holder cannot halt a record another worker now holds."""
    record_id, stale, current, before = _stale_and_current(store, owner)
    assert not store.halt(stale, HaltReason.UNDECODABLE_AUDIO, "late")
    after = store.read_record(record_id)
    assert after["halted_at"] is None and after["claim_token"] == current.token


def test_stale_lease_renewal_refused(store, owner):
    """P3: a stale holder's lease renewal is refused and the current lease is left as it was."""
    record_id, stale, current, before = _stale_and_current(store, owner)
    assert not store.renew_lease(stale, 3600, progress_seconds=5.0)
    after = store.read_record(record_id)
    assert after["lease_expires_at"] == before["lease_expires_at"]
    assert after["progress_seconds"] is None
    assert store.renew_lease(current, 3600, progress_seconds=5.0)
    assert store.read_record(record_id)["progress_seconds"] == 5.0


def test_stale_release_refused(store, owner):
    """P3: a stale holder's give-back (a stopping worker whose lease already ran out
    and went to another claim) is refused: the current holder keeps its token and lease, and the
    record is not handed to a third claimer."""
    record_id, stale, current, before = _stale_and_current(store, owner)
    assert not store.release(stale)
    after = store.read_record(record_id)
    assert (after["claim_token"], after["lease_expires_at"]) == (current.token, before["lease_expires_at"])
    assert kinds(store, record_id)[-1] == "save_refused"
    assert store.claim(Step.CONVERT, policy()) is NO_WORK
    assert store.release(current)
    assert store.read_record(record_id)["claim_token"] is None


# --- checkpoints: a stale holder's window is refused (P3) -------------------------------------------

def _windows(store, record_id) -> list[tuple]:
    with store.db.connection() as conn:
        return [tuple(row.values()) for row in conn.execute(
            "SELECT from_seconds, to_seconds, claim_token, segments->0->>'text' AS text FROM record_windows "
            "WHERE record_id = %s ORDER BY from_seconds", [record_id])]


def _segment(at: float, text: str) -> list[dict]:
    return [{"start": at, "end": at + 1.0, "text": text, "words": []}]


def _recognizing(store, owner, lease: float):
    """A converted record claimed for recognition with a lease of `lease` seconds, its first
    window (0-30 s) saved under that claim."""
    record_id = add_record(store, owner)
    assert save_result(store, store.claim(Step.CONVERT, policy()), {"duration_seconds": 120.0})
    holder = store.claim(Step.RECOGNIZE, policy(lease=lease))
    assert checkpoint(store, holder, 0.0, 30.0, _segment(0.0, "first"), "en", lease)
    return record_id, holder


def _refusals(store, record_id) -> list[dict]:
    return [e["detail"] for e in store.events(record_id) if e["kind"] == "save_refused"]


def test_stale_checkpoint_after_the_claim_moved_on_is_refused(store, owner):
    """P3-S2: the holder's lease ran out and another worker claimed the record. The
    stale holder's checkpoint of the next window — starting exactly where the record stands, so
    only the token tells it apart — is refused: no window written, recognition's position and
    progress and the new holder's lease unchanged, and a `save_refused` line naming the
    checkpoint. Then both holders checkpoint that window at the same moment: only the current
    holder's window is written."""
    record_id, stale = _recognizing(store, owner, lease=0.2)
    time.sleep(0.3)
    current = store.claim(Step.RECOGNIZE, policy())
    assert current.record_id == record_id
    before = store.read_record(record_id)
    assert not checkpoint(store, stale, 30.0, 60.0, _segment(30.0, "stale"), "en", 3600)
    after = store.read_record(record_id)
    assert _windows(store, record_id) == [(0.0, 30.0, stale.token, "first")]
    for column in ("checkpoint_seconds", "progress_seconds", "lease_expires_at", "claim_token", "language"):
        assert after[column] == before[column], column
    assert _refusals(store, record_id) == [
        {"step": "recognize", "write": "checkpoint", "claim_token": stale.token, "current_claim_token": current.token}]

    results = run_together(2, lambda i: checkpoint(store, 
        (stale, current)[i], 30.0, 60.0, _segment(30.0, ("stale", "current")[i]), "en", 600))
    assert results == [False, True]
    assert _windows(store, record_id) == [(0.0, 30.0, stale.token, "first"), (30.0, 60.0, current.token, "current")]
    assert store.read_record(record_id)["checkpoint_seconds"] == 60.0
    assert len(_refusals(store, record_id)) == 2


def test_stale_checkpoint_after_halt_and_resume_is_refused(store, owner):
    """P3-S3: the record was halted under a running recognition (by the claimer
    that took it over) and resumed by a human. The first holder's checkpoint is refused while
    nobody holds the record, and again once another worker claimed it; that worker's own
    checkpoint goes on from where the record stood."""
    record_id, stale = _recognizing(store, owner, lease=0.2)
    time.sleep(0.3)
    halter = store.claim(Step.RECOGNIZE, policy())
    assert store.halt(halter, HaltReason.ENGINE_REFUSED, "the server refused it")
    resume(store, record_id)
    assert not checkpoint(store, stale, 30.0, 60.0, _segment(30.0, "stale"), "en", 3600)
    row = store.read_record(record_id)
    assert (row["checkpoint_seconds"], row["progress_seconds"], row["claim_token"]) == (30.0, None, None)
    current = store.claim(Step.RECOGNIZE, policy())
    lease = store.read_record(record_id)["lease_expires_at"]
    assert not checkpoint(store, stale, 30.0, 60.0, _segment(30.0, "stale"), "en", 3600)
    row = store.read_record(record_id)
    assert (row["checkpoint_seconds"], row["progress_seconds"], row["lease_expires_at"]) == (30.0, None, lease)
    assert _windows(store, record_id) == [(0.0, 30.0, stale.token, "first")]
    assert [r["write"] for r in _refusals(store, record_id)] == ["checkpoint", "checkpoint"]
    assert checkpoint(store, current, 30.0, 60.0, _segment(30.0, "current"), "en", 600)
    assert _windows(store, record_id)[-1] == (30.0, 60.0, current.token, "current")
