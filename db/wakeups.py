"""The database's wake-ups: one LISTEN connection that hears, on commit, which step has a record
that became claimable (a trigger on the step rows sends them).

Only one process forwards them to a broker queue. Every worker process keeps a listener, but a
listener of a `group` (the queue's name) LISTENs only while its connection holds that group's
advisory lock; the others stand by and try the lock every few seconds. A wake-up sent to the
broker reaches one idle worker of any process, so a freed record costs one claim instead of one
per process. When the forwarder dies its connection ends, the lock is free, and a standby takes
over within TAKEOVER_SECONDS (and wakes every step, for what it may have missed); the tick
covers those seconds. A listener with no group (workers on
the in-process broker, whose messages reach this process only) always forwards.

A wake-up is only a hint, like the tick: a lost one delays a record until the next tick, a
duplicate costs one empty claim. The connection is re-made whenever it is lost (the server
restarted, the backend was terminated, the network dropped); right after every (re)connect a
wake-up for every step is reported, because notifications sent meanwhile were not heard.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

import psycopg
from loguru import logger

from db.database import CONNECT_TIMEOUT_SECONDS, CONNECTION_BOUNDS
from db.queries import query
from domain.redact import redact_url

RETRY_SECONDS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
# how often a standing-by listener tries to become the forwarder: each try is one small
# transaction, so P processes cost (P-1)/TAKEOVER_SECONDS of them a second while idle; the tick
# covers the wake-ups of the seconds before a takeover. (Waiting in pg_advisory_lock instead
# would cost nothing, but a statement waiting for days holds back VACUUM's horizon.)
TAKEOVER_SECONDS = 5.0


@dataclass(frozen=True)
class Wakeup:
    """A record is claimable for `step` now, or in `delay` seconds. step None: maybe for any
    step (the listener has just (re)connected and may have missed some)."""

    step: str | None
    delay: float = 0.0


ANY_STEP = Wakeup(None)
APPLICATION = "transcriber-wakeups"


def parse(payload: str) -> Wakeup | None:
    """The trigger's payload: `STEP` or `STEP SECONDS`; None for anything else."""
    step, _, rest = payload.partition(" ")
    if not step:
        return None
    try:
        delay = float(rest) if rest else 0.0
    except ValueError:
        return None
    return Wakeup(step, max(delay, 0.0))


class Listener:
    """LISTENs on one connection of its own (autocommit: LISTEN takes effect at once and the
    connection never sits in a transaction) while it is the forwarder. Used from one thread.
    The connection's application_name carries this process's id, so an operator (or a test) can
    tell which process forwards: `SELECT application_name FROM pg_stat_activity`."""

    def __init__(self, url: str, group: str | None = None):
        self.url, self.group = url, group
        self._conn: psycopg.Connection | None = None
        self._failures = 0
        self._next_try = 0.0
        self.backend_pid: int | None = None
        self.forwarding = False

    def receive(self, timeout: float) -> list[Wakeup]:
        """The wake-ups heard within `timeout` seconds (fewer seconds once some arrive)."""
        if self._conn is None:
            return self._connect(timeout)
        if not self.forwarding:
            return self._stand_by(self._conn, timeout)
        try:
            found = [parse(n.payload) for n in self._conn.notifies(timeout=timeout, stop_after=1)]
            # whatever else already arrived, without waiting again
            found += [parse(n.payload) for n in self._conn.notifies(timeout=0)]
        except psycopg.Error as error:
            logger.warning(
                "wake-up listener lost its database connection ({}); reconnecting, the tick still runs",
                type(error).__name__,
            )
            self.close()
            return []
        return [w for w in found if w is not None]

    def _connect(self, timeout: float) -> list[Wakeup]:
        conn = None
        try:
            conn = psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                application_name=f"{APPLICATION} {os.getpid()}",
                **CONNECTION_BOUNDS,
            )
        except psycopg.Error as error:
            if conn is not None:
                conn.close()
            pause = RETRY_SECONDS[min(self._failures, len(RETRY_SECONDS) - 1)]
            if self._failures == 0:
                logger.warning(
                    "wake-up listener cannot reach the database at {} ({}); retrying",
                    redact_url(self.url),
                    type(error).__name__,
                )
            self._failures += 1
            time.sleep(min(pause, timeout))
            return []
        if self._failures:
            logger.info("wake-up listener reconnected")
        self._conn, self._failures, self.backend_pid = conn, 0, conn.info.backend_pid
        self._next_try = 0.0
        return self._stand_by(conn, 0.0)

    def _stand_by(self, conn: psycopg.Connection, timeout: float) -> list[Wakeup]:
        """Try to become the forwarder (at most once a TAKEOVER_SECONDS); on success LISTEN and
        report every stage, since nothing was heard before; else wait out `timeout`."""
        now = time.monotonic()
        if now < self._next_try:
            time.sleep(min(timeout, self._next_try - now))
            return []
        self._next_try = now + TAKEOVER_SECONDS
        try:
            if self.group is not None:
                taken = conn.execute(query("take_wakeup_forwarding"), {"group": self.group}).fetchone()
                if not (taken and taken[0]):
                    return []
            conn.execute(query("listen_wakeups"))
        except psycopg.Error as error:
            logger.warning(
                "wake-up listener lost its database connection ({}); reconnecting, the tick still runs",
                type(error).__name__,
            )
            self.close()
            return []
        self.forwarding = True
        if self.group is not None:
            logger.info("this process forwards the database's wake-ups to queue {}", self.group)
        return [ANY_STEP]

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn, self.backend_pid = self._conn, None, None
            self.forwarding = False  # the lock goes with the connection
            with contextlib.suppress(psycopg.Error):
                conn.close()
