"""Prometheus metrics: the API's /metrics and a worker process's exporter expose
the named series; step runs move the counters."""
from __future__ import annotations

import socket

import httpx
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY

from conftest import add_record, policy, settings, work_until_idle
from domain.claims import HaltReason
from domain.stages import Step
from media import encode
from service import metrics
from web.app import create_app

SERIES = ("transcriber_records", "transcriber_records_waiting", "transcriber_records_halted",
          "transcriber_claims_total", "transcriber_saves_total", "transcriber_refused_writes_total",
          "transcriber_step_runs_total", "transcriber_step_duration_seconds",
          "transcriber_recognition_realtime_factor")


def _value(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_api_metrics_expose_the_queue_and_the_counters(store, owner, tmp_path):
    """GET /metrics (an operator's token) names records per stage, waiting out a pause, halted
    by reason, and the process's claims, saves, refused writes, step durations and recognition
    real-time factor; a real run of both steps moves them."""
    the_settings = settings(engine="pocketsphinx")
    claimed = _value("transcriber_claims_total", step="convert", result="claimed")
    saved = _value("transcriber_saves_total", step="recognize")
    factors = _value("transcriber_recognition_realtime_factor_count")
    record = store.accept(owner["id"], [encode(tmp_path / "a.wav").read_bytes()], source_name="a.wav")
    work_until_idle(store, the_settings)
    assert store.stage_of(record) == "done"
    paused = add_record(store, owner)
    store.record_failure(store.claim(Step.CONVERT, policy()), "boom", pause_seconds=600)
    halted = add_record(store, owner)
    claim = store.claim(Step.CONVERT, policy())
    assert claim.record_id == halted and paused != halted
    store.halt(claim, HaltReason.UNDECODABLE_AUDIO, "not audio")
    operator = store.add_operator("ops")
    with TestClient(create_app(store, the_settings)) as client:
        answer = client.get("/metrics", headers={"Authorization": f"Bearer {operator}"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    for name in SERIES:
        assert f"# TYPE {name} " in text, name
    assert 'transcriber_records{stage="done"} 1.0' in text
    assert 'transcriber_records_waiting{stage="created"} 1.0' in text
    assert 'transcriber_records_halted{reason="undecodable_audio",stage="created"} 1.0' in text
    assert _value("transcriber_claims_total", step="convert", result="claimed") == claimed + 1
    assert _value("transcriber_saves_total", step="recognize") == saved + 1
    assert _value("transcriber_recognition_realtime_factor_count") == factors + 1


def test_a_worker_process_serves_its_metrics_on_a_port():
    """TRANSCRIBER_METRICS_PORT: a worker process serves its counters on the first
    free port from there on."""
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        busy = taken.getsockname()[1]
        port = metrics.serve_worker_metrics(busy)
        assert port is not None and port != busy
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    assert "transcriber_claims_total" in text and "transcriber_step_duration_seconds" in text


def test_the_metrics_port_setting_is_checked():
    """A bad TRANSCRIBER_METRICS_PORT fails at start, naming the variable."""
    import pytest

    from service.config import ConfigError

    assert settings(metrics_port=9300).metrics_port == 9300
    with pytest.raises(ConfigError, match="TRANSCRIBER_METRICS_PORT"):
        settings(metrics_port=70000)
