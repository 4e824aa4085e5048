"""Workers as real processes on a real broker: `dramatiq actors` and `transcriber scheduler`.

Skipped where no Redis listens on 127.0.0.1:6379 (a fresh machine); CI's machine has one.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime

import pytest

from conftest import ROOT, drop_queue, kinds, wait_until
from audio.windows import windows
from media import encode, speech_pcm
from stand_ins import words_heard

REDIS_DB = 13


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _listening(6379), reason="no Redis on 127.0.0.1:6379")


@pytest.fixture
def redis_env(env):
    url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    yield {**env, "TRANSCRIBER_BROKER_URL": url, "TRANSCRIBER_TICK_SECONDS": "0.5"}
    drop_queue(env["TRANSCRIBER_QUEUE"], redis_url=url)


def stand_in(env: dict, busy_in=None, pause: float = 0.0) -> dict:
    """`env` for workers that load `window_hook`: their recognizer is a stand-in (the subject is
    the workers and the broker, not the words) taking `pause` seconds a window; with `busy_in`,
    a folder, each stays busy after its first window until killed or stopped, a `busy` file
    there saying so."""
    return {**env, "WORKER_MODULES": "window_hook", "PYTHONPATH": f"{ROOT / 'tests'}:{env['PYTHONPATH']}",
            "WINDOW_HOOK_PAUSE": str(pause), **({"WINDOW_HOOK_DIR": str(busy_in)} if busy_in else {})}


class Processes:
    def __init__(self):
        self.running: list[subprocess.Popen] = []

    def start(self, env, *args, log=None):
        process = subprocess.Popen(
            [sys.executable, *args], env=env, cwd=ROOT, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=log or subprocess.DEVNULL,
        )
        self.running.append(process)
        return process

    def worker(self, env, log=None):
        """`dramatiq actors`, and the modules `env` names in WORKER_MODULES (a test's hooks)."""
        hooks = env.get("WORKER_MODULES", "").split()
        return self.start(env, "-m", "dramatiq", "actors", *hooks, "--processes", "1", "--threads", "2", log=log)

    def scheduler(self, env):
        return self.start(env, "-m", "transcriber.cli", "scheduler")

    @staticmethod
    def kill(process, sig=signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        process.wait(timeout=60)

    def stop_all(self):
        for process in self.running:
            if process.poll() is None:
                self.kill(process, signal.SIGTERM)


@pytest.fixture
def processes():
    group = Processes()
    yield group
    group.stop_all()


def test_two_worker_processes_and_scheduler_on_redis(store, owner, redis_env, processes, tmp_path):
    """Two `dramatiq actors` processes and the scheduler on Redis: 20 records all done, each step
    claimed and saved once per record. The conversions are real; the words are a stand-in's."""
    audio = encode(tmp_path / "speech.mp3", "mp3", seconds=3).read_bytes()  # many records, each short
    ids = [store.accept(owner["id"], [audio]) for _ in range(20)]
    processes.worker(stand_in(redis_env))
    processes.worker(stand_in(redis_env))
    processes.scheduler(redis_env)
    wait_until(lambda: all(store.read_record(i)["stage"] == "done" for i in ids), 300)
    for record_id in ids:
        journal = kinds(store, record_id)
        assert journal.count("claimed") == 2 and journal.count("advanced") == 2, journal
        assert "save_refused" not in journal and "failed" not in journal
        assert store.read_record(record_id)["transcript"]


def test_killed_worker_loses_nothing(store, owner, redis_env, processes, tmp_path):
    """INV-1: a worker killed with SIGKILL mid-recognition (its first window saved, busy on the
    next); a worker started after it on the same machine sees that the claim's holder has ended
    and takes the record up at once, not after the lease (ten minutes here), and finishes it.
    The journal shows two recognition claims, the first's lease ended in between, and one save;
    the text has every window's words once."""
    env = {**redis_env, "TRANSCRIBER_RECOGNIZE_LEASE_SECONDS": "600"}
    record_id = store.accept(owner["id"], [encode(tmp_path / "long.wav", "wav", repeat=6).read_bytes()])
    processes.scheduler(env)
    doomed = processes.worker(stand_in(env, busy_in=tmp_path))
    wait_until(lambda: (tmp_path / "busy").exists(), 300)
    assert (store.read_record(record_id)["progress_seconds"] or 0) > 0
    processes.kill(doomed)
    processes.worker(stand_in(env))
    wait_until(lambda: store.read_record(record_id)["stage"] == "done", 300)
    assert store.read_record(record_id)["transcript"].split() == words_heard(windows([speech_pcm() * 6]))
    events = store.events(record_id)
    recognition_claims = [e for e in events if e["kind"] == "claimed" and e["stage"] == "converted"]
    assert len(recognition_claims) == 2
    assert [e["stage"] for e in events if e["kind"] == "advanced"] == ["converted", "done"]
    ended = [e for e in events if e["kind"] == "holder_gone"]
    assert [e["detail"]["claim_token"] for e in ended] == [recognition_claims[0]["detail"]["claim_token"]]
    assert recognition_claims[0]["at"] < ended[0]["at"] < recognition_claims[1]["at"]
    lease_end = datetime.fromisoformat(recognition_claims[0]["detail"]["lease_expires_at"])
    assert recognition_claims[1]["at"] < lease_end  # not waited out


def test_sigterm_gives_claims_back_and_stops_cleanly(store, owner, redis_env, processes, tmp_path):
    """INV-1: SIGTERM to a worker mid-recognition: the step stops, gives its claim back at once
    (no waiting out the lease), nothing is saved; SIGTERM stops the scheduler cleanly too."""
    record_id = store.accept(owner["id"], [encode(tmp_path / "long.flac", "flac", repeat=6).read_bytes()])
    env = {**redis_env, "TRANSCRIBER_RECOGNIZE_LEASE_SECONDS": "3"}
    scheduler = processes.scheduler(env)
    log = (tmp_path / "worker.log").open("w")
    worker = processes.worker(stand_in(env, busy_in=tmp_path), log=log)
    wait_until(lambda: (tmp_path / "busy").exists(), 300)  # a window saved, busy on the next
    worker.send_signal(signal.SIGTERM)  # to the main process, which passes it on to its workers
    assert worker.wait(timeout=60) == 0, (tmp_path / "worker.log").read_text()
    row = store.read_record(record_id)
    assert row["stage"] == "converted" and row["claim_token"] is None and row["lease_expires_at"] is None
    assert kinds(store, record_id)[-1] == "released"
    os.killpg(scheduler.pid, signal.SIGTERM)
    assert scheduler.wait(timeout=30) == 0


def test_worker_without_broker_url_refuses_to_start(env):
    """`dramatiq actors` with no TRANSCRIBER_BROKER_URL would wait forever: it says so and stops."""
    done = subprocess.run([sys.executable, "-m", "dramatiq", "actors", "--processes", "1", "--threads", "1"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "TRANSCRIBER_BROKER_URL" in done.stderr


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "amqp://guest:guest@127.0.0.1:1/%2F"])
def test_bad_broker_url_fails_fast(env, url):
    """A broker that is down does not hang start-up: one clear line, bounded wait."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "transcriber.cli", "scheduler"],
                          env={**env, "TRANSCRIBER_BROKER_URL": url}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "broker unreachable" in done.stderr
    assert "guest:guest" not in done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.skipif(not _listening(5672), reason="no RabbitMQ on 127.0.0.1:5672")
def test_worker_and_scheduler_on_rabbitmq(store, owner, env, processes, tmp_path):
    """The same pipeline with RabbitMQ as the broker; the words are a stand-in's."""
    url = "amqp://guest:guest@127.0.0.1:5672/%2F"
    rabbit_env = {**env, "TRANSCRIBER_BROKER_URL": url, "TRANSCRIBER_TICK_SECONDS": "0.5"}
    audio = encode(tmp_path / "speech.opus", "opus").read_bytes()
    ids = [store.accept(owner["id"], [audio]) for _ in range(3)]
    try:
        processes.worker(stand_in(rabbit_env))
        processes.scheduler(rabbit_env)
        wait_until(lambda: all(store.read_record(i)["stage"] == "done" for i in ids), 600)
    finally:
        processes.stop_all()
        drop_queue(env["TRANSCRIBER_QUEUE"], amqp_url=url)
    assert all(kinds(store, i).count("advanced") == 2 for i in ids)
    for record_id in ids:  # one window: a word for each whole second of the converted audio
        row = store.read_record(record_id)
        assert row["transcript"].split() == ["word"] * int(round(row["duration_seconds"], 3))
