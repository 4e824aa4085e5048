"""Who spoke when as a step of the pipeline, durable like the others, its outputs and the
speakers' names, on real PostgreSQL and real recorded speech. Skipped, saying so, where the
`speakers` extra is not installed."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import wave

import numpy as np
import pytest
from fastapi.testclient import TestClient

from actors.work import Outcome, run_once
from audio import speakers
from audio.decode import SAMPLE_RATE, pcm16k
from audio.formats import render_record
from conftest import ROOT, drop_queue, kinds, listening, policy, save_turns, settings, wait_until
from domain.card import card
from domain.claims import NO_WORK
from domain.resume import NotHalted, resume
from domain.stages import Step
from service.intake import accept_recording
from stand_ins import WordASecond
from test_workers import Processes

pytestmark = pytest.mark.skipif(not speakers.available(),
                                reason="the `speakers` extra is not installed (pip install -e '.[speakers]')")

READER = ROOT / "tests" / "data" / "librivox_reader.ogg"   # a LibriVox reader (public domain), female
TALKER = ROOT / "tests" / "data" / "mfa_uhuh.flac"          # the MFA test speaker, male


def _samples(path) -> np.ndarray:
    return np.frombuffer(b"".join(pcm16k(path)), np.int16)


def _wav(path, parts) -> None:
    gap = np.zeros(int(0.6 * SAMPLE_RATE), np.int16)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(np.concatenate([x for part in parts for x in (part, gap)]).tobytes())


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    """Reader, talker, reader again, as a WAV file: two real voices taking turns (20 s)."""
    reader, talker = _samples(READER), _samples(TALKER)
    half = len(reader) // 2
    path = tmp_path_factory.mktemp("speakers") / "conversation.wav"
    _wav(path, [reader[:half], talker, reader[half:]])
    return path


@pytest.fixture(scope="module")
def long_conversation(tmp_path_factory):
    """Reader, talker, reader, talker: 41 s, more than one window (30 s at most)."""
    reader, talker = _samples(READER), _samples(TALKER)
    path = tmp_path_factory.mktemp("speakers") / "long.wav"
    _wav(path, [reader, talker, reader, talker])
    return path


def _done(store, owner, path, the_settings, speakers_asked="auto") -> int:
    """A record of `path` taken to done by the convert and recognize steps (not diarized yet)."""
    record, _ = accept_recording(store, the_settings, path, owner_id=owner["id"], speakers=speakers_asked)
    assert run_once(store, the_settings, Step.CONVERT) is Outcome.SAVED
    assert run_once(store, the_settings, Step.RECOGNIZE) is Outcome.SAVED
    return record


def _done_cheaply(store, owner, path, the_settings, monkeypatch) -> int:
    """As `_done`, with the text heard by WordASecond: for the tests of the diarize step alone,
    which Whisper's CPU-seconds would not make any truer."""
    import actors.steps

    with monkeypatch.context() as patch:
        patch.setattr(actors.steps, "engine", lambda _: WordASecond())
        return _done(store, owner, path, the_settings)


def test_done_first_then_speakers_and_every_format_labels_them(store, owner, conversation):
    """Speakers come after done and label every format: the record reaches done with its text
    readable while speakers are pending; the diarize step then finds two speakers, and
    srt/vtt/txt/json label them."""
    on = settings(diarize="auto")
    record = _done(store, owner, conversation, on)
    shown = card(store.card_row(record))
    assert shown["stage"] == "done" and shown["speakers"]["state"] == "pending"
    plain = render_record("srt", store.transcript(record))
    assert plain.strip() and "[Speaker" not in plain  # readable at done, before any speaker is known

    assert run_once(store, on, Step.DIARIZE) is Outcome.SAVED
    assert card(store.card_row(record))["speakers"]["state"] == "done"
    row = store.transcript(record)
    srt = render_record("srt", row)
    assert "[Speaker 1]" in srt and "[Speaker 2]" in srt
    assert "[Speaker 2]" in render_record("vtt", row)
    assert render_record("txt", row).startswith("[Speaker 1] ")
    document = json.loads(render_record("json", row))
    assert set(document["speakers"]) == {"S1", "S2"}
    assert all(s["speaker"] in ("S1", "S2") for s in document["segments"])
    assert "speakers_saved" in kinds(store, record)
    assert run_once(store, on, Step.DIARIZE) is NO_WORK  # worked once


def test_a_speaker_change_inside_speech_is_saved(store, owner, monkeypatch):
    """One reader asked for two speakers: the clusters change inside continuous speech, where
    neighbouring windows overlap, and the turns found there are saved like any (they once carried
    numpy numbers that JSON refuses, and the save failed every time)."""
    on = settings(diarize="auto")
    record = _done_cheaply(store, owner, READER, on, monkeypatch)
    with store.db.transaction() as conn:
        conn.execute("UPDATE records SET speakers_wanted = '2' WHERE id = %s", [record])
    assert run_once(store, on, Step.DIARIZE) is Outcome.SAVED
    turns = store.transcript(record)["turns"]
    assert {t["speaker"] for t in turns} == {"S1", "S2"}
    assert all(type(t["start"]) is float and type(t["end"]) is float for t in turns)


def test_a_diarize_save_that_raises_is_a_failed_attempt_at_once(store, owner, monkeypatch):
    """P4 for the diarize step's save: an exception there is a failed attempt recorded under the
    token at once (attempts counted on the card), not a claim left to run out its lease."""
    on = settings(diarize="auto", diarize_lease_seconds=3600, backoff_seconds=0)
    record = _done_cheaply(store, owner, TALKER, on, monkeypatch)
    saving = store.save

    def broken(*args, **kwargs):
        raise TypeError("Object of type float32 is not JSON serializable")

    monkeypatch.setattr(store, "save", broken)
    assert run_once(store, on, Step.DIARIZE) is Outcome.FAILED
    assert card(store.card_row(record))["speakers"] | {"names": None} == {
        "state": "pending", "reason": None, "error": None, "asked": "auto", "names": None, "attempts": 1, "list": []}
    assert [e["attempt"] for e in _diarize_journal(store, record, "failed")] == [1]
    monkeypatch.setattr(store, "save", saving)
    assert run_once(store, on, Step.DIARIZE) is Outcome.SAVED


def test_a_run_stopped_after_a_window_goes_on_from_its_checkpoint(store, owner, long_conversation, monkeypatch):
    """Diarization is checkpointed for long recordings: a diarize run whose worker stops right after
    its first window gives its claim back with that window's embeddings saved; the next run
    goes on from there (no window embedded twice) and finds both speakers."""
    on = settings(diarize="auto")
    record = _done_cheaply(store, owner, long_conversation, on, monkeypatch)
    stop, saving = threading.Event(), store.checkpoint

    def then_stop(*args, **kwargs):
        saved = saving(*args, **kwargs)
        stop.set()  # the worker is told to stop (SIGTERM) right after the window is saved
        return saved

    monkeypatch.setattr(store, "checkpoint", then_stop)
    assert run_once(store, on, Step.DIARIZE, stop) is Outcome.ABANDONED
    monkeypatch.undo()
    assert run_once(store, on, Step.DIARIZE) is Outcome.SAVED
    windows = [(e["detail"]["from_seconds"], e["detail"]["seconds"]) for e in store.events(record)
               if e["kind"] == "checkpoint" and e["detail"].get("step") == "diarize"]
    assert len(windows) >= 2 and windows[0][0] == 0
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:])), windows  # end to end, none twice
    srt = render_record("srt", store.transcript(record))
    assert "[Speaker 1]" in srt and "[Speaker 2]" in srt


def _diarize_journal(store, record, kind) -> list[dict]:
    return [e["detail"] for e in store.events(record) if e["kind"] == kind and e["detail"].get("step") == "diarize"]


def test_a_worker_killed_during_diarization_loses_nothing(store, long_conversation, env, tmp_path, monkeypatch):
    """Killing the worker during diarization loses nothing and the record completes, with real
    processes: a `dramatiq actors` worker is killed with SIGKILL (its whole
    process group) after its diarize run saved the first window's embeddings. While it is dead
    the record is done and its text served. A second worker, starting on this machine, sees the
    claim's holder has ended and takes its diarize step over at once (journaled `holder_gone`; its
    600 s lease is not waited out), goes on from the checkpoint (the first window is not
    embedded again) and saves both speakers; the database's invariants hold."""
    if not listening(6379):
        pytest.skip("no Redis on 127.0.0.1:6379 for the workers' wake-ups")
    from db.check import Facts
    from domain.invariants import check
    from web.app import create_app

    on = settings(diarize="auto")
    token = store.add_owner("alice")
    record = _done_cheaply(store, store.owner_by_name("alice"), long_conversation, on, monkeypatch)
    app = TestClient(create_app(store, on), raise_server_exceptions=False)
    auth = {"Authorization": f"Bearer {token}"}
    worker_env = {**env, "TRANSCRIBER_DIARIZE": "auto", "TRANSCRIBER_BROKER_URL": "redis://127.0.0.1:6379/14",
                  "TRANSCRIBER_TICK_SECONDS": "0.5", "TRANSCRIBER_DIARIZE_LEASE_SECONDS": "600"}
    processes, log = Processes(), (tmp_path / "workers.log").open("a")
    try:
        processes.start(worker_env, "-m", "transcriber.cli", "scheduler")
        held = processes.start({**worker_env, "PYTHONPATH": f"{ROOT / 'tests'}:{env['PYTHONPATH']}"},
                               "-m", "dramatiq", "actors", "diarize_hook", "--processes", "1", "--threads", "1",
                               log=log)
        wait_until(lambda: _diarize_journal(store, record, "checkpoint") or held.poll() is not None, 300, 0.2)
        assert held.poll() is None, "the first worker died before its first checkpoint"
        processes.kill(held)  # SIGKILL to its process group, mid-run: claim held, one window saved

        shown = app.get(f"/records/{record}", headers=auth).json()  # what the owner sees meanwhile
        assert shown["stage"] == "done" and shown["speakers"]["state"] == "pending"
        text = app.get(f"/records/{record}/text", params={"format": "srt"}, headers=auth)
        assert text.status_code == 200 and text.text.strip() and "[Speaker" not in text.text

        processes.start(worker_env, "-m", "dramatiq", "actors", "--processes", "1", "--threads", "1", log=log)
        wait_until(lambda: _speakers_settled(app, record, auth), 300, 0.2)
    finally:
        processes.stop_all()
        log.close()
        drop_queue(env["TRANSCRIBER_QUEUE"], redis_url=worker_env["TRANSCRIBER_BROKER_URL"])

    speakers_now = app.get(f"/records/{record}", headers=auth).json()["speakers"]
    assert speakers_now["state"] == "done", speakers_now  # a halt would name its reason here
    first, second = _diarize_journal(store, record, "claimed")  # the killed claim, the one that took over
    # the killed claim saved a checkpoint before it died: its work was not lost, so its lease is
    # not counted as lost (the rule of every step's claim)
    assert second["lost_leases"] == 0
    assert [g["claim_token"] for g in _diarize_journal(store, record, "holder_gone")] == [first["claim_token"]]
    windows = [(c["from_seconds"], c["seconds"], c["claim_token"]) for c in _diarize_journal(store, record, "checkpoint")]
    assert len(windows) >= 2 and windows[0][0] == 0, windows
    assert [w[2] for w in windows] == [first["claim_token"]] + [second["claim_token"]] * (len(windows) - 1)
    assert all(a[1] == b[0] for a, b in zip(windows, windows[1:])), windows  # from the checkpoint on, none twice
    assert [s["claim_token"] for s in _diarize_journal(store, record, "speakers_saved")] == [second["claim_token"]]
    assert not _diarize_journal(store, record, "save_refused")
    srt = app.get(f"/records/{record}/text", params={"format": "srt"}, headers=auth).text
    assert "[Speaker 1]" in srt and "[Speaker 2]" in srt
    assert check(Facts(store.db)).sound


def _speakers_settled(app, record, auth) -> bool:
    """The record's speakers are no longer pending: done, or halted."""
    return app.get(f"/records/{record}", headers=auth).json()["speakers"]["state"] != "pending"


def test_the_owner_names_speakers_and_every_text_shows_the_names(store, conversation):
    """Speakers are named by their owner: PATCH /records/{id} {"speakers": {"S1": "Alice"}} renames
    S1 in srt, vtt, txt and json; the pipeline never writes the names; a bad label is refused."""
    on = settings(diarize="auto")
    token = store.add_owner("alice")
    who = store.owner_by_name("alice")
    app = TestClient(__import__("web.app", fromlist=["create_app"]).create_app(store, on),
                     raise_server_exceptions=False)
    auth = {"Authorization": f"Bearer {token}"}
    with conversation.open("rb") as handle:
        answer = app.post("/records", files={"file": ("talk.wav", handle, "audio/wav")},
                          data={"speakers": "2"}, headers=auth)
    assert answer.status_code == 201
    record = answer.json()["id"]
    assert app.get(f"/records/{record}", headers=auth).json()["speakers"]["asked"] == "2"
    for step in Step:
        assert run_once(store, on, step) is Outcome.SAVED
    assert app.patch(f"/records/{record}", json={"speakers": {"S1": "Alice", "S2": "Bob"}},
                     headers=auth).status_code == 200
    for fmt in ("srt", "vtt", "txt"):
        body = app.get(f"/records/{record}/text", params={"format": fmt}, headers=auth).text
        assert "[Alice]" in body and "[Bob]" in body and "[Speaker" not in body, fmt
    document = app.get(f"/records/{record}/text", params={"format": "json"}, headers=auth).json()
    assert document["speakers"] == {"S1": "Alice", "S2": "Bob"}
    assert app.patch(f"/records/{record}", json={"speakers": {"S2": ""}}, headers=auth).status_code == 200
    assert "[Speaker 2]" in app.get(f"/records/{record}/text", params={"format": "srt"}, headers=auth).text
    assert app.patch(f"/records/{record}", json={"speakers": {"robert": "Bob"}}, headers=auth).status_code == 422
    assert card(store.card_row(record, who["id"]))["speakers"]["names"] == {"S1": "Alice"}
    with conversation.open("rb") as handle:
        refused = app.post("/records", files={"file": ("talk.wav", handle, "audio/wav")},
                           data={"speakers": "many"}, headers=auth)
    assert refused.status_code == 400 and refused.json()["error"] == "bad_speakers"


def test_a_stale_diarize_holder_cannot_save(store, owner):
    """P3, for the diarize step too: a diarize holder whose lease ran out and was claimed
    again has its save refused and journaled; the new holder's save stands."""
    on = settings(diarize="auto")
    record = _done(store, owner, TALKER, on)
    short = policy(lease=1.0)
    stale = store.claim(Step.DIARIZE, short)
    assert stale.record_id == record
    fresh = wait_until(lambda: store.claim(Step.DIARIZE, short) or None, 30)
    assert fresh.token > stale.token
    assert not save_turns(store, stale, [{"start": 0.0, "end": 1.0, "speaker": "S9"}])
    assert not store.renew_lease(stale, 60.0)
    refused = [e for e in store.events(record) if e["kind"] == "save_refused"]
    assert refused and refused[0]["detail"]["step"] == "diarize"
    assert save_turns(store, fresh, [{"start": 0.0, "end": 1.0, "speaker": "S1"}])
    assert store.transcript(record)["turns"] == [{"start": 0.0, "end": 1.0, "speaker": "S1"}]


def test_check_judges_the_speakers_rows(store, owner):
    """`transcriber check` knows the diarize step's rows (INV-1): sound after speakers are saved; a
    diarize step row holding a token without a lease is reported, naming its record."""
    from db.check import Facts
    from domain.invariants import check

    on = settings(diarize="auto")
    record = _done(store, owner, TALKER, on)
    assert check(Facts(store.db)).sound  # queued, not yet claimed
    claim = store.claim(Step.DIARIZE, policy())
    assert check(Facts(store.db)).sound  # claimed under a live lease
    with store.db.transaction() as conn:  # a broken row planted by hand
        conn.execute("UPDATE steps SET lease_expires_at = NULL WHERE record_id = %(id)s", {"id": record})
    found = check(Facts(store.db)).violations
    assert [(v.rule, v.record) for v in found] == [("token_without_lease", record)]
    with store.db.transaction() as conn:
        conn.execute("UPDATE steps SET lease_expires_at = now() + interval '1 minute' WHERE record_id = %(id)s",
                     {"id": record})
    assert save_turns(store, claim, [])
    assert check(Facts(store.db)).sound
    with store.db.transaction() as conn:  # a second save planted by hand
        conn.execute("INSERT INTO events (record_id, origin, kind, stage) VALUES (%(id)s, 'pipeline', "
                     "'speakers_saved', 'done')", {"id": record})
    found = check(Facts(store.db)).violations
    assert [(v.rule, v.record) for v in found] == [("speakers_saved_twice", record)]


def test_a_diarize_that_always_fails_halts_speakers_only(store, owner, monkeypatch):
    """P4/P5 for the diarize step, without harm to the text: after its attempts its diarize step is
    halted with the reason and error on the card, while the record stays done and its text is
    served; `resume` returns the row to work."""
    import actors.diarizing

    on = settings(diarize="auto", max_attempts=2, backoff_seconds=0)
    record = _done(store, owner, TALKER, on)

    def broken(*args, **kwargs):
        raise RuntimeError("the embedding model broke")

    monkeypatch.setattr(actors.diarizing, "find_turns", broken)
    assert run_once(store, on, Step.DIARIZE) is Outcome.FAILED
    assert wait_until(lambda: run_once(store, on, Step.DIARIZE) or None, 30) is Outcome.HALTED
    shown = card(store.card_row(record))
    assert shown["stage"] == "done" and shown["halt"] is None
    assert shown["speakers"]["state"] == "halted"
    assert shown["speakers"]["reason"] == "attempts_exhausted"
    assert "the embedding model broke" in shown["speakers"]["error"]
    assert render_record("txt", store.transcript(record)).strip()
    assert run_once(store, on, Step.DIARIZE) is NO_WORK
    # the operator's resume returns the diarize step to work; mended, it saves them
    assert resume(store, record, by="ops") == "done"
    assert card(store.card_row(record))["speakers"]["state"] == "pending"
    monkeypatch.undo()
    assert run_once(store, on, Step.DIARIZE) is Outcome.SAVED
    assert card(store.card_row(record))["speakers"]["state"] == "done"
    with pytest.raises(NotHalted):
        resume(store, record)


def test_speakers_off_queues_nothing(store, owner, hears_word_a_second):
    """Speakers can be turned off per upload and for the service: an upload with speakers=off, and
    any upload under TRANSCRIBER_DIARIZE=off, reaches done with no diarize work and the card says
    off."""
    hears_word_a_second()  # the words do not matter here, only what is queued after them
    asked_off = _done(store, owner, TALKER, settings(diarize="auto"), speakers_asked="off")
    service_off = _done(store, owner, TALKER, settings(diarize="off"))
    assert run_once(store, settings(diarize="auto"), Step.DIARIZE) is NO_WORK
    assert card(store.card_row(asked_off))["speakers"] | {"names": None} == {
        "state": "off", "reason": "not_asked", "error": None, "asked": "off", "names": None, "list": []}
    assert card(store.card_row(service_off))["speakers"]["state"] == "off"


def test_transcribe_with_a_number_of_speakers_prints_their_labels(env, conversation):
    """`transcribe --speakers`: the local pipeline runs the diarize actor too, and
    the text printed carries the speakers' labels."""
    env = {**env, "TRANSCRIBER_DIARIZE": "auto"}
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "transcriber.cli", "transcribe", str(conversation),
                          "--speakers", "2", "--format", "srt"], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert "[Speaker 1]" in run.stdout and "[Speaker 2]" in run.stdout, (run.stdout, time.monotonic() - started)


def test_the_openai_answer_waits_for_speakers_asked_for(store, conversation):
    """The OpenAI `verbose_json` answer carries speakers too: `speakers=2` on the OpenAI-compatible
    address makes the answer wait for the speakers, and its segments and words carry them."""
    from web.app import create_app

    on = settings(diarize="auto")
    token = store.add_owner("alice")
    app = TestClient(create_app(store, on), raise_server_exceptions=False)
    stop = threading.Event()

    def worker():  # the pipeline's workers, beside the waiting request
        while not stop.is_set():
            if all(run_once(store, on, step) is NO_WORK for step in Step):
                stop.wait(0.2)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    try:
        with conversation.open("rb") as handle:
            answer = app.post("/v1/audio/transcriptions", headers={"Authorization": f"Bearer {token}"},
                              files={"file": ("talk.wav", handle, "audio/wav")},
                              data={"speakers": "2", "response_format": "verbose_json",
                                    "timestamp_granularities[]": ["word", "segment"]})
    finally:
        stop.set()
        thread.join(60)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert {s["speaker"] for s in body["segments"]} == {"S1", "S2"}
    assert {w["speaker"] for w in body["words"]} == {"S1", "S2"}
