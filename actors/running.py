"""A claimed run's life, the same for the stages and the diarize step's side queue: the step runs
under a heartbeat, and however it ends (lost claim, stopping worker, a permanent error, a failed
attempt) the holder's matching write is made under the claim's token."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, TypeVar

from loguru import logger

from actors.heartbeat import Heartbeat
from actors.outcomes import Outcome
from domain.claims import Abandoned, Claim, ClaimLost, HaltReason, PermanentStepError
from domain.policy import StepPolicy

Result = TypeVar("Result")


@dataclass(frozen=True)
class HolderWrites:
    """The queue's writes for a run that ends without a result, each fenced by the token."""

    release: Callable[[Claim], bool]
    halt: Callable[..., bool]          # (claim, reason, error, *, count_failure)
    failure: Callable[[Claim, str, float], bool]


def run_claimed(leases, writes: HolderWrites, claim: Claim, policy: StepPolicy, stop: threading.Event,
                failures: int, work: Callable[[Heartbeat], Result]) -> Result | Outcome:
    """`work(beat)`'s result, or the Outcome of a run that ended without one (its write made).
    `leases`: what the heartbeat renews the lease through; `failures`: the failed attempts
    counted before this run."""
    try:
        with Heartbeat(leases, claim, policy, stop) as beat:
            return work(beat)
    except ClaimLost:
        logger.bind(record_id=claim.record_id).warning(
            "record {}: {} stopped early, its claim moved on; nothing saved", claim.record_id, claim.step)
        return Outcome.LOST
    except Abandoned:
        writes.release(claim)
        return Outcome.ABANDONED
    except PermanentStepError as error:
        halted = writes.halt(claim, error.reason, str(error), count_failure=True)
        return Outcome.HALTED if halted else Outcome.REFUSED
    except Exception as error:  # any other step error is a failed attempt, never swallowed
        message = f"{type(error).__name__}: {error}"
        if policy.exhausted(failures + 1):
            halted = writes.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, message, count_failure=True)
            return Outcome.HALTED if halted else Outcome.REFUSED
        counted = writes.failure(claim, message, policy.pause_after(failures + 1))
        return Outcome.FAILED if counted else Outcome.REFUSED
