"""The watched folder's notice: from a file's last write to its acceptance by `transcriber watch`,
with 10,000 files already transcribed in the folder, through inotify and through polling.
Prints a table, writes bench/results/watch.json.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.watch [--files 10000]
                                                  [--drops 20] [--settle 1.0] [--poll-seconds 0.5]

A scratch database holds the folder's 10,000 files as a watcher that transcribed them left them
(one `watched_files` row each, state written), so the watcher, a `transcriber watch` process as a
user starts it, reads none of them again. Then files arrive one at a time (a short WAV made of
the bundled sample, a different length each, written in two pieces 0.2 s apart as a recorder
writes), and each one's latency is taken from its mtime after the last write to the moment its
row says accepted (the database's clock; one machine). The settle interval (the file must keep
its size and mtime that long) is part of every figure. Beside it: the CPU the watcher spent per
second of the run, and one whole scan of the folder (what polling does every --poll-seconds).
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

from bench.common import ROOT, median, percentile, report
from bench.scratch import scratch_database
from bench.statements import query
from db import Database, Store

SAMPLE = ROOT / "transcriber" / "samples" / "hello.ogg"


def wav(pcm: bytes, seconds: float) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm[: int(seconds * 16000) * 2])
    return out.getvalue()


def fill(db: Database, owner_id: int, folder: Path, count: int) -> None:
    """`count` files in `folder`, each known to the watched folder's table as written."""
    import hashlib

    rows = []
    for i in range(count):
        path = folder / f"old{i:05}.ogg"
        data = f"an old recording {i}\n".encode()
        path.write_bytes(data)
        st = path.stat()
        rows.append((owner_id, hashlib.sha256(data).digest(), str(path), st.st_size, st.st_mtime_ns))
    with db.transaction() as conn, conn.cursor() as cursor:
        cursor.executemany(query("bench_watched_fill"), rows)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def accepted_at(db: Database, path: Path, timeout: float = 30.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with db.connection() as conn:
            row = conn.execute(query("bench_watched_accepted"), {"path": str(path)}).fetchone()
        if row is not None:
            return float(row["at"])
        time.sleep(0.01)
    raise TimeoutError(f"{path.name} not accepted within {timeout}s")


def run_mode(db: Database, url: str, folder: Path, pcm: bytes, args, poll: bool, offset: int) -> list:
    command = [sys.executable, "-m", "transcriber.cli", "watch", str(folder), "--owner", "bench",
               "--settle", str(args.settle), "--poll-seconds", str(args.poll_seconds)] + (["--poll"] if poll else [])
    env = {**os.environ, "TRANSCRIBER_DATABASE_URL": url, "TRANSCRIBER_DIARIZE": "off"}
    watcher = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        watcher.stderr.readline()
        warm = folder / f"warm{offset}.wav"
        warm.write_bytes(wav(pcm, 1.0 + offset * 0.001))
        accepted_at(db, warm, 120)  # the start's whole scan is behind it
        rng = random.Random(offset)
        latencies = []
        cpu_before, wall_before = cpu_seconds(watcher.pid), time.monotonic()
        for i in range(args.drops):
            path = folder / f"new{offset + i:04}.wav"
            data = wav(pcm, 1.5 + (offset + i) * 0.01)
            with path.open("wb") as out:
                out.write(data[: len(data) // 2])
                out.flush()
                time.sleep(0.2)
                out.write(data[len(data) // 2 :])
            last_write = path.stat().st_mtime_ns / 1e9
            latencies.append(accepted_at(db, path) - last_write)
            time.sleep(rng.uniform(0.2, 0.6))
        busy = (cpu_seconds(watcher.pid) - cpu_before) / (time.monotonic() - wall_before)
    finally:
        watcher.terminate()
        watcher.wait(30)
    how = f"polling every {args.poll_seconds:g} s" if poll else "inotify"
    return [how, args.files, args.drops, args.settle, median(latencies), percentile(latencies, 0.95),
            max(latencies), round(100 * busy, 1)]


def scan_seconds(folder: Path) -> float:
    from transcriber.folder import Folder

    scans = []
    for _ in range(7):
        folder_view = Folder(folder, recursive=False, poll=True, poll_seconds=1.0)
        started = time.perf_counter()
        folder_view.changes(0)
        scans.append(time.perf_counter() - started)
    return median(scans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--drops", type=int, default=20)
    parser.add_argument("--settle", type=float, default=1.0)
    parser.add_argument("--poll-seconds", type=float, default=0.5)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    from audio.decode import pcm16k

    pcm = b"".join(pcm16k(SAMPLE))
    with scratch_database() as url, tempfile.TemporaryDirectory(prefix="watchbench") as where:
        folder = Path(where) / "inbox"
        folder.mkdir()
        with Database(url, max_size=2) as db:
            db.migrate()
            store = Store(db)
            store.add_owner("bench")
            owner = store.owner_by_name("bench")
            fill(db, owner["id"], folder, args.files)
            rows = [run_mode(db, url, folder, pcm, args, poll, 100 * n) for n, poll in enumerate((False, True))]
        scan = scan_seconds(folder)
    headers = ["how", "files in folder", "drops", "settle s", "median s", "p95 s", "max s", "watcher CPU %"]
    report("watch", headers, rows, {"whole_scan_seconds": scan}, write=not args.no_write)
    print(f"one whole scan of {args.files} files: {1000 * scan:.1f} ms")


if __name__ == "__main__":
    main()
