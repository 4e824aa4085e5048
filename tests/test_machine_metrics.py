"""One metrics port per `dramatiq actors` run: its worker
processes' counters are summed by one exporter on TRANSCRIBER_METRICS_PORT, not served on a
port per process.

A real `dramatiq actors --processes 2` run on Redis; its process group is stopped by its id.
The words are a stand-in's (`window_hook`): the subject is the counters, not the recognizer.
Skipped where no Redis listens.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.mmap_dict import MmapedDict

from conftest import ROOT, drop_queue, free_port, listening, wait_until
from media import encode
from service.machine_metrics import run_directory
from test_workers import stand_in

REDIS_DB = 12
RECORDS = 3

pytestmark = pytest.mark.skipif(not listening(6379), reason="no Redis on 127.0.0.1:6379")

SAVES = re.compile(r'^transcriber_saves_total\{step="(\w+)"\} ([0-9.e+]+)$', re.M)


def scrape(port: int) -> str | None:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return None


def saves(text: str) -> dict[str, float]:
    return {step: float(value) for step, value in SAVES.findall(text)}


def saves_in_file(path) -> dict[str, float]:
    """One worker process's saves by step, read from its own multiprocess file."""
    found = {}
    for entry in MmapedDict.read_all_values_from_file(str(path)):
        key, value = entry[0], entry[1]
        name, _sample, labels, _help = json.loads(key)
        if name == "transcriber_saves":
            found[labels["step"]] = value
    return found


@pytest.fixture
def run(env):
    """A `dramatiq actors` run of two worker processes, one thread each, with a metrics port."""
    url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "dramatiq", "actors", "window_hook", "--processes", "2", "--threads", "1"],
        env=stand_in({**env, "TRANSCRIBER_BROKER_URL": url, "TRANSCRIBER_METRICS_PORT": str(port)}),
        cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield process, port
    if process.poll() is None:
        try:
            os.killpg(process.pid, 15)
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=60)
        except ProcessLookupError:
            pass
    drop_queue(env["TRANSCRIBER_QUEUE"], redis_url=url)


def test_one_port_serves_the_sum_of_every_worker_process(store, owner, run, tmp_path):
    """Two worker processes of one `dramatiq actors` run write to the run's own
    directory; one scrape of TRANSCRIBER_METRICS_PORT shows the saves of both summed (equal to
    the records worked, and to what each process's own file holds); no port after it serves
    worker metrics; a clean stop removes the directory."""
    process, port = run
    directory = run_directory(process.pid)
    wait_until(lambda: scrape(port) is not None, 120, every=0.5)
    # each worker process keeps its own files (its histogram's from its start), named by its pid
    writers = wait_until(lambda: len(pids := {f.stem.rsplit("_", 1)[1] for f in directory.glob("histogram_*.db")})
                         == 2 and pids, 60, every=0.5)
    assert str(process.pid) not in writers

    audio = encode(tmp_path / "a.wav").read_bytes()
    records = [store.accept(owner["id"], [audio]) for _ in range(RECORDS)]
    wait_until(lambda: all(store.read_record(r)["stage"] == "done" for r in records), 180, every=0.5)

    counted = wait_until(lambda: (found := saves(scrape(port) or "")).get("recognize") == RECORDS and found, 30)
    assert counted == {"convert": RECORDS, "recognize": RECORDS}
    for other in range(port + 1, port + 4):
        assert "transcriber_" not in (scrape(other) or ""), other

    # and the scrape is those processes' own counts added up
    by_process = [saves_in_file(f) for f in directory.glob("counter_*.db")]
    assert 1 <= len(by_process) <= 2
    assert sum(counts.get("recognize", 0.0) for counts in by_process) == RECORDS

    os.killpg(process.pid, 15)
    process.wait(timeout=60)
    wait_until(lambda: not directory.exists(), 30)  # the exporter removes it as it stops
