"""Resume: the one action that returns a halted record to work (P5)."""

from __future__ import annotations

from typing import Protocol

from domain.errors import TranscriberError


class Now:
    """Marks a guard that resets to the moment of the resume."""

    def __repr__(self) -> str:
        return "NOW"


NOW = Now()

# Everything a previous run held a record with, named here and nowhere else: the columns of the
# record's halted step row (the same for every step). The record goes back to work from the stage
# it reached; a guard left out here would keep it silently stuck:
RESUME_RESETS: dict[str, object] = {
    # the halt flag
    "halted_at": None,
    "halt_reason": None,
    "halt_error": None,
    # the claim: a leftover token would hand the record to a stale step later
    "claim_token": None,
    "lease_expires_at": None,
    # leftover failures and pause would delay the first run
    "failures": 0,
    "retry_after": None,
    # leftover lost leases would halt it again after fewer crashes than the limit allows
    "lost_leases": 0,
    # a leftover entry time would halt it again on the first claim (the step's time limit counts
    # from it)
    "entered_at": NOW,
}


class UnknownRecord(TranscriberError, code="not_found"):
    def __init__(self, record_id: int):
        super().__init__(f"no record with id {record_id}")
        self.record_id = record_id


class NotHalted(TranscriberError, code="not_halted"):
    def __init__(self, record_id: int, stage: str):
        super().__init__(f"record {record_id} is not halted (stage {stage}); nothing to resume")
        self.record_id = record_id
        self.stage = stage


class ResumeStore(Protocol):
    def resume(self, record_id: int, resets: dict[str, object], by: str = ...) -> str | None:
        """Apply `resets` to the record's halted step in one action, journaled as done by `by`;
        the record's stage, or None if no step of it is halted."""

    def stage_of(self, record_id: int) -> str | None:
        """The record's stage, or None if there is no such record."""


def resume(store: ResumeStore, record_id: int, by: str = "operator") -> str:
    """Return a halted record to work from the stage where it stood; return that stage. `by`
    names the human who did it in the journal (the operator's name from the panel). A done
    record whose speakers halted has its diarize step resumed, like any step."""
    stage = store.resume(record_id, RESUME_RESETS, by=by)
    if stage is not None:
        return stage
    current = store.stage_of(record_id)
    if current is None:
        raise UnknownRecord(record_id)
    raise NotHalted(record_id, current)
