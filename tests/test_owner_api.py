"""The owner's audio and deletion over HTTP: a real uvicorn server, real
PostgreSQL, real audio, real steps running beside the deletion."""
from __future__ import annotations

import threading

import pytest

from actors.work import Outcome, run_once
from audio.sniff import media_type
from conftest import kinds, run_together, settings, work_until_idle
from domain.stages import Step
from media import encode
from test_http import make_api  # noqa: F401  (the live server fixture)
from test_steps import recognize_in_background
from web.byte_ranges import Unsatisfiable, byte_range


def _rows(db, statement: str, *params) -> list:
    with db.transaction() as conn:
        return conn.execute(statement, params).fetchall()


def _counts(db) -> tuple[int, int, int]:
    row = _rows(db, "SELECT (SELECT count(*) FROM records) AS r, (SELECT count(*) FROM blobs) AS b, "
                    "(SELECT count(*) FROM blob_chunks) AS c")[0]
    return row["r"], row["b"], row["c"]


def _assert_erased(db, store, record_id: int, by: str, role: str) -> None:
    """Nothing of the record is left but one journal line: deleted, by whom, no content."""
    assert _rows(db, "SELECT id FROM records WHERE id = %s", record_id) == []
    events = store.events(record_id)
    assert [e["kind"] for e in events] == ["deleted"], events
    assert events[0]["origin"] == "human" and events[0]["detail"] == {"by": by, "as": role}


def test_delete_erases_record_audio_text_and_journal(make_api, store, db, tmp_path):
    """DELETE /records/{id} removes the record, its audio and its text for good; the
    journal keeps only that it was deleted and by whom; another owner's id answers 404 and
    stays; the journal of other records is still append-only."""
    api = make_api()
    alice, bob = api.token("alice"), api.token("bob")
    mine = api.upload(alice, encode(tmp_path / "secret name.wav", "wav")).json()["id"]
    theirs = api.upload(bob, encode(tmp_path / "b.wav", "wav")).json()["id"]
    assert {o.value for o in work_until_idle(store, api.settings)} == {"saved"}
    assert api.http.get(f"/records/{mine}/text", headers=api.auth(alice)).status_code == 200

    foreign = api.http.delete(f"/records/{theirs}", headers=api.auth(alice))
    absent = api.http.delete(f"/records/{theirs + 1000}", headers=api.auth(alice))
    assert foreign.status_code == absent.status_code == 404 and foreign.json() == absent.json()
    assert api.http.delete(f"/records/{mine}").status_code == 401
    assert api.card(bob, theirs)["stage"] == "done"

    answer = api.http.delete(f"/records/{mine}", headers=api.auth(alice))
    assert answer.status_code == 204 and answer.content == b""
    for address in ("/records/{}", "/records/{}/text", "/records/{}/audio"):
        assert api.http.get(address.format(mine), headers=api.auth(alice)).status_code == 404
    assert api.http.delete(f"/records/{mine}", headers=api.auth(alice)).status_code == 404
    assert api.http.get("/records", headers=api.auth(alice)).json()["total"] == 0
    _assert_erased(db, store, mine, "alice", "owner")
    journal = str(store.events(mine))
    assert "secret name" not in journal
    assert _counts(db) == (1, 1, 1)  # bob's done record with its original (its converted audio went at done)
    assert kinds(store, theirs)[0] == "accepted" and api.card(bob, theirs)["stage"] == "done"
    import psycopg
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        _rows(db, "DELETE FROM events WHERE record_id = %s", theirs)
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        _rows(db, "DELETE FROM events WHERE record_id = %s", mine)  # not even the deletion line
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        _rows(db, "INSERT INTO events (record_id, origin, kind, stage) VALUES (%s, 'pipeline', 'x', 'created')",
              theirs + 1000)


def test_delete_during_recognition_refuses_the_step(make_api, store, db, tmp_path, hears_word_a_second):
    """Deleting a record while recognition holds it (a real run on a thread, whose
    recognizer takes 2 s a window without a model's CPU): the step's next checkpoint or renewal
    is refused, it stops early, nothing is re-created (no row, no audio, no journal line but the
    deletion)."""
    api = make_api()
    alice = api.token("alice")
    record_id = api.upload(alice, encode(tmp_path / "long.flac", "flac", repeat=12)).json()["id"]  # ~2 min
    s = settings(recognize_lease_seconds=3)
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    hears_word_a_second(pause=2.0)
    worker, result = recognize_in_background(store, s, record_id)
    assert api.card(alice, record_id)["working"]
    assert api.http.delete(f"/records/{record_id}", headers=api.auth(alice)).status_code == 204
    worker.join(timeout=120)
    assert not worker.is_alive() and result["outcome"] == Outcome.LOST
    _assert_erased(db, store, record_id, "alice", "owner")
    assert _counts(db) == (0, 0, 0)


def test_delete_between_a_step_and_its_save(make_api, store, db, tmp_path):
    """P3: a conversion has done its work and is about to save when the owner
    deletes the record; the save is refused (REFUSED), its new audio is discarded and no journal
    line of the stale holder survives."""
    api = make_api()
    alice = api.token("alice")
    record_id = api.upload(alice, encode(tmp_path / "a.mp3", "mp3")).json()["id"]
    at_save, deleted = threading.Event(), threading.Event()
    real_save = store.save

    def save_after_delete(claim, fields, *args, **options):
        at_save.set()
        assert deleted.wait(60)
        return real_save(claim, fields, *args, **options)

    store.save = save_after_delete
    result = {}
    worker = threading.Thread(target=lambda: result.update(outcome=run_once(store, api.settings, Step.CONVERT)))
    worker.start()
    assert at_save.wait(60)
    assert _counts(db)[1] == 2  # the original, and the conversion's new audio not yet saved
    assert api.http.delete(f"/records/{record_id}", headers=api.auth(alice)).status_code == 204
    deleted.set()
    worker.join(timeout=60)
    assert result["outcome"] == Outcome.REFUSED
    _assert_erased(db, store, record_id, "alice", "owner")
    assert _counts(db) == (0, 0, 0)


def test_delete_right_after_a_claim(make_api, store, db, tmp_path):
    """The owner deletes the record the moment a worker has claimed it, before the
    step reads it: the run ends without error (REFUSED), nothing is re-created."""
    api = make_api()
    alice = api.token("alice")
    record_id = api.upload(alice, encode(tmp_path / "a.wav", "wav")).json()["id"]
    real_claim = store.claim

    def claim_then_deleted(step, policy):
        claim = real_claim(step, policy)
        assert api.http.delete(f"/records/{record_id}", headers=api.auth(alice)).status_code == 204
        return claim

    store.claim = claim_then_deleted
    assert run_once(store, api.settings, Step.CONVERT) == Outcome.REFUSED
    _assert_erased(db, store, record_id, "alice", "owner")
    assert _counts(db) == (0, 0, 0)


def test_two_deletes_at_once(make_api, store, db, tmp_path):
    """Two deletions of one record released together: one 204, one 404, one
    journal line."""
    api = make_api()
    alice = api.token("alice")
    record_id = api.upload(alice, encode(tmp_path / "a.wav", "wav")).json()["id"]
    answers = run_together(2, lambda i: api.http.delete(f"/records/{record_id}", headers=api.auth(alice)).status_code)
    assert sorted(answers) == [204, 404]
    _assert_erased(db, store, record_id, "alice", "owner")


def test_audio_with_ranges(make_api, tmp_path):
    """GET /records/{id}/audio gives the original bytes with their media type;
    Range answers 206 with Content-Range (also across storage chunks), 416 past the end;
    another owner's id answers 404."""
    api = make_api()
    alice, bob = api.token("alice"), api.token("bob")
    mp3 = encode(tmp_path / "talk.mp3", "mp3")
    wav = encode(tmp_path / "long.bin", "wav", repeat=5)  # over one 1 MiB storage chunk
    short_id = api.upload(alice, mp3).json()["id"]
    long_id = api.upload(alice, wav).json()["id"]
    original = wav.read_bytes()
    size = len(original)
    assert size > (1 << 20) + 1000

    whole = api.http.get(f"/records/{short_id}/audio", headers=api.auth(alice))
    assert whole.status_code == 200 and whole.content == mp3.read_bytes()
    assert whole.headers["content-type"] == "audio/mpeg" and whole.headers["accept-ranges"] == "bytes"
    answer = api.http.get(f"/records/{long_id}/audio", headers=api.auth(alice))
    assert answer.content == original and answer.headers["content-type"] == "audio/wav"
    assert int(answer.headers["content-length"]) == size
    tag = answer.headers["etag"]

    def ranged(header: str, **extra):
        return api.http.get(f"/records/{long_id}/audio", headers={**api.auth(alice), "Range": header, **extra})

    cases = {"bytes=0-99": (0, 99), "bytes=-10": (size - 10, size - 1), "bytes=1000-": (1000, size - 1),
             "bytes=1048570-1048600": (1048570, 1048600), f"bytes=5-{size * 2}": (5, size - 1)}
    for header, (first, last) in cases.items():
        part = ranged(header)
        assert part.status_code == 206, header
        assert part.headers["content-range"] == f"bytes {first}-{last}/{size}", header
        assert part.content == original[first:last + 1], header
        assert int(part.headers["content-length"]) == last - first + 1
    for header in (f"bytes={size}-", f"bytes={size + 5}-{size + 9}", "bytes=-0"):
        refused = ranged(header)
        assert refused.status_code == 416 and refused.headers["content-range"] == f"bytes */{size}", header
    assert ranged("bytes=0-9", **{"If-Range": tag}).status_code == 206
    assert ranged("bytes=0-9", **{"If-Range": '"another"'}).content == original  # changed: the whole
    assert ranged("bytes=0-1,5-9").content == original  # several ranges: the whole file
    assert ranged("lines=1-2").status_code == 200

    foreign = api.http.get(f"/records/{long_id}/audio", headers=api.auth(bob))
    absent = api.http.get(f"/records/{long_id + 1000}/audio", headers=api.auth(bob))
    assert foreign.status_code == absent.status_code == 404 and foreign.json() == absent.json()
    assert api.http.get(f"/records/{long_id}/audio").status_code == 401


def test_byte_range_rules():
    """The Range header's forms (RFC 9110, section 14.1.2) and the ones ignored."""
    assert byte_range(None, 100) is None
    assert byte_range("bytes=0-0", 100) == (0, 0)
    assert byte_range("bytes=99-", 100) == (99, 99)
    assert byte_range("bytes=-500", 100) == (0, 99)
    assert byte_range("bytes=10-5", 100) is None
    assert byte_range("bytes=-", 100) is None
    assert byte_range("bytes=a-b", 100) is None
    with pytest.raises(Unsatisfiable):
        byte_range("bytes=100-", 100)
    with pytest.raises(Unsatisfiable):
        byte_range("bytes=-0", 100)


@pytest.mark.parametrize("kind,expected", [("wav", "audio/wav"), ("mp3", "audio/mpeg"), ("opus", "audio/ogg"),
                                           ("flac", "audio/flac"), ("m4a", "audio/mp4"), ("webm", "audio/webm")])
def test_media_type_from_the_bytes(tmp_path, kind, expected):
    """The player gets the container's media type, whatever the file is called."""
    path = encode(tmp_path / "noname", kind)
    assert media_type(path.read_bytes()[:16], "x.bin") == expected
    assert media_type(b"plain text here.", "x.ogg") == "audio/ogg"
    assert media_type(b"plain text here.", "x.bin") == "application/octet-stream"
