"""Retention of original audio: with TRANSCRIBER_AUDIO_RETENTION_DAYS set, the
original of a done record older than that is deleted by a periodic, batched, fenced pass; the
record, its card and its text stay, the journal says `audio_expired`, the card says the audio is
gone and GET /records/{id}/audio answers 410 `audio_expired`. Fractional days work: the tests
use a second or less."""
from __future__ import annotations

import threading
import time

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

import actors
from actors.scheduler import _add_tick
from conftest import add_record, kinds, policy, run_together, save_turns, settings, work_until_idle
from domain.claims import HaltReason
from domain.stages import Step
from media import encode
from searching import done_record
from service.config import ConfigError, load
from test_cli import run
from test_http import make_api  # noqa: F401  (the live server fixture)

DAY = 86400.0


def _blob_ids(db) -> set[int]:
    with db.connection() as conn:
        return {row["id"] for row in conn.execute("SELECT id FROM blobs")}


def _mark_done(db, record_ids) -> None:
    """Records moved to done as a save would leave them (their converted audio already gone)."""
    with db.connection() as conn:
        conn.execute("UPDATE records SET stage = 'done', stage_entered_at = now(), transcript = 'x' "
                     "WHERE id = ANY(%s)", [list(record_ids)])
        conn.execute("DELETE FROM steps WHERE record_id = ANY(%s)", [list(record_ids)])


def test_expired_audio_is_gone_and_the_record_stays(make_api, store, db, tmp_path):
    """A done record past the retention (1 s, given in days) loses its original to
    the retention actor: the card says `audio: expired`, the audio address answers 410
    `audio_expired`, the text is still served, the journal has one `audio_expired`, the blob is
    gone and the owner's stored bytes fall. A record not done yet keeps its audio."""
    api = make_api(audio_retention_days=1 / DAY)
    token = api.token("alice")
    done_id = api.upload(token, encode(tmp_path / "talk.wav", "wav")).json()["id"]
    work_until_idle(store, api.settings)
    waiting = api.upload(token, encode(tmp_path / "later.wav", "wav"))
    waiting_id = waiting.json()["id"]
    kept_blob = store.read_record(waiting_id)["original_blob_id"]
    assert api.card(token, done_id)["audio"] == "kept"

    actors.use(api.settings, store)
    deadline = time.monotonic() + 30
    while api.card(token, done_id)["audio"] != "expired":
        assert time.monotonic() < deadline
        actors.expire_audio()  # what the scheduler sends; here called in place
        time.sleep(0.2)

    card = api.card(token, done_id)
    assert card["stage"] == "done" and card["audio_expired_at"] is not None
    gone = api.http.get(f"/records/{done_id}/audio", headers=api.auth(token))
    assert gone.status_code == 410 and gone.json()["error"] == "audio_expired", gone.text
    text = api.http.get(f"/records/{done_id}/text", headers=api.auth(token))
    assert text.status_code == 200 and text.text.strip()
    assert kinds(store, done_id).count("audio_expired") == 1
    assert _blob_ids(db) == {kept_blob}
    assert api.http.get(f"/records/{waiting_id}/audio", headers=api.auth(token)).status_code == 200
    assert api.card(token, waiting_id)["audio"] == "kept"
    usage = api.http.get("/records", headers=api.auth(token)).json()["usage"]
    assert usage["stored_bytes"] == (tmp_path / "later.wav").stat().st_size
    actors.expire_audio()
    assert kinds(store, done_id).count("audio_expired") == 1  # once only


def test_retention_pass_is_batched_and_fenced(store, db, owner):
    """The pass works in batches (25 due records, batches of 10), leaves records not
    done and records younger than the retention alone, skips a record another transaction holds
    (taken by the next pass), and two passes released at once by a barrier expire each record
    exactly once."""
    due = [add_record(store, owner, b"audio %d" % i) for i in range(25)]
    young_and_waiting = add_record(store, owner)
    _mark_done(db, due)
    assert store.expire_audio(3600).expired == 0  # none is an hour old

    holder = db._pool.getconn()
    try:
        holder.execute("BEGIN")
        holder.execute("SELECT id FROM records WHERE id = %s FOR UPDATE", [due[0]])
        passes = []
        pass_thread = threading.Thread(target=lambda: passes.append(store.expire_audio(0.001, batch=10)))
        pass_thread.start()
        pass_thread.join(timeout=30)
        assert not pass_thread.is_alive(), "the pass waited for a record another transaction holds"
        assert passes[0].expired == 24 and not passes[0].more
        assert store.read_record(due[0])["original_blob_id"] is not None  # held: left for the next pass
        holder.execute("ROLLBACK")
    finally:
        db._pool.putconn(holder)
    assert store.expire_audio(0.001, batch=10).expired == 1
    assert _blob_ids(db) == {store.read_record(young_and_waiting)["original_blob_id"]}
    assert all(kinds(store, r).count("audio_expired") == 1 for r in due)

    racing = [add_record(store, owner, b"more %d" % i) for i in range(40)]
    _mark_done(db, racing)
    passes = run_together(2, lambda i: store.expire_audio(0.001, batch=5))
    assert sum(p.expired for p in passes) == 40
    assert all(kinds(store, r).count("audio_expired") == 1 for r in racing)
    assert _blob_ids(db) == {store.read_record(young_and_waiting)["original_blob_id"]}


@pytest.mark.parametrize("ending", ["saved", "halted"])
def test_a_done_record_keeps_its_original_while_its_speakers_are_to_be_found(store, db, owner, ending):
    """INV-1: the diarize step decodes a done record's original again, so the retention pass
    leaves the original of a done record whose diarize step row waits (pending, then claimed)
    while it expires that of a done record that waits for nothing; once the diarize step is saved
    (or halted: nothing will decode it any more) the next pass expires it, journaled once."""
    talk = [(0.0, 4.0, "Good morning, the budget is ready.")]
    plain = done_record(store, owner["id"], talk, audio=b"plain audio")
    wanted = done_record(store, owner["id"], talk, audio=b"audio to find speakers in", diarize=True)
    kept = store.read_record(wanted)["original_blob_id"]

    assert store.expire_audio(0.001).expired == 1
    assert store.read_record(plain)["original_blob_id"] is None
    assert store.read_record(wanted)["original_blob_id"] == kept
    claim = store.claim(Step.DIARIZE, policy())
    assert claim.record_id == wanted
    assert store.expire_audio(0.001).expired == 0
    assert store.read_record(wanted)["original_blob_id"] == kept and kept in _blob_ids(db)
    assert "audio_expired" not in kinds(store, wanted)

    if ending == "saved":
        assert save_turns(store, claim, [{"start": 0.0, "end": 4.0, "speaker": "S1"}])
    else:
        assert store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, "the step failed too often")
    assert store.expire_audio(0.001).expired == 1
    assert store.read_record(wanted)["original_blob_id"] is None and kept not in _blob_ids(db)
    assert kinds(store, wanted).count("audio_expired") == 1


def test_retention_setting_and_schedule(env):
    """TRANSCRIBER_AUDIO_RETENTION_DAYS takes fractional days (unset: keep); a broken
    value stops the start with one line naming it; with it set the scheduler sends the retention
    pass (a quarter of the retention apart, at most hourly), without it never."""
    assert load({}).audio_retention_seconds is None
    assert load({"TRANSCRIBER_AUDIO_RETENTION_DAYS": "0.5"}).audio_retention_seconds == DAY / 2
    for broken in ("soon", "0", "-1", "nan"):
        with pytest.raises(ConfigError, match="TRANSCRIBER_AUDIO_RETENTION_DAYS"):
            load({"TRANSCRIBER_AUDIO_RETENTION_DAYS": broken})
    done = run({**env, "TRANSCRIBER_AUDIO_RETENTION_DAYS": "soon"}, "status")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "TRANSCRIBER_AUDIO_RETENTION_DAYS" in lines[0]

    with_retention, without = BackgroundScheduler(), BackgroundScheduler()
    _add_tick(with_retention, 1.0, 8.0)
    _add_tick(without, 1.0, None)
    assert with_retention.get_job("expire_audio").trigger.interval.total_seconds() == 2.0
    assert without.get_job("expire_audio") is None
    _add_tick(with_retention := BackgroundScheduler(), 1.0, 30 * DAY)
    assert with_retention.get_job("expire_audio").trigger.interval.total_seconds() == 3600


def test_the_retention_pass_finds_due_records_by_its_index(store, owner, db):
    """In an archive where most done records lost their original long ago (5,000
    records, statistics gathered), the pass's batch reads the retention index (done records still
    holding their original, oldest first), not a sequential scan of records."""
    from test_storage import explain

    with db.connection() as conn:
        conn.execute("""
            WITH b AS (INSERT INTO blobs (media_type, completed_at) SELECT 'x', now() FROM generate_series(1, 600)
                       RETURNING id)
            INSERT INTO records (owner_id, original_blob_id, stage, created_at, audio_expired_at)
            SELECT %(owner)s, CASE WHEN n <= 600 THEN (SELECT min(id) FROM b) + n - 1 END,
                   CASE WHEN n <= 100 THEN 'created' ELSE 'done' END,
                   now() - make_interval(days => 5000 - n), CASE WHEN n > 600 THEN now() END
            FROM generate_series(1, 5000) AS n""", {"owner": owner["id"]})
        conn.execute("ANALYZE records")
    nodes = explain(db, "expire_audio", {"retention_seconds": 30 * DAY, "retention_days": 30, "batch": 500})
    scans = {(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes if "Relation Name" in n}
    assert not [s for s in scans if s[0] == "Seq Scan" and s[1] == "records"], scans
    assert "records_audio_retention" in {n.get("Index Name") for n in nodes}, nodes
    assert store.expire_audio(30 * DAY).expired == 500
