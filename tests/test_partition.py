"""A worker cut off from PostgreSQL while it holds a record (P3, INV-1).

Two `transcriber up` processes work one database: A reaches it through a TCP relay this test
owns, B directly. The relay passes, then hangs (sockets open, nothing forwarded) or resets every
connection, then passes again. A must notice within its lease that it can no longer renew it and
stop the step (no work spent on a record it may no longer hold), B takes the record over when A's
lease ends, nothing is written twice, and A is back at work within seconds of the heal. The
shared server is never touched: only the relay's connections are cut.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from conftest import ROOT, conninfo, needs_long, wait_until
from media import encode
from relay import Relay
from test_http import free_port, wait_serving

LEASE_SECONDS = 5
CUTS = ("hang", "reset")

# `transcriber up` whose words are a stand-in's (the subject is the claim, not the words); with a
# folder, the first window of the process is recognised and every later one, while the folder's
# `hold` file exists, is kept busy beating (a `busy` file says so): a step at work at a known point.
RUN = """
import sys, time
from pathlib import Path
sys.path[:0] = [{root!r}, {tests!r}]
import actors.steps
from stand_ins import WordASecond

class HeldAfterFirstWindow(WordASecond):
    def __init__(self, folder):
        super().__init__()
        self.folder, self.windows = folder, 0

    def recognize(self, pcm, language, beat, prompt=None):
        self.windows += 1
        while self.windows > 1 and (self.folder / "hold").exists():
            (self.folder / "busy").touch()
            beat()
            time.sleep(0.2)
        return super().recognize(pcm, language, beat, prompt)

if {stand_in!r}:
    recognizer = HeldAfterFirstWindow(Path({stand_in!r}))
    actors.steps.engine = lambda settings: recognizer
from transcriber.cli import main
sys.exit(main(sys.argv[1:]))
"""


class Up:
    """One `transcriber up` process of this test's, its output in a file and its log as JSON."""

    def __init__(self, name: str, env: dict, database_url: str, folder: Path, stand_in: Path | None):
        self.name, self.port = name, free_port()
        self.output, self.log = folder / f"{name}.out", folder / f"{name}.jsonl"
        script = RUN.format(root=str(ROOT), tests=str(ROOT / "tests"), stand_in=str(stand_in or ""))
        environment = {**env, "TRANSCRIBER_DATABASE_URL": database_url, "TRANSCRIBER_LOG_JSON": str(self.log)}
        with self.output.open("w") as out:
            self.process = subprocess.Popen([sys.executable, "-c", script, "up", "--port", str(self.port)],
                                            env=environment, stdout=out, stderr=subprocess.STDOUT)
        wait_serving(f"http://127.0.0.1:{self.port}", self.process, self.output, seconds=120)

    def lines(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line)["record"] for line in self.log.read_text().splitlines() if line.strip()]

    def said(self, text: str) -> list[dict]:
        return [line for line in self.lines() if text in line["message"]]

    def cpu_seconds(self) -> float:
        """CPU spent by the process and its children so far (ended children included)."""
        try:
            process = psutil.Process(self.process.pid)
            spent = process.cpu_times()
            total = spent.user + spent.system + spent.children_user + spent.children_system
            for child in process.children(recursive=True):
                try:
                    times = child.cpu_times()
                    total += times.user + times.system
                except psutil.NoSuchProcess:
                    pass
            return total
        except psutil.NoSuchProcess:
            return 0.0

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.output.read_text()


@pytest.fixture
def partition(postgresql, env, tmp_path):
    """The relay in front of this test's database, the workers' environment (short leases, a
    fast tick), and the processes started, stopped at the end."""
    info = postgresql.info
    relay = Relay((str(info.host), info.port))
    relayed = conninfo("127.0.0.1", relay.port, info.user, info.dbname, info.password)
    environment = {**env, "TRANSCRIBER_TICK_SECONDS": "0.3",
                   "TRANSCRIBER_CONVERT_LEASE_SECONDS": str(LEASE_SECONDS),
                   "TRANSCRIBER_RECOGNIZE_LEASE_SECONDS": str(LEASE_SECONDS),
                   # the lost lease is the fault injected, not the record's doing
                   "TRANSCRIBER_MAX_LOST_LEASES": "1000"}
    started: list[Up] = []

    def up(name: str, through_relay: bool, stand_in: Path | None = None, **extra) -> Up:
        process = Up(name, {**environment, **extra}, relayed if through_relay else env["TRANSCRIBER_DATABASE_URL"],
                     tmp_path, stand_in)
        started.append(process)
        return process

    yield relay, up
    relay.resume()
    for process in started:
        process.stop()
    relay.close()


def at(event_or_line) -> float:
    """A journal event's or a log line's wall-clock time, in seconds."""
    if "at" in event_or_line:
        return event_or_line["at"].timestamp()
    return event_or_line["time"]["timestamp"]


def lease_end(store, record_id: int) -> float:
    with store.db.connection() as conn:
        row = conn.execute("SELECT lease_expires_at FROM steps WHERE record_id = %s", [record_id]).fetchone()
    return row["lease_expires_at"].timestamp()


def held_by_a(store, record_id: int) -> bool:
    """A holds the record's recognition with its first window saved."""
    with store.db.connection() as conn:
        row = conn.execute("SELECT step, checkpoint_seconds, claim_token FROM steps WHERE record_id = %s",
                           [record_id]).fetchone()
    return row is not None and row["step"] == "recognize" and row["claim_token"] is not None \
        and row["checkpoint_seconds"] > 0


def run_partition(store, owner, env, tmp_path, relay, up, cut: str, *, recording: Path, stand_in: bool) -> dict:
    """A works the recording until its first window is saved (then, with `stand_in`, is busy on
    the next), B starts, the relay cuts A off with `cut` until B has saved the record done, then
    passes again. Checks the rules; returns the figures."""
    folders = {name: tmp_path / name for name in ("a", "b")}
    for folder in folders.values():
        folder.mkdir()
    if stand_in:
        (folders["a"] / "hold").touch()
    engine = {"TRANSCRIBER_ENGINE": "pocketsphinx"} if stand_in else {}  # the stand-in needs no model
    a = up("a", True, folders["a"] if stand_in else None, **engine)
    record_id = store.accept(owner["id"], [recording.read_bytes()], source_name=recording.name)
    wait_until(lambda: held_by_a(store, record_id) and (not stand_in or (folders["a"] / "busy").exists()), 240,
               what="A at work on the recording after its first window")
    b = up("b", False, folders["b"] if stand_in else None, **engine)

    relay.hang() if cut == "hang" else relay.reset()
    cut_at = time.time()
    a_lease_end = lease_end(store, record_id)  # A can renew it no more
    wait_until(lambda: time.time() >= a_lease_end, 60, 0.02, what="A's lease end")
    cpu_at_lease_end = a.cpu_seconds()
    # what A spends in the two leases after its own ended (a recognizer still at work would
    # spend about a CPU-second a second; A idle, a hundredth of that)
    wait_until(lambda: time.time() >= a_lease_end + 2 * LEASE_SECONDS, 60, 0.05, what="two leases more")
    cpu_spent = a.cpu_seconds() - cpu_at_lease_end
    wait_until(lambda: store.stage_of(record_id) == "done", 900, 0.2, what="B's done save")
    cut_seconds = time.time() - cut_at
    b_output = b.stop()  # from now on only A can take work
    (folders["a"] / "hold").unlink(missing_ok=True)

    relay.resume()
    healed_at = time.time()
    second = store.accept(owner["id"], [encode(tmp_path / "second.wav", "wav").read_bytes()], source_name="second.wav")
    wait_until(lambda: store.stage_of(second) == "done", 180, 0.2, what="A at work again after the heal")
    back_at = at(next(e for e in store.events(second) if e["kind"] == "claimed"))

    events = store.events(record_id)
    # one line about the record: its lease could not be renewed (the step stopped just before
    # its end), or the step stopped at once, its failure unwritten, the lease left to run out
    noticed = [line for line in a.lines() if line["extra"].get("record_id") == record_id
               and line["extra"].get("event") in ("lease_run_out", "unwritten")]
    assert len(noticed) == 1, a.output.read_text()
    assert f"record {record_id}: " in noticed[0]["message"]
    taken_over_at = at([e for e in events if e["kind"] == "claimed" and e["stage"] == "converted"][-1])
    # A said so within its lease (a moment after, on a loaded machine); B took over at its end
    assert at(noticed[0]) < a_lease_end + 2 and taken_over_at >= a_lease_end
    assert [e["stage"] for e in events if e["kind"] == "advanced"] == ["converted", "done"]  # one done save
    a_output = a.stop()
    # one line each way about the database, and no traceback
    assert len(a.said("database unreachable")) == 1, a_output
    assert len(a.said("database reachable again")) == 1, a_output
    assert "Traceback" not in a_output and "Traceback" not in b_output
    checked = subprocess.run([sys.executable, "-m", "transcriber.cli", "check"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    figures = dict(noticed_after_cut=at(noticed[0]) - cut_at, noticed_before_lease_end=a_lease_end - at(noticed[0]),
                   takeover_after_lease_end=taken_over_at - a_lease_end, cpu_in_two_leases_after=cpu_spent,
                   cut_seconds=cut_seconds, recovered_after_heal=back_at - healed_at)
    print(f"\nPARTITION {cut}: lease={LEASE_SECONDS}s " + " ".join(f"{k}={v:.2f}" for k, v in figures.items()))
    return figures


@pytest.mark.parametrize("cut", CUTS)
def test_a_worker_cut_off_stops_within_its_lease(store, owner, env, tmp_path, partition, cut):
    """P3, INV-1: A, busy on a record's second window, is cut off from the database (`hang`:
    connections open, nothing forwarded; `reset`: every connection reset). A stops the step
    before B takes the record over and says so in one line naming the record; B takes it over
    when A's lease ends and saves it done, once; A's log says "database unreachable" once and
    "database reachable again" once, with no traceback; after the heal A takes up new work
    within 20 s. The words are a stand-in's."""
    relay, up = partition
    talk = encode(tmp_path / "talk.wav", "wav", repeat=7)  # about 70 s: three windows
    figures = run_partition(store, owner, env, tmp_path, relay, up, cut, recording=talk, stand_in=True)
    assert figures["recovered_after_heal"] < 20


@pytest.mark.parametrize("cut", CUTS)
def test_a_cut_off_recognizer_spends_nothing_after_its_lease(store, owner, env, tmp_path, partition, cut, request):
    """The same with real recognition of a longer recording: the recognizer of a cut-off worker
    is stopped before its lease ends, so it spends next to no CPU on a record B holds by then."""
    needs_long(request, "real recognition of a 6-minute recording by two workers")
    relay, up = partition
    talk = encode(tmp_path / "talk.wav", "wav", repeat=36)  # about 6 minutes: a dozen windows
    figures = run_partition(store, owner, env, tmp_path, relay, up, cut, recording=talk, stand_in=False)
    assert figures["recovered_after_heal"] < 20
    assert figures["cpu_in_two_leases_after"] < 1.0


def test_a_failure_that_cannot_be_written_is_one_line_naming_the_record(postgresql, store, owner, tmp_path):
    """INV-1: a step fails just as its connections are reset; its failure cannot be written.
    The run ends within a lease with one warning line naming the record and saying what was not
    written (not a traceback), and the record is left to its lease."""
    from loguru import logger

    from actors.running import Unwritten, run_claimed
    from conftest import add_record, policy
    from db import Database, Store
    from domain.stages import Step
    from service import logs

    info = postgresql.info
    relay = Relay((str(info.host), info.port))
    db = Database(conninfo("127.0.0.1", relay.port, info.user, info.dbname, info.password), max_size=2)
    log = tmp_path / "service.jsonl"
    logs.configure(level="WARNING", json_path=log)
    try:
        record_id = add_record(store, owner)
        lease = policy(lease=LEASE_SECONDS)
        claim = Store(db).claim(Step.CONVERT, lease)

        def failing(beat):
            relay.reset()
            raise RuntimeError("the step failed")

        started = time.monotonic()
        with pytest.raises(Unwritten):
            run_claimed(Store(db), claim, lease, threading.Event(), 0, failing, lambda result: True)
        assert time.monotonic() - started < 2 * LEASE_SECONDS  # a lease, with room for a loaded machine
    finally:
        relay.close()
        db.close()
    logger.complete()
    lines = [json.loads(line)["record"] for line in log.read_text().splitlines()]
    unwritten = [line for line in lines if line["extra"].get("event") == "unwritten"]
    assert [line["extra"]["record_id"] for line in unwritten] == [record_id]
    assert f"record {record_id}: the convert step's failure (RuntimeError) could not be written" in \
        unwritten[0]["message"]
    assert all(line["exception"] is None for line in lines)
    row = store.read_record(record_id)
    assert (row["failures"], row["claim_token"]) == (0, claim.token)  # left to its lease
