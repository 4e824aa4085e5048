"""The owner's side over HTTP: a real uvicorn server, real PostgreSQL, real workers (P3, P6)."""
from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from conftest import checkpoint, kinds, save_result, settings
from media import encode
from transcriber.local import LocalPipeline
from web.app import create_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_serving(base: str, process, log, seconds: float = 60) -> None:
    """Wait until the server process at `base` answers /healthz (its log in the failure)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(base + "/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


class Api:
    """A live server for one test, and helpers that speak to it as an owner would."""

    def __init__(self, store, the_settings):
        self.store, self.settings = store, the_settings
        port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(create_app(store, the_settings), host="127.0.0.1",
                                                    port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
        self.pipeline = None

    def token(self, name: str) -> str:
        return self.store.add_owner(name)

    def auth(self, token: str) -> dict:
        return {"Authorization": f"Bearer {token}"}

    def upload(self, token: str, path, title: str | None = None):
        data = {"title": title} if title is not None else {}
        with open(path, "rb") as handle:
            return self.http.post("/records", headers=self.auth(token), files={"file": (path.name, handle)}, data=data)

    def card(self, token: str, record_id: int) -> dict:
        answer = self.http.get(f"/records/{record_id}", headers=self.auth(token))
        assert answer.status_code == 200, answer.text
        return answer.json()

    def wait(self, token: str, record_id: int, until, seconds: float = 180) -> dict:
        deadline = time.monotonic() + seconds
        while True:
            current = self.card(token, record_id)
            if until(current):
                return current
            assert time.monotonic() < deadline, current
            time.sleep(0.2)

    def start_workers(self):
        self.pipeline = LocalPipeline(self.store, self.settings)

    def close(self):
        if self.pipeline is not None:
            self.pipeline.stop()
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.http.close()


@pytest.fixture
def make_api(store):
    made = []

    def make(**overrides):
        api = Api(store, settings(tick_seconds=0.2, **overrides))
        made.append(api)
        return api

    yield make
    for api in made:
        api.close()


def done(c):
    return c["stage"] == "done" or c["halt"] is not None


def test_upload_card_text_in_all_formats(make_api, tmp_path, monkeypatch):
    """P6-S1: upload → card at created → … → done; the text is served by the text address in
    all four formats, and the pipeline makes no outbound call at all."""
    from service import logs

    log_path = tmp_path / "service.jsonl"
    logs.configure(level="DEBUG", json_path=log_path)
    api = make_api()
    token = api.token("alice")
    answer = api.upload(token, encode(tmp_path / "talk.mp3", "mp3"), title="Team call")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    record_id = body["id"]
    assert body["card"] == f"/records/{record_id}" and body["text"] == f"/records/{record_id}/text"
    assert answer.headers["location"] == body["card"]
    first = api.card(token, record_id)
    assert (first["stage"], first["halt"], first["title"], first["attempts"]) == ("created", None, "Team call", 0)
    early = api.http.get(body["text"], headers=api.auth(token))
    assert early.status_code == 409 and early.json()["stage"] == "created"

    outbound = []
    real_connect = socket.socket.connect

    def watch(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            outbound.append(address)
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", watch)
    api.start_workers()
    final = api.wait(token, record_id, done)
    api.pipeline.stop()
    api.pipeline = None
    monkeypatch.undo()
    assert [a for a in outbound if a[0] not in ("127.0.0.1", "::1", "localhost")] == []
    assert final["stage"] == "done" and final["halt"] is None
    assert 9 < final["duration_seconds"] < 11

    txt = api.http.get(body["text"], headers=api.auth(token))
    assert txt.status_code == 200 and txt.headers["content-type"].startswith("text/plain")
    assert len(txt.text.split()) >= 10
    srt = api.http.get(body["text"] + "?format=srt", headers=api.auth(token))
    assert srt.status_code == 200 and srt.text.startswith("1\n00:00:")
    vtt = api.http.get(body["text"] + "?format=vtt", headers=api.auth(token))
    assert vtt.headers["content-type"].startswith("text/vtt") and vtt.text.startswith("WEBVTT")
    segments = api.http.get(body["text"] + "?format=json", headers=api.auth(token)).json()["segments"]
    assert segments and all(s["end"] > s["start"] for s in segments)
    assert api.http.get(body["text"] + "?format=doc", headers=api.auth(token)).status_code == 422

    from loguru import logger
    logger.complete()
    logged = log_path.read_text()
    assert f'"record_id": {record_id}' in logged  # the log speaks of the record by its id...
    for segment in segments:  # ...and never of what was said, nor of the owner's secret
        assert segment["text"] not in logged
    assert token not in logged


def test_isolation_matrix(make_api, tmp_path):
    """Every address but /healthz needs a valid token (401); another owner's record is answered
    exactly like a missing one (404), for every address and method."""
    api = make_api()
    alice, bob = api.token("alice"), api.token("bob")
    path = encode(tmp_path / "a.wav", "wav")
    bobs = api.upload(bob, path).json()["id"]
    missing = bobs + 1000
    calls = [
        ("GET", "/records/{}", {}), ("PATCH", "/records/{}", {"json": {"title": "x"}}),
        ("GET", "/records/{}/text", {}), ("GET", "/records/{}/text?format=srt", {}),
    ]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {alice}"},
                    {"Authorization": "Bearer"}):
        for method, address, extra in calls + [("GET", "/records", {}), ("POST", "/records", {})]:
            answer = api.http.request(method, address.format(bobs), headers=headers, **extra)
            assert answer.status_code == 401, (method, address, headers)
            assert answer.json()["error"] == "unauthorized"
        with open(path, "rb") as handle:
            assert api.http.post("/records", headers=headers, files={"file": handle}).status_code == 401
    for method, address, extra in calls:
        foreign = api.http.request(method, address.format(bobs), headers=api.auth(alice), **extra)
        absent = api.http.request(method, address.format(missing), headers=api.auth(alice), **extra)
        garbage = api.http.request(method, address.format("abc"), headers=api.auth(alice), **extra)
        assert foreign.status_code == absent.status_code == garbage.status_code == 404, (method, address)
        assert foreign.json() == absent.json() == garbage.json()
    assert api.http.get("/records", headers=api.auth(alice)).json()["total"] == 0
    assert api.card(bob, bobs)["title"] == "a"  # bob's record untouched by alice's PATCH
    health = api.http.get("/healthz")
    assert health.status_code == 200 and health.json() == {"status": "ok", "database": True}
    assert "/records/{raw_id}/text" in api.http.get("/openapi.json").json()["paths"]


def test_oversized_and_undecodable_uploads(make_api, store, tmp_path, db):
    """413 over the size limit; 415 for an empty file, a text file, an image; nothing stored.
    A truncated mp3 may be accepted, and then it reaches done or halts: it never sticks."""
    api = make_api(max_upload_mb=1)
    token = api.token("alice")
    big = encode(tmp_path / "big.wav", "wav", repeat=4)  # ~1.3 MB
    answer = api.upload(token, big)
    assert answer.status_code == 413 and answer.json()["error"] == "too_large"

    empty = tmp_path / "empty.mp3"
    empty.write_bytes(b"")
    text = tmp_path / "notes.mp3"
    text.write_text("just some words\n" * 50)
    from test_steps import _png
    for path in (empty, text, _png(tmp_path / "picture.png")):
        answer = api.upload(token, path)
        assert answer.status_code == 415, (path.name, answer.text)
        assert answer.json()["error"] in ("not_audio", "empty_file") and answer.json()["message"]
    with db.transaction() as conn:
        assert conn.execute("SELECT count(*) AS n FROM blobs").fetchone()["n"] == 0
        assert conn.execute("SELECT count(*) AS n FROM records").fetchone()["n"] == 0

    whole = encode(tmp_path / "whole.mp3", "mp3").read_bytes()
    truncated = tmp_path / "truncated.mp3"
    truncated.write_bytes(whole[: len(whole) // 3])
    answer = api.upload(token, truncated)
    if answer.status_code == 201:
        api.start_workers()
        final = api.wait(token, answer.json()["id"], done)
        assert final["stage"] == "done" or final["halt"]["reason"] == "undecodable_audio"
    else:
        assert answer.status_code == 415


def test_patch_edits_only_owner_fields(make_api, tmp_path):
    """PATCH changes title, summary, topics and moves updated_at; a pipeline-owned or unknown
    field is refused with 422 and changes nothing."""
    api = make_api()
    token = api.token("alice")
    record_id = api.upload(token, encode(tmp_path / "a.wav", "wav")).json()["id"]
    before = api.card(token, record_id)
    for bad in ({"stage": "done"}, {"transcript": "x"}, {"halt": None}, {"owner": "bob"}, {"colour": "red"},
                {"topics": "not a list"}):
        answer = api.http.patch(f"/records/{record_id}", headers=api.auth(token), json=bad)
        assert answer.status_code == 422, bad
        assert answer.json()["error"] == "invalid_request"
    assert api.card(token, record_id) == before
    edited = api.http.patch(f"/records/{record_id}", headers=api.auth(token),
                            json={"title": "Renamed", "topics": ["a", "b"]}).json()
    assert (edited["title"], edited["topics"], edited["summary"]) == ("Renamed", ["a", "b"], "")
    assert edited["updated_at"] > before["updated_at"]


def test_owner_edit_during_recognition_survives(make_api, tmp_path, hears_word_a_second):
    """P3-S1 over HTTP with a real worker: the owner edits while recognition holds the record;
    the step's save writes the text and the edit stays. (Its recognizer takes a second a window
    and spends no CPU on words this test does not read.)"""
    hears_word_a_second(pause=1.0)
    api = make_api(recognize_lease_seconds=3)
    token = api.token("alice")
    record_id = api.upload(token, encode(tmp_path / "long.flac", "flac", repeat=6), title="raw").json()["id"]
    api.start_workers()
    api.wait(token, record_id, lambda c: c["stage"] == "converted" and c["working"], 120)
    answer = api.http.patch(f"/records/{record_id}", headers=api.auth(token),
                            json={"title": "Board meeting", "summary": "Q3 numbers", "topics": ["finance"]})
    assert answer.status_code == 200
    assert api.card(token, record_id)["stage"] == "converted"  # the edit landed mid-recognition
    final = api.wait(token, record_id, done)
    assert final["stage"] == "done" and final["halt"] is None
    assert (final["title"], final["summary"], final["topics"]) == ("Board meeting", "Q3 numbers", ["finance"])
    assert api.http.get(f"/records/{record_id}/text", headers=api.auth(token)).text.strip()


def test_halt_shows_on_card_and_in_log(make_api, tmp_path, db, store):
    """P6-S2: a record halted after exhausting its failures: the card carries the stage reached,
    the halt flag and its reason; the service owner's JSON log has a line about the halt with
    the reason and the record id, and no transcript or token."""
    from service import logs

    log_path = tmp_path / "service.jsonl"
    logs.configure(level="WARNING", json_path=log_path)
    api = make_api(max_attempts=2, backoff_seconds=0)
    token = api.token("alice")
    record_id = api.upload(token, encode(tmp_path / "a.wav", "wav")).json()["id"]
    with db.transaction() as conn:  # storage loses the original: every conversion run fails
        conn.execute("DELETE FROM blob_chunks")
    api.start_workers()
    final = api.wait(token, record_id, lambda c: c["halt"] is not None, 60)
    assert final["stage"] == "created" and final["attempts"] == 2
    assert final["halt"]["reason"] == "attempts_exhausted"
    assert "missing from storage" in final["halt"]["error"] and final["halt"]["at"]
    text = api.http.get(f"/records/{record_id}/text", headers=api.auth(token))
    assert text.status_code == 409 and text.json()["halt"]["reason"] == "attempts_exhausted"
    from loguru import logger
    logger.complete()
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    halts = [l for l in lines if l["record"]["extra"].get("event") == "halted"]
    assert halts and halts[-1]["record"]["extra"]["record_id"] == record_id
    assert halts[-1]["record"]["extra"]["reason"] == "attempts_exhausted"
    assert "attempts_exhausted" in halts[-1]["text"]
    assert token not in log_path.read_text()
    assert kinds(store, record_id)[-1] == "halted"


def test_list_is_newest_first_and_paginated(make_api, tmp_path):
    """GET /records: the caller's own records, newest first, in pages."""
    api = make_api()
    token, other = api.token("alice"), api.token("bob")
    path = encode(tmp_path / "a.wav", "wav")
    ids = [api.upload(token, path, title=f"t{i}").json()["id"] for i in range(5)]
    api.upload(other, path)
    page = api.http.get("/records?limit=2", headers=api.auth(token)).json()
    assert [c["id"] for c in page["items"]] == ids[::-1][:2] and page["total"] == 5
    rest = api.http.get(page["next"], headers=api.auth(token)).json()
    assert [c["id"] for c in rest["items"]] == ids[::-1][2:4]
    assert api.http.get("/records?limit=0", headers=api.auth(token)).status_code == 422


def test_another_owners_done_text_is_not_found(make_api, tmp_path, store):
    """P6: the text address of another owner's *done* record answers 404 exactly as
    a missing record does, in every format, and carries none of the text; its owner gets it."""
    from domain.stages import Step

    api = make_api()
    alice, bob = api.token("alice"), api.token("bob")
    bobs = api.upload(bob, encode(tmp_path / "a.wav", "wav")).json()["id"]
    secret = "the quarterly figures are confidential"
    the_policy = api.settings.policy(Step.CONVERT)
    assert save_result(store, store.claim(Step.CONVERT, the_policy), {"duration_seconds": 3.0})
    recognition = store.claim(Step.RECOGNIZE, the_policy)
    segment = {"start": 0.0, "end": 3.0, "text": secret, "words": []}
    assert checkpoint(store, recognition, 0.0, 3.0, [segment], "en", 60)
    assert save_result(store, recognition, {"engine": "test"})  # the text: assembled from the window
    assert api.card(bob, bobs)["stage"] == "done"
    for fmt in ("txt", "srt", "vtt", "json"):
        address = f"/records/{{}}/text?format={fmt}"
        foreign = api.http.get(address.format(bobs), headers=api.auth(alice))
        absent = api.http.get(address.format(bobs + 1000), headers=api.auth(alice))
        assert foreign.status_code == absent.status_code == 404, fmt
        assert foreign.json() == absent.json() and "confidential" not in foreign.text
        own = api.http.get(address.format(bobs), headers=api.auth(bob))
        assert own.status_code == 200 and "confidential" in own.text
