"""The HTTP API under generated requests: schemathesis reads the app's own
`/openapi.json` and sends valid and invalid requests for every operation, in-process, against a
real test database. No answer may be a 500; every refusal has the `{error, message}` shape.

Derandomized and bounded (a fixed number of examples per operation and mode), so it runs the same
way each time: 10 examples by default (the suite's CPU budget), 25 with `pytest --long`.
"""
from __future__ import annotations

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable

from conftest import settings
from media import encode
from web.app import create_app

def test_generated_requests_never_get_a_500(store, tmp_path, request):
    """Property-based requests from /openapi.json, valid and invalid, for every
    operation, each sent with a valid token (the operator's for /admin) and, for an address with
    a record id, sent again aimed at a real record of the caller's: never a 500, and every 4xx
    carries `error` and `message`."""
    examples = 25 if request.config.getoption("--long") else 10  # per operation and generation mode
    app = create_app(store, settings(max_upload_mb=1, sync_wait_seconds=1))
    token = store.add_owner("fuzz")
    operator = store.add_operator("fuzz-operator")
    record_id = store.accept(store.owner_by_name("fuzz")["id"], [encode(tmp_path / "a.wav", "wav").read_bytes()],
                             source_name="a.wav")
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    statuses: dict[str, set[int]] = {}
    problems: list[str] = []

    def send(case) -> None:
        auth = {"Authorization": f"Bearer {operator if case.path.startswith('/admin') else token}"}
        try:
            answer = case.call(headers=auth)
        except Exception as error:  # the app raised: the client would have had a 500
            problems.append(f"{type(error).__name__} for {case.method} {case.formatted_path} {case.query}")
            return
        statuses.setdefault(f"{case.method} {case.path}", set()).add(answer.status_code)
        if answer.status_code >= 500:
            problems.append(f"{answer.status_code} for {case.as_curl_command(headers=auth)}")
        elif answer.status_code >= 400:
            body = answer.json()
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, dict):  # the OpenAI-compatible address answers in OpenAI's shape
                error = error.get("message") and error.get("type")
            elif not isinstance(body.get("message"), str):
                error = None
            if not error:
                problems.append(f"{answer.status_code} without {{error, message}}: {answer.text[:200]}")

    operations = [result.ok() for result in schema.get_all_operations()]
    with TestClient(app):
        for operation in operations:
            for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
                @hypothesis_settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                                     phases=[Phase.explicit, Phase.generate],
                                     suppress_health_check=list(HealthCheck))
                @given(case=operation.as_strategy(generation_mode=mode))
                def fuzz(case):
                    send(case)
                    if "raw_id" in (case.path_parameters or {}) and case.method != "DELETE":
                        case.path_parameters = {**case.path_parameters, "raw_id": str(record_id)}
                        send(case)

                try:
                    fuzz()
                except Unsatisfiable:  # nothing of this operation can be made invalid
                    assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label
    assert problems == [], "\n".join(problems[:20])
    assert len(statuses) == len(operations) >= 8
    assert any(200 <= status < 300 for seen in statuses.values() for status in seen), statuses
