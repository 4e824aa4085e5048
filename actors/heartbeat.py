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
from domain.claims import Abandoned, Claim, ClaimLost
from domain.policy import StepPolicy


class Heartbeat:
    """Keeps a running step's claim alive, stops the step when it must stop, and carries its
    holder writes (checkpoints) under the claim's token.

    The lease is renewed by a thread of its own every `policy.renew_every_seconds`, whatever
    pace the step keeps (a recognizer busy with a long window, a loaded machine) — but only
    while the step shows signs of life: a step that has not beaten for a whole lease is taken
    for hung, and its lease is left to run out so another worker can take the record over.
    The step calls `beat(progress_seconds)` often; it raises ClaimLost once a renewal was
    refused and Abandoned once the worker is stopping.
    """

    def __init__(self, store: Store, claim: Claim, policy: StepPolicy, stop: threading.Event):
        self.store, self.claim, self.policy, self.stop = store, claim, policy, stop
        self.alive_at = time.monotonic()
        self.progress: float | None = None
        self._lost = threading.Event()
        self._done = threading.Event()
        self._renewer = threading.Thread(target=self._renew, name=f"lease-{claim.record_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._renewer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._renewer.join()

    def _renew(self) -> None:
        while not self._done.wait(self.policy.renew_every_seconds):
            if time.monotonic() - self.alive_at > self.policy.lease_seconds:
                logger.bind(record_id=self.claim.record_id).warning(
                    "record {}: {} step gave no sign of life for a whole lease; its lease is left to expire",
                    self.claim.record_id,
                    self.claim.step,
                )
                return
            try:
                renewed = self.store.renew_lease(self.claim, self.policy.lease_seconds, self.progress)
            except Exception as error:  # noqa: BLE001 - the database is away for a moment: the lease has margin
                logger.bind(record_id=self.claim.record_id).warning(
                    "record {}: lease renewal failed, will retry: {}", self.claim.record_id, type(error).__name__
                )
                continue
            if not renewed:
                self._lost.set()
                return

    def __call__(self, progress_seconds: float | None = None) -> None:
        self.alive_at = time.monotonic()
        if progress_seconds is not None:
            self.progress = progress_seconds
        if self.stop.is_set():
            raise Abandoned()
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
        token; ClaimLost if the claim moved on, CheckpointRefused (a failed attempt) if the window
        does not meet the last checkpoint."""
        self(to_seconds)
        if not self.store.checkpoint(self.claim, from_seconds, to_seconds, self.policy.lease_seconds, kept, detail):
            raise ClaimLost()
