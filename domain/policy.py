"""Per-step policy: lease, time limit in the stage, attempts and the retry pause."""

from __future__ import annotations

from dataclasses import dataclass

from domain.claims import HaltReason
from domain.stages import Step

# A pause never grows past a day: beyond that a retry is no longer a retry but a forgotten record.
MAX_PAUSE_SECONDS = 24 * 3600
RENEW_AT_MOST_SECONDS = 10.0


@dataclass(frozen=True)
class StepPolicy:
    lease_seconds: float
    time_limit_seconds: float
    max_attempts: int
    backoff_seconds: float
    # claims of the record that ended with the lease running out (its worker died) before it
    # is halted with `worker_lost`: a record that kills its worker must not cycle forever
    max_lost_leases: int = 3

    def pause_after(self, failures: int) -> float:
        """The retry pause after the `failures`-th failure: it doubles with every failure."""
        doubling: int = 2 ** max(failures - 1, 0)
        return min(self.backoff_seconds * doubling, MAX_PAUSE_SECONDS)

    def exhausted(self, failures: int) -> bool:
        return failures >= self.max_attempts

    def halt_on_claim(self, step: Step, overdue: bool, lost_leases: int) -> tuple[HaltReason, str] | None:
        """Why a record just claimed for `step` must be halted by its claimer instead of worked, if
        it must (P4): it waited for the step past the time limit (`overdue`), or too many of its
        leases were lost."""
        if overdue:
            return (
                HaltReason.STAGE_TIME_LIMIT,
                f"stayed in stage {step.source} longer than {self.time_limit_seconds:g}s",
            )
        if self.worker_lost(lost_leases):
            return HaltReason.WORKER_LOST, (
                f"{lost_leases} claims for {step} ran out of lease with nothing written: its worker died or "
                f"hung each time (TRANSCRIBER_MAX_LOST_LEASES={self.max_lost_leases})"
            )
        return None

    def worker_lost(self, lost_leases: int) -> bool:
        """Whether a record whose claims ran out of lease `lost_leases` times (each time its
        worker died or hung, writing nothing) is halted instead of run again."""
        return lost_leases >= self.max_lost_leases

    @property
    def renew_every_seconds(self) -> float:
        """A running step renews its lease at a third of it, so two renewals may be lost in a
        row; and at least every RENEW_AT_MOST seconds, which also keeps the card's progress fresh."""
        return min(self.lease_seconds / 3, RENEW_AT_MOST_SECONDS)


# Defaults: a lease long enough for a slow machine between renewals, and a time limit in the stage
# generous enough that a record waiting behind a backlog is not halted merely for waiting.
DEFAULT_LEASE_SECONDS = {Step.CONVERT: 120.0, Step.RECOGNIZE: 300.0, Step.DIARIZE: 300.0}
DEFAULT_TIME_LIMIT_SECONDS = {Step.CONVERT: 24 * 3600.0, Step.RECOGNIZE: 72 * 3600.0, Step.DIARIZE: 72 * 3600.0}
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_BACKOFF_SECONDS = 10.0
DEFAULT_MAX_LOST_LEASES = 3
