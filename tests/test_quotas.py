"""Per-owner quotas: limits set from the command line, uploads over a limit refused
413 `quota_exceeded` with nothing stored (the API, the OpenAI-compatible address and `transcriber
submit`), each owner's audio hours and stored bytes in `owner list`, the card list, /admin and
/metrics, and two uploads racing at the limit never both passing."""
from __future__ import annotations

import argparse
import json

import pytest

from conftest import run_together, settings
from media import encode
from service.intake import OverQuota, accept_file
from test_cli import run
from test_http import make_api  # noqa: F401  (the live server fixture)
from transcriber.accounts import _amount

MB = 1024 * 1024


def _stored(db) -> tuple[int, int, int]:
    with db.connection() as conn:
        row = conn.execute("SELECT (SELECT count(*) FROM records) AS r, (SELECT count(*) FROM blobs) AS b, "
                           "(SELECT count(*) FROM blob_chunks) AS c").fetchone()
    return row["r"], row["b"], row["c"]


def test_upload_over_quota_is_refused_and_nothing_is_stored(make_api, store, db, tmp_path):
    """With a storage limit, an upload that would pass it answers 413
    `quota_exceeded` naming the limit and the use, on POST /records and on the OpenAI-compatible
    address, and stores nothing; an hours limit refuses a file whose length would pass it. The card
    list, /admin and /metrics show the owner's audio hours and stored bytes."""
    api = make_api()
    token = api.token("alice")
    audio = encode(tmp_path / "talk.wav", "wav")
    size = audio.stat().st_size
    alice = store.owner_by_name("alice")
    assert store.set_quota("alice", size_bytes=int(size * 1.5))

    assert api.upload(token, audio).status_code == 201
    before = _stored(db)
    refused = api.upload(token, audio)
    assert refused.status_code == 413, refused.text
    body = refused.json()
    assert body["error"] == "quota_exceeded" and body["quota"] == "storage"
    assert body["limit"] == pytest.approx(size * 1.5 / MB, rel=1e-5) and body["used"] == pytest.approx(size / MB)
    assert f"over the limit of {round(int(size * 1.5) / MB, 4):g} MB" in body["message"]
    assert f"{size / MB:.2f} MB used" in body["message"]
    # other bytes: the same bytes again would attach to the record still in the pipeline
    longer = encode(tmp_path / "longer.wav", "wav", repeat=2)
    with longer.open("rb") as handle:
        compat = api.http.post("/v1/audio/transcriptions", headers=api.auth(token),
                               files={"file": ("longer.wav", handle)}, data={"model": "whisper-1"})
    assert compat.status_code == 413 and compat.json()["error"]["code"] == "quota_exceeded", compat.text
    assert _stored(db) == before

    listed = api.http.get("/records", headers=api.auth(token)).json()
    assert listed["usage"]["stored_bytes"] == size and listed["usage"]["quota"]["storage_mb"] == pytest.approx(1.5 * size / MB, rel=1e-3)
    assert 9 / 3600 < listed["usage"]["audio_hours"] < 11 / 3600  # the length the file declared

    assert store.set_quota("alice", seconds=15.0, size_bytes=None)  # 15 s of audio, no storage limit
    too_long = api.upload(token, audio)
    assert too_long.status_code == 413 and too_long.json()["quota"] == "hours", too_long.text
    assert "audio hours" in too_long.json()["message"] and "over the limit of" in too_long.json()["message"]
    assert _stored(db) == before

    operator = api.auth(store.add_operator("olga"))
    owners = api.http.get("/admin/api/owners", headers=operator).json()["items"]
    assert [(o["name"], o["stored_bytes"], o["quota"]["hours"]) for o in owners] == [("alice", size, round(15 / 3600, 6))]
    metrics = api.http.get("/metrics", headers=operator).text
    assert f"transcriber_stored_original_bytes {float(size)}" in metrics
    assert "transcriber_stored_bytes " in metrics
    assert store.owner_usage(alice["id"])["stored_bytes"] == size


def test_uploads_racing_at_the_limit_do_not_both_pass(store, db, owner, tmp_path):
    """Six uploads released at once by a barrier, with room for exactly two: two are
    accepted, four refused `quota_exceeded`, and only the two accepted files are stored."""
    audio = encode(tmp_path / "talk.wav", "wav")
    size = audio.stat().st_size
    store.set_quota("alice", size_bytes=int(size * 2.5))
    the_settings = settings()

    def upload(i):
        try:
            return accept_file(store, the_settings, audio, owner_id=owner["id"])
        except OverQuota as error:
            return error

    results = run_together(6, upload)
    accepted = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, OverQuota)]
    assert len(accepted) == 2 and len(refused) == 4, results
    assert all(e.status == 413 and e.code == "quota_exceeded" for e in refused)
    assert _stored(db)[:2] == (2, 2)
    assert store.owner_usage(owner["id"])["stored_bytes"] == 2 * size


def test_quota_from_the_command_line(env, store, owner, tmp_path):
    """`transcriber owner quota NAME --hours H --storage-mb M` sets the limits and
    shows the use, `owner list` shows hours, stored bytes and quota, `transcriber submit` over the
    limit fails with the quota named and stores nothing, `--none` lifts the limits."""
    audio = encode(tmp_path / "talk.wav", "wav")
    accept_file(store, settings(), audio, owner_id=owner["id"])
    shown = run(env, "owner", "quota", "alice", "--hours", "2", "--storage-mb", "0.1")
    assert shown.returncode == 0 and "quota 2 h / 0.1 MB" in shown.stdout and "0.00 h of audio" in shown.stdout
    listed = run(env, "owner", "list", "--json")
    row = json.loads(listed.stdout)[0]
    assert row["stored_bytes"] == audio.stat().st_size and row["quota"] == {"hours": 2.0, "storage_mb": 0.1}

    over = run(env, "submit", "--owner", "alice", str(audio))
    assert over.returncode != 0 and "quota exceeded: storage" in over.stderr and "0.1 MB" in over.stderr, over.stderr
    assert "Traceback" not in over.stderr
    assert _stored(store.db)[:2] == (1, 1)

    assert "quota none" in run(env, "owner", "quota", "alice", "--none").stdout
    assert store.owner_usage(owner["id"])["quota_bytes"] is None
    assert run(env, "owner", "quota", "nobody", "--hours", "1").returncode == 2
    with pytest.raises(argparse.ArgumentTypeError):
        _amount("-1")
