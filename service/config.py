"""Configuration from the environment. A bad value fails at start with one line naming it."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from domain.policy import (
    DEFAULT_BACKOFF_SECONDS,
    DEFAULT_LEASE_SECONDS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_LOST_LEASES,
    DEFAULT_TIME_LIMIT_SECONDS,
    StepPolicy,
)
from domain.stages import Step

ENGINES = ("faster-whisper", "pocketsphinx", "openai")
DEVICES = ("cpu", "cuda")
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps")
DAY = 24 * 3600.0
LONGEST_TIME_LIMIT_SECONDS = 365 * DAY  # the most a stage's time limit may be set to
SYNC_WAIT_SECONDS = 540.0  # the OpenAI-compatible wait, below the official client's 600 s timeout
DEFAULT_QUEUE = "transcriber"
_QUEUE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,99}")


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
    whisper_model: str = "tiny.en"
    language: str = "auto"        # the default for uploads that name none; "auto" detects it
    device: str = "cpu"
    max_audio_seconds: float = 4 * 3600.0
    # the OpenAI-compatible call's wait: well under the official client's 600 s read timeout, so
    # the client hears the answer (or the 504 naming the card) instead of timing out and retrying
    sync_wait_seconds: float = SYNC_WAIT_SECONDS
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    openai_model: str = "whisper-1"
    # how long a recognizer process may take over one window before it is killed; None: a bound
    # that grows with the window's length
    recognizer_timeout_seconds: float | None = None
    # the CPU threads each recognizer process decodes with; None: as many as the machine has.
    # A worker with several threads runs a recognizer per thread, each with this many.
    recognizer_threads: int | None = None
    # what faster-whisper computes with; None: float16 on CUDA, int8 on a CPU with VNNI, float32 on
    # one without (audio.whisper.default_compute)
    compute_type: str | None = None
    # where a worker process serves its Prometheus metrics (the first free port from here on)
    metrics_port: int | None = None
    queue: str = DEFAULT_QUEUE
    # how long the original audio of a done record is kept; None: for as long as the record
    audio_retention_days: float | None = None
    # a browser session unused this long has ended (web.sessions)
    session_idle_seconds: float = 12 * 3600.0
    # who spoke when (issue 19): auto diarizes where the `speakers` extra is installed; off never
    diarize: str = "auto"

    @property
    def diarize_on(self) -> bool:
        """Whether done records are queued for the diarize step (unless their upload said off)."""
        from audio import speakers

        return self.diarize == "auto" and speakers.available()

    @property
    def audio_retention_seconds(self) -> float | None:
        return None if self.audio_retention_days is None else self.audio_retention_days * DAY

    def policy(self, step: Step) -> StepPolicy:
        return self.policies[step]


def _number(env: Mapping[str, str], name: str, default: float | None, *, minimum: float, maximum: float,
            integer: bool = False) -> float:
    """A finite number within [minimum, maximum]: `inf`, `nan` and absurd values stop the start
    here instead of overflowing a timer or an interval later."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(name, f"must be {kind}, got {raw!r}") from None
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise ConfigError(name, f"must be between {minimum:g} and {maximum:g}, got {raw!r}")
    return value


def _language(env: Mapping[str, str]) -> str:
    raw = env.get("TRANSCRIBER_LANGUAGE", "").strip().lower() or "auto"
    try:
        return check_language(raw)
    except ValueError as error:
        raise ConfigError("TRANSCRIBER_LANGUAGE", str(error)) from None


def check_language(code: str) -> str:
    """`auto` or a language code the recognizers know (`en`, `ru`, …); ValueError otherwise."""
    from audio.models import LANGUAGES

    code = code.strip().lower()
    if code != "auto" and code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}; use auto or a code such as en, ru, de, fr")
    return code


def broker_url_of(env: Mapping[str, str]) -> str | None:
    """TRANSCRIBER_BROKER_URL, checked: None for the in-process broker."""
    broker_url = env.get("TRANSCRIBER_BROKER_URL", "").strip() or None
    if broker_url is not None:
        parts = urlsplit(broker_url)
        if parts.scheme not in BROKER_SCHEMES or not parts.hostname:
            raise ConfigError("TRANSCRIBER_BROKER_URL",
                              f"must be a redis://HOST… or amqp://HOST… URL, got scheme {parts.scheme!r}")
    return broker_url


def queue_of(env: Mapping[str, str]) -> str:
    """TRANSCRIBER_QUEUE, checked: the broker queue the wake-ups travel on. Services (or test
    runs) that share one broker each name their own."""
    queue = env.get("TRANSCRIBER_QUEUE", "").strip() or DEFAULT_QUEUE
    if not _QUEUE_NAME.fullmatch(queue):
        raise ConfigError("TRANSCRIBER_QUEUE", f"must be letters, digits, '.', '_' or '-' (at most 100), got {queue!r}")
    return queue


def load(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    database_url = env.get("TRANSCRIBER_DATABASE_URL", "").strip() or None
    if database_url is not None and not database_url.startswith(("postgresql://", "postgres://")) \
            and "=" not in database_url:
        raise ConfigError("TRANSCRIBER_DATABASE_URL", "must be a postgresql:// URL or a libpq conninfo string")

    broker_url = broker_url_of(env)

    engine = env.get("TRANSCRIBER_ENGINE", "").strip() or "faster-whisper"
    if engine not in ENGINES:
        raise ConfigError("TRANSCRIBER_ENGINE", f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    device = env.get("TRANSCRIBER_DEVICE", "").strip().lower() or "cpu"
    if device not in DEVICES:
        raise ConfigError("TRANSCRIBER_DEVICE", f"unknown device {device!r}; one of {', '.join(DEVICES)}")
    openai_base_url = env.get("TRANSCRIBER_OPENAI_BASE_URL", "").strip().rstrip("/") or None
    if engine == "openai":
        if openai_base_url is None:
            raise ConfigError("TRANSCRIBER_OPENAI_BASE_URL", "is required with TRANSCRIBER_ENGINE=openai")
        if urlsplit(openai_base_url).scheme not in ("http", "https") or not urlsplit(openai_base_url).hostname:
            raise ConfigError("TRANSCRIBER_OPENAI_BASE_URL", "must be an http:// or https:// URL")

    max_attempts = int(_number(env, "TRANSCRIBER_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS, minimum=1, maximum=1000,
                               integer=True))
    backoff = _number(env, "TRANSCRIBER_BACKOFF_SECONDS", DEFAULT_BACKOFF_SECONDS, minimum=0, maximum=DAY)
    max_lost = int(_number(env, "TRANSCRIBER_MAX_LOST_LEASES", DEFAULT_MAX_LOST_LEASES, minimum=1, maximum=1000,
                           integer=True))
    policies = {}
    for step in Step:
        prefix = f"TRANSCRIBER_{step.name}_"
        policies[step] = StepPolicy(
            lease_seconds=_number(env, prefix + "LEASE_SECONDS", DEFAULT_LEASE_SECONDS[step], minimum=1,
                                  maximum=DAY),
            time_limit_seconds=_number(env, prefix + "TIME_LIMIT_SECONDS", DEFAULT_TIME_LIMIT_SECONDS[step],
                                       minimum=1, maximum=LONGEST_TIME_LIMIT_SECONDS),
            max_attempts=max_attempts,
            backoff_seconds=backoff,
            max_lost_leases=max_lost,
        )

    whisper_model = env.get("TRANSCRIBER_WHISPER_MODEL", "").strip() or "tiny.en"
    language = _language(env)
    if engine == "faster-whisper" and language not in ("auto", "en"):
        from audio.models import english_only

        if english_only(whisper_model):
            raise ConfigError("TRANSCRIBER_LANGUAGE", f"{language!r} needs a multilingual model; "
                              f"{whisper_model} knows English only (TRANSCRIBER_WHISPER_MODEL=base)")
    home = Path(env.get("TRANSCRIBER_HOME", "").strip() or "~/.local/share/transcriber").expanduser()
    log_json = env.get("TRANSCRIBER_LOG_JSON", "").strip() or None
    return Settings(
        database_url=database_url,
        home=home,
        broker_url=broker_url,
        engine=engine,
        tick_seconds=_number(env, "TRANSCRIBER_TICK_SECONDS", 1.0, minimum=0.05, maximum=3600),
        policies=policies,
        max_upload_bytes=int(_number(env, "TRANSCRIBER_MAX_UPLOAD_MB", 512, minimum=1, maximum=1024 * 1024)
                             * 1024 * 1024),
        log_json=Path(log_json).expanduser() if log_json else None,
        whisper_model=whisper_model,
        language=language,
        device=device,
        max_audio_seconds=_number(env, "TRANSCRIBER_MAX_AUDIO_SECONDS", 4 * 3600.0, minimum=1, maximum=7 * DAY),
        sync_wait_seconds=_number(env, "TRANSCRIBER_SYNC_WAIT_SECONDS", SYNC_WAIT_SECONDS, minimum=0, maximum=DAY),
        openai_base_url=openai_base_url,
        openai_api_key=env.get("TRANSCRIBER_OPENAI_API_KEY", "").strip() or None,
        openai_model=env.get("TRANSCRIBER_OPENAI_MODEL", "").strip() or "whisper-1",
        recognizer_timeout_seconds=_number(env, "TRANSCRIBER_RECOGNIZER_TIMEOUT_SECONDS", None, minimum=1,
                                           maximum=DAY),
        recognizer_threads=_number(env, "TRANSCRIBER_RECOGNIZER_THREADS", None, minimum=1, maximum=1024,
                                   integer=True),
        compute_type=_compute_type(env),
        metrics_port=_port(env, "TRANSCRIBER_METRICS_PORT"),
        queue=queue_of(env),
        audio_retention_days=_retention_days(env),
        session_idle_seconds=_number(env, "TRANSCRIBER_SESSION_IDLE_SECONDS", 12 * 3600.0, minimum=1, maximum=90 * DAY),
        diarize=_choice(env, "TRANSCRIBER_DIARIZE", ("auto", "off")),
    )


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (the first when unset)."""
    raw = env.get(name, "").strip().lower() or choices[0]
    if raw not in choices:
        raise ConfigError(name, f"must be one of {', '.join(choices)}, got {raw!r}")
    return raw


def _compute_type(env: Mapping[str, str]) -> str | None:
    """TRANSCRIBER_COMPUTE_TYPE: auto (unset) leaves it to the device and the CPU
    (audio.whisper.default_compute); float32 gives the same text on every CPU measured, at some
    2.5 times int8's CPU."""
    chosen = _choice(env, "TRANSCRIBER_COMPUTE_TYPE", ("auto", "int8", "float32", "float16", "int8_float16"))
    return None if chosen == "auto" else chosen


def _retention_days(env: Mapping[str, str]) -> float | None:
    """TRANSCRIBER_AUDIO_RETENTION_DAYS: a positive number of days, fractions allowed; unset keeps
    the audio. Zero is refused rather than read as "delete at once" or "keep"."""
    name = "TRANSCRIBER_AUDIO_RETENTION_DAYS"
    days = _number(env, name, None, minimum=0, maximum=100 * 365)
    if days is not None and days <= 0:
        raise ConfigError(name, f"must be more than 0 days (leave it unset to keep audio), got {env[name].strip()!r}")
    return days


def _port(env: Mapping[str, str], name: str) -> int | None:
    value = _number(env, name, None, minimum=1, maximum=65535, integer=True)
    return None if value is None else int(value)
