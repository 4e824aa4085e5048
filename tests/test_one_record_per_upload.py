"""Exactly one record per intended upload: `Idempotency-Key` on both upload
addresses, and the official `openai` client's own retries, against a real server, real
PostgreSQL and real audio."""
from __future__ import annotations

import time

import httpx
import openai

from conftest import run_together, settings
from domain.claims import HaltReason
from domain.stages import Step
from media import encode
from test_http import make_api  # noqa: F401  (the live server fixture)


def _count(store, table: str = "records") -> int:
    with store.db.transaction() as conn:
        return conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()["n"]  # noqa: S608 - a fixed name


def _post(api, token, path, key=None, name="a.wav"):
    headers = {**api.auth(token), **({"Idempotency-Key": key} if key else {})}
    with path.open("rb") as handle:
        return api.http.post("/records", headers=headers, files={"file": (name, handle)})


def test_same_key_answers_the_first_record(make_api, store, tmp_path):
    """POST /records with a key makes a record (201); the same key and bytes again
    answer that record (200, same id, `Idempotent-Replayed`), the same key with other bytes 422
    `idempotency_key_reused`, nothing stored for either; keys are per owner; a record deleted
    for good takes its key with it; the sweep deletes keys past their keeping time."""
    api = make_api()
    alice, bob = api.token("alice"), api.token("bob")
    audio, other = encode(tmp_path / "a.wav", "wav"), encode(tmp_path / "b.flac", "flac")
    first = _post(api, alice, audio, key="upload-1")
    assert first.status_code == 201, first.text
    again = _post(api, alice, audio, key="upload-1")
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true" and again.headers["location"] == first.json()["card"]
    reused = _post(api, alice, other, key="upload-1", name="b.flac")
    assert reused.status_code == 422 and reused.json()["error"] == "idempotency_key_reused"
    assert _count(store) == 1 and _count(store, "blobs") == 1
    assert _post(api, bob, audio, key="upload-1").status_code == 201  # another owner's key
    assert _post(api, alice, audio).status_code == 201  # no key: a new upload, as asked
    bad = _post(api, alice, audio, key="a key with spaces")
    assert bad.status_code == 400 and bad.json()["error"] == "bad_idempotency_key"
    assert _count(store) == 3
    assert api.http.delete(first.json()["card"], headers=api.auth(alice)).status_code == 204
    after_delete = _post(api, alice, audio, key="upload-1")
    assert after_delete.status_code == 201 and after_delete.json()["id"] != first.json()["id"]
    assert store.sweep_upload_keys() == 0  # younger than a day: kept
    assert store.sweep_upload_keys(keep_seconds=0) == 2
    assert _post(api, alice, audio, key="upload-1").status_code == 201  # swept: a new upload


def test_same_key_at_once_makes_one_record(make_api, store, tmp_path):
    """Four uploads with the same key released together by a barrier, two on each
    address: one record; every answer names it; the losers' audio is gone again. The key with
    other bytes on the OpenAI-compatible address: 422 `idempotency_key_reused`, nothing stored."""
    api = make_api(sync_wait_seconds=0)
    token = api.token("alice")
    audio = encode(tmp_path / "a.wav", "wav")

    def send(i):
        with audio.open("rb") as handle, httpx.Client(base_url=api.http.base_url, timeout=60) as http:
            path = "/records" if i % 2 else "/v1/audio/transcriptions"
            data = {} if i % 2 else {"model": "whisper-1"}
            return http.post(path, headers={**api.auth(token), "Idempotency-Key": "same"},
                             files={"file": ("a.wav", handle)}, data=data)

    answers = run_together(4, send)
    ids = {a.json()["id"] if a.status_code in (200, 201) else a.json()["error"]["record"]["id"] for a in answers}
    assert len(ids) == 1, [a.text for a in answers]
    assert sorted(a.status_code for a in answers if a.request.url.path == "/records") in ([200, 201], [200, 200])
    assert {a.status_code for a in answers if a.request.url.path != "/records"} == {504}
    assert _count(store) == 1 and _count(store, "blobs") == 1
    with encode(tmp_path / "b.flac", "flac").open("rb") as handle:
        reused = api.http.post("/v1/audio/transcriptions", headers={**api.auth(token), "Idempotency-Key": "same"},
                               files={"file": ("b.flac", handle)}, data={"model": "whisper-1"})
    assert reused.status_code == 422 and reused.json()["error"]["code"] == "idempotency_key_reused"
    assert _count(store) == 1 and _count(store, "blobs") == 1


def _openai(api, token: str, **options) -> openai.OpenAI:
    return openai.OpenAI(api_key=token, base_url=str(api.http.base_url).rstrip("/") + "/v1", **options)


def test_the_default_wait_ends_before_the_clients_timeout():
    """By default the server's wait ends well before the official client's read
    timeout, so that client hears the answer (or the 504) instead of retrying the upload."""
    assert settings().sync_wait_seconds <= openai.DEFAULT_TIMEOUT.read - 30


def test_client_timeout_longer_than_the_wait(make_api, store, tmp_path):
    """The `openai` client (default retries) with a timeout longer than the wait
    gets the 504 naming the card, and exactly one record exists."""
    api = make_api(sync_wait_seconds=1)
    token = api.token("alice")
    with encode(tmp_path / "a.wav", "wav").open("rb") as handle:
        try:
            _openai(api, token, timeout=20).audio.transcriptions.create(model="whisper-1", file=handle)
        except openai.APIStatusError as error:
            assert error.status_code == 504 and f"/records/{error.body['record']['id']}" in error.message
        else:
            raise AssertionError("answered before any worker ran")
    assert _count(store) == 1


def test_client_timeout_shorter_than_the_wait(make_api, store, tmp_path):
    """The `openai` client (default max_retries) times out before the server's wait
    ends, twice, and retries the upload each time; the retries of the same bytes attach to the
    record in the pipeline (no second record), and the last try gets the text once done."""
    api = make_api(sync_wait_seconds=120)
    token = api.token("alice")
    attempts = []

    def before_sending(request):
        attempts.append(request.url.path)
        if len(attempts) == 3:  # the last retry leaves once the one record is done
            api.start_workers()
            deadline = time.monotonic() + 180
            while not _all_done(store):
                assert time.monotonic() < deadline
                time.sleep(0.2)

    http = httpx.Client(event_hooks={"request": [before_sending]})
    client = _openai(api, token, timeout=3, http_client=http)
    assert client.max_retries == 2  # the default
    with encode(tmp_path / "a.wav", "wav").open("rb") as handle:
        answer = client.audio.transcriptions.create(model="whisper-1", file=handle)
    assert attempts == ["/v1/audio/transcriptions"] * 3
    assert len(answer.text.split()) >= 10
    assert _count(store) == 1


def _all_done(store) -> bool:
    """Whether there are records and all are done."""
    with store.db.transaction() as conn:
        return conn.execute("SELECT bool_and(stage = 'done') AS done FROM records").fetchone()["done"]


def test_same_bytes_attach_only_to_the_same_owners_record_in_the_pipeline(make_api, store, tmp_path):
    """Without a key, the same bytes attach only to the same owner's record still
    in the pipeline: a second owner's upload of them is a record of its own (filed under that
    owner), and so is an upload after the first record halted."""
    api = make_api(sync_wait_seconds=0)
    alice, bob = api.token("alice"), api.token("bob")
    audio = encode(tmp_path / "a.wav", "wav")

    def transcribe(token):
        with audio.open("rb") as handle:
            answer = api.http.post("/v1/audio/transcriptions", headers=api.auth(token),
                                   files={"file": ("a.wav", handle)}, data={"model": "whisper-1"})
        assert answer.status_code == 504, answer.text
        return answer.json()["record"]["id"]

    ids = [transcribe(alice), transcribe(alice), transcribe(bob)]
    assert ids[0] == ids[1] != ids[2]
    bobs = api.http.get("/records", headers=api.auth(bob)).json()
    assert [c["id"] for c in bobs["items"]] == [ids[2]]
    claim = store.claim(Step.CONVERT, api.settings.policy(Step.CONVERT))
    assert claim.record_id == ids[0]
    store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "the decoder gave up", count_failure=True)
    assert transcribe(alice) not in ids


def test_the_sweep_deletes_keys_past_a_day(store, owner):
    """The periodic sweep deletes keys older than a day (a younger one is kept, and
    the records stay); a key swept is a new upload again."""
    import actors
    from actors import context
    from db.records import NewRecord
    from db.uploads import SameUpload
    from domain.asked import Asked

    old = SameUpload(b"\x01" * 32, key="old")
    young = SameUpload(b"\x02" * 32, key="young")
    first, _ = store.store_recording(owner["id"], [b"audio one"], NewRecord(), same=old)
    store.store_recording(owner["id"], [b"audio two"], NewRecord(), same=young)
    assert store.store_recording(owner["id"], [b"audio one"], NewRecord(), same=old) == (first, False)
    with store.db.transaction() as conn:
        conn.execute("UPDATE upload_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'")
    context.use(settings(), store)
    actors.sweep.fn()
    assert store.earlier_upload(owner["id"], old, Asked()) is None
    assert store.earlier_upload(owner["id"], young, Asked()) is not None
    assert _count(store) == 2
