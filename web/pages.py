"""The owner's page at `/` and the operator's panel at `/admin`, served by the API's own app.

The pages are small HTML shells; their scripts speak to the same JSON API as any client, with
the session cookie standing for the token (see `web.sessions`). Every script, style and string is
served from this package: a page asks nothing of any other host, and its Content-Security-Policy
forbids it to. Strings live in `web/i18n/<lang>.json`, one file per language; the browser's
Accept-Language chooses, the `lang` cookie set by the switch overrides.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from loguru import logger

from db import Store
from service import inputs
from web.auth import operator_by_token, owner_by_token
from web.sessions import (
    Session,
    Sessions,
    cookie_name,
    cookie_path,
    cookies_of,
    csrf_matches,
    same_origin,
    set_cookie_header,
)

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
LANGUAGES = ("en", "ru")
STRINGS = {lang: json.loads((HERE / "i18n" / f"{lang}.json").read_text(encoding="utf-8")) for lang in LANGUAGES}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# what the owner's page loads before owner.js (the panel needs none of them); tus.min.js is
# tus-js-client, kept here with its licence (tus.LICENSE)
OWNER_SCRIPTS = "".join(
    f'<script src="/ui/{name}.js"></script>' for name in ("tus.min", "search", "speakers", "voices", "recorder")
)
FORMS = frozenset({"/session", "/session/end", "/admin/session", "/admin/session/end"})


def language(request: Request) -> str:
    """The page's language: the switch's cookie, else the best of Accept-Language, else English."""
    chosen = cookies_of(request.headers).get("lang")
    if chosen in LANGUAGES:
        return chosen
    ranked = []
    for position, part in enumerate(request.headers.get("accept-language", "").split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                weight = 0.0
        ranked.append((-weight, position, tag.strip().lower().split("-")[0]))
    return next((tag for _, _, tag in sorted(ranked) if tag in LANGUAGES), "en")


def _json_for_script(value) -> str:
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(
    request: Request,
    *,
    view: str,
    body: str,
    session: Session | None = None,
    data: dict | None = None,
    status: int = 200,
) -> HTMLResponse:
    """One page: the header (language switch, who is signed in, sign out), `body`, the strings."""
    lang = language(request)
    s = STRINGS[lang]
    panel = view.startswith("admin")
    brand = s["panel"] if panel else s["app"]
    switch = "".join(
        f'<button type="button" class="lang{" current" if code == lang else ""}" data-lang="{code}" '
        f'aria-pressed="{str(code == lang).lower()}">{code.upper()}</button>'
        for code in LANGUAGES
    )
    who = ""
    if session is not None:
        action = "/admin/session/end" if panel else "/session/end"
        who = (
            f'<span class="who">{html.escape(s["signed_in_as"].format(name=session.name))}</span>'
            f'<form method="post" action="{action}" class="inline">'
            f'<input type="hidden" name="csrf" value="{html.escape(session.csrf)}">'
            f'<button type="submit" id="sign-out">{html.escape(s["sign_out"])}</button></form>'
        )
    page_data = {"view": view, "csrf": session.csrf if session else None, **(data or {})}
    document = f"""<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(brand)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/style.css">
</head>
<body class="{"panel" if panel else "owner"}">
<header class="top">
<a class="brand" href="{"/admin" if panel else "/"}">{html.escape(brand)}</a>
<nav><span class="switch" role="group" aria-label="{html.escape(s["language"])}">{switch}</span>{who}</nav>
</header>
<main>
{body}
</main>
<script id="strings" type="application/json">{_json_for_script(s)}</script>
<script id="page" type="application/json">{_json_for_script(page_data)}</script>
<script src="/ui/common.js"></script>
{"" if panel else OWNER_SCRIPTS}
<script src="/ui/{"admin" if panel else "owner"}.js"></script>
</body>
</html>
"""
    return HTMLResponse(document, status_code=status, headers=SECURITY_HEADERS)


def sign_in_page(request: Request, *, panel: bool, problem: str | None = None, status: int = 200) -> HTMLResponse:
    s = STRINGS[language(request)]
    prefix = "panel_" if panel else ""
    title, hint = s[prefix + "sign_in_title"], s[prefix + "sign_in_hint"]
    error = f'<p class="error" role="alert">{html.escape(s[problem])}</p>' if problem else ""
    body = f"""<section class="card narrow">
<h1>{html.escape(title)}</h1>
<p class="hint">{html.escape(hint)}</p>
{error}
<form method="post" action="{"/admin/session" if panel else "/session"}" id="sign-in">
<label for="token">{html.escape(s["token"])}</label>
<input type="password" id="token" name="token" autocomplete="current-password" required autofocus>
<button type="submit">{html.escape(s["sign_in"])}</button>
</form>
</section>"""
    return render(request, view="admin-sign-in" if panel else "sign-in", body=body, status=status)


def router(store: Store, sessions: Sessions) -> APIRouter:
    """The pages' routes (outside the OpenAPI document). The app adds, beside them, the
    `SessionAuth` middleware over the same `sessions` and the static files at `/ui`."""
    routes = APIRouter(include_in_schema=False)
    _add_pages_for(routes, store, sessions, "owner", "/", "/view", "/session", ("records", "record"))
    _add_pages_for(
        routes, store, sessions, "operator", "/admin", "/admin/record", "/admin/session", ("admin", "admin-record")
    )
    return routes


def _session_of(sessions: Sessions, request: Request, kind: str) -> Session | None:
    """The request's live session of `kind` ("owner" or "operator"), from its cookie (as the
    middleware found it already, but for the forms, which it leaves alone)."""
    found = getattr(request.state, "session", None)
    if isinstance(found, Session) and found.kind == kind:
        return found
    session_id = cookies_of(request.headers).get(cookie_name(kind, request.url.scheme == "https"))
    return sessions.get(session_id, kind) if session_id else None


def _sign_in(store: Store, sessions: Sessions, request: Request, token: str, *, panel: bool) -> Response:
    """The sign-in form's answer: a session cookie and the way home, or the form again saying why not."""
    if not same_origin(request.headers.get("origin"), request.headers.get("host")):
        return sign_in_page(request, panel=panel, problem="bad_origin", status=403)
    token = token.strip()
    found = operator_by_token(store, token) if panel else owner_by_token(store, token)
    if found is None:
        logger.info("{} sign-in refused: bad token", "panel" if panel else "page")
        return sign_in_page(request, panel=panel, problem="bad_token", status=401)
    if found.get("disabled"):
        logger.info("page sign-in refused: owner {} is disabled", found["name"])
        return sign_in_page(request, panel=panel, problem="owner_disabled", status=403)
    kind, home = ("operator", "/admin") if panel else ("owner", "/")
    session_id = sessions.open(kind, token)
    if session_id is None:  # the token was replaced in between
        return sign_in_page(request, panel=panel, problem="bad_token", status=401)
    logger.info("{} {} signed in", kind, found["name"])
    answer = RedirectResponse(home, status_code=303)
    secure = request.url.scheme == "https"
    answer.headers.append(
        "set-cookie",
        set_cookie_header(cookie_name(kind, secure), session_id, path=cookie_path(kind, secure), secure=secure),
    )
    return answer


def _sign_out(sessions: Sessions, request: Request, csrf: str, *, panel: bool) -> Response:
    """End the session (when the form carries its CSRF token and comes from this origin) and
    clear its cookie either way."""
    kind, home = ("operator", "/admin") if panel else ("owner", "/")
    secure = request.url.scheme == "https"
    cookie = cookie_name(kind, secure)
    session = _session_of(sessions, request, kind)
    if (
        session is not None
        and csrf_matches(csrf, session.csrf)
        and same_origin(request.headers.get("origin"), request.headers.get("host"))
    ):
        sessions.close(cookies_of(request.headers).get(cookie))
    answer = RedirectResponse(home, status_code=303)
    answer.headers.append(
        "set-cookie", set_cookie_header(cookie, "", path=cookie_path(kind, secure), clear=True, secure=secure)
    )
    return answer


def _add_pages_for(
    routes: APIRouter,
    store: Store,
    sessions: Sessions,
    kind: str,
    home: str,
    record_page: str,
    forms: str,
    views: tuple[str, str],
) -> None:
    """The routes of one kind of visitor (owner or operator): a home page, a record's page,
    sign-in and sign-out."""
    panel = kind == "operator"

    def home_page(request: Request):
        session = _session_of(sessions, request, kind)
        if session is None:
            return sign_in_page(request, panel=panel)
        return render(request, view=views[0], session=session, body='<div id="app"></div>')

    def one_record(raw_id: str, request: Request):
        session = _session_of(sessions, request, kind)
        if session is None:
            return RedirectResponse(home, status_code=303)
        record = inputs.record_id(raw_id) or 0  # no record has id 0: the API answers the page 404
        return render(request, view=views[1], session=session, body='<div id="app"></div>', data={"record": record})

    def start(request: Request, token: str = Form(default="", max_length=500)):
        return _sign_in(store, sessions, request, token, panel=panel)

    def end(request: Request, csrf: str = Form(default="", max_length=200)):
        return _sign_out(sessions, request, csrf, panel=panel)

    routes.add_api_route(home, home_page, methods=["GET"], response_class=HTMLResponse)
    routes.add_api_route(record_page + "/{raw_id}", one_record, methods=["GET"], response_class=HTMLResponse)
    routes.add_api_route(forms, start, methods=["POST"])
    routes.add_api_route(forms + "/end", end, methods=["POST"])
