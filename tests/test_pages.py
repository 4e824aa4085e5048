"""The owner's page and the panel over plain HTTP: sessions, CSRF, languages."""
from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT
from test_http import make_api  # noqa: F401  (fixture)

SAMPLE = ROOT / "transcriber" / "samples" / "hello.ogg"


def sign_in(api, token: str, **headers):
    return api.http.post("/session", data={"token": token}, headers=headers, follow_redirects=False)


def page_data(html: str) -> dict:
    return json.loads(re.search(r'<script id="page" type="application/json">(.*?)</script>', html).group(1))


def test_sign_in_gives_a_strict_httponly_session_that_stands_for_the_token(make_api):
    """Sign-in: the owner's token buys an HttpOnly, SameSite=Strict cookie holding a
    random id, never the token; the page carries no token; the cookie opens the owner's API."""
    api = make_api()
    token = api.token("dana")
    assert "sign-in" in api.http.get("/").text
    refused = sign_in(api, "not-a-token")
    assert refused.status_code == 401 and "set-cookie" not in refused.headers
    answer = sign_in(api, token)
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
    api.http.cookies.set("transcriber_session", answer.cookies["transcriber_session"])
    home = api.http.get("/")
    assert home.status_code == 200 and token not in home.text and "dana" in home.text
    assert "default-src 'self'" in home.headers["content-security-policy"]
    with SAMPLE.open("rb") as handle:  # a change without the page's CSRF token is refused
        assert api.http.post("/records", files={"file": ("hello.ogg", handle)}).status_code == 403
    csrf = page_data(home.text)["csrf"]
    with SAMPLE.open("rb") as handle:  # from another site, even with the token: refused
        assert api.http.post("/records", files={"file": ("hello.ogg", handle)},
                             headers={"X-CSRF-Token": csrf, "Origin": "http://evil.example"}).status_code == 403
    with SAMPLE.open("rb") as handle:
        created = api.http.post("/records", files={"file": ("hello.ogg", handle)},
                                headers={"X-CSRF-Token": csrf, "Origin": str(api.http.base_url).rstrip("/")})
    assert created.status_code == 201, created.text
    listed = api.http.get("/records").json()
    assert [item["id"] for item in listed["items"]] == [created.json()["id"]]
    # the owner's session never opens the panel
    assert api.http.get("/admin/api/status").status_code == 401


def test_sign_in_from_another_site_and_sign_out(make_api):
    """CSRF-safe forms: a sign-in posted from another origin is refused; sign-out needs
    the session's CSRF token and ends the session on the server (the old cookie opens nothing)."""
    api = make_api()
    token = api.token("dana")
    assert sign_in(api, token, Origin="http://evil.example").status_code == 403
    session = sign_in(api, token).cookies["transcriber_session"]
    api.http.cookies.set("transcriber_session", session)
    csrf = page_data(api.http.get("/").text)["csrf"]
    api.http.post("/session/end", data={"csrf": "wrong"}, follow_redirects=False)
    api.http.cookies.set("transcriber_session", session)
    assert api.http.get("/records").status_code == 200  # a forged sign-out ended nothing
    ended = api.http.post("/session/end", data={"csrf": csrf}, follow_redirects=False)
    assert ended.status_code == 303 and "Max-Age=0" in ended.headers["set-cookie"]
    api.http.cookies.set("transcriber_session", session)
    assert api.http.get("/records").status_code == 401
    assert "sign-in" in api.http.get("/").text


@pytest.mark.parametrize("accept, cookie, expected", [
    ("ru-RU,ru;q=0.9,en;q=0.5", None, "ru"),
    ("de-DE,en;q=0.3,ru;q=0.7", None, "ru"),
    ("fr", None, "en"),
    ("ru", "en", "en"),
])
def test_language_chosen_by_browser_and_switch(make_api, accept, cookie, expected):
    """English and Russian: Accept-Language chooses, the switch's cookie overrides, and
    every string comes from that language's one file."""
    api = make_api()
    if cookie:
        api.http.cookies.set("lang", cookie)
    page = api.http.get("/", headers={"Accept-Language": accept}).text
    strings = json.loads((ROOT / "web" / "i18n" / f"{expected}.json").read_text(encoding="utf-8"))
    assert f'<html lang="{expected}">' in page and strings["sign_in_title"] in page


def test_every_string_in_both_languages():
    """All strings in one place per language, the same keys in each, every key the
    scripts use defined."""
    english = json.loads((ROOT / "web" / "i18n" / "en.json").read_text(encoding="utf-8"))
    russian = json.loads((ROOT / "web" / "i18n" / "ru.json").read_text(encoding="utf-8"))
    assert set(english) == set(russian)
    used = set()
    for script in (ROOT / "web" / "static").glob("*.js"):
        if script.name.endswith(".min.js"):  # a library kept as it was published (tus-js-client)
            continue
        used |= set(re.findall(r'\bt\("([a-z_]+)"\s*[,)]', script.read_text(encoding="utf-8")))
    used |= set(re.findall(r's\["([a-z_]+)"\]', (ROOT / "web" / "pages.py").read_text(encoding="utf-8")))
    assert used and used <= set(english), used - set(english)


def test_pages_ask_nothing_of_other_hosts():
    """Offline: no page, script or style names another host (fonts included)."""
    for path in [*(ROOT / "web" / "static").iterdir(), ROOT / "web" / "pages.py"]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)=[\"']?(https?:)?//", text), path
        assert not re.search(r"url\((['\"]?)(https?:)?//", text) and "@import" not in text, path


def test_disabled_owner_cannot_sign_in_and_its_session_stops(make_api):
    """Sign-in with owner tokens as the API checks them, owner disable included:
    a disabled owner's token opens no session, and a session already open ends at once."""
    api = make_api()
    token = api.token("dana")
    api.http.cookies.set("transcriber_session", sign_in(api, token).cookies["transcriber_session"])
    assert api.http.get("/records").status_code == 200
    api.store.set_owner_disabled("dana", True)
    assert api.http.get("/records").status_code == 401
    api.http.cookies.clear()
    refused = sign_in(api, token)
    assert refused.status_code == 403 and "set-cookie" not in refused.headers


def test_panel_session_is_its_own_kind(make_api, store):
    """The panel's session comes from an operator token only, lives under /admin,
    opens /admin/api (changes only with its CSRF token), never the owners' addresses; an owner's
    session never opens the panel; sign-out ends it."""
    from conftest import add_record

    api = make_api()
    owner_token = api.token("dana")
    operator_token = store.add_operator("olga")
    assert api.http.post("/admin/session", data={"token": owner_token}).status_code == 401
    api.http.cookies.clear()
    started = api.http.post("/admin/session", data={"token": operator_token}, follow_redirects=False)
    assert started.status_code == 303 and started.headers["location"] == "/admin"
    assert "Path=/admin" in started.headers["set-cookie"] and "HttpOnly" in started.headers["set-cookie"]
    session = started.cookies["transcriber_admin"]
    api.http.cookies.clear()
    api.http.cookies.set("transcriber_admin", session, path="/admin")
    assert api.http.get("/admin/api/whoami").json() == {"name": "olga"}
    assert api.http.get("/records").status_code == 401  # the panel's session is not an owner's
    record_id = add_record(store, store.owner_by_name("dana"))
    assert api.http.post(f"/admin/api/records/{record_id}/resume").status_code == 403  # no CSRF token
    csrf = page_data(api.http.get("/admin").text)["csrf"]
    not_halted = api.http.post(f"/admin/api/records/{record_id}/resume", headers={"X-CSRF-Token": csrf})
    assert not_halted.status_code == 409  # reached the panel's API, which refuses a record not halted
    ended = api.http.post("/admin/session/end", data={"csrf": csrf}, follow_redirects=False)
    assert ended.status_code == 303
    api.http.cookies.set("transcriber_admin", session, path="/admin")
    assert api.http.get("/admin/api/whoami").status_code == 401
    api.http.cookies.clear()
    api.http.cookies.set("transcriber_session", sign_in(api, owner_token).cookies["transcriber_session"])
    assert "admin-sign-in" in api.http.get("/admin").text
