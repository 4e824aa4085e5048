"""The HTTP API under generated requests (issue 8 §5): schemathesis reads the app's own
`/openapi.json` and sends valid and invalid requests for every operation, in-process, against a
real test database. No answer may be a 500; every refusal has the `{error, message}` shape.

Derandomized and bounded, so it runs the same way each time and in about a minute.
"""
from __future__ import annotations

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings

from conftest import settings
from media import encode
from web.app import create_app

EXAMPLES = 150  # per generation mode


def test_generated_requests_never_get_a_500(store, tmp_path):
    """issue 8 §5: property-based requests from /openapi.json (positive and negative), each sent
    with a valid token, and again aimed at a real record of the caller's: never a 500, and every
    4xx carries `error` and `message`."""
    app = create_app(store, settings(max_upload_mb=1))
    token = store.add_owner("fuzz")
    owner_id = store.owner_by_name("fuzz")["id"]
    record_id = store.accept(owner_id, [encode(tmp_path / "a.wav", "wav").read_bytes()], source_name="a.wav")
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    auth = {"Authorization": f"Bearer {token}"}
    seen: dict[int, int] = {}
    problems: list[str] = []

    def send(case) -> None:
        answer = case.call(headers=auth)
        seen[answer.status_code] = seen.get(answer.status_code, 0) + 1
        if answer.status_code >= 500:
            problems.append(f"{answer.status_code} for {case.as_curl_command(headers=auth)}")
        elif answer.status_code >= 400:
            body = answer.json()
            if not (isinstance(body, dict) and body.get("error") and isinstance(body.get("message"), str)):
                problems.append(f"{answer.status_code} without {{error, message}}: {answer.text[:200]}")

    with TestClient(app):
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            @hypothesis_settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                                 phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
            @given(case=schema.as_strategy(generation_mode=mode))
            def fuzz(case):
                send(case)
                if "raw_id" in (case.path_parameters or {}):
                    case.path_parameters = {**case.path_parameters, "raw_id": str(record_id)}
                    send(case)

            fuzz()
    assert problems == [], "\n".join(problems[:20])
    assert sum(seen.values()) >= EXAMPLES * 2
    assert any(200 <= status < 300 for status in seen), seen  # the fuzzer got past the door too
