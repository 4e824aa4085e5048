"""The lines about a record that the store writes besides the journal's events of each statement:
the log's context for a record and a claim, and the refusal a stale holder's write leaves behind
in both the journal and the log (P3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger

from db.queries import query
from db.rows import DictConnection
from domain.claims import Claim, HaltReason
from domain.policy import StepPolicy

if TYPE_CHECKING:
    from loguru import Logger


def record_log(record_id: int, stage: str, event: str) -> Logger:
    """The logger for a line about one record: it carries the record's id, stage and event."""
    return logger.bind(record_id=record_id, stage=stage, event=event)


def claim_log(claim: Claim, event: str) -> Logger:
    """The logger for a line about one claim's record: its id, its step's stage, the event and the
    step."""
    return record_log(claim.record_id, claim.step.source, event).bind(step=claim.step.value)


def refuse(conn: DictConnection, claim: Claim, write: str) -> None:
    """A holder's write that took no effect, its claim having moved on: journaled as
    `save_refused`, and a warning in the log."""
    conn.execute(
        query("journal_refusal"),
        {"id": claim.record_id, "step": claim.step.value, "token": claim.token, "write": write},
    )
    claim_log(claim, "save_refused").warning(
        "record {}: {} of a stale {} claim refused (the claim moved on)", claim.record_id, write, claim.step
    )


def log_claimed(claim: Claim, policy: StepPolicy, lost_leases: int) -> None:
    # the journal has every claim; the log shows them at DEBUG (nothing to format else). The
    # record's context goes as keyword arguments, not a `bind`: loguru drops a line below its
    # level before reading them, where a bind builds a logger every claim.
    logger.debug(
        "record {} claimed for {} (lease {:g}s)",
        claim.record_id,
        claim.step,
        policy.lease_seconds,
        record_id=claim.record_id,
        stage=claim.step.source,
        event="claimed",
        step=claim.step.value,
    )
    if lost_leases:
        claim_log(claim, "claimed").warning(
            "record {}: {} earlier claim(s) for {} ran out of lease with nothing written (worker lost); it is "
            "halted at {}",
            claim.record_id,
            lost_leases,
            claim.step,
            policy.max_lost_leases,
        )


def log_halt(claim: Claim, reason: HaltReason, error: str) -> None:
    claim_log(claim, "halted").bind(reason=reason.value).error(
        "record {} halted at stage {} ({}): {} ({})", claim.record_id, claim.step.source, claim.step, reason, error
    )
