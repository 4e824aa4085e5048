"""`transcriber transcribe`: the main job, as a user runs it."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from media import encode

SAMPLE = ROOT / "transcriber" / "samples" / "hello.ogg"


def transcribe(env, *args, timeout=300, stand_in=False):
    """`transcriber transcribe ARGS`; with `stand_in`, its words are a stand-in's (`window_hook`,
    for a test whose subject is not the words)."""
    how = ["-c", RUN.format(root=str(ROOT), tests=str(ROOT / "tests"))] if stand_in else ["-m", "transcriber.cli"]
    return subprocess.run([sys.executable, *how, "transcribe", *map(str, args)],
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_transcribe_the_bundled_sample(env):
    """P6-S1: the sample reaches done; its text is printed by the command itself, never sent."""
    done = transcribe(env, SAMPLE)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.split()) >= 10
    assert "done (9.8 s of audio)" in done.stderr
    # progress before done: with wake-ups on commit the record may be handed on from convert to
    # recognize between two polls, so either step may be the one seen at work
    assert any(word in done.stderr for word in ("converting", "converted", "recognizing"))


def test_transcribe_formats(env, tmp_path):
    """json, srt and vtt carry timed segments: `transcribe --format json`, then the same record's
    text in the other formats (`transcriber text ID --format`), as a user would ask again. The
    words are a stand-in's: the subject is the formats."""
    data = json.loads(transcribe(env, SAMPLE, "--format", "json", stand_in=True).stdout)
    assert data["segments"] and data["text"] and 9 < data["duration_seconds"] < 11
    again = [sys.executable, "-m", "transcriber.cli", "text", str(data["record"]), "--format"]
    srt = subprocess.run([*again, "srt"], env=env, capture_output=True, text=True, timeout=120)
    assert srt.returncode == 0 and srt.stdout.startswith("1\n00:00:0") and " --> " in srt.stdout
    vtt = subprocess.run([*again, "vtt"], env=env, capture_output=True, text=True, timeout=120)
    assert vtt.returncode == 0 and vtt.stdout.startswith("WEBVTT\n\n00:00:0")


def test_transcribe_reports_refusals_and_goes_on(env, tmp_path):
    """A file that is not audio is refused with its reason; the others are still transcribed;
    the exit status says something went wrong. (The words are a stand-in's.)"""
    notes = tmp_path / "notes.mp3"
    notes.write_text("not audio at all\n" * 10)
    done = transcribe(env, notes, encode(tmp_path / "ok.wav", "wav"), stand_in=True)
    assert done.returncode == 1
    assert "notes.mp3: refused: not decodable audio" in done.stderr
    assert "==> ok.wav" in done.stdout


def test_transcribe_on_embedded_database(env, tmp_path):
    """The README's main job on a machine with no server: the embedded database under
    TRANSCRIBER_HOME. The words are a stand-in's: the quick start's own test hears the model."""
    fresh = {k: v for k, v in env.items() if k != "TRANSCRIBER_DATABASE_URL"}
    fresh["TRANSCRIBER_HOME"] = f"/tmp/trh-{os.getpid()}"
    try:
        done = transcribe(fresh, SAMPLE, stand_in=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip()
        card = subprocess.run([sys.executable, "-m", "transcriber.cli", "card", "1"], env=fresh,
                              capture_output=True, text=True, timeout=120)
        assert json.loads(card.stdout)["stage"] == "done"
    finally:
        import shutil
        shutil.rmtree(fresh["TRANSCRIBER_HOME"], ignore_errors=True)


def test_interrupted_transcribe_loses_nothing(env, tmp_path):
    """INV-1: Ctrl-C during recognition: the command says so and exits 130, the step gives its
    claim back, and the record waits at its stage for the next run."""
    import signal
    import time

    long = encode(tmp_path / "long.flac", "flac", repeat=12)
    # a shell without job control starts background jobs with SIGINT ignored, and Python keeps an
    # ignored SIGINT: give the command Ctrl-C's default, as a terminal would
    run = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "transcribe", str(long)], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = ""
    deadline = time.monotonic() + 120
    while "recognizing" not in seen:
        assert time.monotonic() < deadline and run.poll() is None
        seen += run.stderr.readline()
    run.send_signal(signal.SIGINT)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    card = json.loads(subprocess.run([sys.executable, "-m", "transcriber.cli", "card", "1"], env=env,
                                     capture_output=True, text=True, timeout=60).stdout)
    assert card["stage"] == "converted" and card["halt"] is None and not card["working"]
    events = subprocess.run([sys.executable, "-m", "transcriber.cli", "events", "1"], env=env,
                            capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert json.loads(events[-1])["kind"] == "released"


RUN = """
import sys
sys.path[:0] = [{root!r}, {tests!r}]
import window_hook  # the words are a stand-in's; the windows, checkpoints and claims are real
from transcriber.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("stop", ["ctrl-c", "kill"])
def test_a_rerun_goes_on_where_an_earlier_run_stopped(env, tmp_path, stop):
    """INV-1, P3: `transcribe` stopped with Ctrl-C once its first window is saved (busy on the
    second), then run again on the same file, goes on with the same record from that checkpoint:
    it says so, no second record is made, no window is recognised twice, and the text is the
    whole recording's. Killed outright instead (SIGKILL: its claim still stands, its lease not
    run out), the rerun sees that the holder has ended and goes on alike, without waiting. Once
    that record is done, another run makes a new one. The words are a stand-in's
    (`window_hook`): the subject is the records and windows."""
    import signal

    from audio.windows import windows
    from conftest import wait_until
    from media import speech_pcm
    from stand_ins import words_heard

    script = RUN.format(root=str(ROOT), tests=str(ROOT / "tests"))
    long = encode(tmp_path / "long.wav", "wav", repeat=7)  # ~69 s: three windows
    first = subprocess.Popen([sys.executable, "-c", script, "transcribe", str(long)],
                             env={**env, "WINDOW_HOOK_DIR": str(tmp_path)}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until(lambda: (tmp_path / "busy").exists() or first.poll() is not None, 180, what="the first window saved")
    finally:
        first.send_signal(signal.SIGINT if stop == "ctrl-c" else signal.SIGKILL)
    _, err = first.communicate(timeout=60)
    assert first.returncode == (130 if stop == "ctrl-c" else -signal.SIGKILL), err

    again = subprocess.run([sys.executable, "-c", script, "transcribe", "--format", "json", str(long)], env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "[record 1] long.wav: going on with this record, which an earlier run left unfinished" in again.stderr
    answer = json.loads(again.stdout)
    assert answer["record"] == 1 and answer["text"].split() == words_heard(windows([speech_pcm() * 7]))
    events = [json.loads(line) for line in subprocess.run(
        [sys.executable, "-m", "transcriber.cli", "events", "1"], env=env, capture_output=True, text=True,
        timeout=60).stdout.splitlines()]
    marks = [e["detail"] for e in events if e["kind"] == "checkpoint"]
    assert len(marks) == 3 and marks[0]["from_seconds"] == 0
    assert all(later["from_seconds"] == earlier["seconds"] for earlier, later in zip(marks, marks[1:]))
    tokens = [e["detail"]["claim_token"] for e in events if e["kind"] == "claimed" and e["stage"] == "converted"]
    assert len(tokens) == 2  # the stopped run's recognition, and this one's
    ended = [e["detail"]["claim_token"] for e in events if e["kind"] == "holder_gone"]
    assert ended == ([] if stop == "ctrl-c" else tokens[:1])  # a killed run's claim was ended, not waited out
    if stop == "kill":
        return

    done_before = subprocess.run([sys.executable, "-c", script, "transcribe", str(long)], env=env,
                                 capture_output=True, text=True, timeout=300)
    assert done_before.returncode == 0 and "[record 2]" in done_before.stderr, done_before.stderr
    assert "going on" not in done_before.stderr


def test_a_claims_holder_is_gone_only_once_its_process_on_this_machine_has_ended():
    """P3 (who may take a claimed record up early): a claim's holder names its process so that a
    process of the same machine can tell when it has ended: a live one is not gone, a killed one
    is, another process under the same id is too; a holder of another machine, or a name that
    says too little, is never judged gone."""
    import signal

    from conftest import wait_until
    from domain import holders

    me = holders.this_process()
    assert not holders.gone(me)
    other = subprocess.Popen([sys.executable, "-c", "import sys; from domain import holders; "
                              "print(holders.this_process(), flush=True); sys.stdin.read()"],
                             cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        theirs = other.stdout.readline().strip()
        assert theirs != me and not holders.gone(theirs)
    finally:
        os.kill(other.pid, signal.SIGKILL)
        other.wait(timeout=60)
    wait_until(lambda: holders.gone(theirs), 60, what=f"{theirs} to be judged gone once killed")
    host, boot, pid, started = me.split("/")
    assert holders.gone("/".join([host, boot, pid, str(int(started) + 1)]))  # my id, another start
    assert not holders.gone("/".join(["elsewhere", boot] + theirs.split("/")[2:]))
    assert not holders.gone("/".join([host, "another-boot"] + theirs.split("/")[2:]))
    assert not any(holders.gone(name) for name in (None, "", "a test", f"{host}/{boot}/{pid}/"))


def test_only_an_unfinished_record_asked_for_alike_and_held_by_no_one_is_continued(store, owner, tmp_path):
    """P1, P3: `transcribe`'s intake goes on with an earlier record of the same bytes only while
    it is unfinished, asked for with the same prompt and speakers, and held by no live claim;
    anything else is a new record, and other bytes are always new."""
    from datetime import datetime, timezone

    from conftest import policy, settings, wait_until
    from domain.claims import HaltReason
    from domain.stages import Step
    from service.intake import accept_from_command_line

    s = settings()
    talk, other = encode(tmp_path / "talk.wav", "wav"), encode(tmp_path / "other.wav", "wav", seconds=3)

    def intake(path, **asked):
        return accept_from_command_line(store, s, path, owner="alice", continue_unfinished=True, **asked)

    first, new = intake(talk)
    assert new and intake(talk) == (first, False)
    assert intake(other)[1] and intake(talk, prompt="Montreal Forced Aligner")[1] and intake(talk, speakers="off")[1]
    claim = store.claim(Step.CONVERT, policy(lease=10))
    assert claim.record_id == first
    held, new = intake(talk)  # the first is held by a live claim: not taken from it
    assert new and held != first
    assert intake(talk) == (held, False)
    assert store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "a test's halt")
    wait_until(lambda: store.read_record(first)["lease_expires_at"] < datetime.now(timezone.utc), 60,
               what="the halted record's lease to run out")
    assert intake(talk) == (held, False)  # the older record, held by no one but halted, is not taken up
