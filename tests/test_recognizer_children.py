"""A recognizer child process and its temporary folder never outlive the worker
thread that started them: not when the thread ends, not when the worker shuts down, not when
the process is stopped by a signal (or killed outright)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import psutil

from audio.children import FOLDER_PREFIX, sweep_stale_folders
from audio.isolation import IsolatedEngine
from conftest import recognizer_children, wait_until
from media import encode, speech_pcm

SPHINX = {"engine": "pocketsphinx", "label": "pocketsphinx"}  # the lightest local engine


def _folders(pid: int) -> list[Path]:
    return sorted(Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}{pid}-*"))


def test_children_end_with_the_threads_that_started_them():
    """Three threads each get a recognizer child and a window folder; when the
    threads end (nobody calls close), the children and folders are gone."""
    before = (len(recognizer_children(os.getpid())), len(_folders(os.getpid())))
    engine = IsolatedEngine(SPHINX)
    started = []

    def work():
        engine.recognize(speech_pcm()[:32000], "en")
        started.append(engine.pid)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(set(started)) == 3 and None not in started  # one child per thread, each really ran
    wait_until(lambda: (len(recognizer_children(os.getpid())), len(_folders(os.getpid()))) == before,
               60, what="the children and folders of ended threads to go")
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                   for pid in started)


def test_a_stopping_worker_ends_its_childrens_lives(store, owner, tmp_path):
    """The in-process workers of `transcribe`/`up` recognise a record, then stop:
    their recognizer children and folders are gone once the worker has stopped."""
    from conftest import settings
    from transcriber.local import LocalPipeline
    from service.intake import accept_file

    before = (len(recognizer_children(os.getpid())), len(_folders(os.getpid())))
    the_settings = settings(engine="pocketsphinx", home=tmp_path / "home", tick_seconds=0.2)
    record_id = accept_file(store, the_settings, encode(tmp_path / "a.wav"), owner_id=owner["id"])
    with LocalPipeline(store, the_settings):
        wait_until(lambda: store.read_record(record_id)["stage"] == "done", 180, what="the record to be done")
        assert len(recognizer_children(os.getpid())) > before[0]  # a child did the work
    assert (len(recognizer_children(os.getpid())), len(_folders(os.getpid()))) == before


def test_signals_end_the_children_and_their_folders(env, tmp_path):
    """`transcriber transcribe` stopped by SIGTERM while its recognizer works leaves
    no child and no folder; killed with SIGKILL, its child dies with it and the folder left is
    swept at the next start."""
    audio = encode(tmp_path / "long.wav", repeat=12)
    for stop in (signal.SIGTERM, signal.SIGKILL):
        run = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "transcribe", str(audio)],
                               env={**env, "TRANSCRIBER_ENGINE": "pocketsphinx"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            children = wait_until(lambda: recognizer_children(run.pid), 180, what="a recognizer child")
            wait_until(lambda: _folders(run.pid), 60, what="its window folder")
            run.send_signal(stop)
            run.wait(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        wait_until(lambda: not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children),
                   60, what=f"the child to end after {stop.name}")
        if stop == signal.SIGTERM:
            assert run.returncode != 0 and not _folders(run.pid)
        else:
            assert sweep_stale_folders() >= 1 and not _folders(run.pid)


def test_a_recognizer_decodes_with_the_threads_the_setting_gives():
    """TRANSCRIBER_RECOGNIZER_THREADS: a recognizer child built with 3 decoding threads runs more
    threads than one built with 1 (on this 2-CPU machine the default would give both 2)."""
    from audio import engines
    from conftest import settings

    counts = {}
    for threads in (1, 3):
        engine = engines.IsolatedEngine(engines.spec(settings(recognizer_threads=threads)))
        try:
            engine.recognize(speech_pcm()[:64000], "en")
            counts[threads] = psutil.Process(engine.pid).num_threads()
        finally:
            engine.close()
    assert counts[3] >= counts[1] + 2, counts
