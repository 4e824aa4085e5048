"""`transcriber watch DIR`: each finished file of a folder transcribed once per content, its
results written whole beside it, through restarts, kills, two watchers, a folder that goes and
a database that goes (INV-1: nothing accepted is lost, nothing is accepted twice)."""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from loguru import logger

from conftest import ROOT, run_together, settings, wait_until, work_until_idle
from db import Database, Store
from media import encode
from transcriber.folder import Folder
from transcriber.watch import Watcher, content_key


def watcher_of(store, folder: Path, owner, *, poll=False, formats=("srt", "txt", "json"), holder=None) -> Watcher:
    return Watcher(store, settings(), Folder(folder, recursive=False, poll=poll, poll_seconds=0.2),
                   owner_id=owner["id"], formats=formats, settle_seconds=0.3, holder=holder)


def step_until(watcher: Watcher, predicate, seconds: float = 15, what: str = "the condition"):
    return wait_until(lambda: watcher.step(0.05) or predicate(), seconds, every=0, what=what)


def records(store) -> list[dict]:
    with store.db.connection() as conn:
        return conn.execute("SELECT id, content_sha256 FROM records ORDER BY id").fetchall()


def rows(store) -> list[dict]:
    with store.db.connection() as conn:
        return conn.execute("SELECT * FROM watched_files ORDER BY seen_at").fetchall()


def sha(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def audio(tmp_path: Path, i: int) -> bytes:
    """A short recording whose bytes differ with `i`."""
    return encode(tmp_path / f"src{i}.wav", seconds=1.0 + i * 0.05).read_bytes()


@pytest.fixture
def inbox(tmp_path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    return folder


def test_a_finished_file_once_with_its_results_beside_it(store, owner, inbox, tmp_path, hears_word_a_second):
    """A file still growing is not taken; once it keeps its size it is accepted, and once its
    record is done its results lie beside it in each format asked. Renamed or copied, its content
    is not transcribed again; the watcher restarted does not take it again either."""
    hears_word_a_second()
    watcher = watcher_of(store, inbox, owner)
    data = audio(tmp_path, 0)
    target = inbox / "meeting.wav"
    with target.open("wb") as growing:
        for part in range(4):  # written in pieces 0.15 s apart: shorter than the settle interval
            growing.write(data[part * len(data) // 4:(part + 1) * len(data) // 4])
            growing.flush()
            deadline = time.monotonic() + 0.15
            while time.monotonic() < deadline:
                watcher.step(0.05)
            assert not rows(store), "a file still growing was taken"
    step_until(watcher, lambda: records(store), what="the file accepted")
    (record,) = records(store)
    assert bytes(record["content_sha256"]) == sha(target)
    work_until_idle(store, settings())
    step_until(watcher, lambda: (inbox / "meeting.json").exists(), what="the results")
    assert json.loads((inbox / "meeting.json").read_text())["segments"]
    assert (inbox / "meeting.srt").read_text().startswith("1\n00:00:00")
    assert "word" in (inbox / "meeting.txt").read_text()
    assert [r["state"] for r in rows(store)] == ["written"]
    assert not [p for p in os.listdir(inbox) if p.startswith(".")], "a temporary file was left"

    target.rename(inbox / "renamed.wav")
    shutil.copy(inbox / "renamed.wav", inbox / "copy.wav")
    again = watcher_of(store, inbox, owner)  # a restart, too
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        again.step(0.05)
    assert records(store) == [record] and len(rows(store)) == 1


def test_not_audio_gets_its_reason_and_is_not_retried_until_it_changes(store, owner, inbox, tmp_path):
    """A file intake refuses gets NAME.error.txt with the reason and nothing kept; touched, it is
    not tried again; changed (another content), it is."""
    watcher = watcher_of(store, inbox, owner)
    notes = inbox / "notes.mp3"
    notes.write_text("not audio at all\n" * 20)
    error = inbox / "notes.error.txt"
    step_until(watcher, error.exists, what="the error file")
    assert "not decodable audio" in error.read_text()
    assert not records(store)
    with store.db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM blobs").fetchone()["n"] == 0
    error.unlink()
    os.utime(notes)  # touched: the same content
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        watcher.step(0.05)
    assert not error.exists() and [r["state"] for r in rows(store)] == ["refused"]
    notes.write_bytes(audio(tmp_path, 1))  # a recording under the same name now
    step_until(watcher, lambda: records(store), what="the changed file accepted")
    assert not error.exists() or "not decodable" in error.read_text()
    assert sorted(r["state"] for r in rows(store)) == ["accepted", "refused"]


def test_two_watchers_at_once_make_one_record(store, owner, inbox, tmp_path):
    """P2-S1 for the watched folder: two watchers taking the same settled files at the same
    moment (threads on a barrier) make one record of each; a claim its holder left (killed
    after intake made the record) taken over by two at once answers that record, not a new one."""
    first, second = (watcher_of(store, inbox, owner, holder=f"test/{n}") for n in (1, 2))
    for i in range(4):
        path = inbox / f"take{i}.wav"
        path.write_bytes(audio(tmp_path, i))
        stat = (path.stat().st_size, path.stat().st_mtime_ns)
        run_together(2, lambda n, path=path, stat=stat: (first, second)[n].take(str(path), stat))
        wait_until(lambda: first.take(str(path), stat) and second.take(str(path), stat), 10)
    assert len(records(store)) == 4
    assert sorted(bytes(r["sha256"]) for r in rows(store)) == sorted(bytes(r["content_sha256"]) for r in records(store))

    # the window between intake's commit and the row's: intake made the record, the row still
    # says `accepting`, held by a process that has ended
    path = inbox / "window.wav"
    path.write_bytes(audio(tmp_path, 9))
    from db.watched import SeenFile
    from service.intake import accept_recording

    stat = (path.stat().st_size, path.stat().st_mtime_ns)
    seen = SeenFile(str(path), sha(path), *stat)
    ended = subprocess.run([sys.executable, "-c", "from domain import holders; print(holders.this_process())"],
                           capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
    assert store.claim_watched(owner["id"], seen, ended, 300) is None
    made, _ = accept_recording(store, settings(), path, owner_id=owner["id"], same=content_key(seen.sha256))
    run_together(2, lambda n: (first, second)[n].take(str(path), stat))
    assert len(records(store)) == 5
    assert {r["record_id"] for r in rows(store) if bytes(r["sha256"]) == seen.sha256} == {made}

    # a holder still at work whose time ran out: taken over while its intake runs, at the same
    # moment; intake's content key keeps it one record
    path = inbox / "lapsed.wav"
    path.write_bytes(audio(tmp_path, 10))
    stat = (path.stat().st_size, path.stat().st_mtime_ns)
    seen = SeenFile(str(path), sha(path), *stat)
    assert store.claim_watched(owner["id"], seen, "elsewhere/alive", -1) is None

    def race(n):
        if n == 0:
            return accept_recording(store, settings(), path, owner_id=owner["id"], same=content_key(seen.sha256))[0]
        return first.take(str(path), stat)

    held, _ = run_together(2, race)
    assert len(records(store)) == 6
    assert {r["record_id"] for r in rows(store) if bytes(r["sha256"]) == seen.sha256} == {held}


def test_the_folder_goes_and_comes_back(store, owner, tmp_path):
    """A watched folder that vanishes is said once, however long it stays away; when it is back
    it is watched again, with inotify and with polling alike."""
    for poll in (False, True):
        inbox = tmp_path / f"inbox{int(poll)}"
        inbox.mkdir()
        lines = []
        sink = logger.add(lambda message: lines.append(str(message)), level="WARNING")
        try:
            watcher = watcher_of(store, inbox, owner, poll=poll)
            watcher.step(0.05)
            inbox.rename(tmp_path / "away")
            step_until(watcher, lambda: any("is gone" in line for line in lines), what="the line")
            for _ in range(10):
                watcher.step(0.05)
            (tmp_path / "away").rename(inbox)
            step_until(watcher, lambda: any("is back" in line for line in lines), what="the return")
            (inbox / f"back{int(poll)}.wav").write_bytes(audio(tmp_path, 2 + int(poll)))
            step_until(watcher, lambda n=int(poll): len(records(store)) == n + 1, what="a file after the return")
        finally:
            logger.remove(sink)
        assert sum("is gone" in line for line in lines) == 1, lines


def test_recursive_watches_the_subfolders_made_later(store, owner, inbox, tmp_path):
    """--recursive: a file in a subfolder made while the watcher runs is taken (a watcher
    without it leaves the subfolders alone)."""
    flat = watcher_of(store, inbox, owner)
    deep = Watcher(store, settings(), Folder(inbox, recursive=True, poll=False, poll_seconds=0.2),
                   owner_id=owner["id"], formats=("txt",), settle_seconds=0.3)
    flat.step(0.05)
    deep.step(0.05)
    (inbox / "2026" / "june").mkdir(parents=True)
    (inbox / "2026" / "june" / "deep.wav").write_bytes(audio(tmp_path, 3))
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        flat.step(0.05)
    assert not records(store)
    step_until(deep, lambda: records(store), what="the file in the new subfolder")
    assert [r["path"] for r in rows(store)] == [str(inbox / "2026" / "june" / "deep.wav")]


def test_the_database_restarts_under_the_watcher(own_server, tmp_path, hears_word_a_second):
    """The database stops under a running watcher (a server of the test's own): one line says so,
    a file written meanwhile is accepted once it is back, and results are still written."""
    hears_word_a_second()
    url, restart = own_server
    with Database(url, max_size=2) as migrating:
        migrating.migrate()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    lines = []
    sink = logger.add(lambda message: lines.append(str(message)), level="WARNING")
    db = Database(url, max_size=4)
    try:
        store = Store(db)
        store.add_owner("alice")
        owner = store.owner_by_name("alice")
        watcher = watcher_of(store, inbox, owner, formats=("txt",))
        stop = threading.Event()
        running = threading.Thread(target=lambda: [watcher.step(0.05) for _ in iter(stop.is_set, True)])
        running.start()
        try:
            (inbox / "before.wav").write_bytes(audio(tmp_path, 0))
            wait_until(lambda: records(store), 15, what="the first file accepted")

            def while_down():
                (inbox / "during.wav").write_bytes(audio(tmp_path, 1))
                wait_until(lambda: any("database unreachable" in line for line in lines), 20, what="the line")

            restart(while_down)

            def accepted() -> int:  # read by the test on connections the restart may have ended
                try:
                    return len(records(store))
                except psycopg.OperationalError:
                    return 0

            wait_until(lambda: accepted() == 2, 30, what="the file written while the database was away")
            work_until_idle(store, settings())
            wait_until(lambda: (inbox / "during.txt").exists() and (inbox / "before.txt").exists(), 15)
        finally:
            stop.set()
            running.join(30)
    finally:
        logger.remove(sink)
        db.close()
    assert sum("database unreachable" in line for line in lines) == 1, lines
    assert any("reachable again" in line for line in lines)


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(env, store, owner, tmp_path, hears_word_a_second):
    """INV-1 for the watched folder: the watcher process killed (SIGKILL, by its PID) at random
    moments while files arrive and results are written, and started again each time: every file
    ends up in exactly one record and gets its results."""
    hears_word_a_second()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    contents = [audio(tmp_path, i) for i in range(9)]
    command = [sys.executable, "-m", "transcriber.cli", "watch", str(inbox), "--owner", "alice",
               "--format", "txt,json", "--settle", "0.2"]

    def start():
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT)

    def arrive(some):
        for i, data in some:  # each written in two pieces, as a recorder writes
            with (inbox / f"r{i:02}.wav").open("wb") as out:
                for half in (data[: len(data) // 2], data[len(data) // 2:]):
                    out.write(half)
                    out.flush()
                    time.sleep(0.05)

    rng = random.Random(7)
    watcher = start()
    waiting = list(enumerate(contents))
    kills, said = 0, []
    try:
        while waiting or kills < 4:
            up = watcher.stderr.readline()  # killed only once it watches: mid-work, not mid-start
            arrive(waiting[:3])
            del waiting[:3]
            time.sleep(rng.uniform(0.1, 1.0))
            work_until_idle(store, settings())
            os.kill(watcher.pid, signal.SIGKILL)
            watcher.wait(10)
            said.append(up + watcher.stderr.read())
            kills += 1
            watcher = start()

        def all_written():
            work_until_idle(store, settings())
            return all((inbox / f"r{i:02}.json").exists() for i in range(len(contents)))

        wait_until(all_written, 60, every=0.3, what="every file's results")
    finally:
        watcher.kill()
        _, errors = watcher.communicate(timeout=10)
    assert any(": accepted" in lines for lines in said), said  # the kills fell on watchers at work
    made = records(store)
    assert sorted(bytes(r["content_sha256"]) for r in made) == sorted(hashlib.sha256(c).digest() for c in contents)
    assert [r["state"] for r in rows(store)] == ["written"] * len(contents), errors
    for i in range(len(contents)):
        assert json.loads((inbox / f"r{i:02}.json").read_text())["segments"]


def test_bad_arguments(env, tmp_path, monkeypatch, capsys):
    """A folder that is not there, an owner nobody is, a format unknown: one line, exit 2."""
    from transcriber.cli import main

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for args, said in (([str(tmp_path / "nowhere"), "--owner", "alice"], "no such folder"),
                       ([str(tmp_path), "--owner", "nobody"], "no owner named 'nobody'"),
                       ([str(tmp_path), "--owner", "alice", "--format", "srt,doc"], "--format takes")):
        assert main(["watch", *args]) == 2
        assert said in capsys.readouterr().err


def test_two_real_watcher_processes_make_one_record_each(env, store, owner, inbox, tmp_path):
    """Two watcher processes on one folder: each file once, whichever hears it first."""
    command = [sys.executable, "-m", "transcriber.cli", "watch", str(inbox), "--owner", "alice", "--settle", "0.2"]
    both = [subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(2)]
    try:
        for process in both:
            assert process.stderr.readline().startswith("watching "), "a watcher did not start"
        for i in range(5):
            (inbox / f"p{i}.wav").write_bytes(audio(tmp_path, i))
        wait_until(lambda: len(rows(store)) == 5 and all(r["state"] == "accepted" for r in rows(store)), 30)
    finally:
        for process in both:
            process.kill()
            process.wait(10)
    assert len(records(store)) == 5


def test_work_runs_the_workers_in_the_watcher(env, owner, inbox, tmp_path):
    """With --work the watcher needs nothing else running: it transcribes what it accepts itself
    (the words are a stand-in's) and stops on SIGTERM."""
    from test_transcribe import RUN

    script = RUN.format(root=str(ROOT), tests=str(ROOT / "tests"))
    command = [sys.executable, "-c", script, "watch", str(inbox), "--owner", "alice", "--work", "--settle", "0.2",
               "--format", "txt"]
    watcher = subprocess.Popen(command, env={**env, "TRANSCRIBER_ENGINE": "pocketsphinx"}, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT)
    try:
        (inbox / "talk.wav").write_bytes(audio(tmp_path, 0))
        wait_until((inbox / "talk.txt").exists, 60, what="the text beside the file")
        assert "word" in (inbox / "talk.txt").read_text()
    finally:
        watcher.send_signal(signal.SIGTERM)
        _, said = watcher.communicate(timeout=60)
    assert "[record 1]" in said and "results written (txt)" in said, said
