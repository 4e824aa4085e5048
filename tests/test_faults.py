"""Fault injection: real worker processes (`dramatiq actors`, each in a process
group of its own with its recognizer children; in the short profile, a stand-in hears the words
where the fault is not the recognizer: `Profile.real_words`), real PostgreSQL, a real Redis
broker this module starts on a port of its own.

Each fault test ends with `transcriber check` (INV-1, INV-2) answering 0, and prints one line of
figures (`-s` shows them; RELIABILITY.md keeps them). Two profiles: `short`, the default and the
one CI runs, and `long`, run by hand: `pytest tests/test_faults.py --faults=long -s`.
"""
from __future__ import annotations

import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
import pytest

from conftest import ROOT, conninfo, recognizer_children
from db import Database, Store
from db.check import Facts
from domain.invariants import check
from media import encode
from test_workers import Processes, stand_in

REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="no redis-server to start a broker of our own")


@dataclass(frozen=True)
class Profile:
    kill_records: int       # (a) records worked while workers are killed
    kills: int              # (a) SIGKILLs of a worker's process group, at random moments
    restart_records: int    # (b) records worked while PostgreSQL and the broker restart
    db_down_seconds: float  # (b) how long PostgreSQL stays stopped the second time
    # (a, b, d) what hears the words: pocketsphinx in recognizer children (what a worker really
    # runs, and what a kill of its process group kills too), or a stand-in that takes
    # STAND_IN_SECONDS a window without spending CPU, so a kill still lands mid-recognition. The
    # records' conversions, claims, leases and saves are real either way; (c) is about the
    # recognizer children and always runs the real engine.
    real_words: bool


PROFILES = {
    "short": Profile(kill_records=60, kills=5, restart_records=20, db_down_seconds=5, real_words=False),
    "long": Profile(kill_records=500, kills=60, restart_records=150, db_down_seconds=20, real_words=True),
}
STAND_IN_SECONDS = 1.0  # about what pocketsphinx takes for a 1.5 s recording here

LEASE_SECONDS = 12  # takeover after a kill is quick, yet a loaded machine renews in time


@pytest.fixture
def profile(request) -> Profile:
    return PROFILES[request.config.getoption("--faults")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, what: str, timeout: float, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return
        except (psycopg.Error, OSError):
            pass  # a server of ours is restarting: ask again
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


# --- servers of our own ---------------------------------------------------------------------------

class OwnRedis:
    """A redis-server on a port of its own, killed and started again at will."""

    def __init__(self, folder: Path):
        self.port, self.folder, self.process = free_port(), folder, None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        import redis

        wait_for(lambda: redis.Redis(port=self.port, socket_connect_timeout=1).ping(), "redis to start", 30)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)


@pytest.fixture
def own_redis(tmp_path):
    server = OwnRedis(tmp_path)
    server.start()
    yield server
    if server.process.poll() is None:
        server.kill()


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / name).exists():
            return str(folder / name)
    return None


class OwnPostgres:
    """A PostgreSQL server of this test's own (initdb, pg_ctl), stopped and started at will;
    run as the `postgres` user when the tests run as root (the server refuses root)."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="trfault"))
        self.data, self.port = self.folder / "data", free_port()
        self.as_user = []
        if os.geteuid() == 0:  # the fixture has checked that a `postgres` user exists
            shutil.chown(self.folder, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._run(_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"),
                  "-w", "start")

    def stop(self, mode: str = "immediate") -> None:
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, dbname: str = "postgres") -> str:
        return conninfo("127.0.0.1", self.port, "postgres", dbname)


@pytest.fixture
def own_postgres():
    if _pg_bin("initdb") is None or _pg_bin("pg_ctl") is None:
        pytest.skip("no initdb/pg_ctl to start a PostgreSQL of our own")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root without a `postgres` user to run a PostgreSQL of our own")
    server = OwnPostgres()
    server.start()
    yield server
    try:
        server.stop()
    except subprocess.CalledProcessError:
        pass
    shutil.rmtree(server.folder, ignore_errors=True)


# --- the pipeline under test ----------------------------------------------------------------------

def pipeline_env(env: dict, database_url: str, broker_url: str, real_words: bool = True, **extra) -> dict:
    """The workers' environment; without `real_words`, their words are window_hook's stand-in's."""
    return {
        **(env if real_words else stand_in(env, pause=STAND_IN_SECONDS)),
        "TRANSCRIBER_DATABASE_URL": database_url,
        "TRANSCRIBER_BROKER_URL": broker_url,
        "TRANSCRIBER_ENGINE": "pocketsphinx",
        "TRANSCRIBER_TICK_SECONDS": "0.5",
        "TRANSCRIBER_CONVERT_LEASE_SECONDS": str(LEASE_SECONDS),
        "TRANSCRIBER_RECOGNIZE_LEASE_SECONDS": str(LEASE_SECONDS),
        # a worker killed mid-step loses its lease; here that is the fault injected, not the
        # record's doing, so the crash-loop guard must not halt it
        "TRANSCRIBER_MAX_LOST_LEASES": "1000",
        "TRANSCRIBER_MAX_ATTEMPTS": "20",
        "TRANSCRIBER_BACKOFF_SECONDS": "1",
        **{f"TRANSCRIBER_{k.upper()}": str(v) for k, v in extra.items()},
    }


def done_count(store: Store, ids: list[int]) -> int:
    return sum(store.stage_of(i) == "done" for i in ids)


ENDINGS = {"advanced", "failed", "released", "halted", "save_refused"}


def story(store: Store, ids: list[int]) -> dict:
    """Read every record's journal and check that it tells a whole story: accepted, each stage
    advanced exactly once under a claim of that stage, and every claim either ended (advanced,
    failed, released, halted, refused) or was lost with its worker and taken over by a later
    claim. Returns the totals."""
    totals = dict(claims=0, lost=0, failed=0, refused=0, twice=0, ended_early=0)
    for record_id in ids:
        events = store.events(record_id)
        assert events[0]["kind"] == "accepted", (record_id, events[0])
        advanced = [e["stage"] for e in events if e["kind"] == "advanced"]
        totals["twice"] += len(advanced) - len(set(advanced))
        assert advanced == ["converted", "done"], (record_id, advanced)
        claims = {}  # token -> stage claimed from, for the claims still open
        tokens_of_stage = {}
        for event in events:
            token = event["detail"].get("claim_token")
            if event["kind"] == "claimed":
                totals["claims"] += 1
                open_same_stage = [t for t, stage in claims.items() if stage == event["stage"]]
                totals["lost"] += len(open_same_stage)  # superseded: its worker died holding it
                for t in open_same_stage:
                    del claims[t]
                claims[token] = event["stage"]
                tokens_of_stage.setdefault(event["stage"], set()).add(token)
            elif event["kind"] in ENDINGS and token is not None:
                claims.pop(token, None)
            if event["kind"] == "advanced":
                source = {"converted": "created", "done": "converted"}[event["stage"]]
                assert token in tokens_of_stage.get(source, set()), (record_id, event)
        totals["failed"] += sum(e["kind"] == "failed" for e in events)
        totals["refused"] += sum(e["kind"] == "save_refused" for e in events)
        totals["ended_early"] += sum(e["kind"] == "holder_gone" for e in events)  # a restarted worker saw its end
        checkpoints = [e["detail"] for e in events if e["kind"] == "checkpoint"]
        assert [c["from_seconds"] for c in checkpoints[1:]] == [c["seconds"] for c in checkpoints[:-1]], record_id
    return totals


def settle(store: Store, env: dict, ids: list[int]) -> dict:
    """After a fault run: every record done with its text, nothing halted or claimed, INV-1 sound
    (`transcriber check` exits 0); audio no record points at (within the sweep's grace) is
    counted, and the sweep removes exactly that. Returns the figures."""
    rows = [store.read_record(i) for i in ids]
    assert [r["id"] for r in rows if r["stage"] != "done" or r["halted_at"] is not None] == []
    assert all(r["transcript"] for r in rows)
    figures = story(store, ids)
    assert figures["twice"] == 0
    within_grace = check(Facts(store.db), grace_seconds=0)
    figures["orphaned"] = sum(v.rule == "orphaned_audio" for v in within_grace.violations)
    assert [v for v in within_grace.violations if v.rule != "orphaned_audio"] == []
    done = subprocess.run([sys.executable, "-m", "transcriber.cli", "check"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    figures["stuck"] = len(ids) - done_count(store, ids)
    # audio stored by a conversion whose worker died before saving it: the sweep's to remove
    assert store.sweep_orphan_blobs(0).removed == figures["orphaned"]
    assert check(Facts(store.db), grace_seconds=0).sound
    return figures


def report(fault: str, records: int, figures: dict, **more) -> None:
    extra = " ".join(f"{k}={v}" for k, v in more.items())
    print(f"\nFAULTS {fault}: records={records} lost=0 advanced_twice={figures['twice']} stuck={figures['stuck']} "
          f"orphaned={figures['orphaned']} claims={figures['claims']} lost_claims={figures['lost']} "
          f"failed_attempts={figures['failed']} refused_saves={figures['refused']} "
          f"leases_ended_early={figures['ended_early']} {extra}")


class Fleet(Processes):
    """Worker processes and the scheduler, each with a log file; a killed worker is replaced."""

    def __init__(self, folder: Path):
        super().__init__()
        self.folder, self.started = folder, 0

    def log(self, name: str):
        return (self.folder / f"{name}.log").open("a")

    def worker(self, env, log=None):
        self.started += 1
        return super().worker(env, log=log or self.log(f"worker{self.started}"))

    def scheduler(self, env):
        return self.start(env, "-m", "transcriber.cli", "scheduler", log=self.log("scheduler"))

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n" + p.read_text()[-3000:] for p in sorted(self.folder.glob("*.log")))


@pytest.fixture
def fleet(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    group = Fleet(folder)
    yield group
    group.stop_all()


# --- (a) SIGKILL at random moments ------------------------------------------------------------------

def test_workers_killed_at_random_moments_lose_nothing(store, owner, env, own_redis, fleet, profile, tmp_path):
    """Workers killed, INV-1, INV-2: two worker processes, each killed with SIGKILL (its whole
    process group, recognizers included where the profile runs them) at random moments and
    started again, over many records:
    afterwards every record is done with its text, no stage advanced twice, no claim issued
    while another was live, no audio left that the sweep would not remove, the journal tells
    each record's story, and `transcriber check` passes."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    audio = encode(tmp_path / "tiny.wav", seconds=1.5).read_bytes()
    ids = [store.accept(owner["id"], [audio], source_name="tiny.wav") for _ in range(profile.kill_records)]
    worker_env = pipeline_env(env, env["TRANSCRIBER_DATABASE_URL"], own_redis.url, profile.real_words)
    workers = [fleet.worker(worker_env), fleet.worker(worker_env)]
    fleet.scheduler(worker_env)
    started, kills = time.monotonic(), 0
    try:
        while kills < profile.kills and done_count(store, ids) < len(ids) * 0.9:
            time.sleep(rng.uniform(1.0, 6.0))
            victim = rng.randrange(len(workers))
            fleet.kill(workers[victim])
            kills += 1
            workers[victim] = fleet.worker(worker_env)
            assert time.monotonic() - started < 1800, "the kill loop made no progress"
        wait_for(lambda: done_count(store, ids) == len(ids), "every record done", 900)
    except AssertionError:
        print(fleet.logs())
        raise
    seconds = time.monotonic() - started
    figures = settle(store, worker_env, ids)
    assert kills >= 3, f"only {kills} kills before the records were done"
    # two threads per killed worker; a holder slower than its lease is taken over (then refused)
    assert figures["lost"] <= 2 * kills + figures["failed"] + figures["refused"], figures
    assert figures["orphaned"] <= kills, figures
    report("sigkill", len(ids), figures, kills=kills, seconds=round(seconds), seed=seed)


# --- (b) PostgreSQL and the broker restarted mid-run ----------------------------------------------

def test_database_and_broker_restarts_mid_run(env, own_postgres, own_redis, fleet, profile, tmp_path):
    """The database and the broker restarted, INV-1: PostgreSQL (a server of the test's own) stopped
    with `-m immediate` and started again, later stopped for a while, and the Redis broker killed
    and started again, all mid-run: the same worker and scheduler processes recover on their own
    (none restarted by the test), every record ends done, none stuck or lost, none advanced twice,
    check passes."""
    with psycopg.connect(own_postgres.url(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE transcriber")
    database_url = own_postgres.url("transcriber")
    db = Database(database_url, max_size=4)
    db.migrate()
    store = Store(db)
    store.add_owner("alice")
    owner = store.owner_by_name("alice")
    audio = encode(tmp_path / "tiny.wav", seconds=1.5).read_bytes()
    ids = [store.accept(owner["id"], [audio], source_name="tiny.wav") for _ in range(profile.restart_records)]
    worker_env = pipeline_env(env, database_url, own_redis.url, profile.real_words)
    running = [fleet.worker(worker_env), fleet.worker(worker_env), fleet.scheduler(worker_env)]
    started, faults = time.monotonic(), []
    try:
        wait_for(lambda: done_count(store, ids) >= len(ids) // 4, "a quarter done", 600)
        own_postgres.stop("immediate")
        time.sleep(2)
        own_postgres.start()
        faults.append("postgres -m immediate")
        wait_for(lambda: done_count(store, ids) >= len(ids) // 2, "half done", 600)
        own_redis.kill()
        time.sleep(3)
        own_redis.start()
        faults.append("redis killed")
        wait_for(lambda: done_count(store, ids) >= len(ids) * 3 // 4, "three quarters done", 600)
        own_postgres.stop("fast")
        time.sleep(profile.db_down_seconds)
        own_postgres.start()
        faults.append(f"postgres down {profile.db_down_seconds:g}s")
        wait_for(lambda: done_count(store, ids) == len(ids), "every record done", 900)
        assert [p.poll() for p in running] == [None, None, None], "a worker or the scheduler died"
        figures = settle(store, worker_env, ids)
    except AssertionError:
        print(fleet.logs())
        raise
    finally:
        db.close()
    report("restarts", len(ids), figures, faults="+".join(faults).replace(" ", "_"),
           seconds=round(time.monotonic() - started))


# --- (c) a hung recognizer and a killed one -------------------------------------------------------

def gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def overlapping_recognitions(store: Store, ids: list[int]) -> int:
    """How many pairs of these records were recognised at overlapping times (from the journal)."""
    spans = []
    for record_id in ids:
        events = store.events(record_id)
        start = max(e["at"] for e in events if e["kind"] == "claimed" and e["stage"] == "converted")
        end = next(e["at"] for e in events if e["kind"] == "advanced" and e["stage"] == "done")
        spans.append((start, end))
    return sum(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(spans) for b in spans[i + 1:])


def test_hung_and_killed_recognizers_lose_no_record_and_no_thread(store, owner, env, own_redis, fleet, tmp_path):
    """Recognizers hung and killed, each costing one attempt: in a running two-thread worker
    process, one recognizer child is stopped (SIGSTOP) and the other killed: every record ends done,
    the stopped child is killed at its deadline and its run counted as a failed attempt, and
    afterwards the same worker still recognises on both threads at once (no thread lost)."""
    # 3 s of speech: recognised well within the deadline even on a loaded machine, so only the
    # stopped recognizer misses it
    audio = encode(tmp_path / "speech.wav", seconds=3).read_bytes()
    worker_env = pipeline_env(env, env["TRANSCRIBER_DATABASE_URL"], own_redis.url, recognizer_timeout_seconds=20)
    before = [store.accept(owner["id"], [audio]) for _ in range(6)]
    worker = fleet.worker(worker_env)
    fleet.scheduler(worker_env)
    try:
        wait_for(lambda: len(recognizer_children(worker.pid)) == 2, "both threads' recognizers", 300, every=0.1)
        stopped, killed = recognizer_children(worker.pid)
        stopped.send_signal(signal.SIGSTOP)
        killed.kill()
        # feed records until the thread of the stopped child takes one and finds it dead
        fed, deadline = [], time.monotonic() + 300
        while not gone(stopped):
            assert time.monotonic() < deadline, "the stopped recognizer was never killed"
            fed.append(store.accept(owner["id"], [audio]))
            time.sleep(4)
        after = [store.accept(owner["id"], [audio]) for _ in range(8)]
        ids = before + fed + after
        wait_for(lambda: done_count(store, ids) == len(ids), "every record done", 600)
        assert worker.poll() is None
        failures = [e["detail"]["error"] for i in ids for e in store.events(i) if e["kind"] == "failed"]
        assert any("no answer" in error for error in failures), failures
        assert overlapping_recognitions(store, after) > 0, "the worker recognised on one thread only"
        figures = settle(store, worker_env, ids)
    except AssertionError:
        print(fleet.logs())
        raise
    report("recognizer_hung_and_killed", len(ids), figures)


# --- (d) a long-open transaction elsewhere --------------------------------------------------------

def test_long_open_transactions_do_not_stop_claims(store, owner, env, database_url, own_redis, fleet, profile, tmp_path):
    """Long-held locks and snapshots beside the claims: while another session holds the oldest
    eligible record's row locked and a third keeps a snapshot open, workers claim and finish every
    other record (the locked one is skipped, not waited for); once the lock goes, it is done too and
    check passes."""
    audio = encode(tmp_path / "tiny.wav", seconds=1.5).read_bytes()
    ids = [store.accept(owner["id"], [audio], source_name="tiny.wav") for _ in range(10)]  # ten: the claims skip one locked row among others
    locker = psycopg.connect(database_url)
    snapshot = psycopg.connect(database_url)
    try:
        locker.execute("SELECT id FROM records WHERE id = %s FOR UPDATE", (ids[0],))
        snapshot.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        snapshot.execute("SELECT count(*) FROM records").fetchone()
        worker_env = pipeline_env(env, database_url, own_redis.url, profile.real_words)
        fleet.worker(worker_env)
        fleet.scheduler(worker_env)
        try:
            wait_for(lambda: done_count(store, ids[1:]) == len(ids) - 1, "every unlocked record done", 600)
        except AssertionError:
            print(fleet.logs())
            raise
        assert store.stage_of(ids[0]) == "created"
        assert locker.info.transaction_status == snapshot.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    finally:
        locker.rollback()
        snapshot.rollback()
        locker.close()
        snapshot.close()
    wait_for(lambda: store.stage_of(ids[0]) == "done", "the once-locked record done", 300)
    report("long_transaction", len(ids), settle(store, worker_env, ids))
