"""The API docs work on a host with no network: every asset of /docs and /redoc
is served by the app itself."""
from __future__ import annotations

import re

from test_http import make_api  # noqa: F401  (the live server fixture)


def test_docs_assets_are_served_locally(make_api):
    """The Swagger UI (and ReDoc) pages name only addresses of the app itself, and
    each of them answers 200 — no CDN, no font host."""
    api = make_api()
    for page in ("/docs", "/redoc"):
        answer = api.http.get(page)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
        html = answer.text
        assert "cdn." not in html and "googleapis" not in html
        assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
        assets += re.findall(r"""url:\s*['"]([^'"]+)['"]""", html)  # the OpenAPI document
        assert any(a.endswith(".js") for a in assets), html
        for address in assets:
            assert address.startswith("/") and not address.startswith("//"), (page, address)
            assert api.http.get(address).status_code == 200, (page, address)
        assert "/openapi.json" in html
    script = api.http.get("/static-offline-docs/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000


def test_openapi_names_the_new_addresses(make_api):
    """The OpenAPI document (what /docs shows) has the audio, delete, panel and
    OpenAI-compatible addresses."""
    paths = make_api().http.get("/openapi.json").json()["paths"]
    assert "get" in paths["/records/{raw_id}/audio"] and "delete" in paths["/records/{raw_id}"]
    assert "post" in paths["/v1/audio/transcriptions"]
    assert {"/admin/api/status", "/admin/api/halted", "/admin/api/records/{raw_id}/resume"} <= set(paths)
