"""Resumable uploads under real concurrency, against a real PostgreSQL: finishers of one upload
whose last byte is in but whose record was not made (a crash between the two) on a barrier,
whether requests of a live server, the sweep or the service's own finishing, copy its bytes once
and make one record of exactly those bytes; a HEAD asked while another connection is in the
middle of a PATCH body answers the committed offset at once, a PATCH at a stale offset is
refused with 409, and the slow PATCH then completes the upload."""
from __future__ import annotations

import threading
import time

import httpx
import pytest

from conftest import settings, wait_until
from media import encode
from test_http import make_api  # noqa: F401  (the live server fixture)

TUS = {"Tus-Resumable": "1.0.0"}
OFFSET = {**TUS, "Content-Type": "application/offset+octet-stream"}
MB = 1024 * 1024
# what a HEAD may take behind a live PATCH: generous on a loaded machine, well under the 5 s a
# wait for the writer would cost
HEAD_SECONDS = 2.5


@pytest.fixture
def speech(tmp_path):
    """About 1.5 MB of real speech as a wav: more than one of the store's chunks."""
    return encode(tmp_path / "speech.wav", "wav", repeat=30)


def headers(token: str, **more) -> dict:
    return {"Authorization": f"Bearer {token}", **TUS, **more}


def count(store, sql: str, *params) -> int:
    with store.db.connection() as conn:
        return conn.execute(sql, params).fetchone()["n"]


def stranded_upload(store, owner_id: int, data: bytes) -> str:
    """An upload whose every byte is committed but whose record was never made: what a process
    killed between the last byte and the record leaves."""
    from db.resumable import NewUpload, piece_room

    upload_id, _ = store.create_upload(owner_id, NewUpload(len(data), source_name="talk.wav"),
                                       "application/octet-stream")
    offset = 0
    while offset < len(data):
        offset = store.write_upload_piece(upload_id, owner_id, offset, data[offset:offset + piece_room(offset)])
    return upload_id


class CopyGate:
    """Counts the finishers that read an upload's bytes out to check them (the store's own reads,
    unchanged). The first waits there until `released()` says the other finisher got as far as
    it will (copying too, or answering without), so the two overlap whatever the machine's load."""

    def __init__(self, store, released):
        self.original, self.released = store.upload_bytes, released
        self.copies = 0
        self.answered = threading.Event()
        self._lock = threading.Lock()
        store.upload_bytes = self.upload_bytes

    def upload_bytes(self, blob_id, *args, **kwargs):
        with self._lock:
            self.copies += 1
        wait_until(lambda: self.copies >= 2 or self.answered.is_set() or self.released(), 60,
                   what="the other finisher to copy or to answer")
        yield from self.original(blob_id, *args, **kwargs)


def on_barrier(*calls):
    """Each call on a thread of its own, released together; their results in order."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    errors: list = []

    def run(i, call):
        try:
            barrier.wait(timeout=30)
            results[i] = call()
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)
    return results


def one_record_of(store, data: bytes) -> int:
    """The one record there is, whose audio is `data` byte for byte (nothing lost or doubled),
    and no blob besides its own."""
    from db.blobs import chunks_of

    with store.db.connection() as conn:
        records = conn.execute("SELECT id, original_blob_id AS blob_id FROM records").fetchall()
    assert len(records) == 1, records
    assert b"".join(chunks_of(store.db, "upload_chunks", records[0]["blob_id"], 4)) == data
    assert count(store, "SELECT count(*) AS n FROM blobs") == 1
    return records[0]["id"]


@pytest.mark.parametrize("first", ["finish", "sweep"])
def test_two_finishers_of_a_stranded_upload_copy_its_bytes_once(store, speech, first):
    """Two finishers of a stranded upload on a barrier (two requests' finishing, or the sweep and
    a request): one copies and checks the bytes and makes the record, the other does not copy
    them and answers at once that the record is not there yet; one record of exactly the bytes."""
    from service import resumable

    the_settings = settings()
    store.add_owner("alice")
    owner_id = store.owner_by_name("alice")["id"]
    data = speech.read_bytes()
    upload_id = stranded_upload(store, owner_id, data)
    if first == "sweep":  # stranded for longer than the sweep's grace
        with store.db.connection() as conn:
            conn.execute("UPDATE resumable_uploads SET touched_at = now() - interval '1 hour'")
    gate = CopyGate(store, lambda: False)

    def finish():
        try:
            return resumable.finish(store, the_settings, upload_id, owner_id)
        finally:
            gate.answered.set()

    def sweep():
        try:
            return resumable.sweep(store, the_settings)
        finally:
            gate.answered.set()

    answers = on_barrier(sweep if first == "sweep" else finish, finish)
    assert gate.copies == 1, answers
    record_id = one_record_of(store, data)
    made = [a for a in answers if isinstance(a, int)]
    if first == "sweep":
        assert answers[0].finished == (1 if not made else 0), answers
    assert made in ([], [record_id]), answers
    # whoever answered first, the upload names its record now
    state = store.upload_state(upload_id, owner_id)
    assert state["finished_at"] is not None and state["record_id"] == record_id


def test_a_finisher_that_waits_gets_the_record_another_made(store, speech):
    """The request that brought the last byte waits for a finisher that got there first (a HEAD
    that came between its last byte and its record) instead of copying too, and answers the
    record that one made."""
    from service import resumable

    the_settings = settings()
    store.add_owner("alice")
    owner_id = store.owner_by_name("alice")["id"]
    data = speech.read_bytes()
    upload_id = stranded_upload(store, owner_id, data)

    def waiting_on_a_lock() -> bool:
        # asked on a connection of its own: the copying thread's statements run in the
        # finisher's transaction, which would see the activity as it was when it began
        with store.db.own_connection(10) as conn:
            return conn.execute("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() "
                                "AND wait_event_type = 'Lock' AND query LIKE %s", ("%resumable_uploads%",)
                                ).fetchone()["n"] > 0

    gate = CopyGate(store, waiting_on_a_lock)
    holding = threading.Event()
    original = gate.upload_bytes

    def copying(blob_id, *args, **kwargs):
        holding.set()
        yield from original(blob_id, *args, **kwargs)

    store.upload_bytes = copying
    first: list = []
    holder = threading.Thread(target=lambda: first.append(resumable.finish(store, the_settings, upload_id, owner_id)))
    holder.start()
    wait_until(holding.is_set, 60, what="the first finisher to copy")
    second = resumable.finish(store, the_settings, upload_id, owner_id, wait=True)
    holder.join(timeout=60)
    assert gate.copies == 1
    assert first == [second] == [one_record_of(store, data)]


def test_two_heads_of_a_stranded_upload_copy_its_bytes_once(make_api, speech):
    """Two HEADs on a barrier of an upload whose last byte is in but whose record was never made
    (as after a crash): one request copies the bytes and makes the record, both answer at once
    with the final offset, and each that names a record names the one there is."""
    api = make_api()
    token = api.token("alice")
    owner_id = api.store.owner_by_token(token)["id"]
    data = speech.read_bytes()
    url = "/uploads/" + stranded_upload(api.store, owner_id, data)
    gate = CopyGate(api.store, lambda: False)

    def head():
        with httpx.Client(base_url=str(api.http.base_url), timeout=60) as http:
            try:
                return http.head(url, headers=headers(token))
            finally:
                gate.answered.set()

    heads = on_barrier(head, head)
    assert gate.copies == 1
    record_id = one_record_of(api.store, data)
    assert [h.status_code for h in heads] == [200, 200]
    assert all(h.headers["Upload-Offset"] == h.headers["Upload-Length"] == str(len(data)) for h in heads)
    assert {h.headers.get("Upload-Record") for h in heads} <= {str(record_id), None}
    assert any(h.headers.get("Upload-Record") for h in heads)
    assert api.http.head(url, headers=headers(token)).headers["Upload-Record"] == str(record_id)
    assert api.http.get(url, headers=headers(token)).json()["record"] == record_id


def test_head_answers_at_once_while_a_patch_is_mid_body(make_api, speech):
    """A slow client's PATCH has sent a chunk and a bit and then pauses mid-body: a HEAD (and
    GET) from another connection answers the committed offset well within HEAD_SECONDS, a
    PATCH from the start is refused with 409 naming that offset, and once the slow client sends
    the rest its PATCH completes the upload into one record of exactly the bytes sent."""
    api = make_api()
    token = api.token("alice")
    data = speech.read_bytes()
    url = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(len(data))})).headers["Location"]
    first = MB + 200_000  # a whole chunk (committed) and the start of the next (not yet a piece)
    go_on = threading.Event()

    def body():
        yield data[:first]
        assert go_on.wait(timeout=60)
        yield data[first:]

    answers = []

    def slow_patch():
        with httpx.Client(base_url=str(api.http.base_url), timeout=120) as http:
            answers.append(http.patch(url, content=body(), headers=headers(token, **OFFSET, **{"Upload-Offset": "0"})))

    writer = threading.Thread(target=slow_patch)
    writer.start()
    try:
        upload_id = url.rsplit("/", 1)[-1]
        wait_until(lambda: count(api.store, "SELECT received AS n FROM resumable_uploads WHERE id = %s",
                                 upload_id) == MB, 60, what="the slow PATCH's first chunk")
        with httpx.Client(base_url=str(api.http.base_url), timeout=60) as http:
            began = time.monotonic()
            head = http.head(url, headers=headers(token))
            head_seconds = time.monotonic() - began
            began = time.monotonic()
            state = http.get(url, headers=headers(token))
            get_seconds = time.monotonic() - began
            began = time.monotonic()
            stale = http.patch(url, content=data[:1000], headers=headers(token, **OFFSET, **{"Upload-Offset": "0"}))
            stale_seconds = time.monotonic() - began
        assert head.status_code == 200 and head.headers["Upload-Offset"] == str(MB)
        assert head_seconds < HEAD_SECONDS, head_seconds
        assert state.json()["offset"] == MB and state.json()["record"] is None
        assert get_seconds < HEAD_SECONDS, get_seconds
        assert (stale.status_code, stale.json()["error"], stale.json()["offset"]) == (409, "offset_mismatch", MB)
        assert stale_seconds < HEAD_SECONDS, stale_seconds
    finally:
        go_on.set()
        writer.join(timeout=120)
    assert answers[0].status_code == 204, answers[0].text
    assert answers[0].headers["Upload-Offset"] == str(len(data))
    record_id = int(answers[0].headers["Upload-Record"])
    assert api.http.get(f"/records/{record_id}/audio", headers=api.auth(token)).content == data
    assert count(api.store, "SELECT count(*) AS n FROM records") == 1
