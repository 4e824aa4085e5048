"""One step run: claim, read, run the step, save under the token (P1–P5).

This is the worker's whole logic, free of the broker: a dramatiq actor calls `run_once`, and so
can anything else that wants to work a record.
"""
from __future__ import annotations

import enum
import threading
import time

from loguru import logger

from actors.steps import STEPS
from db import Store
from domain.claims import NO_WORK, Abandoned, Claim, ClaimLost, HaltReason, NoWork, PermanentStepError
from domain.policy import StepPolicy
from domain.stages import Step
from service import metrics
from service.config import Settings

# Set when the process is stopping: running steps give their claims back at the next beat.
stopping = threading.Event()


class Outcome(enum.StrEnum):
    SAVED = "saved"
    FAILED = "failed"
    HALTED = "halted"
    REFUSED = "refused"      # the claim moved on before the result was written: nothing written (P3)
    LOST = "lost"            # a lease renewal was refused: the step stopped early (P3)
    ABANDONED = "abandoned"  # the worker is stopping: the claim was given back


class Heartbeat:
    """Keeps a running step's claim alive, stops the step when it must stop, and carries its
    holder writes (checkpoints) under the claim's token.

    The lease is renewed by a thread of its own every `policy.renew_every_seconds`, whatever
    pace the step keeps (a recognizer busy with a long window, a loaded machine) — but only
    while the step shows signs of life: a step that has not beaten for a whole lease is taken
    for hung, and its lease is left to run out so another worker can take the record over.
    The step calls `beat(progress_seconds)` often; it raises ClaimLost once a renewal was
    refused and Abandoned once the worker is stopping.
    """

    def __init__(self, store: Store, claim: Claim, policy: StepPolicy, stop: threading.Event):
        self.store, self.claim, self.policy, self.stop = store, claim, policy, stop
        self.alive_at = time.monotonic()
        self.progress: float | None = None
        self._lost = threading.Event()
        self._done = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name=f"lease-{claim.record_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._renewer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._renewer.join()

    def _renew(self) -> None:
        while not self._done.wait(self.policy.renew_every_seconds):
            if time.monotonic() - self.alive_at > self.policy.lease_seconds:
                logger.bind(record_id=self.claim.record_id).warning(
                    "record {}: {} step gave no sign of life for a whole lease; its lease is left to expire",
                    self.claim.record_id, self.claim.step)
                return
            try:
                renewed = self.store.renew_lease(self.claim, self.policy.lease_seconds, self.progress)
            except Exception as error:  # the database is away for a moment: the lease has margin
                logger.bind(record_id=self.claim.record_id).warning(
                    "record {}: lease renewal failed, will retry: {}", self.claim.record_id, type(error).__name__)
                continue
            if not renewed:
                self._lost.set()
                return

    def __call__(self, progress_seconds: float | None = None) -> None:
        self.alive_at = time.monotonic()
        if progress_seconds is not None:
            self.progress = progress_seconds
        if self.stop.is_set():
            raise Abandoned()
        if self._lost.is_set():
            raise ClaimLost()

    def checkpoint(self, from_seconds: float, to_seconds: float, segments: list[dict], language: str | None) -> None:
        """Save a recognised window under the token; ClaimLost if the claim moved on,
        CheckpointRefused (a failed attempt) if the window does not meet the last checkpoint."""
        self(to_seconds)
        if not self.store.checkpoint(self.claim, from_seconds, to_seconds, segments, language,
                                     self.policy.lease_seconds):
            raise ClaimLost()


def run_once(store: Store, settings: Settings, step: Step, stop: threading.Event = stopping) -> Outcome | NoWork:
    """Work one record of the step's stage, or return NO_WORK when there is none (P1)."""
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
    if store.save_result(claim, fields):
        return Outcome.SAVED
    spec.discard(store, fields)
    return Outcome.REFUSED


def _fail(store: Store, claim: Claim, policy: StepPolicy, failures: int, error: str) -> Outcome:
    if policy.exhausted(failures):
        halted = store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, error, count_failure=True)
        return Outcome.HALTED if halted else Outcome.REFUSED
    counted = store.record_failure(claim, error, policy.pause_after(failures))
    return Outcome.FAILED if counted else Outcome.REFUSED
