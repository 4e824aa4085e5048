"""INV-1 and INV-2 over the whole database: the rules `transcriber check` applies.

Every record must be in exactly one of the states INV-1 allows — done (with its text), eligible
for its next step, claimed under a live lease, waiting out a retry pause, or halted with a reason
the journal shows. A record not done waits for exactly one step, its stage's; every step row holds
its claim consistently (a token and its lease together, or neither) and belongs to its record's
stage. No audio may outlive the records that point at it beyond the sweep's grace, a record
points only at complete audio and lets its converted audio go once done, its recognised windows
run end to end from 0 to where recognition stands, and no save is made twice (two holders both
saved).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, TypedDict

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

# a row the checker reads, by column name
Row = Mapping[str, Any]


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

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.sound,
            "records": sum(self.counts.values()),
            "states": self.counts,
            "violations": [asdict(v) for v in self.violations],
        }


def judge_record(row: Row, now: datetime) -> tuple[State | None, list[Violation]]:
    """The INV-1 state of one record and whatever it breaks. `row` holds the record's stage, the
    columns of its stage's step row (`step` None: it has none), `steps_out_of_stage`, `has_text`,
    `keeps_converted_audio` and `halt_journaled`."""
    found = _step_violations(row, now)

    def broken(rule: str, message: str) -> None:
        found.append(Violation(rule, message, record=row["id"]))

    if row["steps_out_of_stage"]:
        broken(
            "step_out_of_stage",
            f"waits for {row['steps_out_of_stage']} step(s) of another stage than its "
            f"own ({row['stage']}): two holders saved, or a row was left behind",
        )
    if row["stage"] == Stage.DONE:
        if not row["has_text"]:
            broken("done_without_text", "done without text")
        if row["keeps_converted_audio"]:
            broken(
                "converted_audio_kept",
                "done, yet still points at its converted audio (the save that reaches done lets it go)",
            )
        return State.DONE, found  # a halt of its diarize step leaves it done
    if row["stage"] not in {stage.value for stage in Stage}:
        broken("unknown_stage", f"at an unknown stage {row['stage']!r}")
        return None, found
    if row["step"] is None:
        broken("no_step", f"at stage {row['stage']}, yet no step waits for it: out of reach of every worker")
        return None, found
    if row["halted"]:
        return State.HALTED, found
    lease = row["lease_expires_at"]
    if lease is not None and lease > now:
        return State.CLAIMED, found
    pause = row["retry_after"]
    if pause is not None and pause > now:
        return State.WAITING, found
    return State.ELIGIBLE, found


def _step_violations(row: Row, now: datetime) -> list[Violation]:
    """What the record's step row breaks: a claim held by halves, a lease or a pause no claim or
    failure gives, a halt with no known reason or not in the journal."""
    found: list[Violation] = []
    if row["step"] is None:
        return found

    def broken(rule: str, message: str) -> None:
        found.append(Violation(rule, message, record=row["id"]))

    token, lease, pause = row["claim_token"], row["lease_expires_at"], row["retry_after"]
    if token is not None and lease is None:
        broken("token_without_lease", "holds a claim token without a lease: it would stay claimed forever")
    if lease is not None and token is None:
        broken("lease_without_token", "holds a lease without a claim token: no holder can save or renew it")
    if lease is not None and lease > now + timedelta(seconds=LONGEST_LEASE_SECONDS):
        broken(
            "lease_beyond_any_claim",
            f"claimed until {lease.isoformat()}, further than any lease a claim gives: out of reach of every worker",
        )
    if pause is not None and pause > now + timedelta(seconds=MAX_PAUSE_SECONDS):
        broken("pause_beyond_any_retry", f"paused until {pause.isoformat()}, longer than any retry pause")
    if row["halted"]:
        if row["halt_reason"] not in HALT_REASONS:
            broken("halt_without_reason", f"halted with no known reason ({row['halt_reason']!r})")
        if not row["halt_journaled"]:
            broken("halt_not_journaled", "halted, but its journal has no halt event since its last resume")
    return found


def orphan_violation(blob: Row, grace_seconds: float) -> Violation:
    return Violation(
        "orphaned_audio",
        f"audio ({blob['size_bytes']} bytes, stored {blob['created_at'].isoformat()}) "
        f"that no record points at, older than the sweep's grace of {grace_seconds:g}s",
        blob=blob["id"],
    )


def incomplete_audio_violation(row: Row) -> Violation:
    return Violation(
        "points_at_incomplete_audio",
        f"points at audio blob {row['blob_id']}, which was never marked complete (a blob is usable only once complete)",
        record=row["record_id"],
    )


def windows_violation(row: Row) -> Violation:
    return Violation(
        "windows_out_of_line",
        f"its recognised windows do not run end to end from 0 to "
        f"{row['recognized_seconds']:g}s ({row['breaks']} break(s), the last ending at "
        f"{row['last_end'] or 0:g}s)",
        record=row["record_id"],
    )


def saved_twice_violation(row: Row) -> Violation:
    if row["kind"] == "speakers_saved":
        return Violation(
            "speakers_saved_twice", f"its speakers were saved {row['times']} times", record=row["record_id"]
        )
    return Violation("advanced_twice", f"reached stage {row['stage']} {row['times']} times", record=row["record_id"])


class Snapshot(TypedDict):
    """What the checker reads besides the records, from the same snapshot as they are."""

    now: datetime
    orphan_blobs: Sequence[Row]
    incomplete_audio: Sequence[Row]
    windows: Sequence[Row]
    saved_twice: Sequence[Row]


class FactSource(Protocol):
    """What the checker reads (db.check.Facts): each record through `on_record(row, now)`, then
    the blobs, windows and saves of the `Snapshot`, all from one snapshot."""

    def read(self, grace_seconds: float, on_record: Callable[[Row, datetime], None]) -> Snapshot: ...


def check(facts: FactSource, grace_seconds: float = ORPHAN_GRACE_SECONDS) -> Report:
    """Judge the whole database: every record, every blob, the journal's advances."""
    report = Report()

    def on_record(row: Row, now: datetime) -> None:
        state, found = judge_record(row, now)
        if state is not None:
            report.counts[state.value] += 1
        report.violations.extend(found)

    rest = facts.read(grace_seconds, on_record)
    report.violations.extend(orphan_violation(blob, grace_seconds) for blob in rest["orphan_blobs"])
    report.violations.extend(incomplete_audio_violation(row) for row in rest["incomplete_audio"])
    report.violations.extend(windows_violation(row) for row in rest["windows"])
    report.violations.extend(saved_twice_violation(row) for row in rest["saved_twice"])
    return report
