"""Resumable uploads under SIGKILL: a real `transcriber serve` process (in a process group of its
own) is killed at random moments while tuspy uploads, and once between an upload's last byte and
its record; it is started again and the clients resume from the server's offset. Every byte the
server acknowledged ends up in exactly one record: each file becomes one record whose audio is
the file, byte for byte, and `transcriber check` finds nothing wrong."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import requests
from tusclient import client as tus_client
from tusclient.exceptions import TusCommunicationError, TusUploadFailed

from conftest import ROOT, wait_until
from media import encode
from test_http import free_port

TESTS = Path(__file__).resolve().parent
KILLS = 2  # random kills after the hook's; 10 with --long
CHUNK = 700_000  # not a multiple of the store's chunks: kills land inside them too


class Server:
    """`transcriber serve` on a port of its own, killed and started again by the test."""

    def __init__(self, env: dict, port: int, log: Path):
        self.env, self.port, self.log = env, port, log
        self.process: subprocess.Popen | None = None
        self.base = f"http://127.0.0.1:{port}"

    def start(self, hook: bool = False) -> None:
        code = ("import sys; sys.path.insert(0, sys.argv[1]); " + ("import tus_crash_hook; " if hook else "")
                + "from transcriber.cli import main; sys.exit(main(sys.argv[2:]))")
        with self.log.open("a") as out:
            self.process = subprocess.Popen([sys.executable, "-c", code, str(TESTS), "serve", "--port", str(self.port)],
                                            env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        wait_until(self._serving, 60, what="the server to answer")

    def _serving(self) -> bool:
        assert self.process.poll() is None or self.process.returncode == -signal.SIGKILL, self.log.read_text()
        try:
            return httpx.get(self.base + "/healthz").status_code == 200
        except httpx.TransportError:
            return False

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)  # its own process group: this server only
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)


class Client:
    """One file uploaded with tuspy until the server has all of it, resuming (a new uploader at
    the same address, which asks HEAD) after every failure; what the server acknowledged is
    noted as it goes."""

    def __init__(self, base: str, token: str, path: Path):
        self.base, self.token, self.path = base, token, path
        self.url: str | None = None
        self.acknowledged = 0
        self.failures = 0
        self.done = threading.Event()

    def run(self) -> None:
        # the key makes a creation whose answer was lost to a kill answer the same upload again
        tus = tus_client.TusClient(self.base + "/uploads", headers={"Authorization": f"Bearer {self.token}",
                                                                     "Idempotency-Key": self.path.name})
        while True:
            try:
                up = tus.uploader(str(self.path), url=self.url, chunk_size=CHUNK, metadata={"filename": self.path.name})
                if self.url is None:
                    self.url = up.create_url()
                    up.set_url(self.url)
                    up.offset = 0
                up.stop_at = up.get_file_size()
                while up.offset < up.stop_at:
                    up.upload_chunk()
                    self.acknowledged = max(self.acknowledged, up.offset)
                if httpx.head(self.url, headers=self.headers()).headers.get("Upload-Record"):
                    self.done.set()
                    return
            except (TusCommunicationError, TusUploadFailed, requests.RequestException, httpx.TransportError):
                self.failures += 1
                time.sleep(0.1)

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.token}", "Tus-Resumable": "1.0.0"}


def test_sigkill_of_the_server_during_uploads_loses_no_acknowledged_byte(env, store, tmp_path, request):
    kills_wanted = 10 if request.config.getoption("--long") else KILLS
    server = Server({**env, "CRASH_HOOK_DIR": str(tmp_path)}, free_port(), tmp_path / "serve.log")
    token = store.add_owner("alice")
    files = [encode(tmp_path / f"speech-{i}.wav", "wav", repeat=120 + 40 * i) for i in range(2)]
    rng = random.Random(39)
    try:
        server.start(hook=True)
        clients = [Client(server.base, token, path) for path in files]
        threads = [threading.Thread(target=client.run, daemon=True) for client in clients]
        for thread in threads:
            thread.start()
        # the first upload's last byte kills the server before its record is made (the hook)
        wait_until(lambda: (tmp_path / "crashed-finishing").exists() or all(c.done.is_set() for c in clients),
                   120, what="the crash between the last byte and the record")
        server.process.wait(timeout=30)
        server.start()
        kills = 0
        while kills < kills_wanted and not all(client.done.is_set() for client in clients):
            time.sleep(rng.uniform(0.05, 0.6))
            server.kill()
            kills += 1
            server.start()
        for thread in threads:
            thread.join(timeout=180)
        assert all(client.done.is_set() for client in clients), server.log.read_text()[-3000:]
    finally:
        server.stop()
    # not one restart: one server to read back what was kept
    server.start()
    try:
        with store.db.connection() as conn:
            records = conn.execute("SELECT id, source_name FROM records ORDER BY id").fetchall()
        assert sorted(r["source_name"] for r in records) == sorted(p.name for p in files)
        for client in clients:
            state = httpx.get(client.url, headers=client.headers()).json()
            assert state["offset"] == state["length"] == client.path.stat().st_size >= client.acknowledged
            audio = httpx.get(f"{server.base}/records/{state['record']}/audio",
                              headers={"Authorization": f"Bearer {token}"}, timeout=60)
            assert audio.content == client.path.read_bytes()
    finally:
        server.stop()
    check = subprocess.run([sys.executable, "-m", "transcriber.cli", "check"], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    print(f"\nresumable faults: {kills + 1} SIGKILLs, client failures {[c.failures for c in clients]}")
