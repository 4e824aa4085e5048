"""The heartbeat of a running step: its lease kept alive, its stop signals, its checkpoints.

A step knows nothing of claims and leases; it calls `beat(progress)` often and
`beat.checkpoint(...)` after each window of work. Everything that keeps the claim its own,
or notices that it no longer is, happens here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from loguru import logger

from db import Store
from db.bounds import bounded
from db.database import PooledConnection, unreachable
from domain.claims import Abandoned, Claim, ClaimLost
from domain.policy import StepPolicy

# A renewal that failed is tried again this soon (or at the lease's third, if sooner), so a
# database away for a moment costs a moment.
RETRY_SECONDS = 1.0


class LeaseRunOut(ClaimLost):
    """The lease could not be renewed before its end (the database out of reach): the claim may
    be another worker's by now, so the step stops, writing nothing more (P3)."""


class Heartbeat:
    """Keeps a running step's claim alive, stops the step when it must stop, and carries its
    holder writes (checkpoints) under the claim's token.

    The lease is renewed by a thread of its own every `policy.renew_every_seconds`, whatever
    pace the step keeps (a recognizer busy with a long window, a loaded machine) — but only
    while the step shows signs of life: a step that has not beaten for a whole lease is taken
    for hung, and its lease is left to run out so another worker can take the record over.
    The renewals go on a connection of the heartbeat's own, never waiting behind the pool's
    users, each bounded by the time left on the lease. When the lease cannot be renewed before
    it ends (the database out of reach), the heartbeat says so in one line and the step stops
    just before the end, so a worker cut off from the database spends nothing on a record that
    another worker takes up at the lease's end.
    The step calls `beat(progress_seconds)` often; it raises ClaimLost once a renewal was
    refused, LeaseRunOut once the lease could not be renewed, and Abandoned once the worker is
    stopping.
    """

    def __init__(self, store: Store, claim: Claim, policy: StepPolicy, stop: threading.Event):
        self.store, self.claim, self.policy, self.stop = store, claim, policy, stop
        self.alive_at = time.monotonic()
        # when the lease ends, as far as this holder knows: the claim was made just before
        self.lease_ends = self.alive_at + policy.lease_seconds
        self.progress: float | None = None
        self._lost = threading.Event()
        self._run_out = threading.Event()
        self._done = threading.Event()
        self._failing: BaseException | None = None
        self._conn: PooledConnection | None = None
        self._renewer = threading.Thread(target=self._renew, name=f"lease-{claim.record_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._renewer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._renewer.join()

    @property
    def margin(self) -> float:
        """How long before the lease's end a step that could not renew it stops: a tenth of the
        lease, 5 s at most."""
        return min(self.policy.lease_seconds / 10, 5.0)

    def lease_left(self) -> float:
        """Seconds until the lease ends, as far as this holder knows."""
        return self.lease_ends - time.monotonic()

    def _left(self) -> float:
        """Seconds left until the step must stop unless the lease is renewed."""
        return self.lease_ends - self.margin - time.monotonic()

    def _renew(self) -> None:
        try:
            while not self._done.wait(self._pause()):
                if time.monotonic() - self.alive_at > self.policy.lease_seconds:
                    logger.bind(record_id=self.claim.record_id).warning(
                        "record {}: {} step gave no sign of life for a whole lease; its lease is left to expire",
                        self.claim.record_id,
                        self.claim.step,
                    )
                    return
                if not self._renew_once():
                    return
        finally:
            self._close()

    def _pause(self) -> float:
        every = self.policy.renew_every_seconds
        if self._failing is not None:
            every = min(every, RETRY_SECONDS)
        return max(0.0, min(every, self._left()))

    def _renew_once(self) -> bool:
        """One renewal; False once the step must stop (the claim refused or the lease run out)."""
        left = self._left()
        if left <= 0:
            self._give_up()
            return False
        asked = time.monotonic()
        try:
            with bounded(left):
                conn = self._connection(left)
                with self.store.db.on(conn):
                    renewed = self.store.renew_lease(self.claim, self.policy.lease_seconds, self.progress)
        except Exception as error:  # noqa: BLE001 - out of reach for now: tried again until the lease ends
            self._close()
            if self._failing is None and not unreachable(error):
                logger.bind(record_id=self.claim.record_id).warning(
                    "record {}: lease renewal failed, will retry: {}", self.claim.record_id, type(error).__name__
                )
            self._failing = error
            return True
        if not renewed:
            self._lost.set()
            return False
        self.lease_ends, self._failing = asked + self.policy.lease_seconds, None
        return True

    def _give_up(self) -> None:
        logger.bind(record_id=self.claim.record_id, stage=self.claim.step.source, event="lease_run_out").warning(
            "record {}: {} step stopped: its lease could not be renewed before its end ({}); "
            "another worker takes the record up",
            self.claim.record_id,
            self.claim.step,
            "no renewal in time" if self._failing is None else type(self._failing).__name__,
        )
        self._run_out.set()

    def _connection(self, timeout: float) -> PooledConnection:
        if self._conn is None or self._conn.closed:
            self._conn = self.store.db.own_connection(timeout)
        return self._conn

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.pgconn.finish()  # sends nothing that could wait on a silent peer

    def __call__(self, progress_seconds: float | None = None) -> None:
        self.alive_at = time.monotonic()
        if progress_seconds is not None:
            self.progress = progress_seconds
        if self.stop.is_set():
            raise Abandoned()
        if self._run_out.is_set():
            raise LeaseRunOut()
        if self._lost.is_set():
            raise ClaimLost()

    def checkpoint(
        self,
        from_seconds: float,
        to_seconds: float,
        kept: Mapping[str, object],
        detail: Mapping[str, object] | None = None,
    ) -> None:
        """Save one window of the step's work (`kept`: what the step's checkpoint keeps) under the
        token, waiting no longer than the lease lasts; ClaimLost if the claim moved on,
        LeaseRunOut if the lease ran out meanwhile, CheckpointRefused (a failed attempt) if the
        window does not meet the last checkpoint."""
        self(to_seconds)
        asked = time.monotonic()
        try:
            with bounded(max(self.lease_ends - asked, 0.1)):
                saved = self.store.checkpoint(
                    self.claim, from_seconds, to_seconds, self.policy.lease_seconds, kept, detail
                )
        except Exception:
            # bounded by the lease's end, which the heartbeat gives up before: its verdict stands
            if self._run_out.is_set():
                raise LeaseRunOut() from None
            raise
        if not saved:
            raise ClaimLost()
        self.lease_ends = max(self.lease_ends, asked + self.policy.lease_seconds)
