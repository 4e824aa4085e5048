"""The one place that configures logging: a readable stderr sink and the optional JSON log.

Everything else just logs, binding `record_id` (and stage, event) to lines about a record.
Nothing private is ever passed to a log call: no transcript text, audio, tokens or passwords.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

from loguru import logger

_FORMAT = "<green>{time:HH:mm:ss.SSS}</green> <level>{level: <7}</level> {message}"


_configured = False


def configure(*, level: str = "INFO", json_path: Path | None = None, stderr: bool = True) -> None:
    global _configured
    _configured = True
    # dramatiq and APScheduler speak through the standard library: only their warnings matter,
    # and a tick skipped because the last one still runs is the design (coalesce), not news
    for name in ("dramatiq", "pika"):
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    # the pool retries a lost connection by itself; what fails for good reaches our own code
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    logger.remove()
    if stderr:
        logger.add(sys.stderr, level=level, format=_FORMAT, backtrace=False, diagnose=False)
    if json_path is not None:
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            # enqueue: safe from many threads and processes writing one file
            logger.add(json_path, level="DEBUG", serialize=True, enqueue=True, backtrace=False, diagnose=False)
        except OSError as error:
            from service.config import ConfigError

            problem = f"cannot write the log at {json_path}: {error.strerror}"
            raise ConfigError("TRANSCRIBER_LOG_JSON", problem) from None


def configure_once(**options) -> None:
    """Configure unless a process's entry point (the CLI, a test) already did."""
    if not _configured:
        configure(**options)


class Reachability:
    """Whether this process reaches the database, as its workers found it: one warning line
    when it stops answering, one when it answers again, however many attempts fail between
    (an idle worker tries to claim every tick). `who` keeps trying: the workers, or a watcher
    of a folder."""

    def __init__(self, who: str = "the workers keep") -> None:
        self._lock = threading.Lock()
        self._unreachable = False
        self.who = who

    def lost(self, error: BaseException) -> None:
        if self._change(True):
            logger.warning("database unreachable ({}); {} trying", type(error).__name__, self.who)

    def answered(self) -> None:
        if self._change(False):
            logger.warning("database reachable again")

    def _change(self, unreachable: bool) -> bool:
        with self._lock:
            changed, self._unreachable = self._unreachable != unreachable, unreachable
        return changed


database = Reachability()  # this process's
