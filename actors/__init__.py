"""The dramatiq entry module: `dramatiq actors` starts workers for the configured broker.

One claim actor per step. A message is only a wake-up ("try to claim for this step"): it
carries no state. The actor claims, runs the step and saves under the token; with no work it
returns quietly (P1). dramatiq's own retries are off: the database counts attempts (P4).
"""
from __future__ import annotations

import sys
import threading

import dramatiq
from dramatiq.middleware import Middleware
from loguru import logger

from actors.brokers import BrokerUnavailable, make_broker
from actors.work import Outcome, run_once, stopping
from db import Store
from domain.claims import NO_WORK
from domain.invariants import ORPHAN_GRACE_SECONDS
from domain.stages import Step
from service import config, logs

QUEUE = "transcriber"


class StopSteps(Middleware):
    """On worker shutdown, running steps give their claims back at their next beat (INV-1)."""

    def after_worker_boot(self, broker, worker):
        stopping.clear()

    def before_worker_shutdown(self, broker, worker):
        stopping.set()


class ListenForWakeups(Middleware):
    """Each worker process listens for the database's wake-ups and feeds them to its actors
    (actors.wakeups); the tick stays the safety net."""

    def __init__(self):
        self.wakeups = None

    def after_worker_boot(self, broker, worker):
        from actors.wakeups import Wakeups

        if settings.metrics_port is not None:
            from service.metrics import serve_worker_metrics

            serve_worker_metrics(settings.metrics_port)
        try:
            url = store().db.url
        except Exception as error:  # the database is away: runs find out; the tick still wakes them
            logger.warning("no wake-up listener in this worker ({}); the tick still runs", type(error).__name__)
            return
        self.wakeups = Wakeups(url, lambda step: ACTORS[step].send()).start()

    def before_worker_shutdown(self, broker, worker):
        if self.wakeups is not None:
            self.wakeups.stop()
            self.wakeups = None


def _setup() -> tuple[config.Settings, dramatiq.Broker]:
    try:
        settings = config.load()
        logs.configure_once(level="INFO", json_path=settings.log_json)
        if settings.broker_url is None and "dramatiq.cli" in sys.modules:
            # worker processes of their own would wait forever on an in-process broker
            raise config.ConfigError("TRANSCRIBER_BROKER_URL", "`dramatiq actors` needs a redis:// or amqp:// URL")
        if "dramatiq.cli" in sys.modules:
            from service.runtime import check_engine

            check_engine(settings)
        broker = make_broker(settings.broker_url)
    except (config.ConfigError, BrokerUnavailable) as error:
        print(f"transcriber: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    broker.add_middleware(StopSteps())
    broker.add_middleware(ListenForWakeups())
    dramatiq.set_broker(broker)
    return settings, broker


settings, broker = _setup()
_store: Store | None = None
_store_lock = threading.Lock()


def use(store: Store, with_settings: config.Settings | None = None) -> None:
    """Work against this store (an in-process runner passes the one it already has)."""
    global _store, settings
    _store = store
    if with_settings is not None:
        settings = with_settings


def store() -> Store:
    global _store
    with _store_lock:
        if _store is None:
            from service.runtime import open_store

            _store = open_store(settings, max_size=20)
        return _store


def _work(step: Step) -> None:
    outcome = run_once(store(), settings, step)
    if outcome is NO_WORK:
        return  # P1: no work now is not a failure; nothing raised, nothing logged
    logger.debug("{} run ended: {}", step, outcome)
    if outcome is Outcome.ABANDONED:
        return  # this worker is stopping
    # There was work: look for more at once, so a backlog drains at worker speed.
    ACTORS[step].send()


# dramatiq's time limit sits above anything a step may take: a step never outlives its stage's
# time limit, and the lease (renewed while it runs) is what really bounds a lost worker.
_TIME_LIMIT_MS = int(max(p.time_limit_seconds for p in settings.policies.values()) * 1000) + 60_000
# A wake-up is worth something only while fresh; stale ones are dropped instead of piling up.
_MAX_AGE_MS = int(max(settings.tick_seconds * 10, 30) * 1000)
_OPTIONS = dict(queue_name=QUEUE, max_retries=0, time_limit=_TIME_LIMIT_MS, max_age=_MAX_AGE_MS)


@dramatiq.actor(actor_name="convert", **_OPTIONS)
def convert() -> None:
    """Try to claim a record at `created` and convert it."""
    return _work(Step.CONVERT)


@dramatiq.actor(actor_name="recognize", **_OPTIONS)
def recognize() -> None:
    """Try to claim a record at `converted` and recognise it."""
    return _work(Step.RECOGNIZE)


@dramatiq.actor(actor_name="sweep", queue_name=QUEUE, max_retries=0, max_age=_MAX_AGE_MS)
def sweep() -> None:
    """Delete audio no record points at: left when a worker died between storing converted
    audio and saving it. An hour's grace keeps a conversion still under way out of reach."""
    removed = store().delete_orphan_blobs(older_than_seconds=ORPHAN_GRACE_SECONDS)
    if removed:
        logger.info("swept {} orphaned audio blob(s)", removed)


ACTORS = {Step.CONVERT: convert, Step.RECOGNIZE: recognize}


def tick() -> None:
    """One wake-up per step: what the scheduler sends every TRANSCRIBER_TICK_SECONDS."""
    for actor in ACTORS.values():
        actor.send()
    logger.debug("tick sent")
