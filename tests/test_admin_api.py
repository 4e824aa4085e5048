"""The operator's side: operator accounts apart from owners, and the JSON API of the
panel under /admin/api — a real server, real PostgreSQL, the real domain resume."""
from __future__ import annotations

import json

from conftest import run_together, work_until_idle
from domain.claims import HaltReason
from domain.stages import Step
from media import encode
from test_cli import run
from test_http import make_api  # noqa: F401  (the live server fixture)


def _halt_at_created(store, the_settings, record_id: int, error: str = "the disk was away") -> None:
    claim = store.claim(Step.CONVERT, the_settings.policy(Step.CONVERT))
    assert claim.record_id == record_id
    assert store.halt(claim, HaltReason.ATTEMPTS_EXHAUSTED, error, count_failure=True)


def test_operator_add_and_tokens_kept_apart(env, make_api, store):
    """`transcriber operator add NAME` prints a token once; it opens /admin/api and
    nothing of an owner's; an owner's token never opens /admin/api."""
    added = run(env, "operator", "add", "olga")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip().splitlines()[-1]
    assert len(token) >= 32 and token not in added.stderr
    duplicate = run(env, "operator", "add", "olga")
    assert duplicate.returncode == 2 and "already exists" in duplicate.stderr
    empty = run(env, "operator", "add", " ")
    assert empty.returncode == 2 and "an operator name may not be empty" in empty.stderr
    control = run(env, "operator", "add", "ol\x1bga")
    assert control.returncode == 2 and "invisible" in control.stderr

    api = make_api()
    owner_token = api.token("alice")
    with store.db.transaction() as conn:  # stored hashed, in a table of its own
        rows = conn.execute("SELECT name, token_hash FROM operators").fetchall()
    assert [r["name"] for r in rows] == ["olga"] and token not in str(rows)
    assert api.http.get("/admin/api/whoami", headers=api.auth(token)).json() == {"name": "olga"}
    for headers in ({}, api.auth(owner_token), api.auth("wrong"), {"Authorization": f"Basic {token}"}):
        for address in ("/admin/api/whoami", "/admin/api/status", "/admin/api/halted", "/admin/api/records/1",
                        "/admin/api/records/1/events"):
            answer = api.http.get(address, headers=headers)
            assert answer.status_code == 401 and answer.json()["error"] == "unauthorized", (address, headers)
        assert api.http.post("/admin/api/records/1/resume", headers=headers).status_code == 401
    assert api.http.get("/records", headers=api.auth(token)).status_code == 401


def test_panel_api_status_halted_journal_resume(env, make_api, store, tmp_path):
    """P5: the panel's figures equal `transcriber status --json`; a halted record is
    listed with its owner, reason, error, stage and age; its journal is readable; Resume goes
    through the domain (journaled `resumed`, origin human, the operator's name) and the record
    goes on to done; no answer carries a transcript."""
    api = make_api()
    operator = api.auth(store.add_operator("olga"))
    alice = api.token("alice")
    done_id = api.upload(alice, encode(tmp_path / "a.wav", "wav"), title="Done one").json()["id"]
    assert {o.value for o in work_until_idle(store, api.settings)} == {"saved"}
    transcript = api.http.get(f"/records/{done_id}/text", headers=api.auth(alice)).text.strip()
    segments = api.http.get(f"/records/{done_id}/text?format=json", headers=api.auth(alice)).json()["segments"]
    assert transcript and segments
    halted_id = api.upload(alice, encode(tmp_path / "b.mp3", "mp3"), title="Stuck one").json()["id"]
    _halt_at_created(store, api.settings, halted_id)

    status = api.http.get("/admin/api/status", headers=operator).json()
    assert status["stages"] == json.loads(run(env, "status", "--json").stdout)
    assert status["totals"]["halted"] == 1 and status["totals"]["active"] == 1

    listed = api.http.get("/admin/api/halted", headers=operator).json()
    assert listed["total"] == 1 and listed["next"] is None
    item = listed["items"][0]
    assert (item["id"], item["owner"], item["title"], item["stage"]) == (halted_id, "alice", "Stuck one", "created")
    assert (item["reason"], item["error"], item["attempts"]) == ("attempts_exhausted", "the disk was away", 1)
    assert 0 <= item["halted_seconds"] < 120 and item["age_seconds"] >= item["halted_seconds"]
    assert item["links"]["resume"] == f"/admin/api/records/{halted_id}/resume"

    journal = api.http.get(f"/admin/api/records/{halted_id}/events", headers=operator).json()
    assert [e["kind"] for e in journal["events"]] == ["accepted", "claimed", "halted"]
    assert journal["events"][-1]["detail"]["reason"] == "attempts_exhausted"
    card = api.http.get(f"/admin/api/records/{done_id}", headers=operator).json()
    assert card["owner"] == "alice" and card["stage"] == "done"
    for address in (f"/admin/api/records/{done_id}", f"/admin/api/records/{done_id}/events", "/admin/api/status",
                    "/admin/api/halted"):
        body = api.http.get(address, headers=operator).text
        assert transcript not in body, (address, body)
        assert not any(s["text"].strip() in body for s in segments), (address, body)
    assert api.http.get(f"/admin/api/records/{done_id + 1000}", headers=operator).status_code == 404
    assert api.http.get("/admin/api/records/abc/events", headers=operator).status_code == 404

    resumed = api.http.post(f"/admin/api/records/{halted_id}/resume", headers=operator)
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert (body["stage"], body["resumed_by"], body["card"]["halt"], body["card"]["attempts"]) == \
        ("created", "olga", None, 0)
    last = store.events(halted_id)[-1]
    assert (last["kind"], last["origin"], last["detail"]) == ("resumed", "human", {"by": "olga", "step": "convert"})
    again = api.http.post(f"/admin/api/records/{halted_id}/resume", headers=operator)
    assert again.status_code == 409 and again.json()["error"] == "not_halted" and again.json()["stage"] == "created"
    assert api.http.post(f"/admin/api/records/{done_id + 1000}/resume", headers=operator).status_code == 404
    assert api.http.get("/admin/api/halted", headers=operator).json()["total"] == 0
    work_until_idle(store, api.settings)
    assert api.card(alice, halted_id)["stage"] == "done"


def test_two_operators_resume_at_once(make_api, store, tmp_path):
    """P5-S2: two operators press Resume on one halted record together: one resumes
    it, the other is told it is not halted; one `resumed` line."""
    api = make_api()
    tokens = [api.auth(store.add_operator(name)) for name in ("olga", "oleg")]
    alice = api.token("alice")
    record_id = api.upload(alice, encode(tmp_path / "a.wav", "wav")).json()["id"]
    _halt_at_created(store, api.settings, record_id)
    codes = run_together(2, lambda i: api.http.post(f"/admin/api/records/{record_id}/resume",
                                                    headers=tokens[i]).status_code)
    assert sorted(codes) == [200, 409]
    assert [e["kind"] for e in store.events(record_id)].count("resumed") == 1


def test_delete_command(env, store, tmp_path):
    """`transcriber delete ID` erases any owner's record as the operator; the journal
    keeps the deletion line; an unknown id exits 2."""
    store.add_owner("alice")
    owner = store.owner_by_name("alice")
    record_id = store.accept(owner["id"], [encode(tmp_path / "a.wav", "wav").read_bytes()], source_name="a.wav")
    done = run(env, "delete", str(record_id))
    assert done.returncode == 0 and "deleted" in done.stdout, done.stderr
    events = store.events(record_id)
    assert [e["kind"] for e in events] == ["deleted"] and events[0]["detail"]["as"] == "operator"
    assert store.card_row(record_id) is None
    journal = [json.loads(line) for line in run(env, "events", str(record_id)).stdout.splitlines()]
    assert [(e["kind"], e["origin"]) for e in journal] == [("deleted", "human")]
    assert run(env, "events", str(record_id + 1000)).returncode == 2
    again = run(env, "delete", str(record_id))
    assert again.returncode == 2 and "no record" in again.stderr
