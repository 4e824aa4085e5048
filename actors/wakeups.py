"""Feeds this process's claim actors from the database's wake-ups, on a thread of its own.

A record accepted, advanced by a save, released or resumed wakes the step that can take it
within milliseconds of the commit; the end of a retry pause is a timer here. The tick stays the
safety net for what no commit announces (a lease running out) and for wake-ups lost while the
listener reconnects. One listener per process, started with its worker and stopped with it;
only one listener of all processes forwards at a time (db.wakeups), so a wake-up sent to the
broker costs one claim by whichever worker is idle, not one per process.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable

from loguru import logger

from db.wakeups import Listener
from domain.stages import Step

# how long one wait for notifications lasts at most: how quickly stop() is noticed
POLL_SECONDS = 0.25
# wake-ups sent per step for one batch of notifications: enough to reach every worker thread,
# while a burst of thousands of uploads does not turn into thousands of messages at once (each
# run that finds work sends the next itself)
MAX_SENDS_PER_BATCH = 8
# pause ends remembered for later; more than this waits for the tick
MAX_TIMERS = 10_000


class Wakeups:
    def __init__(self, url: str, send: Callable[[Step], object], group: str | None = None):
        self.listener = Listener(url, group)
        self._send = send
        self._timers: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wakeups", daemon=True)

    def start(self) -> Wakeups:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self.listener.receive(self._wait())
                counts: dict[Step, int] = {}
                now = time.monotonic()
                for wakeup in batch:
                    steps = list(Step) if wakeup.step is None else [self._step(wakeup.step)]
                    for step in filter(None, steps):
                        if wakeup.delay > 0:
                            self._later(now + wakeup.delay, step)
                        else:
                            counts[step] = counts.get(step, 0) + 1
                while self._timers and self._timers[0][0] <= now:
                    step = Step(heapq.heappop(self._timers)[1])
                    counts[step] = counts.get(step, 0) + 1
                for step, count in counts.items():
                    for _ in range(min(count, MAX_SENDS_PER_BATCH)):
                        self._wake(step)
        finally:
            self.listener.close()

    def _wait(self) -> float:
        if self._timers:
            return max(0.0, min(POLL_SECONDS, self._timers[0][0] - time.monotonic()))
        return POLL_SECONDS

    @staticmethod
    def _step(name: str) -> Step | None:
        try:
            return Step(name)
        except ValueError:  # a step this version does not know
            return None

    def _later(self, due: float, step: Step) -> None:
        if len(self._timers) < MAX_TIMERS:
            heapq.heappush(self._timers, (due, step.value))

    def _wake(self, step: Step) -> None:
        if self._stop.is_set():  # stopped meanwhile: this process's actors take no more work
            return
        try:
            self._send(step)
        except Exception as error:  # noqa: BLE001 - the broker is away for a moment: the tick will follow
            logger.warning("wake-up for {} not sent: {}", step, type(error).__name__)
