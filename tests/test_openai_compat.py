"""OpenAI-compatible transcription, driven by the official `openai` client against
a real server with real workers, real PostgreSQL and real audio."""
from __future__ import annotations

import threading
import time

import openai
import pytest

from conftest import run_together
from domain.claims import HaltReason
from domain.stages import Step
from media import encode
from test_http import make_api  # noqa: F401  (the live server fixture)


def client(api, token: str, **options) -> openai.OpenAI:
    return openai.OpenAI(api_key=token, base_url=str(api.http.base_url).rstrip("/") + "/v1", **options)


def _records(store) -> int:
    with store.db.transaction() as conn:
        return conn.execute("SELECT count(*) AS n FROM records").fetchone()["n"]


def test_openai_client_transcribes_in_every_format(make_api, store, tmp_path, hears_word_a_second):
    """Five clients at once, one per response_format (json, text, srt, vtt,
    verbose_json with segments and words); each file went through the durable pipeline as a
    record of the caller's, and the answer is its text. The words are a stand-in's (a word a
    second: nine for the sample's 9.8 s), so each answer is known word for word; the other tests
    of this address hear the real model."""
    api = make_api()
    token = api.token("alice")
    hears_word_a_second()
    api.start_workers()
    paths = [encode(tmp_path / f"talk{i}.{kind}", kind) for i, kind in enumerate(("mp3", "wav", "flac", "opus", "m4a"))]
    formats = ("json", "text", "srt", "vtt", "verbose_json")

    def transcribe(i):
        with paths[i].open("rb") as handle:
            extra = {"timestamp_granularities": ["word", "segment"]} if formats[i] == "verbose_json" else {}
            return client(api, token, timeout=300).audio.transcriptions.create(
                model="whisper-1", file=handle, response_format=formats[i], language="en", **extra)

    plain, text, srt, vtt, verbose = run_together(5, transcribe)
    heard = ["word"] * 9
    assert plain.text.split() == heard
    assert isinstance(text, str) and text.split() == heard
    assert srt.startswith("1\n00:00:") and " --> " in srt and srt.split().count("word") == 9
    assert vtt.startswith("WEBVTT") and vtt.split().count("word") == 9
    assert verbose.duration > 9 and verbose.language == "en" and verbose.text.split() == heard
    assert verbose.segments and all(s.end > s.start for s in verbose.segments)
    assert verbose.words and all(w.end >= w.start for w in verbose.words)
    assert " ".join(s.text.strip() for s in verbose.segments) == verbose.text.strip()
    listed = api.http.get("/records", headers=api.auth(token)).json()
    assert listed["total"] == 5 and {c["stage"] for c in listed["items"]} == {"done"}
    assert {c["source_name"] for c in listed["items"]} == {p.name for p in paths}


def test_past_the_wait_the_error_names_the_card_and_the_record_goes_on(make_api, store, tmp_path):
    """Not done within TRANSCRIBER_SYNC_WAIT_SECONDS: the client gets an error
    naming the record's card; it does not upload again (no retry); the record goes on to done
    once workers run, and its text is at its address."""
    api = make_api(sync_wait_seconds=1)
    token = api.token("alice")
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught, encode(tmp_path / "a.wav", "wav").open("rb") as handle:
        client(api, token).audio.transcriptions.create(model="whisper-1", file=handle)  # retries allowed
    assert time.monotonic() - started < 30
    error = caught.value
    assert error.status_code == 504 and error.code == "still_working"
    record = error.body["record"]  # the client's view of the error object
    assert error.response.json()["record"] == record
    assert f"/records/{record['id']}" in error.message and "TRANSCRIBER_SYNC_WAIT_SECONDS" in error.message
    assert _records(store) == 1  # no second upload by a retry
    api.start_workers()
    final = api.wait(token, record["id"], lambda c: c["stage"] == "done" or c["halt"] is not None)
    assert final["stage"] == "done"
    assert len(api.http.get(record["text"], headers=api.auth(token)).text.split()) >= 10


def test_refusals_in_openai_shape(make_api, store, tmp_path):
    """A wrong key, a response_format not offered, a file with no audio, a record
    that halts while the call waits: each an error the client reports with its message; nothing
    stored for the refused uploads."""
    api = make_api(sync_wait_seconds=60)
    token = api.token("alice")
    audio = encode(tmp_path / "a.wav", "wav")
    with pytest.raises(openai.AuthenticationError) as caught, audio.open("rb") as handle:
        client(api, "not-a-token").audio.transcriptions.create(model="whisper-1", file=handle)
    assert "token" in caught.value.message
    store.add_owner("bob")
    store.set_owner_disabled("bob", True)
    with pytest.raises(openai.PermissionDeniedError), audio.open("rb") as handle:
        client(api, store.new_token("bob")).audio.transcriptions.create(model="whisper-1", file=handle)
    with pytest.raises(openai.BadRequestError) as caught, audio.open("rb") as handle:
        client(api, token).audio.transcriptions.create(model="whisper-1", file=handle, response_format="docx")
    assert caught.value.code == "invalid_response_format" and "response_format" in caught.value.message
    text_file = tmp_path / "notes.txt"
    text_file.write_text("no audio here\n" * 50)
    with pytest.raises(openai.APIStatusError) as caught, text_file.open("rb") as handle:
        client(api, token).audio.transcriptions.create(model="whisper-1", file=handle)
    assert caught.value.status_code == 415 and caught.value.code == "not_audio"
    with pytest.raises(openai.BadRequestError) as caught, audio.open("rb") as handle:
        client(api, token).audio.transcriptions.create(model="whisper-1", file=handle, language="xx-nope")
    assert caught.value.code == "bad_language"
    assert _records(store) == 0
    raw = api.http.post("/v1/audio/transcriptions", headers=api.auth(token), data={"model": "whisper-1"})
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "file" and raw.json()["message"]

    def halt_the_first_record():  # a stand-in for a worker whose conversion fails for good
        policy = api.settings.policy(Step.CONVERT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            claim = store.claim(Step.CONVERT, policy)
            if claim:
                store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "the decoder gave up", count_failure=True)
                return
            time.sleep(0.05)

    halter = threading.Thread(target=halt_the_first_record)
    halter.start()
    with pytest.raises(openai.UnprocessableEntityError) as caught, audio.open("rb") as handle:
        client(api, token).audio.transcriptions.create(model="whisper-1", file=handle)
    halter.join()
    assert caught.value.code == "undecodable_audio"
    assert "halted" in caught.value.message and "/records/" in caught.value.message


def test_an_upload_is_filed_under_the_owner_who_sent_it(make_api, store, tmp_path):
    """Every upload is filed under its own owner: a second owner's upload through the
    OpenAI-compatible endpoint is that owner's record: in their `GET /records`, not the first
    owner's, and the first owner cannot read it."""
    api = make_api(sync_wait_seconds=0)
    first, second = api.token("alice"), api.token("bob")
    with encode(tmp_path / "bob.wav", "wav").open("rb") as handle:
        with pytest.raises(openai.APIStatusError) as caught:
            client(api, second, max_retries=0).audio.transcriptions.create(model="whisper-1", file=handle)
    record = caught.value.body["record"]
    assert caught.value.status_code == 504
    theirs = api.http.get("/records", headers=api.auth(second)).json()
    assert [item["id"] for item in theirs["items"]] == [record["id"]]
    assert api.http.get("/records", headers=api.auth(first)).json()["total"] == 0
    assert api.http.get(f"/records/{record['id']}", headers=api.auth(first)).status_code == 404
    assert store.card_row(record["id"])["owner"] == "bob"
