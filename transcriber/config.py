"""Configuration from the environment. A bad value fails at start with one line naming it."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from audio.engines import ENGINES as engine_names
from domain.policy import (
    DEFAULT_BACKOFF_SECONDS,
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_TIME_LIMIT_SECONDS,
    StepPolicy,
)
from domain.stages import Step

ENGINES = tuple(engine_names)
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps")


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""

    def __init__(self, variable: str, problem: str):
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    home: Path
    broker_url: str | None
    engine: str
    tick_seconds: float
    policies: dict[Step, StepPolicy]
    max_upload_bytes: int
    log_json: Path | None

    def policy(self, step: Step) -> StepPolicy:
        return self.policies[step]


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float, integer: bool = False) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(name, f"must be {kind}, got {raw!r}") from None
    if value < minimum or value != value:
        raise ConfigError(name, f"must be at least {minimum:g}, got {raw!r}")
    return value


def load(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    database_url = env.get("TRANSCRIBER_DATABASE_URL", "").strip() or None
    if database_url is not None and not database_url.startswith(("postgresql://", "postgres://")) \
            and "=" not in database_url:
        raise ConfigError("TRANSCRIBER_DATABASE_URL", "must be a postgresql:// URL or a libpq conninfo string")

    broker_url = env.get("TRANSCRIBER_BROKER_URL", "").strip() or None
    if broker_url is not None:
        parts = urlsplit(broker_url)
        if parts.scheme not in BROKER_SCHEMES or not parts.hostname:
            raise ConfigError("TRANSCRIBER_BROKER_URL",
                              f"must be a redis://HOST… or amqp://HOST… URL, got scheme {parts.scheme!r}")

    engine = env.get("TRANSCRIBER_ENGINE", "").strip() or "pocketsphinx"
    if engine not in ENGINES:
        raise ConfigError("TRANSCRIBER_ENGINE", f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")

    max_attempts = int(_number(env, "TRANSCRIBER_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS, minimum=1, integer=True))
    backoff = _number(env, "TRANSCRIBER_BACKOFF_SECONDS", DEFAULT_BACKOFF_SECONDS, minimum=0)
    policies = {}
    for step in Step:
        prefix = f"TRANSCRIBER_{step.name}_"
        policies[step] = StepPolicy(
            lease_seconds=_number(env, prefix + "LEASE_SECONDS", DEFAULT_LEASE_SECONDS[step], minimum=1),
            time_limit_seconds=_number(env, prefix + "TIME_LIMIT_SECONDS", DEFAULT_TIME_LIMIT_SECONDS[step], minimum=1),
            max_attempts=max_attempts,
            backoff_seconds=backoff,
        )

    home = Path(env.get("TRANSCRIBER_HOME", "").strip() or "~/.local/share/transcriber").expanduser()
    log_json = env.get("TRANSCRIBER_LOG_JSON", "").strip() or None
    return Settings(
        database_url=database_url,
        home=home,
        broker_url=broker_url,
        engine=engine,
        tick_seconds=_number(env, "TRANSCRIBER_TICK_SECONDS", 1.0, minimum=0.05),
        policies=policies,
        max_upload_bytes=int(_number(env, "TRANSCRIBER_MAX_UPLOAD_MB", 512, minimum=1) * 1024 * 1024),
        log_json=Path(log_json).expanduser() if log_json else None,
    )
