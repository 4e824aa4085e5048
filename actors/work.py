"""One step run: claim, read, run the step, save under the token (P1–P5).

This is the worker's whole logic, free of the broker: a dramatiq actor calls `run_once`, and so
can anything else that wants to work a record.
"""
from __future__ import annotations

import threading
import time

from loguru import logger

from actors.diarizing import diarize_once
from actors.heartbeat import Heartbeat
from actors.outcomes import Outcome, stopping
from actors.steps import STEPS
from db import Store
from domain.claims import NO_WORK, Abandoned, Claim, ClaimLost, HaltReason, NoWork, PermanentStepError
from domain.policy import StepPolicy
from domain.stages import Step
from service import metrics
from service.config import Settings



def run_once(store: Store, settings: Settings, step: Step, stop: threading.Event = stopping) -> Outcome | NoWork:
    """Work one record of the step's stage, or return NO_WORK when there is none (P1). The
    diarize step works the side queue of done records instead (actors.diarizing)."""
    if step is Step.DIARIZE:
        return diarize_once(store, settings, stop)
    started = time.monotonic()
    outcome = _run_once(store, settings, step, stop)
    metrics.step_ran(step.value, None if outcome is NO_WORK else outcome.value, time.monotonic() - started)
    return outcome


def _run_once(store: Store, settings: Settings, step: Step, stop: threading.Event) -> Outcome | NoWork:
    policy = settings.policy(step)
    claim = store.claim(step, policy)
    if claim is NO_WORK:
        return NO_WORK
    log = logger.bind(record_id=claim.record_id, stage=step.source)
    record = store.read_record(claim.record_id)
    if record is None:  # deleted by its owner right after the claim: nothing to work, nothing to save
        log.info("record {} was deleted; nothing to do", claim.record_id)
        return Outcome.REFUSED
    spec = STEPS[step]
    try:
        with Heartbeat(store, claim, policy, stop) as beat:
            fields = spec.run(store, record, beat, settings)
    except ClaimLost:
        log.warning("record {}: {} stopped early, its claim moved on; nothing saved", claim.record_id, step)
        return Outcome.LOST
    except Abandoned:
        store.release(claim)
        return Outcome.ABANDONED
    except PermanentStepError as error:
        halted = store.halt(claim, error.reason, str(error), count_failure=True)
        return Outcome.HALTED if halted else Outcome.REFUSED
    except Exception as error:  # any other step error is a failed attempt, never swallowed
        return _fail(store, claim, policy, record["failures"] + 1, f"{type(error).__name__}: {error}")
    extra = set(fields) - spec.owns
    if extra:
        raise RuntimeError(f"step {step} returned fields it does not own: {sorted(extra)}")
    if store.save_result(claim, fields, diarize=settings.diarize_on):
        return Outcome.SAVED
    spec.discard(store, fields)
    return Outcome.REFUSED


def _fail(store: Store, claim: Claim, policy: StepPolicy, failures: int, error: str) -> Outcome:
    if policy.exhausted(failures):
        halted = store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, error, count_failure=True)
        return Outcome.HALTED if halted else Outcome.REFUSED
    counted = store.record_failure(claim, error, policy.pause_after(failures))
    return Outcome.FAILED if counted else Outcome.REFUSED
