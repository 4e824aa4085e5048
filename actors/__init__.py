"""The dramatiq entry module: `dramatiq actors` starts workers for the configured broker.

One claim actor per step, the sweep, the retention of original audio, and the backfill of
passages for search by meaning. A message is only a
wake-up ("try to claim for this step"): it carries no state. The actor claims, runs the step and
saves under the token; with no work it returns quietly (P1). dramatiq's own retries are off: the
database counts attempts (P4).

Importing this module only declares the actors, on the broker TRANSCRIBER_BROKER_URL names
(made, not connected) and the queue TRANSCRIBER_QUEUE names. The configuration is loaded and
checked when a worker process boots (actors.middleware.Boot), or handed over by an in-process
runner through `use`.
"""

from __future__ import annotations

import os
from typing import Any

import dramatiq
from loguru import logger

from actors import context
from actors.middleware import Boot, DatabaseReachability, ListenForWakeups, MachineMetrics, StopSteps
from actors.work import Outcome, run_once
from db import Store
from domain.claims import NO_WORK
from domain.invariants import ORPHAN_GRACE_SECONDS
from domain.stages import Step
from service import config, meaning, resumable
from service.brokers import make_broker


def _from_environment(read, default):
    """A setting the declarations need before the configuration is loaded; a bad value is left
    to the boot check, which names it."""
    try:
        return read(os.environ)
    except config.ConfigError:
        return default


QUEUE = _from_environment(config.queue_of, config.DEFAULT_QUEUE)
broker = make_broker(_from_environment(config.broker_url_of, None))
dramatiq.set_broker(broker)


def use(settings: config.Settings, store: Store | None = None) -> None:
    """Work with these settings (and this store): a worker process at boot, or an in-process
    runner that already has them. A wake-up is worth something only while fresh: stale ones are
    dropped instead of piling up."""
    context.use(settings, store)
    max_age_ms = int(max(settings.tick_seconds * 10, 30) * 1000)
    every: list[dramatiq.Actor[..., None]] = [*ACTORS.values(), sweep, expire_audio, backfill_passages]
    for actor in every:
        actor.options["max_age"] = max_age_ms


broker.add_middleware(Boot(use))
broker.add_middleware(StopSteps())
broker.add_middleware(DatabaseReachability())
broker.add_middleware(MachineMetrics())
broker.add_middleware(ListenForWakeups(lambda step: ACTORS[step].send()))

# dramatiq's time limit sits above anything a step may take: a step never outlives its stage's
# time limit (at most the year configuration allows), and the lease, renewed while it runs, is
# what really bounds a lost worker.
_TIME_LIMIT_MS = int((config.LONGEST_TIME_LIMIT_SECONDS + 60) * 1000)
_OPTIONS: dict[str, Any] = dict(queue_name=QUEUE, max_retries=0, time_limit=_TIME_LIMIT_MS)


@dramatiq.actor(actor_name="convert", **_OPTIONS)
def convert() -> None:
    """Try to claim a record at `created` and convert it."""
    return _work(Step.CONVERT)


@dramatiq.actor(actor_name="recognize", **_OPTIONS)
def recognize() -> None:
    """Try to claim a record at `converted` and recognise it."""
    return _work(Step.RECOGNIZE)


# The diarize step has a time limit of its own: one run decodes and embeds one recording (about
# 0.06 CPU-s per audio second: minutes for the longest allowed), so a run still going after six
# hours is stuck; dramatiq stops it, its lease runs out, and the lost-lease guard takes over.
_DIARIZE_TIME_LIMIT_MS = 6 * 3600 * 1000


@dramatiq.actor(actor_name="diarize", queue_name=QUEUE, max_retries=0, time_limit=_DIARIZE_TIME_LIMIT_MS)
def diarize() -> None:
    """Try to claim a done record for the diarize step and find who spoke when."""
    return _work(Step.DIARIZE)


# One run of the sweep works this long at most (then it sends itself on from where it stopped),
# and dramatiq's time limit sits well above it: the default (10 minutes) would kill a long pass.
SWEEP_RUN_SECONDS = 60
_SWEEP_TIME_LIMIT_MS = (SWEEP_RUN_SECONDS + 240) * 1000


@dramatiq.actor(actor_name="sweep", queue_name=QUEUE, max_retries=0, time_limit=_SWEEP_TIME_LIMIT_MS)
def sweep(after_id: int = 0) -> None:
    """Delete audio no record points at and nobody writes any more: left when a worker died
    mid-conversion, or between a save that let audio go and its deletion, and the resumable
    uploads idle past TRANSCRIBER_UPLOAD_EXPIRY_HOURS (`service.resumable.sweep`). The grace keeps a
    conversion's audio, complete a moment before its save, out of reach. The blobs are gone
    through in bounded batches from `after_id` on (only where the last run stopped: a lost
    message just means the next pass starts over)."""
    if not after_id:  # once a pass: keeps the metrics' count changes few where nobody scrapes
        context.store().fold_record_counts()
    swept = context.store().sweep_orphan_blobs(
        ORPHAN_GRACE_SECONDS, budget_seconds=SWEEP_RUN_SECONDS, after_id=after_id
    )
    if swept.removed:
        logger.info("swept {} orphaned audio blob(s)", swept.removed)
    if not after_id:  # once per pass: uploads' Idempotency-Keys past their keeping time
        keys = context.store().sweep_upload_keys()
        if keys:
            logger.info("swept {} idempotency key(s) older than a day", keys)
        # resumable uploads: recordings cut short and stranded ones finished, idle ones removed
        resumable.sweep(context.store(), context.settings())
    if swept.resume_after:
        sweep.send(swept.resume_after)


@dramatiq.actor(actor_name="expire_audio", queue_name=QUEUE, max_retries=0, time_limit=_SWEEP_TIME_LIMIT_MS)
def expire_audio() -> None:
    """Retention: delete the original audio of done records older than
    TRANSCRIBER_AUDIO_RETENTION_DAYS (this worker's setting; unset: nothing is deleted), in
    bounded, fenced batches; the record, its card and its text stay, the journal says
    `audio_expired`. A run works SWEEP_RUN_SECONDS at most and sends itself on if due records
    are left."""
    retention = context.settings().audio_retention_seconds
    if retention is None:
        return
    done = context.store().expire_audio(retention, budget_seconds=SWEEP_RUN_SECONDS)
    if done.expired:
        logger.info("retention: the original audio of {} record(s) expired", done.expired)
    if done.more:
        expire_audio.send()


@dramatiq.actor(actor_name="backfill_passages", queue_name=QUEUE, max_retries=0, time_limit=_SWEEP_TIME_LIMIT_MS)
def backfill_passages(after: int = 0) -> None:
    """Search by meaning for the records done before it was enabled here (pgvector, the model or
    the extra came later): a batch of them given passages (`service.meaning.backfill`), by id
    from `after` on; it sends itself on while records are left, so a backlog drains at worker
    speed. Nothing where search by meaning is not active."""
    done = meaning.backfill(context.store(), after=after)
    if done.records:
        logger.info("backfill: {} record(s) given passages for search by meaning", done.records)
    if done.after is not None:
        backfill_passages.send(done.after)


ACTORS: dict[Step, dramatiq.Actor[[], None]] = {Step.CONVERT: convert, Step.RECOGNIZE: recognize, Step.DIARIZE: diarize}


def _work(step: Step) -> None:
    outcome = run_once(context.store(), context.settings(), step)
    if outcome is NO_WORK:
        return  # P1: no work now is not a failure; nothing raised, nothing logged
    logger.debug("{} run ended: {}", step, outcome)
    if outcome is Outcome.ABANDONED:
        return  # this worker is stopping
    # There was work: look for more at once, so a backlog drains at worker speed.
    ACTORS[step].send()


def tick() -> None:
    """One wake-up per step: what the scheduler sends every TRANSCRIBER_TICK_SECONDS."""
    for actor in ACTORS.values():
        actor.send()
    logger.debug("tick sent")
