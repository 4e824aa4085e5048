"""Every write a holder makes is fenced by its claim's token, at every step that makes it (P3,
P3-S2): the save (the convert step's, the recognize step's that reaches done, the diarize step's),
the checkpoint (recognize, diarize), the failure, the halt, the give-back and the lease renewal.
A holder whose lease ran out and whose row another claim took is refused: its call returns False,
nothing of the record, its step rows, its windows or its search rows changes, and the journal
gains one `save_refused` line naming the step, the write, the stale token and the current one.

No model runs: the diarize step's writes are the store's, with turns and embeddings of the test's
own, so these tests need no `speakers` extra."""
from __future__ import annotations

import pytest

from conftest import add_record, checkpoint, policy, run_together, save_result, save_turns
from domain.claims import HaltReason
from domain.stages import Step
from searching import done_record

TALK = [(0.0, 4.0, "Good morning, the budget is ready."), (4.0, 10.0, "Thanks, the budget looks fine."),
        (10.0, 16.0, "I will ship the release tonight.")]
TURNS = {"stale": [{"start": 0.0, "end": 16.0, "speaker": "S1"}],
         "current": [{"start": 0.0, "end": 6.0, "speaker": "S1"}, {"start": 6.0, "end": 16.0, "speaker": "S2"}]}
# where the stale holder's first window ends: its next write starts exactly where the step stands,
# so that only the token tells the stale holder from the current one
FIRST_WINDOW = 8.0

# races per step: with a save not fenced, the stale holder wins some of them
ROUNDS = 10

# the tables a record's footprint is read from, each ordered by its key
_FOOTPRINT = {
    "records": "SELECT to_jsonb(t) AS row FROM records t WHERE id = %s",
    "steps": "SELECT to_jsonb(t) AS row FROM steps t WHERE record_id = %s ORDER BY step",
    "record_windows": "SELECT to_jsonb(t) AS row FROM record_windows t WHERE record_id = %s ORDER BY from_seconds",
    "record_speaker_windows": "SELECT to_jsonb(t) AS row FROM record_speaker_windows t WHERE record_id = %s "
                              "ORDER BY from_seconds",
    "search_rows": "SELECT to_jsonb(t) AS row FROM search_rows t WHERE record_id = %s ORDER BY n",
}


def _footprint(store, record_id: int) -> dict[str, list]:
    """Everything of the record a holder's write could touch, as the database holds it."""
    with store.db.connection() as conn:
        return {table: [r["row"] for r in conn.execute(sql, [record_id])] for table, sql in _FOOTPRINT.items()}


def lease_ran_out(store, record_id: int, step: Step) -> None:
    """The claim's lease ends in the past: what a holder slower than its lease finds, without
    waiting for it."""
    with store.db.connection() as conn:
        conn.execute("UPDATE steps SET lease_expires_at = now() - interval '1 second' "
                     "WHERE record_id = %s AND step = %s", [record_id, step.value])


def _first_window(store, claim) -> None:
    """The stale holder's first window, checkpointed while its claim was still its own."""
    if claim.step is Step.RECOGNIZE:
        assert checkpoint(store, claim, 0.0, FIRST_WINDOW, [{"start": 0.0, "end": 4.0, "text": "first", "words": []}],
                          "en", 60)
    elif claim.step is Step.DIARIZE:
        assert store.checkpoint(claim, 0.0, FIRST_WINDOW, 60, {"times": b"first", "vectors": b"first"})


def waiting_for(store, owner, step: Step) -> int:
    """A record whose step row for `step` is eligible, and no other record."""
    if step is Step.DIARIZE:
        return done_record(store, owner["id"], TALK, diarize=True, words=True)
    record_id = add_record(store, owner)
    if step is Step.RECOGNIZE:
        assert save_result(store, store.claim(Step.CONVERT, policy()), {"duration_seconds": 16.0})
    return record_id


def _stale_and_current(store, owner, step: Step):
    """A record of `step` claimed twice: the first holder's lease ran out after its first window
    (a step that checkpoints) and another claim took the row under a new token."""
    record_id = waiting_for(store, owner, step)
    stale = store.claim(step, policy())
    assert stale.record_id == record_id
    _first_window(store, stale)
    lease_ran_out(store, record_id, step)
    current = store.claim(step, policy())
    assert (current.record_id, current.step) == (record_id, step) and current.token != stale.token
    return record_id, stale, current


def _save(store, claim, who: str) -> bool:
    """The step's save as its worker makes it, the result marked by `who` (stale or current)."""
    if claim.step is Step.DIARIZE:
        return save_turns(store, claim, TURNS[who])
    if claim.step is Step.RECOGNIZE:
        return save_result(store, claim, {"engine": who}, diarize=True)
    return save_result(store, claim, {"duration_seconds": {"stale": 111.0, "current": 222.0}[who]})


def _checkpoint(store, claim, who: str) -> bool:
    """The step's next window, from where the step stands, its content marked by `who`."""
    if claim.step is Step.RECOGNIZE:
        segments = [{"start": 10.0, "end": 12.0, "text": who, "words": []}]
        return checkpoint(store, claim, FIRST_WINDOW, 16.0, segments, "fr", 600)
    return store.checkpoint(claim, FIRST_WINDOW, 16.0, 600, {"times": who.encode(), "vectors": who.encode()})


# each holder write as its caller makes it, by the name its refusal is journaled under
WRITES = {
    "save": _save,
    "checkpoint": _checkpoint,
    "failure": lambda store, claim, who: store.record_failure(claim, f"{who} failed", 10),
    "halt": lambda store, claim, who: store.halt(claim, HaltReason.ENGINE_REFUSED, who, count_failure=True),
    "release": lambda store, claim, who: store.release(claim),
    "renew_lease": lambda store, claim, who: store.renew_lease(claim, 3600, progress_seconds=12.0),
}
# the steps that make each write: a conversion keeps no windows, so it has no checkpoint
CASES = [(step, write) for step in Step for write in WRITES if not (write == "checkpoint" and step is Step.CONVERT)]


@pytest.mark.parametrize(("step", "write"), CASES, ids=[f"{s.value}-{w}" for s, w in CASES])
def test_a_stale_holders_write_is_refused_and_changes_nothing(store, owner, step, write):
    """P3, P3-S2: the holder's lease ran out and another claim took the row. Its write is
    refused: False, the record, its step rows, its recognised windows, its speaker windows and its
    search rows exactly as they were, and one `save_refused` line naming the step, the write, the
    stale token and the current one. The same write by the current holder then takes effect (the
    refusal was the token's, nothing else's)."""
    record_id, stale, current = _stale_and_current(store, owner, step)
    before, journal = _footprint(store, record_id), store.events(record_id)

    assert WRITES[write](store, stale, "stale") is False

    assert _footprint(store, record_id) == before
    after = store.events(record_id)
    assert after[:len(journal)] == journal
    assert [(e["kind"], e["detail"]) for e in after[len(journal):]] == [
        ("save_refused", {"step": step.value, "write": write, "claim_token": stale.token,
                          "current_claim_token": current.token})]
    assert WRITES[write](store, current, "current") is True
    assert _footprint(store, record_id) != before


def _saved_result(store, record_id: int, step: Step):
    """What the step's save wrote on the record."""
    row = _footprint(store, record_id)["records"][0]
    return {Step.CONVERT: row["duration_seconds"], Step.RECOGNIZE: row["engine"], Step.DIARIZE: row["turns"]}[step]


@pytest.mark.parametrize("step", list(Step), ids=[s.value for s in Step])
def test_the_stale_and_the_current_holder_save_at_once_and_only_the_current_wins(store, owner, step):
    """P3-S2: the stale and the current holder of one step row save at the same moment (threads
    released by a barrier): exactly one save wins, the current holder's, whichever comes first;
    its result is the one on the record, whose journal has one save and one refusal. Repeated on
    fresh records: a lucky interleaving must not make it pass."""
    expected = {Step.CONVERT: 222.0, Step.RECOGNIZE: "current", Step.DIARIZE: TURNS["current"]}[step]
    saved_event = "speakers_saved" if step is Step.DIARIZE else "advanced"
    for _ in range(ROUNDS):
        record_id, stale, current = _stale_and_current(store, owner, step)
        holders = [(stale, "stale"), (current, "current")]

        results = run_together(2, lambda i: _save(store, *holders[i]))

        assert results == [False, True]
        assert _saved_result(store, record_id, step) == expected
        kinds = [e["kind"] for e in store.events(record_id)
                 if e["detail"].get("step") == step.value and e["kind"] in (saved_event, "save_refused")]
        assert sorted(kinds) == sorted([saved_event, "save_refused"])
