"""Resumable uploads (tus, /uploads) against one plain `POST /records` of the same file, on
loopback: the rate of each, the server's resident memory above its idle figure while it takes
them (whatever the size of a PATCH, with or without a checksum on each), and what a resume costs
after a connection cut at 90 %. Prints a table.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.uploads [--size-mb 1024]

A real `transcriber serve` process (the API alone, no workers: the figures are intake's) on a
scratch database; the client is tuspy, the Python tus client. The file is a WAV (48 kHz stereo,
the bundled speech repeated) of the size asked for. Each upload's record is deleted before the
next, so every run finds the same database. RSS is sampled every 20 ms from /proc.

The cut: tuspy sends the first 80 % (16 MB PATCHes); a PATCH of the rest is then sent by hand
and its connection dropped once it has sent up to 90 % of the file; once the offset has settled
(the server has committed what the cut request brought, as a client finds it after its retry
delay), a new tuspy uploader at the same address asks HEAD where the server stands and sends the
rest. "re-sent" is what it sent beyond the missing 10 %.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import wave
from pathlib import Path

import httpx
from tusclient import client as tus_client

from bench.common import ROOT, report
from bench.scratch import scratch_database
from db import Database, Store

MB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build(path: Path, size: int) -> Path:
    """A WAV of about `size` bytes: 48 kHz stereo 16-bit, speech-like noise repeated."""
    pattern = bytes((i * 7919) % 251 for i in range(MB))
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(48000)
        written = 0
        while written < size - 44:
            piece = pattern[: min(MB, size - 44 - written) // 4 * 4]
            if not piece:
                break
            out.writeframes(piece)
            written += len(piece)
    return path


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Peak:
    """The highest RSS of a process while the block runs."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()

    def __enter__(self):
        self.started = time.monotonic()

        def sample():
            while not self._stop.is_set():
                self.peak = max(self.peak, rss(self.pid))
                self._stop.wait(0.02)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.started
        self._stop.set()
        self._thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="the file's size (default 1024)")
    parser.add_argument("--chunks-mb", default="1,16,256", help="tus PATCH sizes to measure, MB (default 1,16,256)")
    parser.add_argument("--checksum-chunks-mb", default="16",
                        help="tus PATCH sizes to measure again with a sha1 checksum on each, MB (default 16)")
    args = parser.parse_args(argv)
    size = args.size_mb * MB
    with scratch_database() as url, tempfile.TemporaryDirectory() as folder:
        with Database(url) as db:
            db.migrate()
            token = Store(db).add_owner("bench")
        path = build(Path(folder) / "long.wav", size)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "TRANSCRIBER_DATABASE_URL": url, "TRANSCRIBER_MAX_UPLOAD_MB": str(args.size_mb + 64),
               "TRANSCRIBER_MAX_AUDIO_SECONDS": str(7 * 86400), "TMPDIR": folder}
        server = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "serve", "--port", str(port)], env=env,
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        auth = {"Authorization": f"Bearer {token}"}
        http = httpx.Client(base_url=base, headers=auth, timeout=3600)
        try:
            while True:
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            time.sleep(1)
            idle = rss(server.pid)
            rows = []

            def forget(record: int) -> None:
                assert http.delete(f"/records/{record}").status_code == 204

            with Peak(server.pid) as peak, path.open("rb") as handle:
                answer = http.post("/records", files={"file": ("long.wav", handle)})
            assert answer.status_code == 201, answer.text
            forget(answer.json()["id"])
            plain = size / MB / peak.seconds
            rows.append(["POST /records", "-", round(peak.seconds, 1), round(plain, 1), 1.0,
                         round((peak.peak - idle) / MB, 1)])

            tus = tus_client.TusClient(base + "/uploads", headers=auth)
            sizes = [(int(c), False) for c in args.chunks_mb.split(",") if c]
            sizes += [(int(c), True) for c in args.checksum_chunks_mb.split(",") if c]
            for chunk, checked in sizes:
                up = tus.uploader(str(path), chunk_size=chunk * MB, metadata={"filename": "long.wav"},
                                  upload_checksum=checked)
                with Peak(server.pid) as peak:
                    up.upload()
                state = http.get(up.url, headers={"Tus-Resumable": "1.0.0"}).json()
                assert state["record"] is not None, state
                forget(state["record"])
                rate = size / MB / peak.seconds
                rows.append([f"tus PATCH {chunk} MB" + (", sha1 checksum" if checked else ""), "-",
                             round(peak.seconds, 1), round(rate, 1),
                             round(rate / plain, 2), round((peak.peak - idle) / MB, 1)])

            resent, resume_seconds = cut_and_resume(tus, http, path, size)
            rows.append(["tus resume after a cut at 90 %", f"{resent / MB:.1f} MB", round(resume_seconds, 1),
                         "-", "-", "-"])
        finally:
            http.close()
            server.terminate()
            server.wait(timeout=60)
    report("uploads", ["upload", "re-sent beyond the missing part", "seconds", "MB/s", "x plain", "RSS above idle MB"],
           rows, extra={"size_mb": args.size_mb, "idle_rss_mb": round(idle / MB, 1)})
    return 0


def cut_and_resume(tus, http: httpx.Client, path: Path, size: int) -> tuple[int, float]:
    """Bytes re-sent beyond the missing part after a cut at 90 %, and the resume's seconds."""
    up = tus.uploader(str(path), chunk_size=16 * MB, metadata={"filename": "long.wav"})
    up.upload(stop_at=size * 8 // 10)
    start, cut = up.offset, size * 9 // 10

    def body():
        with path.open("rb") as handle:
            handle.seek(start)
            sent = start
            while sent < cut:
                piece = handle.read(min(MB, cut - sent))
                sent += len(piece)
                yield piece
        raise ConnectionAbortedError("cut at 90 %")  # the connection drops mid-request

    with contextlib.suppress(ConnectionAbortedError, httpx.TransportError):
        http.patch(up.url, content=body(), headers={"Tus-Resumable": "1.0.0", "Upload-Offset": str(start),
                                                    "Content-Type": "application/offset+octet-stream",
                                                    "Content-Length": str(size - start)})
    # A client resumes after a pause (tuspy's retry delay, 30 s by default), by when the server
    # has committed what the cut request brought; HEAD answers at once, so one asked sooner may
    # tell less and the resumed PATCH is refused (409) until it asks again. Resume once the offset
    # has settled, as such a client finds it.
    settled = None
    while (offset := http.head(up.url, headers={"Tus-Resumable": "1.0.0"}).headers["Upload-Offset"]) != settled:
        settled = offset
        time.sleep(0.5)
    began = time.monotonic()
    again = tus.uploader(str(path), url=up.url, chunk_size=16 * MB)
    resumed_at = again.offset
    again.upload()
    seconds = time.monotonic() - began
    state = http.get(up.url, headers={"Tus-Resumable": "1.0.0"}).json()
    assert state["record"] is not None, state
    http.delete(f"/records/{state['record']}")
    return max(0, cut - resumed_at), seconds


if __name__ == "__main__":
    sys.exit(main())
