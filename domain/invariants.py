"""INV-1 and INV-2 over the whole database: the rules `transcriber check` applies.

Every record must be in exactly one of the states INV-1 allows — done (with its text), eligible
for its next step, claimed under a live lease, waiting out a retry pause, or halted with a reason
the journal shows — and hold its claim consistently (a token and its lease together, or
neither). No audio may outlive the records that point at it beyond the sweep's grace, a
record points only at complete audio and lets its converted audio go once done, its recognised
windows run end to end from 0 to where recognition stands, and no record may reach a stage
twice (two holders both saved).
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Protocol

from domain.claims import HaltReason
from domain.policy import MAX_PAUSE_SECONDS
from domain.stages import Stage

# The sweep deletes audio no record points at once it is this old (counted from its completion,
# or for audio never completed from its start): a conversion has completed its audio a moment
# before the save that points the record at it, and an intake's chunks take seconds.
ORPHAN_GRACE_SECONDS = 3600
# No configuration gives a lease longer than this (config.py bounds every lease to a day): a
# lease running further out was never taken by a claim, and would keep its record out of reach.
LONGEST_LEASE_SECONDS = 24 * 3600.0
HALT_REASONS = frozenset(reason.value for reason in HaltReason)


class State(enum.StrEnum):
    """The states INV-1 allows a record to be in."""

    DONE = "done"
    ELIGIBLE = "eligible"
    CLAIMED = "claimed"
    WAITING = "waiting"
    HALTED = "halted"


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    record: int | None = None
    blob: int | None = None

    def line(self) -> str:
        where = f"record {self.record}" if self.record is not None else f"blob {self.blob}"
        return f"{where}: {self.message} [{self.rule}]"


@dataclass
class Report:
    counts: dict[str, int] = field(default_factory=lambda: {state.value: 0 for state in State})
    violations: list[Violation] = field(default_factory=list)

    @property
    def sound(self) -> bool:
        return not self.violations

    def as_json(self) -> dict:
        return {"ok": self.sound, "records": sum(self.counts.values()), "states": self.counts,
                "violations": [asdict(v) for v in self.violations]}


def judge_record(row: dict, now: datetime) -> tuple[State | None, list[Violation]]:
    """The INV-1 state of one record and whatever it breaks. `row` holds the queue columns plus
    `has_text`, `keeps_converted_audio` and `halt_journaled`."""
    record = row["id"]
    found: list[Violation] = []

    def broken(rule: str, message: str) -> None:
        found.append(Violation(rule, message, record=record))

    token, lease = row["claim_token"], row["lease_expires_at"]
    if token is not None and lease is None:
        broken("token_without_lease", "holds a claim token without a lease: it would stay claimed forever")
    if lease is not None and token is None:
        broken("lease_without_token", "holds a lease without a claim token: no holder can save or renew it")

    if row["halted"]:
        if row["halt_reason"] not in HALT_REASONS:
            broken("halt_without_reason", f"halted with no known reason ({row['halt_reason']!r})")
        if not row["halt_journaled"]:
            broken("halt_not_journaled", "halted, but its journal has no halt event since its last resume")
        return State.HALTED, found

    if row["stage"] == Stage.DONE:
        if not row["has_text"]:
            broken("done_without_text", "done without text")
        if token is not None or lease is not None:
            broken("done_still_claimed", "done, yet still holds a claim")
        if row["keeps_converted_audio"]:
            broken("converted_audio_kept", "done, yet still points at its converted audio (the save that "
                   "reaches done lets it go)")
        return State.DONE, found

    if row["stage"] not in {stage.value for stage in Stage}:
        broken("unknown_stage", f"at an unknown stage {row['stage']!r}")
        return None, found
    if lease is not None and lease > now:
        if lease > now + timedelta(seconds=LONGEST_LEASE_SECONDS):
            broken("lease_beyond_any_claim", f"claimed until {lease.isoformat()}, further than any lease a "
                   "claim gives: out of reach of every worker")
        return State.CLAIMED, found
    pause = row["retry_after"]
    if pause is not None and pause > now:
        if pause > now + timedelta(seconds=MAX_PAUSE_SECONDS):
            broken("pause_beyond_any_retry", f"paused until {pause.isoformat()}, longer than any retry pause")
        return State.WAITING, found
    return State.ELIGIBLE, found


def orphan_violation(blob: dict, grace_seconds: float) -> Violation:
    return Violation("orphaned_audio", f"audio ({blob['size_bytes']} bytes, stored {blob['created_at'].isoformat()}) "
                     f"that no record points at, older than the sweep's grace of {grace_seconds:g}s",
                     blob=blob["id"])


def incomplete_audio_violation(row: dict) -> Violation:
    return Violation("points_at_incomplete_audio", f"points at audio blob {row['blob_id']}, which was never "
                     "marked complete (a blob is usable only once complete)", record=row["record_id"])


def windows_violation(row: dict) -> Violation:
    return Violation("windows_out_of_line", f"its recognised windows do not run end to end from 0 to "
                     f"{row['recognized_seconds']:g}s ({row['breaks']} break(s), the last ending at "
                     f"{row['last_end'] or 0:g}s)", record=row["record_id"])


def advanced_twice_violation(row: dict) -> Violation:
    return Violation("advanced_twice", f"reached stage {row['stage']} {row['times']} times",
                     record=row["record_id"])


def speakers_violations(row: dict) -> list[Violation]:
    """What a record's speakers row (the diarize step's side queue) breaks: it exists only for a
    done record, holds a token and a lease together or neither, lets its claim go when saved,
    and is saved once."""
    found, record = [], row["record_id"]
    if row["stage"] != Stage.DONE:
        found.append(Violation("speakers_before_done", f"queued for speakers at stage {row['stage']}, "
                               "before done", record=record))
    if row["claim_half"]:
        found.append(Violation("speakers_claim_half", "its speakers row holds a claim token without a lease, "
                               "or a lease without a token", record=record))
    if row["done_still_claimed"]:
        found.append(Violation("speakers_done_still_claimed", "its speakers are saved, yet the row still "
                               "holds a claim", record=record))
    if row["saves"] > 1:
        found.append(Violation("speakers_saved_twice", f"its speakers were saved {row['saves']} times",
                               record=record))
    return found


class FactSource(Protocol):
    """What the checker reads (db.check.Facts): each record through `on_record(row, now)`, then
    {"orphan_blobs", "incomplete_audio", "windows", "advanced_twice", "speakers"} (lists), all from one
    snapshot."""

    def read(self, grace_seconds: float, on_record: Callable[[dict, datetime], None]) -> dict: ...


def check(facts: FactSource, grace_seconds: float = ORPHAN_GRACE_SECONDS) -> Report:
    """Judge the whole database: every record, every blob, the journal's advances."""
    report = Report()

    def on_record(row: dict, now: datetime) -> None:
        state, found = judge_record(row, now)
        if state is not None:
            report.counts[state.value] += 1
        report.violations.extend(found)

    rest = facts.read(grace_seconds, on_record)
    report.violations.extend(orphan_violation(blob, grace_seconds) for blob in rest["orphan_blobs"])
    report.violations.extend(incomplete_audio_violation(row) for row in rest["incomplete_audio"])
    report.violations.extend(windows_violation(row) for row in rest["windows"])
    report.violations.extend(advanced_twice_violation(row) for row in rest["advanced_twice"])
    for row in rest.get("speakers", ()):
        report.violations.extend(speakers_violations(row))
    return report
