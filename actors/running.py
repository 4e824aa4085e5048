"""A claimed run's life, the same for every step: the step works under a heartbeat and its result is
saved under the claim's token; however the run ends otherwise (lost claim, stopping worker, a
permanent error, any other exception, in the work or in its save) the holder's matching write is
made under the token, never left to the lease (P3, P4)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from actors.heartbeat import Heartbeat
from actors.outcomes import Outcome
from db import Store
from db.journal import claim_log
from domain.claims import Abandoned, Claim, ClaimLost, HaltReason, PermanentStepError
from domain.policy import StepPolicy

Result = TypeVar("Result")


def run_claimed(
    store: Store,
    claim: Claim,
    policy: StepPolicy,
    stop: threading.Event,
    failures: int,
    work: Callable[[Heartbeat], Result],
    save: Callable[[Result], bool],
) -> Outcome:
    """Run `work(beat)` under the claim and `save` its result; the run's Outcome, its write made.
    `failures`: the failed attempts counted before this run."""
    try:
        with Heartbeat(store, claim, policy, stop) as beat:
            result = work(beat)
        return Outcome.SAVED if save(result) else Outcome.REFUSED
    except ClaimLost:
        claim_log(claim, "lost").warning(
            "record {}: {} stopped early, its claim moved on; nothing saved", claim.record_id, claim.step
        )
        return Outcome.LOST
    except Abandoned:
        store.release(claim)
        return Outcome.ABANDONED
    except PermanentStepError as error:
        halted = store.halt(claim, error.reason, str(error), count_failure=True)
        return Outcome.HALTED if halted else Outcome.REFUSED
    except Exception as error:  # noqa: BLE001 - any other error is a failed attempt, never swallowed
        message = f"{type(error).__name__}: {error}"
        if policy.exhausted(failures + 1):
            halted = store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, message, count_failure=True)
            return Outcome.HALTED if halted else Outcome.REFUSED
        counted = store.record_failure(claim, message, policy.pause_after(failures + 1))
        return Outcome.FAILED if counted else Outcome.REFUSED
