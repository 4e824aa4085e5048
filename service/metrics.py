"""Prometheus metrics: what this process did (claims, saves, refused writes, step runs and their
durations, recognition's real-time factor) and, read from the database when scraped, where the
records stand (per stage, halted by reason, waiting out a pause), the audio bytes stored and the
records owed passages for search by meaning.

The API serves both at GET /metrics. The worker processes of a `dramatiq actors` run serve
their counters, summed over all of them, on one port, TRANSCRIBER_METRICS_PORT, when that is
set: each writes prometheus_client's multiprocess files in the run's own directory and one
exporter process of the run reads them all (service.machine_metrics). A metric update that
cannot reach its file (the run stopping) is dropped with a warning: metrics never fail a step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from loguru import logger
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from service import machine_metrics

if TYPE_CHECKING:
    from db import Store

SHARED_DIRECTORY = machine_metrics.share_across_processes()  # before any metric is made

CLAIMS = Counter("transcriber_claims", "Claim attempts by step and result (claimed, empty).", ["step", "result"])
SAVES = Counter("transcriber_saves", "Step results saved (the record advanced).", ["step"])
REFUSED = Counter(
    "transcriber_refused_writes",
    "Holder writes refused because the claim had moved on (save, failure, halt, lease).",
    ["step"],
)
STEP_RUNS = Counter("transcriber_step_runs", "Step runs by outcome.", ["step", "outcome"])
STEP_SECONDS = Histogram(
    "transcriber_step_duration_seconds",
    "Wall time of a step run, claim to outcome.",
    ["step", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, float("inf")),
)
RECOGNITION_RTF = Histogram(
    "transcriber_recognition_realtime_factor",
    "Recognition wall seconds per second of audio (below 1: faster than real time).",
    buckets=(0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5, float("inf")),
)

CONTENT_TYPE = CONTENT_TYPE_LATEST


def step_ran(step: str, outcome: str | None, seconds: float) -> None:
    """One run of `step`: outcome None means its claim found no work."""
    try:
        _count_step(step, outcome, seconds)
    except OSError as error:  # the run's metrics directory went away as it stops
        logger.warning("metrics: a step run was not counted ({})", type(error).__name__)


def _count_step(step: str, outcome: str | None, seconds: float) -> None:
    if outcome is None:
        CLAIMS.labels(step, "empty").inc()
        return
    CLAIMS.labels(step, "claimed").inc()
    STEP_RUNS.labels(step, outcome).inc()
    STEP_SECONDS.labels(step, outcome).observe(seconds)
    if outcome == "saved":
        SAVES.labels(step).inc()
    elif outcome in ("refused", "lost"):
        REFUSED.labels(step).inc()


def recognised(audio_seconds: float, wall_seconds: float) -> None:
    if audio_seconds > 0:
        try:
            RECOGNITION_RTF.observe(wall_seconds / audio_seconds)
        except OSError as error:
            logger.warning("metrics: a recognition was not counted ({})", type(error).__name__)


class QueueCollector:
    """Where the records stand, read from the database at each scrape (one statement each)."""

    def __init__(self, store: Store):
        self.store = store

    def collect(self) -> Iterator[GaugeMetricFamily]:
        rows = self._read("the queue counts", self.store.queue_counts)
        if rows is None:
            return
        records = GaugeMetricFamily(
            "transcriber_records", "Records per stage (halted ones not included).", labels=["stage"]
        )
        waiting = GaugeMetricFamily(
            "transcriber_records_waiting", "Records waiting out a retry pause.", labels=["stage"]
        )
        halted = GaugeMetricFamily(
            "transcriber_records_halted", "Halted records by stage and reason.", labels=["stage", "reason"]
        )
        for row in rows:
            if row["reason"] is None:
                records.add_metric([row["stage"]], row["records"])
                waiting.add_metric([row["stage"]], row["waiting"])
            else:
                halted.add_metric([row["stage"], row["reason"]], row["records"])
        yield from (records, waiting, halted)
        stored = self._read("the stored bytes", self.store.stored_bytes)
        if stored is None:
            return
        yield self._gauge(
            "transcriber_stored_bytes",
            "Audio bytes stored: originals kept, converted audio in work, and what the sweep has yet to take.",
            stored["stored_bytes"],
        )
        yield self._gauge(
            "transcriber_stored_original_bytes",
            "Bytes of original audio kept (what owners' storage quotas count).",
            stored["original_bytes"],
        )
        owed = self._read("the records owed passages", self.store.passages_owed_count)
        if owed is not None:
            yield self._gauge(
                "transcriber_records_owed_passages",
                "Done records waiting for their passages for search by meaning (the backfill's backlog).",
                owed,
            )

    @staticmethod
    def _read(what: str, read: Callable[[], Any]) -> Any:
        """`read()`, or None with one warning when the database cannot answer: the process's own
        counters still go out."""
        try:
            return read()
        except Exception as error:  # noqa: BLE001 - whatever keeps the database away
            logger.warning("metrics: {} could not be read ({})", what, type(error).__name__)
            return None

    @staticmethod
    def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
        gauge = GaugeMetricFamily(name, documentation)
        gauge.add_metric([], value)
        return gauge


def exposition(store: Store | None = None) -> bytes:
    """This process's metrics, and the queue's when a store is given, in Prometheus text format."""
    text = generate_latest(REGISTRY)
    if store is not None:
        queue = CollectorRegistry(auto_describe=False)
        queue.register(QueueCollector(store))
        text += generate_latest(queue)
    return text


_exporter_port: int | None = None


def serve_worker_metrics(first_port: int, tries: int = 64) -> int | None:
    """Serve this lone process's metrics on the first free port from `first_port` on (once);
    a `dramatiq actors` run serves its processes' sum through machine_metrics.export instead."""
    global _exporter_port
    if _exporter_port is None:
        _exporter_port = machine_metrics.serve(first_port, REGISTRY, tries)
    return _exporter_port
