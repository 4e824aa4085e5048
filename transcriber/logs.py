"""The one place that configures logging: a readable stderr sink and the optional JSON log.

Everything else just logs, binding `record_id` (and stage, event) to lines about a record.
Nothing private is ever passed to a log call: no transcript text, audio, tokens or passwords.
"""
from __future__ import annotations

import sys
from pathlib import Path

from loguru import logger

_FORMAT = "<green>{time:HH:mm:ss.SSS}</green> <level>{level: <7}</level> {message}"


def configure(*, level: str = "INFO", json_path: Path | None = None, stderr: bool = True) -> None:
    logger.remove()
    if stderr:
        logger.add(sys.stderr, level=level, format=_FORMAT, backtrace=False, diagnose=False)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        # enqueue: safe from many threads and processes writing one file
        logger.add(json_path, level="DEBUG", serialize=True, enqueue=True, backtrace=False, diagnose=False)
