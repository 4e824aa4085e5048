"""The tick: APScheduler sends one "try to claim" per step every TRANSCRIBER_TICK_SECONDS.

Run it as its own process (`transcriber scheduler`) or inside a single-process runner, never in
every worker: one tick source is enough, and the database arbitrates whatever arrives.
"""
from __future__ import annotations

import signal

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.blocking import BlockingScheduler
from loguru import logger

import actors


SWEEP_SECONDS = 3600


def sweep() -> None:
    actors.sweep.send()


def _add_tick(scheduler, tick_seconds: float) -> None:
    scheduler.add_job(actors.tick, "interval", seconds=tick_seconds, id="tick", coalesce=True,
                      max_instances=1, misfire_grace_time=None)
    scheduler.add_job(sweep, "interval", seconds=SWEEP_SECONDS, id="sweep", coalesce=True,
                      max_instances=1, misfire_grace_time=None)


def start_background(tick_seconds: float) -> BackgroundScheduler:
    """A ticking scheduler on a background thread; call `shutdown()` to stop it."""
    scheduler = BackgroundScheduler(daemon=True)
    _add_tick(scheduler, tick_seconds)
    scheduler.start()
    actors.tick()  # the first wake-up at once, not one tick from now
    return scheduler


def run_forever(tick_seconds: float) -> None:
    """Tick until SIGTERM or SIGINT, then stop cleanly."""
    scheduler = BlockingScheduler()
    _add_tick(scheduler, tick_seconds)

    def stop(signum, frame):
        logger.info("scheduler stopping (signal {})", signum)
        scheduler.shutdown(wait=False)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logger.info("scheduler ticking every {:g}s", tick_seconds)
    actors.tick()
    scheduler.start()
    logger.info("scheduler stopped")
