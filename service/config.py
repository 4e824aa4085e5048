"""Configuration from the environment. A bad value fails at start with one line naming it.

Each setting is declared once, in SETTINGS: its variable, how it is read and checked, its
default and what it means. `load` reads the environment through those declarations, and the
table of docs/operations.md is printed from them (`python -m service.config --markdown`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
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
from service import setting
from service.setting import TEXT, ConfigError, Kind, Setting, choice, matching, number, written

DAY = 24 * 3600.0
LONGEST_TIME_LIMIT_SECONDS = 365 * DAY  # the most a stage's time limit may be set to
BROKER_SCHEMES = ("redis", "rediss", "amqp", "amqps")
DEFAULT_QUEUE = "transcriber"
MB = 1024 * 1024
TABLE_BEGIN, TABLE_END = "<!-- settings:begin -->", "<!-- settings:end -->"


def check_language(code: str) -> str:
    """`auto` or a language code the recognizers know (`en`, `ru`, …); ValueError otherwise."""
    from audio.models import LANGUAGES

    code = code.strip().lower()
    if code != "auto" and code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}; use auto or a code such as en, ru, de, fr")
    return code


def _database_url(raw: str) -> str:
    """A URL, or key=value pairs as libpq reads them."""
    if not raw.startswith(("postgresql://", "postgres://")) and "=" not in raw:
        raise ValueError("must be a postgresql:// URL or a libpq conninfo string")
    return raw


def _broker_url(raw: str) -> str:
    """A Redis or RabbitMQ address with a host: dramatiq's brokers, none other."""
    parts = urlsplit(raw)
    if parts.scheme not in BROKER_SCHEMES or not parts.hostname:
        raise ValueError(f"must be a redis://HOST… or amqp://HOST… URL, got scheme {parts.scheme!r}")
    return raw


def _retention_days(raw: str) -> float:
    """Zero is refused rather than read as "delete at once" or "keep"."""
    days = number(0, 100 * 365).parse(raw)
    if days <= 0:
        raise ValueError(f"must be more than 0 days (leave it unset to keep audio), got {raw!r}")
    return days


def _of_step(step: Step, what: str) -> str:
    return f"TRANSCRIBER_{step.name}_{what}"


def _per_step() -> tuple[Setting, ...]:
    """The lease and the time limit in the stage: the same two settings for every step, each
    with the step's own default (domain.policy)."""
    leases = (
        Setting(
            _of_step(step, "LEASE_SECONDS"),
            written(DEFAULT_LEASE_SECONDS[step]),
            f"how long a {step} claim holds unrenewed (renewed while the step runs): a worker that dies "
            f"lets it run out, and another worker takes the record up",
            number(1, DAY),
        )
        for step in Step
    )
    limits = (
        Setting(
            _of_step(step, "TIME_LIMIT_SECONDS"),
            written(DEFAULT_TIME_LIMIT_SECONDS[step]),
            f"how long a record may wait for and spend in the {step} step before it is halted",
            number(1, LONGEST_TIME_LIMIT_SECONDS),
        )
        for step in Step
    )
    return (*leases, *limits)


# The declarations read as a table, one setting to a few lines: kept as written, not reflowed.
# fmt: off
PATH = TEXT.then(lambda text: Path(text).expanduser())

SETTINGS: tuple[Setting, ...] = (
    Setting("TRANSCRIBER_DATABASE_URL", None, "the PostgreSQL database the service keeps everything in; unset: "
            "an embedded one under TRANSCRIBER_HOME",
            Kind(_database_url, "a `postgresql://` URL or a libpq conninfo string"), "database_url"),
    Setting("TRANSCRIBER_HOME", "~/.local/share/transcriber", "where the embedded database and the models "
            "this machine keeps live", PATH, "home"),
    Setting("TRANSCRIBER_BROKER_URL", None, "the broker the wake-ups travel on, for workers on many "
            "machines; unset: an in-process broker", Kind(_broker_url, "`redis://…` or `amqp://…`"), "broker_url"),
    # services (or test runs) that share one broker each name their own
    Setting("TRANSCRIBER_QUEUE", DEFAULT_QUEUE, "the broker queue the wake-ups travel on",
            matching(r"[A-Za-z_][A-Za-z0-9._-]{0,99}",
                     "up to 100 letters, digits, '.', '_' or '-', the first a letter or '_'"), "queue"),
    Setting("TRANSCRIBER_ENGINE", "faster-whisper", "the recognizer: `faster-whisper` offline, `pocketsphinx` "
            "the light one, `openai` a remote OpenAI-compatible server",
            choice("engine", "faster-whisper", "pocketsphinx", "openai"), "engine"),
    Setting("TRANSCRIBER_WHISPER_MODEL", "tiny.en", "the faster-whisper model: `tiny.en` (bundled), `base` "
            "(multilingual, the `base` extra), a CTranslate2 model directory, or a name to download",
            attribute="whisper_model"),
    Setting("TRANSCRIBER_LANGUAGE", "auto", "the language of uploads that name none; `auto` detects it",
            Kind(check_language, "`auto` or a code such as `en`, `ru`"), "language"),
    Setting("TRANSCRIBER_DEVICE", "cpu", "where faster-whisper computes", choice("device", "cpu", "cuda"), "device"),
    # `auto` is audio.whisper.default_compute's choice; float32 gives the same text on every CPU
    # measured, at some 2.5 times int8's CPU
    Setting("TRANSCRIBER_COMPUTE_TYPE", "auto", "what faster-whisper computes with; `auto`: float16 on CUDA, "
            "int8 on a CPU with VNNI, float32 on one without",
            choice("compute type", "auto", "int8", "float32", "float16", "int8_float16")
            .then(lambda chosen: None if chosen == "auto" else chosen), "compute_type"),
    # a worker runs a recognizer per worker thread: with several, give each fewer
    Setting("TRANSCRIBER_RECOGNIZER_THREADS", None, "the CPU threads each recognizer process decodes with; "
            "unset: as many as the machine has", number(1, 1024, integer=True), "recognizer_threads"),
    Setting("TRANSCRIBER_RECOGNIZER_TIMEOUT_SECONDS", None, "how long a recognizer may take over one window before "
            "it is killed (a failed attempt); unset: a bound that grows with the window's length",
            number(1, DAY), "recognizer_timeout_seconds"),
    Setting("TRANSCRIBER_OPENAI_BASE_URL", None, "the OpenAI-compatible server's address; required with "
            "`TRANSCRIBER_ENGINE=openai`", TEXT.then(lambda url: url.rstrip("/") or None), "openai_base_url"),
    Setting("TRANSCRIBER_OPENAI_API_KEY", None, "the key sent to that server", attribute="openai_api_key"),
    Setting("TRANSCRIBER_OPENAI_MODEL", "whisper-1", "the model asked of that server", attribute="openai_model"),
    Setting("TRANSCRIBER_DIARIZE", "auto", "who spoke when: `auto` diarizes done records where the `speakers` "
            "extra is installed, `off` never", choice("value", "auto", "off"), "diarize"),
    Setting("TRANSCRIBER_MEANING", "on", "search by meaning: `on` embeds the passages of English records where "
            "the `meaning` extra is installed and the database has pgvector, `off` never (search by words only)",
            choice("value", "on", "off")),
    Setting("TRANSCRIBER_MEANING_WEIGHTS", None, "the folder of the sentence model's weights, fetched into it when "
            "missing; unset: `models/meaning` under TRANSCRIBER_HOME", PATH),
    Setting("TRANSCRIBER_TICK_SECONDS", "1", "how often the scheduler sends the per-step wake-ups",
            number(0.05, 3600), "tick_seconds"),
    *_per_step(),
    Setting("TRANSCRIBER_MAX_ATTEMPTS", written(DEFAULT_MAX_ATTEMPTS), "failed attempts of a step before the "
            "record is halted", number(1, 1000, integer=True)),
    Setting("TRANSCRIBER_BACKOFF_SECONDS", written(DEFAULT_BACKOFF_SECONDS), "the pause after a failed "
            "attempt; it doubles with each failure, up to a day", number(0, DAY)),
    # a record that kills its worker must not cycle forever
    Setting("TRANSCRIBER_MAX_LOST_LEASES", written(DEFAULT_MAX_LOST_LEASES), "how many times a record's "
            "claims may run out of lease in one stage (its worker died or hung) before it is halted with "
            "`worker_lost`", number(1, 1000, integer=True)),
    Setting("TRANSCRIBER_MAX_UPLOAD_MB", "512", "the largest upload, in megabytes",
            number(1, 1024 * 1024).then(lambda megabytes: int(megabytes * MB)), "max_upload_bytes"),
    Setting("TRANSCRIBER_MAX_AUDIO_SECONDS", "14400", "the longest recording: a longer one is refused at "
            "intake, or halted with `audio_too_long` if it only turns out longer", number(1, 7 * DAY),
            "max_audio_seconds"),
    # well under the official client's 600 s read timeout, so the client hears the answer (or the
    # 504 naming the card) instead of timing out and retrying
    Setting("TRANSCRIBER_SYNC_WAIT_SECONDS", "540", "how long `POST /v1/audio/transcriptions` waits for the text "
            "before its 504; keep it under the clients' read timeout", number(0, DAY), "sync_wait_seconds"),
    Setting("TRANSCRIBER_AUDIO_RETENTION_DAYS", None, "how long the original audio of a done record is kept "
            "(its record, card and text stay); unset: as long as the record",
            Kind(_retention_days, "a number of days, fractions allowed, more than 0"), "audio_retention_days"),
    Setting("TRANSCRIBER_UPLOAD_EXPIRY_HOURS", "24", "how long a resumable upload (`/uploads`) may go without a "
            "request that writes to it before the sweep removes it with its bytes", number(0.001, 365 * 24),
            "upload_expiry_hours"),
    # a browser tab that died mid-recording never says it stopped; what it sent is kept
    Setting("TRANSCRIBER_RECORDING_IDLE_SECONDS", "30", "how long a resumable upload of unknown length (a "
            "recording in the page) may go without bytes before it is finished into a record of what arrived, "
            "marked cut short", number(1, DAY), "recording_idle_seconds"),
    Setting("TRANSCRIBER_SESSION_IDLE_SECONDS", "43200", "how long a browser session may go unused before it "
            "ends: between nine tenths of it and all of it after its last request", number(1, 90 * DAY),
            "session_idle_seconds"),
    Setting("TRANSCRIBER_LOG_JSON", None, "a file the service also logs to, as JSON lines", PATH,
            "log_json"),
    Setting("TRANSCRIBER_METRICS_PORT", None, "where a `dramatiq actors` run serves the Prometheus metrics of "
            "all its worker processes, or on the next free port after it", number(1, 65535, integer=True),
            "metrics_port"),
)
# fmt: on


_BY_VARIABLE = {declared.variable: declared for declared in SETTINGS}


@dataclass(frozen=True)
class Settings:
    """The configuration the service runs with, as `load` reads it: what each attribute means,
    its variable and its default are in SETTINGS; `policies` gathers the step settings."""

    database_url: str | None
    home: Path
    broker_url: str | None
    queue: str
    engine: str
    whisper_model: str
    language: str
    device: str
    compute_type: str | None
    recognizer_threads: int | None
    recognizer_timeout_seconds: float | None
    openai_base_url: str | None
    openai_api_key: str | None
    openai_model: str
    diarize: str
    tick_seconds: float
    policies: dict[Step, StepPolicy]
    max_upload_bytes: int
    max_audio_seconds: float
    sync_wait_seconds: float
    audio_retention_days: float | None
    upload_expiry_hours: float
    recording_idle_seconds: float
    session_idle_seconds: float
    log_json: Path | None
    metrics_port: int | None

    @property
    def diarize_on(self) -> bool:
        """Whether done records are queued for the diarize step (unless their upload said off)."""
        from audio import speakers

        return self.diarize == "auto" and speakers.available()

    @property
    def audio_retention_seconds(self) -> float | None:
        return None if self.audio_retention_days is None else self.audio_retention_days * DAY

    @property
    def upload_expiry_seconds(self) -> float:
        return self.upload_expiry_hours * 3600

    def policy(self, step: Step) -> StepPolicy:
        return self.policies[step]


def load(env: Mapping[str, str] | None = None) -> Settings:
    """The settings `env` (the process's environment by default) gives; ConfigError naming the
    first variable that cannot be used."""
    env = os.environ if env is None else env
    values = {declared.variable: declared.read(env) for declared in SETTINGS}
    _check_together(values)
    as_they_are = {declared.attribute: values[declared.variable] for declared in SETTINGS if declared.attribute}
    return Settings(**as_they_are, policies=_policies(values))


def read(variable: str, env: Mapping[str, str]) -> Any:
    """One setting, checked, without the rest: for what must be known before `load` runs."""
    return _BY_VARIABLE[variable].read(env)


def broker_url_of(env: Mapping[str, str]) -> str | None:
    """TRANSCRIBER_BROKER_URL, checked: None for the in-process broker."""
    return read("TRANSCRIBER_BROKER_URL", env)


def queue_of(env: Mapping[str, str]) -> str:
    """TRANSCRIBER_QUEUE, checked: the broker queue the wake-ups travel on."""
    return read("TRANSCRIBER_QUEUE", env)


def _check_together(values: Mapping[str, Any]) -> None:
    """What no variable says wrong alone: the openai engine without a usable server address, a
    language the chosen (English-only) model cannot write."""
    engine, base_url = values["TRANSCRIBER_ENGINE"], values["TRANSCRIBER_OPENAI_BASE_URL"]
    if engine == "openai":
        if base_url is None:
            raise ConfigError("TRANSCRIBER_OPENAI_BASE_URL", "is required with TRANSCRIBER_ENGINE=openai")
        if urlsplit(base_url).scheme not in ("http", "https") or not urlsplit(base_url).hostname:
            raise ConfigError("TRANSCRIBER_OPENAI_BASE_URL", "must be an http:// or https:// URL")
    language, model = values["TRANSCRIBER_LANGUAGE"], values["TRANSCRIBER_WHISPER_MODEL"]
    if engine == "faster-whisper" and language not in ("auto", "en"):
        from audio.models import english_only

        if english_only(model):
            raise ConfigError(
                "TRANSCRIBER_LANGUAGE",
                f"{language!r} needs a multilingual model; {model} knows English only (TRANSCRIBER_WHISPER_MODEL=base)",
            )


def _policies(values: Mapping[str, Any]) -> dict[Step, StepPolicy]:
    return {
        step: StepPolicy(
            lease_seconds=values[_of_step(step, "LEASE_SECONDS")],
            time_limit_seconds=values[_of_step(step, "TIME_LIMIT_SECONDS")],
            max_attempts=values["TRANSCRIBER_MAX_ATTEMPTS"],
            backoff_seconds=values["TRANSCRIBER_BACKOFF_SECONDS"],
            max_lost_leases=values["TRANSCRIBER_MAX_LOST_LEASES"],
        )
        for step in Step
    }


def markdown_table() -> str:
    """The settings table of docs/operations.md, as it stands between its marker lines."""
    return setting.markdown_table(SETTINGS)


def table_in(document: str) -> str:
    """The part of `document` between the settings markers, blank lines around it dropped."""
    return _parts(document)[1].strip("\n")


def with_table(document: str) -> str:
    """`document` with the declarations' table between its settings markers."""
    before, _, after = _parts(document)
    return f"{before}{TABLE_BEGIN}\n{markdown_table()}\n{TABLE_END}{after}"


def _parts(document: str) -> tuple[str, str, str]:
    """What stands before the begin marker, between the markers, and after the end marker."""
    before, begin, rest = document.partition(TABLE_BEGIN)
    between, end, after = rest.partition(TABLE_END)
    if not (begin and end):
        raise ValueError(f"the markers {TABLE_BEGIN} and {TABLE_END} are not both there")
    return before, between, after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.config", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--markdown",
        nargs="?",
        const="-",
        metavar="DOCUMENT",
        required=True,
        help="print the settings table; given a DOCUMENT, write it between that file's markers",
    )
    where = parser.parse_args(argv).markdown
    if where == "-":
        print(markdown_table())  # noqa: T201 - the table goes to standard output, as asked
    else:
        path = Path(where)
        path.write_text(with_table(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
