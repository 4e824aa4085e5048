"""Resumable uploads (tus 1.0 at /uploads) with the real Python client, tuspy, against a live
server: the upload becomes one record whose audio is byte-identical, a cut connection resumes
from the committed offset, every bad input is refused with nothing kept, another owner's upload
is a missing one, quotas count unfinished uploads, and two final PATCHes make one record."""
from __future__ import annotations

import base64
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import httpx
import pytest
from tusclient import client as tus_client

from media import encode
from relay import Relay
from test_http import make_api  # noqa: F401  (the live server fixture)

TUS = {"Tus-Resumable": "1.0.0"}
OFFSET = {**TUS, "Content-Type": "application/offset+octet-stream"}
MB = 1024 * 1024


@pytest.fixture
def speech(tmp_path):
    """About 3 MB of real speech as a wav: more than two of the store's chunks."""
    return encode(tmp_path / "speech.wav", "wav", repeat=60)


def headers(token: str, **more) -> dict:
    return {"Authorization": f"Bearer {token}", **TUS, **more}


def metadata(**pairs: str) -> str:
    return ",".join(f"{key} {base64.b64encode(value.encode()).decode()}" for key, value in pairs.items())


def uploader(api, token: str, path, chunk_size: int, base: str | None = None, retry_delay: int = 0, **meta):
    client = tus_client.TusClient((base or str(api.http.base_url)) + "/uploads",
                                  headers={"Authorization": f"Bearer {token}"})
    return client.uploader(str(path), chunk_size=chunk_size, metadata=meta, retries=10, retry_delay=retry_delay)


def upload_id(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1]


def count(store, sql: str, *params) -> int:
    with store.db.connection() as conn:
        return conn.execute(sql, params).fetchone()["n"]


def upload_through_a_cut(api, token: str, path, *, chunk_size: int, cut_after: int, checksums: bool = False):
    """tuspy uploads `path` (with a checksum on every chunk if `checksums`) through a relay that
    cuts the first connection to carry `cut_after` bytes: the uploader, the relay (closed) and
    the offsets HEAD answered tuspy when it went on."""
    port = int(str(api.http.base_url).rsplit(":", 1)[1])
    relay = Relay(("127.0.0.1", port))
    try:
        relay.cut_after = cut_after
        # tuspy waits `retry_delay` seconds (30 by default) before it asks HEAD where to go on
        up = uploader(api, token, path, chunk_size=chunk_size, base=f"http://127.0.0.1:{relay.port}", retry_delay=1)
        up.upload_checksum = checksums
        offsets: list[int] = []
        original = up.get_offset
        up.get_offset = lambda: offsets.append(original()) or offsets[-1]
        up.upload()
    finally:
        relay.close()
    return up, relay, offsets


def test_tuspy_upload_becomes_one_record_with_the_same_bytes(make_api, speech):
    """tuspy uploads in chunks that do not fall on the store's chunk boundaries; the record it
    makes has the metadata's title and language and serves back exactly the bytes sent; HEAD and
    GET name the record, every tus answer carries Tus-Resumable."""
    api = make_api()
    token = api.token("alice")
    options = api.http.options("/uploads")
    assert options.status_code == 204
    assert options.headers["Tus-Version"] == "1.0.0"
    assert set(options.headers["Tus-Extension"].split(",")) == {
        "creation", "creation-with-upload", "creation-defer-length", "termination", "expiration", "checksum"}
    assert int(options.headers["Tus-Max-Size"]) == api.settings.max_upload_bytes

    up = uploader(api, token, speech, chunk_size=700_001, filename="talk.wav", title="Board meeting", language="en")
    up.upload()
    head = api.http.head(up.url, headers=headers(token))
    assert head.status_code == 200
    size = speech.stat().st_size
    assert head.headers["Upload-Offset"] == head.headers["Upload-Length"] == str(size)
    assert head.headers["Cache-Control"] == "no-store" and head.headers["Tus-Resumable"] == "1.0.0"
    expires = parsedate_to_datetime(head.headers["Upload-Expires"])
    assert timedelta(hours=23) < expires - datetime.now(UTC) <= timedelta(hours=24)
    record = int(head.headers["Upload-Record"])
    state = api.http.get(up.url, headers=headers(token)).json()
    assert state == {"id": upload_id(up.url), "offset": size, "length": size,
                     "expires": state["expires"], "record": record}
    card = api.card(token, record)
    assert (card["title"], card["source_name"], card["language"], card["cut_short"]) == (
        "Board meeting", "talk.wav", "en", False)
    audio = api.http.get(f"/records/{record}/audio", headers=api.auth(token))
    assert audio.content == speech.read_bytes()
    # nothing of the upload is left but its record's audio
    assert count(api.store, "SELECT count(*) AS n FROM blobs") == 1


def test_creation_with_upload_and_deferred_length(make_api, speech):
    """A creation may carry the first bytes; a deferred length is declared by the last PATCH,
    which makes the record."""
    api = make_api()
    token = api.token("alice")
    data = speech.read_bytes()
    created = api.http.post("/uploads", content=data[:1_500_000],
                            headers=headers(token, **{"Upload-Defer-Length": "1", "Content-Type":
                                                      "application/offset+octet-stream"}))
    assert created.status_code == 201, created.text
    assert created.headers["Upload-Offset"] == "1500000"
    assert created.headers["Upload-Defer-Length"] == "1"
    url = created.headers["Location"]
    last = api.http.patch(url, content=data[1_500_000:],
                          headers=headers(token, **OFFSET, **{"Upload-Offset": "1500000",
                                                               "Upload-Length": str(len(data))}))
    assert last.status_code == 204, last.text
    record = int(last.headers["Upload-Record"])
    assert api.http.get(f"/records/{record}/audio", headers=api.auth(token)).content == data


def test_resume_after_the_connection_is_cut_mid_chunk(make_api, speech):
    """A relay cuts tuspy's connection in the middle of a 2.5 MB PATCH: the server keeps what
    arrived (HEAD answers an offset inside that chunk), tuspy resumes from it and sends only the
    missing part; the record's audio is byte-identical."""
    api = make_api()
    token = api.token("alice")
    up, relay, offsets = upload_through_a_cut(api, token, speech, chunk_size=2_500_000, cut_after=1_800_000)
    size = speech.stat().st_size
    assert relay.cuts == 1
    # kept what arrived, mid-chunk (a HEAD while the cut request's last pieces were still being
    # committed may answer less: the PATCH from there is refused with 409 and tuspy asks again)
    assert offsets == sorted(offsets) and 1 * MB < offsets[-1] < 2_500_000, offsets
    resent = relay.client_bytes - size
    assert 0 < resent < 64 * 1024, (resent, offsets)  # headers, and nothing of what was committed
    record = int(api.http.head("/uploads/" + upload_id(up.url), headers=headers(token)).headers["Upload-Record"])
    assert api.http.get(f"/records/{record}/audio", headers=api.auth(token)).content == speech.read_bytes()


def test_bad_requests_are_refused_with_nothing_written(make_api, speech):
    """412 without Tus-Resumable, 409 at a wrong offset, 413 past the declared length or over the
    limit, 415 for another content type, 400 for bad metadata, 422 for a bad language, 401
    without a token: each in the API's error shape, and the offset never moves."""
    api = make_api(max_upload_mb=4)
    token = api.token("alice")
    auth = {"Authorization": f"Bearer {token}"}
    created = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": "1000"}))
    assert created.status_code == 201
    url = created.headers["Location"]

    def offset() -> int:
        return int(api.http.head(url, headers=headers(token)).headers["Upload-Offset"])

    refusals = [
        (api.http.patch(url, content=b"x" * 10, headers={**auth, "Content-Type": OFFSET["Content-Type"],
                                                          "Upload-Offset": "0"}), 412, "tus_version"),
        (api.http.patch(url, content=b"x" * 10, headers=headers(token, **OFFSET, **{"Upload-Offset": "5"})),
         409, "offset_mismatch"),
        (api.http.patch(url, content=b"x" * 1001, headers=headers(token, **OFFSET, **{"Upload-Offset": "0"})),
         413, "past_upload_length"),
        (api.http.patch(url, content=b"x" * 10, headers=headers(token, **{"Upload-Offset": "0",
                                                                             "Content-Type": "audio/wav"})),
         415, "bad_content_type"),
        (api.http.patch(url, content=b"x" * 10, headers=headers(token, **{"Content-Type": OFFSET["Content-Type"]})),
         400, "bad_upload_offset"),
        (api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(5 * MB)})), 413, "too_large"),
        (api.http.post("/uploads", headers=headers(token)), 400, "bad_upload_length"),
        (api.http.post("/uploads", headers=headers(token, **{"Upload-Length": "10", "Upload-Metadata": "title !!"})),
         400, "bad_metadata"),
        (api.http.post("/uploads", headers=headers(token, **{"Upload-Length": "10",
                                                             "Upload-Metadata": metadata(language="xx-nope")})),
         422, "bad_language"),
        (api.http.post("/uploads", headers={**TUS, "Upload-Length": "10"}), 401, "unauthorized"),
        (api.http.patch(url, content=b"x" * 10, headers={**OFFSET, "Upload-Offset": "0"}), 401, "unauthorized"),
    ]
    for answer, status, code in refusals:
        assert (answer.status_code, answer.json()["error"]) == (status, code), answer.text
        if status != 401:
            assert answer.headers["Tus-Resumable"] == "1.0.0"
    assert refusals[0][0].headers["Tus-Version"] == "1.0.0"
    # a chunked body (no Content-Length) that goes past the length: refused, nothing past it kept
    chunked = api.http.patch(url, content=iter([b"x" * 600, b"x" * 600]),
                             headers=headers(token, **OFFSET, **{"Upload-Offset": "0"}))
    assert (chunked.status_code, chunked.json()["error"]) == (413, "past_upload_length")
    assert offset() == 0
    # a deferred upload may not grow past the limit either
    deferred = api.http.post("/uploads", headers=headers(token, **{"Upload-Defer-Length": "1"})).headers["Location"]
    over = api.http.patch(deferred, content=b"x" * (4 * MB + 1), headers=headers(token, **OFFSET,
                                                                                   **{"Upload-Offset": "0"}))
    assert (over.status_code, over.json()["error"]) == (413, "too_large")
    assert api.http.head(deferred, headers=headers(token)).headers["Upload-Offset"] == "0"


def test_bytes_that_are_not_audio_are_refused_and_removed(make_api):
    """The last byte of bytes intake refuses answers 415 not_audio; the upload and its bytes are
    gone, no record is made."""
    api = make_api()
    token = api.token("alice")
    data = b"this is not audio at all " * 100_000
    created = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(len(data))}))
    url = created.headers["Location"]
    first = api.http.patch(url, content=data[:1_200_000], headers=headers(token, **OFFSET, **{"Upload-Offset": "0"}))
    assert first.status_code == 204
    assert count(api.store, "SELECT count(*) AS n FROM blob_chunks") == 2
    last = api.http.patch(url, content=data[1_200_000:],
                          headers=headers(token, **OFFSET, **{"Upload-Offset": "1200000"}))
    assert (last.status_code, last.json()["error"]) == (415, "not_audio"), last.text
    assert api.http.head(url, headers=headers(token)).status_code == 404
    assert count(api.store, "SELECT count(*) AS n FROM records") == 0
    assert count(api.store, "SELECT count(*) AS n FROM blobs") == 0


def test_another_owners_upload_is_a_missing_one(make_api, speech):
    """Bob can neither see, write, finish nor terminate Alice's upload: each answers 404 exactly
    as an id nobody made; Alice's upload is untouched. Termination removes the bytes."""
    api = make_api()
    alice, bob = api.token("alice"), api.token("bob")
    url = api.http.post("/uploads", headers=headers(alice, **{"Upload-Length": "100"})).headers["Location"]
    missing = url[:-4] + "zzzz"
    for target in (url, missing):
        assert api.http.head(target, headers=headers(bob)).status_code == 404
        got = api.http.get(target, headers=headers(bob))
        assert (got.status_code, got.json()["error"]) == (404, "not_found")
        patched = api.http.patch(target, content=b"x" * 100, headers=headers(bob, **OFFSET, **{"Upload-Offset": "0"}))
        assert patched.status_code == 404
        assert api.http.delete(target, headers=headers(bob)).status_code == 404
    assert api.http.head(url, headers=headers(alice)).headers["Upload-Offset"] == "0"
    assert api.http.patch(url, content=b"x" * 50,
                          headers=headers(alice, **OFFSET, **{"Upload-Offset": "0"})).status_code == 204
    assert api.http.delete(url, headers=headers(alice)).status_code == 204
    assert api.http.head(url, headers=headers(alice)).status_code == 404
    assert count(api.store, "SELECT count(*) AS n FROM blobs") == 0


def test_quota_counts_unfinished_uploads_and_is_weighed_again_at_the_end(make_api, speech):
    """With a storage quota, a creation whose length would pass it is refused (413
    quota_exceeded), an unfinished upload counts as stored, and a deferred upload that turns out
    over the quota is refused at its end with nothing kept."""
    api = make_api()
    token = api.token("alice")
    size = speech.stat().st_size
    api.store.set_quota("alice", size_bytes=size + size // 2)
    over = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(2 * size)}))
    assert (over.status_code, over.json()["error"], over.json()["quota"]) == (413, "quota_exceeded", "storage")
    first = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(size)}))
    assert first.status_code == 201
    second = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(size)}))
    assert (second.status_code, second.json()["error"]) == (413, "quota_exceeded")
    api.http.delete(first.headers["Location"], headers=headers(token))
    api.store.set_quota("alice", size_bytes=size // 2)
    deferred = api.http.post("/uploads", headers=headers(token, **{"Upload-Defer-Length": "1"})).headers["Location"]
    end = api.http.patch(deferred, content=speech.read_bytes(),
                         headers=headers(token, **OFFSET, **{"Upload-Offset": "0", "Upload-Length": str(size)}))
    assert (end.status_code, end.json()["error"]) == (413, "quota_exceeded"), end.text
    assert api.http.head(deferred, headers=headers(token)).status_code == 404
    assert count(api.store, "SELECT count(*) AS n FROM blobs") == 0


def test_a_repeated_creation_with_its_key_is_the_same_upload(make_api):
    """An Idempotency-Key makes a repeated creation answer the first upload (200,
    Idempotent-Replayed); the key with another length is refused (422)."""
    api = make_api()
    token = api.token("alice")
    ask = headers(token, **{"Upload-Length": "1000", "Idempotency-Key": "rec-1"})
    first, again = api.http.post("/uploads", headers=ask), api.http.post("/uploads", headers=ask)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.headers["Location"] == again.headers["Location"]
    assert again.headers["Idempotent-Replayed"] == "true"
    other = api.http.post("/uploads", headers={**ask, "Upload-Length": "999"})
    assert (other.status_code, other.json()["error"]) == (422, "idempotency_key_reused")
    assert count(api.store, "SELECT count(*) AS n FROM resumable_uploads") == 1


def test_two_final_patches_at_once_make_one_record(make_api, speech):
    """Two PATCHes of the last bytes on a barrier: one is taken (204, Upload-Record), the other
    finds the offset moved (409). (Two finishers of an upload whose last byte is in but whose
    record was never made: test_resumable_concurrency.py.)"""
    api = make_api()
    token = api.token("alice")
    data = speech.read_bytes()
    url = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(len(data))})).headers["Location"]
    cut = len(data) - 5000
    assert api.http.patch(url, content=data[:cut],
                          headers=headers(token, **OFFSET, **{"Upload-Offset": "0"})).status_code == 204
    barrier = threading.Barrier(2)
    answers = []

    def last_bytes():
        with httpx.Client(base_url=str(api.http.base_url), timeout=60) as http:
            barrier.wait()
            answers.append(http.patch(url, content=data[cut:],
                                      headers=headers(token, **OFFSET, **{"Upload-Offset": str(cut)})))

    threads = [threading.Thread(target=last_bytes) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(a.status_code for a in answers) == [204, 409], [a.text for a in answers]
    assert count(api.store, "SELECT count(*) AS n FROM records") == 1


def test_a_recording_gone_quiet_becomes_a_record_cut_short(make_api, speech):
    """A deferred-length upload nobody writes to for TRANSCRIBER_RECORDING_IDLE_SECONDS is
    finished into a record of what arrived; its card says cut_short, the journal says so."""
    api = make_api(recording_idle_seconds=1)
    token = api.token("alice")
    data = speech.read_bytes()
    url = api.http.post("/uploads", headers=headers(token, **{"Upload-Defer-Length": "1",
                                                              "Upload-Metadata": metadata(filename="mic.wav")})
                        ).headers["Location"]
    sent = 1_100_000
    assert api.http.patch(url, content=data[:sent],
                          headers=headers(token, **OFFSET, **{"Upload-Offset": "0"})).status_code == 204
    deadline = time.monotonic() + 30
    while (record := api.http.get(url, headers=headers(token)).json()["record"]) is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    card = api.card(token, record)
    assert card["cut_short"] is True and card["source_name"] == "mic.wav"
    assert api.http.get(f"/records/{record}/audio", headers=api.auth(token)).content == data[:sent]
    with api.store.db.connection() as conn:
        journaled = conn.execute("SELECT detail FROM events WHERE record_id = %s AND kind = 'cut_short'",
                                 (record,)).fetchone()
    assert journaled["detail"] == {"received_bytes": sent}
    # a late PATCH of the tab's last piece finds the upload finished
    late = api.http.patch(url, content=b"x" * 10, headers=headers(token, **OFFSET, **{"Upload-Offset": str(sent)}))
    assert late.status_code == 413


def test_an_upload_idle_past_its_expiry_is_swept(make_api, store):
    """An upload nobody wrote to for TRANSCRIBER_UPLOAD_EXPIRY_HOURS is removed with its bytes by
    the sweep; one still in use stays."""
    from conftest import settings
    from service import resumable

    api = make_api()
    token = api.token("alice")
    old = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": "2000000"})).headers["Location"]
    api.http.patch(old, content=b"x" * 1000, headers=headers(token, **OFFSET, **{"Upload-Offset": "0"}))
    young = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": "10"})).headers["Location"]
    with store.db.connection() as conn:
        conn.execute("UPDATE resumable_uploads SET touched_at = now() - interval '25 hours' WHERE id = %s",
                     (upload_id(old),))
    swept = resumable.sweep(store, settings())
    assert swept.expired == 1
    assert api.http.head(old, headers=headers(token)).status_code == 404
    assert api.http.head(young, headers=headers(token)).status_code == 200
    assert count(store, "SELECT count(*) AS n FROM blob_chunks") == 0


def test_the_pages_session_uploads_with_its_csrf_token(make_api):
    """The owner's page uploads with its session cookie: a creation or a PATCH without the page's
    CSRF token is refused (403) with nothing written; with it they are taken; HEAD needs none."""
    from test_pages import page_data, sign_in

    api = make_api()
    token = api.token("dana")
    api.http.cookies.set("transcriber_session", sign_in(api, token).cookies["transcriber_session"])
    csrf = page_data(api.http.get("/").text)["csrf"]
    create = {**TUS, "Upload-Length": "100"}
    assert api.http.post("/uploads", headers=create).status_code == 403
    url = api.http.post("/uploads", headers={**create, "X-CSRF-Token": csrf}).headers["Location"]
    patch = {**OFFSET, "Upload-Offset": "0"}
    assert api.http.patch(url, content=b"x" * 40, headers=patch).status_code == 403
    assert api.http.head(url, headers=TUS).headers["Upload-Offset"] == "0"
    assert api.http.patch(url, content=b"x" * 40, headers={**patch, "X-CSRF-Token": csrf}).status_code == 204
    assert api.http.head(url, headers=TUS).headers["Upload-Offset"] == "40"
