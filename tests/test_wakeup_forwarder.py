"""One wake-up forwarder for all worker processes of a machine: a freed record wakes about one
claimer, not one per process, and when the forwarding process dies another takes over.

Real `dramatiq actors` processes on Redis, with no scheduler (no tick at all): only the
forwarded wake-ups move the records. One `dramatiq actors` run of 4 worker processes serves
their claims, summed, on its one metrics port; a second run, as a second machine
would, stands by to take over. Skipped where no Redis listens.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request

import psycopg
import pytest

from conftest import ROOT, drop_queue, free_port, listening, wait_until
from media import encode
from test_workers import stand_in

REDIS_DB = 12
WORKERS = 4


pytestmark = pytest.mark.skipif(not listening(6379), reason="no Redis on 127.0.0.1:6379")


CLAIM_LINE = re.compile(r'^transcriber_claims_total\{result="(\w+)",step="(\w+)"\} ([0-9.e+]+)$', re.M)


def claims(port: int) -> dict[str, float] | None:
    """A run's claim counts (all its worker processes) by result (`claimed`, `empty`), None while
    it is not up."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
    except OSError:
        return None
    found = {"claimed": 0.0, "empty": 0.0}
    for result, _step, value in CLAIM_LINE.findall(text):
        found[result] += float(value)
    return found


class Workers:
    """`dramatiq actors` runs, one thread per worker process, each run in its own process group
    (killed by that group's id, never by name) with its one metrics port."""

    def __init__(self, env):
        self.env, self.running = env, {}

    def start(self, processes: int) -> None:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "dramatiq", "actors", *self.env.get("WORKER_MODULES", "").split(),
             "--processes", str(processes), "--threads", "1"],
            env={**self.env, "TRANSCRIBER_METRICS_PORT": str(port)}, cwd=ROOT, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.running[process] = port

    def totals(self) -> dict[str, float]:
        counts = [claims(port) for process, port in self.running.items() if process.poll() is None]
        return {key: sum(c[key] for c in counts if c) for key in ("claimed", "empty")}

    def all_up(self) -> bool:
        return all(claims(port) is not None for port in self.running.values())

    def kill(self, process) -> None:
        try:
            os.killpg(process.pid, 9)
        except ProcessLookupError:
            pass
        process.wait(timeout=60)

    def stop_all(self) -> None:
        for process in self.running:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, 15)
                    process.wait(timeout=60)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    self.kill(process)


def forwarder_pid(database_url: str) -> int | None:
    """The OS process id of the worker whose listener holds the forwarder's lock, if one does:
    this test's database alone (another run on the same server has listeners of its own)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database() "
            "AND a.application_name LIKE 'transcriber-wakeups %'"
        ).fetchone()
    return int(row[0].split()[1]) if row else None


def standing_by(database_url: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity "
                            "WHERE datname = current_database() "
                            "AND application_name LIKE 'transcriber-wakeups %'").fetchone()[0]


@pytest.fixture
def workers(env):
    url = f"redis://127.0.0.1:6379/{REDIS_DB}"
    # the words are a stand-in's: the subject is who is woken, not what is heard
    group = Workers({**stand_in(env), "TRANSCRIBER_BROKER_URL": url, "TRANSCRIBER_ENGINE": "pocketsphinx",
                     "TRANSCRIBER_TICK_SECONDS": "60"})
    yield group
    group.stop_all()
    drop_queue(env["TRANSCRIBER_QUEUE"], redis_url=url)


def settle(workers: Workers) -> dict[str, float]:
    """The claim totals once the last wake-ups have been spent (two reads a second apart agree)."""
    previous = None
    while True:
        now = workers.totals()
        if now == previous:
            return now
        previous = now
        time.sleep(1.0)


def test_one_forwarder_wakes_one_claimer_and_another_takes_over(store, owner, database_url, workers, tmp_path):
    """With 4 worker processes, each freed record costs about one claim, not one per
    process (empty claims per claimed record ≤ 1.5; every process forwarding would cost ~4), read
    from the run's one metrics port; the forwarding run killed by its process
    group, a process of another run takes over and the next record is still done without any
    tick."""
    audio = encode(tmp_path / "a.wav").read_bytes()
    workers.start(WORKERS)
    wait_until(workers.all_up, 120, every=0.5)
    wait_until(lambda: standing_by(database_url) == WORKERS and forwarder_pid(database_url), 30)
    before = settle(workers)  # the first forwarder's catch-up wakes every stage once

    records = 3
    for _ in range(records):  # one at a time: each hand-off is one freed record
        record = store.accept(owner["id"], [audio])
        wait_until(lambda: store.read_record(record)["stage"] == "done", 120)
    after = settle(workers)
    claimed, empty = after["claimed"] - before["claimed"], after["empty"] - before["empty"]
    assert claimed == 2 * records  # convert and recognize, once each
    print(f"\n{WORKERS} worker processes: {empty / claimed:.2f} empty claims per claimed record")
    assert empty / claimed <= 1.5

    workers.start(1)  # another machine's worker, standing by
    wait_until(lambda: workers.all_up() and standing_by(database_url) == WORKERS + 1, 120, every=0.5)
    holder = forwarder_pid(database_url)
    process = next(p for p in workers.running if os.getpgid(holder) == p.pid)
    workers.kill(process)
    workers.running.pop(process)
    successor = wait_until(lambda: (found := forwarder_pid(database_url)) not in (None, holder) and found, 30)
    assert successor != holder
    record = store.accept(owner["id"], [audio])
    wait_until(lambda: store.read_record(record)["stage"] == "done", 120)
