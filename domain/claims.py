"""What a claim hands a worker, and why a record may stop."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from domain.errors import TranscriberError
from domain.stages import Step


@dataclass(frozen=True)
class Claim:
    """One claim of one record for one step run.

    It carries the record id and this claim's token, never the record's columns (INV-2): the
    step reads those itself, so a column added to records never has to pass through the claim.
    """

    record_id: int
    token: int
    step: Step


class NoWork:
    """The distinct "no work now" result of an empty claim (P1): not an error, not a failure."""

    _instance: NoWork | None = None

    def __new__(cls) -> NoWork:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NO_WORK"

    def __bool__(self) -> bool:
        return False


NO_WORK = NoWork()


class HaltReason(enum.StrEnum):
    """The closed set of reasons a record is halted; the names are stable machine names."""

    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    STAGE_TIME_LIMIT = "stage_time_limit"
    UNDECODABLE_AUDIO = "undecodable_audio"
    AUDIO_TOO_LONG = "audio_too_long"  # longer than TRANSCRIBER_MAX_AUDIO_SECONDS
    WORKER_LOST = "worker_lost"  # its claims kept dying with their worker
    ENGINE_REFUSED = "engine_refused"  # the recognizer refused it in a way no retry mends
    # speakers only (the record stays done): the original was deleted by retention before
    # diarization could decode it again
    AUDIO_EXPIRED = "audio_expired"


class PermanentStepError(TranscriberError, code="permanent_step_error"):
    """A step error that no retry can mend; the record is halted at once with `reason`."""

    def __init__(self, reason: HaltReason, message: str):
        super().__init__(message)
        self.reason = reason


class ClaimLost(TranscriberError, code="claim_lost"):
    """Raised inside a running step when its claim is no longer its own (P3)."""


class CheckpointRefused(TranscriberError, code="checkpoint_refused"):
    """A checkpoint refused while the claim is still the step's own: the window does not start
    where the record's last checkpoint ended. Not a lost claim (nobody else holds it, so taking
    it for one would leave the lease to run out and the record to be claimed again forever):
    the run is a failed attempt (P4), and the next one goes on from the last checkpoint."""


class Abandoned(TranscriberError, code="abandoned"):
    """Raised inside a running step when its worker is shutting down: it saves nothing."""
