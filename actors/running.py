"""A claimed run's life, the same for every step: the step works under a heartbeat and its result is
saved under the claim's token; however the run ends otherwise (lost claim, stopping worker, a
permanent error, any other exception, in the work or in its save) the holder's matching write is
made under the token, never left to the lease while the database can be reached (P3, P4). Out of
its reach, the write waits no longer than a lease and one line names the record."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from actors.heartbeat import Heartbeat, LeaseRunOut
from actors.outcomes import Outcome
from db import DatabaseUnavailable, Store
from db.bounds import bounded
from db.database import unreachable
from db.journal import claim_log
from domain.claims import Abandoned, Claim, ClaimLost, HaltReason, PermanentStepError
from domain.policy import StepPolicy

Result = TypeVar("Result")
# the least a holder write may wait for the database, even as its lease ends: enough on a loaded
# machine, and a write that comes late is refused if the record was taken over meanwhile (P3)
MIN_WRITE_SECONDS = 1.0


class Unwritten(DatabaseUnavailable):
    """A holder write that could not be made: the database out of reach. The run ends with it,
    the record's line logged; its lease runs out and another worker takes the record up."""


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
    `failures`: the failed attempts counted before this run. Raises Unwritten when the run's
    last write could not be made for want of the database."""

    heartbeat = Heartbeat(store, claim, policy, stop)

    def written(what: str, write: Callable[[], bool]) -> bool:
        return _written(claim, heartbeat.lease_left(), what, write)

    try:
        with heartbeat as beat:
            result = work(beat)
        return Outcome.SAVED if written("save", lambda: save(result)) else Outcome.REFUSED
    except Unwritten:
        raise
    except LeaseRunOut:  # the heartbeat said so, naming the record
        raise Unwritten(f"record {claim.record_id}: the lease could not be renewed") from None
    except ClaimLost:
        claim_log(claim, "lost").warning(
            "record {}: {} stopped early, its claim moved on; nothing saved", claim.record_id, claim.step
        )
        return Outcome.LOST
    except Abandoned:
        written("release", lambda: store.release(claim))
        return Outcome.ABANDONED
    except PermanentStepError as permanent:
        why, text = permanent.reason, str(permanent)
        halted = written("halt", lambda: store.halt(claim, why, text, count_failure=True))
        return Outcome.HALTED if halted else Outcome.REFUSED
    except Exception as error:  # noqa: BLE001 - any other error is a failed attempt, never swallowed
        message = f"{type(error).__name__}: {error}"
        if policy.exhausted(failures + 1):
            reason = HaltReason.ATTEMPTS_EXHAUSTED
            halted = written("halt", lambda: store.halt(claim, reason, message, count_failure=True))
            return Outcome.HALTED if halted else Outcome.REFUSED
        pause = policy.pause_after(failures + 1)
        counted = written(f"failure ({type(error).__name__})", lambda: store.record_failure(claim, message, pause))
        return Outcome.FAILED if counted else Outcome.REFUSED


def _written(claim: Claim, lease_left: float, what: str, write: Callable[[], bool]) -> bool:
    """A holder write, waiting for the database no longer than the lease lasts (a second at least):
    one not made by then is no longer this holder's to make, since another worker takes the record
    up at the lease's end. Out of reach, one line about the record says what was not written, and
    Unwritten ends the run."""
    try:
        with bounded(max(lease_left, MIN_WRITE_SECONDS)):
            return write()
    except Exception as error:
        if not unreachable(error):
            raise
        claim_log(claim, "unwritten").warning(
            "record {}: the {} step's {} could not be written, the database is unreachable ({}); "
            "its lease runs out and another worker takes the record up",
            claim.record_id,
            claim.step,
            what,
            type(error).__name__,
        )
        raise Unwritten(f"record {claim.record_id}: the {claim.step} step's {what} was not written") from None
