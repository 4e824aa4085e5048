"""One step run: claim, read, run the step, save under the token (P1–P5).

This is the worker's whole logic, free of the broker: a dramatiq actor calls `run_once`, and so
can anything else that wants to work a record.
"""
from __future__ import annotations

import threading
import time

from loguru import logger

from actors.diarizing import diarize_once
from actors.outcomes import Outcome, stopping
from actors.running import HolderWrites, run_claimed
from actors.steps import STEPS
from db import Store
from domain.claims import NO_WORK, NoWork
from domain.stages import Step
from service import metrics, runtime
from service.config import Settings


def run_once(store: Store, settings: Settings, step: Step, stop: threading.Event = stopping) -> Outcome | NoWork:
    """Work one record of the step's stage, or return NO_WORK when there is none (P1). The
    diarize step works the side queue of done records instead (actors.diarizing)."""
    if step is Step.DIARIZE:
        return diarize_once(store, settings, stop)
    started = time.monotonic()
    with store.db.pinned():  # the run's claim, read, checkpoints and save share one connection
        outcome = _run_once(store, settings, step, stop)
    metrics.step_ran(step.value, None if outcome is NO_WORK else outcome.value, time.monotonic() - started)
    return outcome


def _run_once(store: Store, settings: Settings, step: Step, stop: threading.Event) -> Outcome | NoWork:
    policy = settings.policy(step)
    claim = store.claim(step, policy)
    if claim is NO_WORK and runtime.lookout.look(store):
        claim = store.claim(step, policy)  # one of the records let go may be this step's
    if claim is NO_WORK:
        return NO_WORK
    log = logger.bind(record_id=claim.record_id, stage=step.source)
    record = store.read_record(claim.record_id)
    if record is None:  # deleted by its owner right after the claim: nothing to work, nothing to save
        log.info("record {} was deleted; nothing to do", claim.record_id)
        return Outcome.REFUSED
    spec = STEPS[step]
    writes = HolderWrites(store.release, store.halt, store.record_failure)
    fields = run_claimed(store, writes, claim, policy, stop, record["failures"],
                         lambda beat: spec.run(store, record, beat, settings))
    if isinstance(fields, Outcome):
        return fields
    extra = set(fields) - spec.owns
    if extra:
        raise RuntimeError(f"step {step} returned fields it does not own: {sorted(extra)}")
    if store.save_result(claim, fields, diarize=settings.diarize_on):
        return Outcome.SAVED
    spec.discard(store, fields)
    return Outcome.REFUSED

