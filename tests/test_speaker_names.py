"""The owner's names for a record's speakers, at the store: a record's owner fields are written by
its owner alone, whatever layer calls the store (the pipeline never writes them, P3; another owner
never does either). No model runs: the speaker labels are the test's own."""
from __future__ import annotations

from searching import done_record


def _row(store, record_id: int) -> dict:
    with store.db.connection() as conn:
        return conn.execute("SELECT to_jsonb(r) AS row FROM records r WHERE id = %s", [record_id]).fetchone()["row"]


def test_naming_speakers_with_another_owners_id_is_refused_by_the_store(store):
    """Another owner's id names no speaker of the record: `name_speakers` returns False and the
    record (its names, its time of change, every column) and its journal stay as they were, with
    no HTTP layer in front to refuse it first. Its owner's names go through."""
    for name in ("alice", "bob"):
        store.add_owner(name)
    alice, bob = (store.owner_by_name(name)["id"] for name in ("alice", "bob"))
    record_id = done_record(store, alice, [(0.0, 4.0, "Good morning, the budget is ready.")])
    assert store.name_speakers(record_id, alice, {"S1": "Alice"})
    before, journal = _row(store, record_id), store.events(record_id)

    assert store.name_speakers(record_id, bob, {"S1": "Mallory", "S2": "Eve"}) is False

    assert _row(store, record_id) == before
    assert before["speaker_names"] == {"S1": "Alice"}
    assert store.events(record_id) == journal
    assert store.name_speakers(record_id, alice, {"S2": "Bob"})
    assert _row(store, record_id)["speaker_names"] == {"S1": "Alice", "S2": "Bob"}
