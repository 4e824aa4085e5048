"""`transcriber up`: everything in one process, as an operator starts it."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx

from conftest import ROOT
from test_http import free_port, wait_serving


def test_up_serves_the_api_with_workers(env, tmp_path):
    """`transcriber up` migrates, ticks, works and serves: an owner made with `owner add` uploads,
    reads the card and gets the text; SIGTERM stops it cleanly."""
    port = free_port()
    log = tmp_path / "up.log"
    with log.open("w") as out:
        up = subprocess.Popen([sys.executable, "-m", "transcriber.cli", "up", "--port", str(port)],
                              env={**env, "TRANSCRIBER_TICK_SECONDS": "0.3"}, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        wait_serving(base, up, log)
        assert f"http://127.0.0.1:{port}" in log.read_text() and "owner add" in log.read_text()
        # the owner's page and the panel come with it, and it says where they are
        assert f"http://127.0.0.1:{port}/admin" in log.read_text()
        assert 'id="sign-in"' in httpx.get(base + "/").text and 'id="sign-in"' in httpx.get(base + "/admin").text
        added = subprocess.run([sys.executable, "-m", "transcriber.cli", "owner", "add", "dana"], env=env,
                               capture_output=True, text=True, timeout=60)
        token = added.stdout.strip().splitlines()[-1]
        headers = {"Authorization": f"Bearer {token}"}
        sample = ROOT / "transcriber" / "samples" / "hello.ogg"
        with sample.open("rb") as handle:
            created = httpx.post(base + "/records", headers=headers, files={"file": ("hello.ogg", handle)})
        assert created.status_code == 201
        card_url = base + created.json()["card"]
        while httpx.get(card_url, headers=headers).json()["stage"] != "done":
            assert time.monotonic() < deadline + 120
            time.sleep(0.3)
        text = httpx.get(base + created.json()["text"], headers=headers)
        assert text.status_code == 200 and text.text.strip()
    finally:
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=60) == 0, log.read_text()
    assert "Traceback" not in log.read_text()
