"""A broker that is unreachable at start, or lost while the scheduler runs, is one clear line.

The broker is made unreachable through a relay this test owns in front of the shared Redis or
RabbitMQ (its connections dropped, its port closed, then opened again on the same port); the
shared servers themselves are never touched.
"""
from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, drop_queue
from relay import Relay
from test_http import free_port
from test_workers import _listening as listening

REDIS_DB = 11


BROKERS = {
    "redis": (6379, lambda port: f"redis://127.0.0.1:{port}/{REDIS_DB}"),
    "amqp": (5672, lambda port: f"amqp://guest:guest@127.0.0.1:{port}/%2F"),
}


@pytest.mark.parametrize("command", [("-m", "transcriber.cli", "scheduler"),
                                     ("-m", "dramatiq", "actors", "--processes", "1", "--threads", "1")])
def test_unreachable_amqp_broker_is_one_line(env, command):
    """An AMQP broker on a closed port: the one line naming it, no library
    traceback or log lines of pika before it (dramatiq's own start/stop lines aside)."""
    url = f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F"
    done = subprocess.run([sys.executable, *command], env={**env, "TRANSCRIBER_BROKER_URL": url}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if "[dramatiq.MainProcess]" not in line]
    assert len(ours) == 1, done.stderr
    assert ours[0].startswith("transcriber: broker unreachable at amqp://guest:***@127.0.0.1:")
    assert "Connection refused" in ours[0]
    assert "Traceback" not in done.stderr and "pika" not in done.stderr


class Log:
    def __init__(self, path):
        self.path = path

    def lines(self, pattern: str) -> list[str]:
        return [line for line in self.path.read_text().splitlines() if re.search(pattern, line)]

    def wait_for(self, pattern: str, process, seconds: float = 120) -> str:
        deadline = time.monotonic() + seconds
        while not self.lines(pattern):
            assert process.poll() is None, self.path.read_text()
            assert time.monotonic() < deadline, f"no {pattern!r} in:\n{self.path.read_text()}"
            time.sleep(0.1)
        return self.lines(pattern)[0]


@pytest.mark.parametrize("kind", sorted(BROKERS))
def test_scheduler_says_once_that_the_broker_is_lost_and_once_that_it_is_back(env, tmp_path, kind):
    """While the broker is down the scheduler logs ONE warning when it is lost and
    ONE line when it is back (with the wake-ups it could not send), no traceback per tick."""
    upstream_port, url = BROKERS[kind]
    if not listening(upstream_port):
        pytest.skip(f"no {kind} broker on 127.0.0.1:{upstream_port}")
    relay = Relay(("127.0.0.1", upstream_port))
    log = Log(tmp_path / "scheduler.log")
    with log.path.open("w") as out:
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "transcriber.cli", "scheduler"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=out,
            env={**env, "TRANSCRIBER_BROKER_URL": url(relay.port), "TRANSCRIBER_TICK_SECONDS": "0.1"})
    try:
        log.wait_for("scheduler ticking", scheduler)
        relay.close()
        log.wait_for("broker unreachable", scheduler)
        time.sleep(2)  # ticks go on failing meanwhile; none of them may add a line
        relay = Relay(("127.0.0.1", upstream_port), port=relay.port)
        back = log.wait_for("broker reachable again", scheduler)
    finally:
        scheduler.send_signal(signal.SIGTERM)
        scheduler.wait(timeout=60)
        relay.close()
        upstream = url(upstream_port)
        drop_queue(env["TRANSCRIBER_QUEUE"], **{"redis_url" if kind == "redis" else "amqp_url": upstream})
    text = log.path.read_text()
    assert "Traceback" not in text and "ERROR" not in text, text
    assert len(log.lines("broker unreachable")) == 1, text
    assert len(log.lines("WARNING")) == 1, text
    assert len(log.lines("broker reachable again")) == 1, text
    missed = int(re.search(r"(\d+) wake-up\(s\) were not sent", back).group(1))
    assert missed >= 2, back
