"""The tick: APScheduler sends one "try to claim" per step every TRANSCRIBER_TICK_SECONDS, the
orphan sweep every hour, the backfill of passages for search by meaning every ten minutes and, with
TRANSCRIBER_AUDIO_RETENTION_DAYS set, the retention pass.

Run it as its own process (`transcriber scheduler`) or inside a single-process runner, never in
every worker: one tick source is enough, and the database arbitrates whatever arrives.
"""

from __future__ import annotations

import signal
import threading
import time

from apscheduler.schedulers.background import BackgroundScheduler
from loguru import logger

import actors
from service.brokers import describe

SWEEP_SECONDS = 3600
# how often the records done before search by meaning was enabled are looked for (a backlog then
# drains at worker speed): each look reads every done record and the passages' keys, some 0.3 s
# of server time at 100,000 records (BENCHMARKS.md, Search by meaning), too much to do every
# minute for the few records it finds once everything is in place
BACKFILL_SECONDS = 600


class BrokerWatch:
    """Sends wake-ups; a broker outage is one warning when it is lost and one line when it is
    back, not a traceback per tick. Nothing is lost meanwhile: wake-ups carry no state, and the
    first tick after the outage wakes the workers for whatever waits in the database."""

    def __init__(self):
        self._lock = threading.Lock()
        self._lost_at: float | None = None
        self._missed = 0

    def send(self, wake_up) -> bool:
        try:
            wake_up()
        except Exception as error:  # noqa: BLE001 - whatever the broker's client raises, the broker is away
            with self._lock:
                self._missed += 1
                if self._lost_at is None:
                    self._lost_at = time.monotonic()
                    logger.warning("broker unreachable, wake-ups wait until it is back: {}", describe(error))
            return False
        with self._lock:
            if self._lost_at is not None:
                logger.info(
                    "broker reachable again after {:.0f}s; {} wake-up(s) were not sent",
                    time.monotonic() - self._lost_at,
                    self._missed,
                )
                self._lost_at, self._missed = None, 0
        return True


def retention_interval(retention_seconds: float) -> float:
    """How often the retention pass runs: a quarter of the retention (audio outlives it by at
    most that), between a second and the orphan sweep's hour."""
    return min(SWEEP_SECONDS, max(retention_seconds / 4, 1.0))


def _add_tick(scheduler, tick_seconds: float, retention_seconds: float | None) -> BrokerWatch:
    watch = BrokerWatch()
    jobs = [
        ("tick", actors.tick, tick_seconds),
        ("sweep", actors.sweep.send, SWEEP_SECONDS),
        ("backfill_passages", actors.backfill_passages.send, BACKFILL_SECONDS),
    ]
    if retention_seconds is not None:
        jobs.append(("expire_audio", actors.expire_audio.send, retention_interval(retention_seconds)))
    for job_id, wake_up, seconds in jobs:
        scheduler.add_job(
            watch.send,
            "interval",
            args=[wake_up],
            seconds=seconds,
            id=job_id,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )
    return watch


def start_background(tick_seconds: float, retention_seconds: float | None = None) -> BackgroundScheduler:
    """A ticking scheduler on a background thread; call `shutdown()` to stop it."""
    scheduler = BackgroundScheduler(daemon=True)
    watch = _add_tick(scheduler, tick_seconds, retention_seconds)
    scheduler.start()
    watch.send(actors.tick)  # the first wake-up at once, not one tick from now
    return scheduler


def run_forever(tick_seconds: float, retention_seconds: float | None = None) -> None:
    """Tick until SIGTERM or SIGINT, then stop cleanly.

    The signal handler only notes the signal; the main thread notices it within a fraction of a
    second and stops the scheduler itself. Stopping the scheduler from inside the handler could
    deadlock: the handler runs on the main thread, possibly while that thread holds the
    scheduler's own (non-reentrant) event lock, and a SIGTERM that came while the scheduler was
    still starting used to be taken for a broker error and ignored."""
    signals: list[int] = []

    def note(signum, frame):
        signals.append(signum)

    signal.signal(signal.SIGTERM, note)
    signal.signal(signal.SIGINT, note)
    scheduler = BackgroundScheduler()
    watch = _add_tick(scheduler, tick_seconds, retention_seconds)
    logger.info("scheduler ticking every {:g}s", tick_seconds)
    watch.send(actors.tick)
    scheduler.start()
    while not signals:
        time.sleep(0.2)
    logger.info("scheduler stopping (signal {})", signals[0])
    scheduler.shutdown(wait=False)
    logger.info("scheduler stopped")
