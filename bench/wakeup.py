"""Wake-up and hand-off latency with idle workers, and what idle workers cost the database.
Prints a table, writes bench/results/wakeup.json.

    .venv/bin/python -m bench.wakeup [--records N] [--runs R] [--idle-seconds S] [--broker URL]
                                      [--processes P] [--tick SECONDS]

Workers run as `transcriber up` runs them (the in-process broker, two worker threads, the
default one-second tick), or, with --broker redis://… or amqp://…, as `dramatiq actors` worker
processes beside a `transcriber scheduler`. Records (two seconds of the spoken sample, pocketsphinx) are
accepted one at a time, each once the last is done, so every step finds idle workers:
  * accepted → claimed: from the `accepted` event to the convert step's `claimed` event;
  * converted → claimed: from the convert save's `advanced` event to the recognize claim.
Both are read from the journal, stamped by the database's clock. Then, with nothing to do, the
database's transaction count over S seconds gives the idle transactions per second (the
benchmark's own two reads of the counter included).

With a broker, P `dramatiq actors` processes run (one worker thread each, each serving its
counters on a port of its own), and the claims of all of them, added up over the records, give
the empty claims per claimed record (one process forwards wake-ups, so about one, not about
P). A long --tick keeps the scheduler's ticks out of that count.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from audio.decode import BYTES_PER_SECOND
from bench import statements
from bench.common import ROOT, median, percentile, report
from bench.recordings import sample_pcm
from bench.scratch import scratch_database
from db import Database, Store
from service import config, logs


def two_seconds(path: Path) -> bytes:
    """Two seconds of the spoken sample as WAV: latency is the subject, not recognition."""
    import wave

    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(sample_pcm()[: 2 * BYTES_PER_SECOND])
    return path.read_bytes()


def latencies(store: Store, record: int) -> tuple[float, float]:
    events = store.events(record)

    def at(kind: str, stage: str):
        return next(e["at"] for e in events if e["kind"] == kind and e["stage"] == stage)

    accepted = (at("claimed", "created") - at("accepted", "created")).total_seconds()
    handed = (at("claimed", "converted") - at("advanced", "converted")).total_seconds()
    return accepted * 1000, handed * 1000


def wait_done(store: Store, record: int, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while store.stage_of(record) != "done":
        if time.monotonic() > deadline:
            raise RuntimeError(f"record {record} not done within {seconds}s")
        time.sleep(0.05)


def transactions(db: Database) -> int:
    with db.transaction() as conn:
        return conn.execute(statements.query("bench_xact_count")).fetchone()["transactions"]


CLAIM_LINE = re.compile(r'^transcriber_claims_total\{result="(\w+)",step="\w+"\} ([0-9.e+]+)$', re.M)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Workers:
    """The workers under test: in this process, or dramatiq processes on a real broker."""

    def __init__(self, store: Store, settings: config.Settings, url: str, broker: str | None,
                 processes: int = 1, tick: float = 1.0):
        self.processes: list[subprocess.Popen] = []
        self.ports: list[int] = []
        self.pipeline = None
        if broker is None:
            from transcriber.local import LocalPipeline

            self.pipeline = LocalPipeline(store, settings)
            return
        env = {**os.environ, "TRANSCRIBER_DATABASE_URL": url, "TRANSCRIBER_BROKER_URL": broker,
               "TRANSCRIBER_ENGINE": "pocketsphinx", "PYTHONPATH": str(ROOT), "TRANSCRIBER_TICK_SECONDS": str(tick),
               "TRANSCRIBER_QUEUE": f"bench_wakeup_{os.getpid()}"}  # apart from anyone sharing the broker
        threads = "2" if processes == 1 else "1"
        commands = [(["-m", "dramatiq", "actors", "--processes", "1", "--threads", threads], free_port())
                    for _ in range(processes)] + [(["-m", "transcriber.cli", "scheduler"], None)]
        for args, port in commands:
            self.processes.append(subprocess.Popen(
                [sys.executable, *args], env={**env, **({"TRANSCRIBER_METRICS_PORT": str(port)} if port else {})},
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
            if port:
                self.ports.append(port)
        deadline = time.monotonic() + 120
        while self.ports and None in [self._claims(port) for port in self.ports]:
            if time.monotonic() > deadline:
                raise RuntimeError("worker processes did not come up")
            time.sleep(0.5)
        time.sleep(5)  # all up and listening

    @staticmethod
    def _claims(port: int) -> dict[str, float] | None:
        import urllib.request

        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        except OSError:
            return None
        found = {"claimed": 0.0, "empty": 0.0}
        for result, value in CLAIM_LINE.findall(text):
            found[result] += float(value)
        return found

    def claims(self) -> dict[str, float]:
        """Claims of all worker processes by result, once the last wake-ups are spent."""
        previous = None
        while True:
            counts = [self._claims(port) or {"claimed": 0.0, "empty": 0.0} for port in self.ports]
            now = {key: sum(c[key] for c in counts) for key in ("claimed", "empty")}
            if now == previous:
                return now
            previous = now
            time.sleep(1.0)

    def stop(self) -> None:
        if self.pipeline is not None:
            self.pipeline.stop()
        for process in self.processes:
            process.terminate()
            process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20, help="records per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle-seconds", type=float, default=20)
    parser.add_argument("--broker", help="redis://… or amqp://…: dramatiq worker processes")
    parser.add_argument("--processes", type=int, default=1, help="with --broker: worker processes")
    parser.add_argument("--tick", type=float, default=1.0, help="with --broker: the scheduler's tick")
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    logs.configure(level="ERROR")
    settings = config.load({"TRANSCRIBER_ENGINE": "pocketsphinx"})
    runs = []
    with scratch_database() as url, Database(url, max_size=4) as db, tempfile.TemporaryDirectory() as folder:
        db.migrate()
        store = Store(db)
        store.add_owner("bench")
        owner = store.owner_by_name("bench")["id"]
        audio = two_seconds(Path(folder) / "a.wav")
        for _ in range(args.runs):
            workers = Workers(store, settings, url, args.broker, args.processes, args.tick)
            try:
                time.sleep(1)
                claims_before = workers.claims()
                found = []
                for _ in range(args.records):
                    record = store.accept(owner, [audio], source_name="a.wav")
                    wait_done(store, record)
                    found.append(latencies(store, record))
                    time.sleep(0.2)  # idle workers again
                claims_after = workers.claims()
                claimed = claims_after["claimed"] - claims_before["claimed"]
                empty = (claims_after["empty"] - claims_before["empty"]) / claimed if claimed else None
                time.sleep(2)
                before, started = transactions(db), time.monotonic()
                time.sleep(args.idle_seconds)
                idle = (transactions(db) - before) / (time.monotonic() - started)
            finally:
                workers.stop()
            runs.append({"accepted": [a for a, _ in found], "handoff": [h for _, h in found], "idle": idle,
                         "empty_per_claim": empty})

    def figure(key: str, fraction: float | None) -> float:
        if fraction is None:
            return round(median([percentile(r[key], 0.5) for r in runs]), 1)
        return round(median([percentile(r[key], fraction) for r in runs]), 1)

    rows = [["accepted → claimed (convert)", figure("accepted", None), figure("accepted", 0.95)],
            ["converted → claimed (recognize)", figure("handoff", None), figure("handoff", 0.95)]]
    print(f"workers: {f'{args.processes} dramatiq processes on ' + args.broker.split(':')[0] if args.broker else 'in-process'}; "
          f"{args.records} records per run, median of {args.runs} runs")
    empties = [r["empty_per_claim"] for r in runs if r["empty_per_claim"] is not None]
    if empties:
        rows.append(["empty claims per claimed record (median, max of runs)", round(median(empties), 2), round(max(empties), 2)])
    report("wakeup" + ("-" + args.broker.split(":")[0] + (f"-p{args.processes}" if args.processes > 1 else "")
                       if args.broker else ""),
           ["latency", "p50 ms", "p95 ms"], rows,
           {"idle_transactions_per_second": round(median([r["idle"] for r in runs]), 2),
            "records": args.records, "runs": args.runs, "broker": args.broker and args.broker.split(":")[0],
            "processes": args.processes if args.broker else None},
           write=not args.no_write)
    print(f"idle transactions per second: {median([r['idle'] for r in runs]):.2f}")


if __name__ == "__main__":
    main()
