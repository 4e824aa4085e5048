"""Halting is a flag; resume returns the record to work from where it stood (P5)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, add_record, kinds, policy, save_result
from domain.claims import NO_WORK, Claim, HaltReason
from domain.resume import RESUME_RESETS, NotHalted, UnknownRecord, resume
from domain.stages import Step


def halted_at_converted(store, owner):
    add_record(store, owner)
    convert = store.claim(Step.CONVERT, policy())
    assert save_result(store, convert, {"duration_seconds": 3.0})
    recognize = store.claim(Step.RECOGNIZE, policy())
    assert store.halt(recognize, HaltReason.ATTEMPTS_EXHAUSTED, "engine crashed", count_failure=True)
    return recognize


def test_resume_continues_from_reached_stage(store, owner):
    """P5-S1: a record halted at converted resumes with recognition, not conversion again."""
    halted = halted_at_converted(store, owner)
    assert store.read_record(halted.record_id)["stage"] == "converted"
    assert resume(store, halted.record_id) == "converted"
    assert store.claim(Step.CONVERT, policy()) is NO_WORK
    again = store.claim(Step.RECOGNIZE, policy())
    assert isinstance(again, Claim) and again.record_id == halted.record_id


def test_halted_record_is_not_claimed(store, owner):
    """P5-S2: a halted record is never issued to a claim of its stage, even with its lease over."""
    record_id = add_record(store, owner)
    claim = store.claim(Step.CONVERT, policy(lease=0.01))
    assert store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "no audio stream")
    assert store.read_record(record_id)["lease_expires_at"] is not None
    import time
    time.sleep(0.05)
    assert store.claim(Step.CONVERT, policy()) is NO_WORK
    row = store.read_record(record_id)
    assert (row["stage"], row["halt_reason"]) == ("created", "undecodable_audio")


def test_resume_resets_every_guard(store, owner, db):
    """P5-S3: a record halted with failures and a pause, halted longer than the stage's time
    limit: resume resets failures, pause and stage-entry time, and the next claim issues it
    instead of halting it again."""
    record_id = add_record(store, owner)
    p = policy(time_limit=3600, backoff=0, max_attempts=3)
    claim = store.claim(Step.CONVERT, p)
    assert store.record_failure(claim, "one", 0)
    claim = store.claim(Step.CONVERT, p)
    assert store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, "two", count_failure=True)
    with db.transaction() as conn:  # it stood halted for two hours, with a pause still pending
        conn.execute("UPDATE steps SET entered_at = now() - interval '2 hours', "
                     "retry_after = now() + interval '1 hour' WHERE record_id = %s", [record_id])
    resume(store, record_id)
    row = store.read_record(record_id)
    assert row["failures"] == 0 and row["retry_after"] is None
    assert row["halted_at"] is None and row["halt_reason"] is None and row["halt_error"] is None
    assert (row["updated_at"] - row["entered_at"]).total_seconds() < 1
    again = store.claim(Step.CONVERT, p)
    assert isinstance(again, Claim) and again.record_id == record_id
    assert store.read_record(record_id)["halted_at"] is None


def test_resume_frees_the_claim(store, owner):
    """P5-S4: a halted record still carrying a claim token and lease: resume clears both, and
    the next claim issues it without waiting for the old lease."""
    record_id = add_record(store, owner)
    claim = store.claim(Step.CONVERT, policy(lease=3600))
    assert store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "x")
    row = store.read_record(record_id)
    assert row["claim_token"] == claim.token and row["lease_expires_at"] is not None
    resume(store, record_id)
    row = store.read_record(record_id)
    assert row["claim_token"] is None and row["lease_expires_at"] is None
    assert store.claim(Step.CONVERT, policy()).record_id == record_id


def test_resume_is_in_the_journal_as_human(store, owner):
    """P5-S5: resume writes an event with origin human to the record's journal."""
    halted = halted_at_converted(store, owner)
    resume(store, halted.record_id)
    last = store.events(halted.record_id)[-1]
    assert (last["kind"], last["origin"], last["stage"]) == ("resumed", "human", "converted")
    assert {e["origin"] for e in store.events(halted.record_id)[:-1]} == {"pipeline"}


def test_resume_names_every_guard_of_the_spec():
    """P5: the one list of guards holds exactly the fields P5 names, and the lost-lease
    count of the crash-loop guard (tests/test_lost_leases.py)."""
    assert set(RESUME_RESETS) == {"halted_at", "halt_reason", "halt_error", "claim_token",
                                  "lease_expires_at", "failures", "retry_after", "entered_at",
                                  "lost_leases"}


def test_resume_refuses_unknown_and_not_halted(store, owner):
    """P5: resume of an unknown id or of a record that is not halted changes nothing."""
    record_id = add_record(store, owner)
    with pytest.raises(UnknownRecord):
        resume(store, 999999)
    with pytest.raises(NotHalted):
        resume(store, record_id)
    assert kinds(store, record_id) == ["accepted"]


@pytest.mark.parametrize("tool", ["cli", "script"])
def test_resume_tools(store, owner, env, tool):
    """P5-S1/P5-S5 through the operator's tools: `transcriber resume ID` and `scripts/resume.py ID`
    resume a halted record; an unknown id or a record not halted exits 2 with a clear message."""
    halted = halted_at_converted(store, owner)
    command = ([sys.executable, "-m", "transcriber.cli", "resume"] if tool == "cli"
               else [sys.executable, str(ROOT / "scripts" / "resume.py")])
    done = subprocess.run([*command, str(halted.record_id)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"record {halted.record_id} resumed at stage converted" in done.stdout
    assert store.events(halted.record_id)[-1]["origin"] == "human"

    again = subprocess.run([*command, str(halted.record_id)], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "is not halted" in again.stderr
    unknown = subprocess.run([*command, "424242"], env=env, capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "no record with id 424242" in unknown.stderr
    garbage = subprocess.run([*command, "abc"], env=env, capture_output=True, text=True, timeout=60)
    assert garbage.returncode == 2
