"""One step run, the same for every step: claim, read, work, save under the token (P1–P5).

This is the worker's whole logic, free of the broker: a dramatiq actor calls `run_once`, and so
can anything else that wants to work a record. A step is its work and what its save writes
(`STEPS`); claiming, renewing, checkpointing, failing, halting, releasing and saving are the
protocol's, which every step shares.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from loguru import logger

from actors.diarizing import diarize
from actors.heartbeat import Heartbeat
from actors.outcomes import Outcome, stopping
from actors.running import run_claimed
from actors.steps import convert, discard_converted, recognize
from db import Store
from domain.claims import NO_WORK, Claim, NoWork
from domain.stages import Step
from service import metrics, runtime
from service.config import Settings


@dataclass(frozen=True)
class StepSpec:
    """A step: its work, which returns the values its save takes; `owns`, the record's columns
    among them (the only ones it may write, P3); `params`, the others its save statement takes;
    what to undo when its save is refused; whether this worker may run it at all."""

    run: Callable[[Store, dict, Heartbeat, Settings], dict]
    owns: frozenset[str]
    params: frozenset[str] = frozenset()
    discard: Callable[[Store, dict], None] = lambda store, result: None
    runs_here: Callable[[Settings], bool] = lambda settings: True


STEPS = {
    Step.CONVERT: StepSpec(convert, frozenset({"converted_blob_id", "duration_seconds"}), discard=discard_converted),
    Step.RECOGNIZE: StepSpec(recognize, frozenset({"engine"}), frozenset({"passages"})),
    # a worker that cannot (or may not) diarize leaves the rows to others
    Step.DIARIZE: StepSpec(
        diarize,
        frozenset({"turns"}),
        frozenset({"said", "speakers", "passages"}),
        runs_here=lambda settings: settings.diarize_on,
    ),
}


def run_once(store: Store, settings: Settings, step: Step, stop: threading.Event = stopping) -> Outcome | NoWork:
    """Work one record for the step, or return NO_WORK when there is none (P1)."""
    started = time.monotonic()
    with store.db.pinned():  # the run's claim, read, checkpoints and save share one connection
        outcome = _run_once(store, settings, step, stop)
    metrics.step_ran(step.value, None if isinstance(outcome, NoWork) else outcome.value, time.monotonic() - started)
    return outcome


def _run_once(store: Store, settings: Settings, step: Step, stop: threading.Event) -> Outcome | NoWork:
    spec = STEPS[step]
    if not spec.runs_here(settings):
        return NO_WORK
    policy = settings.policy(step)
    claim = store.claim(step, policy)
    if claim is NO_WORK and runtime.lookout.look(store):
        claim = store.claim(step, policy)  # one of the claims let go may be this step's
    if isinstance(claim, NoWork):
        return NO_WORK
    record = store.read_for_step(claim)
    if record is None:  # deleted by its owner right after the claim: nothing to work, nothing to save
        logger.bind(record_id=claim.record_id, stage=step.source).info(
            "record {} was deleted; nothing to do", claim.record_id
        )
        return Outcome.REFUSED
    return run_claimed(
        store,
        claim,
        policy,
        stop,
        record["failures"],
        lambda beat: spec.run(store, record, beat, settings),
        lambda result: _save(store, settings, spec, claim, record, result),
    )


def _save(store: Store, settings: Settings, spec: StepSpec, claim: Claim, record: dict, result: dict) -> bool:
    """The step's result saved under its claim, with the next step queued; False when refused."""
    extra = set(result) - spec.owns - spec.params
    if extra:
        raise RuntimeError(f"step {claim.step} returned fields it does not own: {sorted(extra)}")
    fields = {name: value for name, value in result.items() if name in spec.owns}
    params = {name: value for name, value in result.items() if name in spec.params}
    speakers = settings.diarize_on and record["speakers_wanted"] != "off"
    if store.save(claim, fields, params, next_step=claim.step.next(speakers=speakers)):
        return True
    spec.discard(store, result)
    return False
