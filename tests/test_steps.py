"""The steps on real audio: PyAV conversion, pocketsphinx recognition, fencing while they run."""
from __future__ import annotations

import threading
import time

import pytest

from actors.work import Outcome, run_once
from conftest import add_record, kinds, policy, recognizer_children, save_result, settings, wait_until, work_until_idle
from domain.claims import Claim, HaltReason
from domain.resume import resume
from domain.stages import Step
from media import KINDS, encode, speech_pcm


def accept(store, owner, path):
    return store.accept(owner["id"], [path.read_bytes()], source_name=path.name)


@pytest.mark.parametrize("kind", ["wav", "mp3", "opus", "flac", "m4a", "webm"])
def test_formats_reach_done_with_timed_text(store, owner, tmp_path, kind):
    """P6-S1 groundwork: each container/codec is converted and recognised to non-empty text
    with sane segment timing."""
    record_id = accept(store, owner, encode(tmp_path / f"speech{KINDS[kind][3]}", kind))
    assert work_until_idle(store, settings()) == [Outcome.SAVED, Outcome.SAVED]
    row = store.read_record(record_id)
    assert row["stage"] == "done" and row["halted_at"] is None
    assert 9.5 < row["duration_seconds"] < 10.2
    assert len(row["transcript"].split()) >= 10
    segments = store.transcript(record_id)["segments"]
    assert segments and all(s["text"] for s in segments)
    starts = [s["start"] for s in segments]
    assert starts == sorted(starts)
    assert all(0 <= s["start"] < s["end"] <= row["duration_seconds"] + 0.1 for s in segments)
    assert row["engine"] == "faster-whisper/tiny.en" and row["language"] == "en"
    assert all(s["words"] for s in segments)
    assert kinds(store, record_id) == ["accepted", "claimed", "advanced", "claimed", "checkpoint", "advanced"]


def test_video_with_audio_track(store, owner, tmp_path):
    """A video file with an audio track is transcribed from its audio."""
    record_id = accept(store, owner, encode(tmp_path / "clip.mp4", "m4a", video=True))
    work_until_idle(store, settings())
    row = store.read_record(record_id)
    assert row["stage"] == "done" and row["transcript"]


def _png(path):
    import av
    import numpy as np

    with av.open(str(path), "w", format="image2") as out:
        stream = out.add_stream("png", rate=1)
        stream.width, stream.height, stream.pix_fmt = 8, 8, "rgb24"
        out.mux(stream.encode(av.VideoFrame.from_ndarray(np.zeros((8, 8, 3), np.uint8), format="rgb24")))
        out.mux(stream.encode(None))
    return path


def _broken_inputs(tmp_path):
    text = tmp_path / "notes.mp3"
    text.write_text("this is a text file, not audio\n" * 20)
    whole = encode(tmp_path / "whole.mp3", "mp3").read_bytes()
    truncated = tmp_path / "truncated.mp3"
    truncated.write_bytes(whole[:300])
    silent = tmp_path / "zero.wav"
    import wave
    with wave.open(str(silent), "wb") as w:  # a valid header and not one sample
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
    return {"text renamed .mp3": text, "truncated mp3": truncated, "zero-length audio": silent,
            "image": _png(tmp_path / "picture.png")}


def test_undecodable_input_halts_at_once(store, owner, tmp_path):
    """P5/INV-1: input with no decodable audio halts with undecodable_audio and the decoder's
    message, without burning attempts; nothing is left stuck."""
    for name, path in _broken_inputs(tmp_path).items():
        record_id = accept(store, owner, path)
        assert run_once(store, settings(), Step.CONVERT) == Outcome.HALTED, name
        row = store.read_record(record_id)
        assert row["halt_reason"] == HaltReason.UNDECODABLE_AUDIO, name
        assert row["halt_error"] and len(row["halt_error"]) > 10, name
        assert row["stage"] == "created" and row["failures"] == 1, name
    assert work_until_idle(store, settings()) == []
    with store.db.transaction() as conn:  # no converted audio was left behind
        assert conn.execute("SELECT count(*) AS n FROM blobs WHERE media_type LIKE 'audio/L16%'").fetchone()["n"] == 0


def test_transient_failure_is_retried_then_halts(store, owner, db):
    """P4: a step error that is not permanent counts an attempt and pauses; exhausted, it halts
    with attempts_exhausted and the last error."""
    record_id = add_record(store, owner, payload=encode_bytes())
    s = settings(max_attempts=2, backoff_seconds=0)
    with db.transaction() as conn:  # the original's bytes vanish: every conversion run fails
        conn.execute("DELETE FROM blob_chunks")
    assert run_once(store, s, Step.CONVERT) == Outcome.FAILED
    row = store.read_record(record_id)
    assert row["failures"] == 1 and row["halted_at"] is None and row["retry_after"] is not None
    assert run_once(store, s, Step.CONVERT) == Outcome.HALTED
    row = store.read_record(record_id)
    assert row["halt_reason"] == "attempts_exhausted" and row["failures"] == 2
    assert row["halt_error"] == "RuntimeError: the original audio is missing from storage"


def encode_bytes() -> bytes:
    import io
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(speech_pcm())
    return buffer.getvalue()


def recognize_in_background(store, the_settings, record_id, *, wait_for_progress=True):
    """Start a recognition run on a thread; once it has reported progress, return the thread
    and the dict that will hold its outcome."""
    result = {}
    worker = threading.Thread(target=lambda: result.update(outcome=run_once(store, the_settings, Step.RECOGNIZE)))
    worker.start()
    deadline = time.monotonic() + 300
    while wait_for_progress and not (store.read_record(record_id)["progress_seconds"] or 0) > 0:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    return worker, result


def test_lease_renewal_keeps_a_long_step_alive(store, owner, tmp_path, hears_word_a_second):
    """P3: a step running longer than its lease renews it under its token; no other worker can
    take the record meanwhile, and the step saves. The recognizer takes 2 s a window (five
    windows: more than three leases) without the CPU a model would spend on it."""
    record_id = accept(store, owner, encode(tmp_path / "long.flac", "flac", repeat=12))  # ~2 min
    s = settings(recognize_lease_seconds=3)
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    hears_word_a_second(pause=2.0)
    worker, result = recognize_in_background(store, s, record_id, wait_for_progress=False)
    # the step's own claim first: a rival asking before it would simply be the step
    wait_until(lambda: "claimed" in kinds(store, record_id)[2:], 60, what="the step's claim")
    rival_claims, leases = [], set()
    while worker.is_alive():
        leases.add(store.read_record(record_id)["lease_expires_at"])
        claim = store.claim(Step.RECOGNIZE, s.policy(Step.RECOGNIZE))
        if isinstance(claim, Claim):
            rival_claims.append(claim)
        time.sleep(0.2)
    leases.discard(None)
    # renewed at a third of the lease: five expiry times seen means it outlived its first lease
    assert len(leases) >= 5, sorted(leases)
    assert rival_claims == []
    assert result["outcome"] == Outcome.SAVED
    assert store.read_record(record_id)["stage"] == "done"
    assert kinds(store, record_id).count("claimed") == 2  # one convert, one recognize


def test_refused_renewal_after_human_resume_stops_the_step(store, owner, tmp_path, db, hears_word_a_second):
    """P3-S3 on a running step: its renewals were lost, another claimer took the record and
    halted it, a human resumed it; the first step's next renewal is refused, it stops early
    and saves nothing (save_refused in the journal). The recognizer takes 2 s a window (five
    windows) without a model's CPU."""
    record_id = accept(store, owner, encode(tmp_path / "long.flac", "flac", repeat=12))  # ~2 min
    s = settings(recognize_lease_seconds=3)
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    hears_word_a_second(pause=2.0)
    worker, result = recognize_in_background(store, s, record_id)
    deadline = time.monotonic() + 30
    other = None
    while not isinstance(other, Claim):  # as if the step's renewals had been lost for a while
        assert time.monotonic() < deadline, (store.read_record(record_id), kinds(store, record_id), result)
        with db.transaction() as conn:
            conn.execute("UPDATE steps SET lease_expires_at = now() - interval '1 second' WHERE record_id = %s",
                         [record_id])
        other = store.claim(Step.RECOGNIZE, s.policy(Step.RECOGNIZE))
    assert store.halt(other, HaltReason.ATTEMPTS_EXHAUSTED, "simulated")
    resume(store, record_id)
    stopped_at = time.monotonic()
    worker.join(timeout=60)
    assert result["outcome"] == Outcome.LOST
    assert time.monotonic() - stopped_at < 10  # it stopped early, not after the whole recording
    row = store.read_record(record_id)
    assert row["stage"] == "converted" and row["transcript"] is None
    assert "save_refused" in kinds(store, record_id)


def test_recognizer_process_death_is_a_failed_attempt(store, owner, tmp_path):
    """The recognizer runs in a child process; if it dies mid-recording the run counts as a
    failed attempt (not a halt, not a silent success) and the next run succeeds."""
    import os

    record_id = accept(store, owner, encode(tmp_path / "speech.flac", "flac"))
    s = settings(recognize_lease_seconds=3, backoff_seconds=0)
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    earlier = {c.pid for c in recognizer_children(os.getpid())}  # other threads' idle children
    worker, result = recognize_in_background(store, s, record_id, wait_for_progress=False)
    # the run's thread starts a child of its own, which loads its model and then decodes: killed
    # as soon as it shows, it dies before its one window is answered
    started = wait_until(lambda: [c for c in recognizer_children(os.getpid()) if c.pid not in earlier], 120,
                         every=0.02, what="the run's recognizer child")
    for child in started:
        child.kill()
    worker.join(timeout=60)
    assert result["outcome"] == Outcome.FAILED
    row = store.read_record(record_id)
    assert row["failures"] == 1 and "recognizer process ended" in kinds_detail(store, record_id)
    assert run_once(store, s, Step.RECOGNIZE) == Outcome.SAVED
    assert store.read_record(record_id)["stage"] == "done"


def kinds_detail(store, record_id) -> str:
    return " ".join(str(e["detail"]) for e in store.events(record_id))


def test_lease_renewal_does_not_wait_for_the_step(store, owner):
    """P3: the lease is renewed on a thread of its own, not between the step's beats:
    while the step waits (on a slow recognizer child) without beating, the lease is still
    extended; and a step silent for a whole lease is taken for hung, its lease left to run out,
    so another worker can take the record over."""
    from actors.heartbeat import Heartbeat

    record_id = add_record(store, owner)
    slow = policy(lease=9)  # renewed every 3 s; taken for hung after 9 s without a beat
    claim = store.claim(Step.CONVERT, slow)
    granted = store.read_record(record_id)["lease_expires_at"]
    with Heartbeat(store, claim, slow, threading.Event()) as beat:
        beat(0.0)
        deadline = time.monotonic() + slow.lease_seconds
        while store.read_record(record_id)["lease_expires_at"] <= granted:  # no beat meanwhile
            assert time.monotonic() < deadline, "the lease was not renewed while the step was busy"
            time.sleep(0.1)
        beat(1.0)
    assert store.read_record(record_id)["progress_seconds"] in (0.0, 1.0)
    assert save_result(store, claim, {"duration_seconds": 1.0})

    record_id = add_record(store, owner)
    short = policy(lease=1)
    claim = store.claim(Step.CONVERT, short)
    with Heartbeat(store, claim, short, threading.Event()):  # a step that never beats
        deadline = time.monotonic() + 120
        while not isinstance(other := store.claim(Step.CONVERT, policy()), Claim):
            assert time.monotonic() < deadline, "a silent step's lease never ran out"
            time.sleep(0.2)
    assert other.record_id == record_id and other.token > claim.token


def test_a_save_that_raises_is_a_failed_attempt_at_once(store, owner, tmp_path, monkeypatch):
    """P4 for the save too: an exception in a step's save (not only in its work) is a failed
    attempt recorded under the token at once, attempts counted and the claim let go, never left
    to the lease; the next run saves."""
    record_id = accept(store, owner, encode(tmp_path / "a.wav", "wav", seconds=2))
    s = settings(convert_lease_seconds=3600, backoff_seconds=0)
    saving = store.save

    def broken(*args, **kwargs):
        raise RuntimeError("the save broke")

    monkeypatch.setattr(store, "save", broken)
    assert run_once(store, s, Step.CONVERT) is Outcome.FAILED
    row = store.read_record(record_id)
    assert (row["stage"], row["failures"], row["claim_token"], row["lease_expires_at"]) == ("created", 1, None, None)
    failed = [e["detail"] for e in store.events(record_id) if e["kind"] == "failed"]
    assert [(f["attempt"], f["step"]) for f in failed] == [(1, "convert")]
    assert "RuntimeError: the save broke" in failed[0]["error"]
    monkeypatch.setattr(store, "save", saving)
    assert run_once(store, s, Step.CONVERT) is Outcome.SAVED
