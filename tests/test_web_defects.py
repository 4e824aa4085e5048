"""Defects of the HTTP layer once found, each held here against a real uvicorn server: a `Range`
number of any length, a disabled owner's browser sessions, a body a route leaves unread, and an
idle time shorter than a minute."""
from __future__ import annotations

import socket
import threading

from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conftest import ROOT
from test_http import make_api  # noqa: F401  (the live server fixture)
from test_shared_sessions import csrf_of

AUDIO = ROOT / "tests" / "data" / "ru.ogg"
PIECE = 1 << 20
BODY = 64 * PIECE  # larger than every limit a test here meets but the uploads' (512 MB)
FILE_PART = (b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
             b"Content-Type: application/octet-stream\r\n\r\n", b"\r\n--x--\r\n")  # a multipart upload around BODY


# --- a body sent on a raw socket while the answer is read ----------------------------------------

class Streamed:
    """One request whose body of BODY bytes and more a thread of its own sends in chunks on a raw
    socket, while the test reads the answer."""

    def __init__(self, port: int, head: str, around: tuple[bytes, bytes] = (b"", b"")):
        self.conn = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sent = 0
        self.sender = threading.Thread(target=self._send, args=(head.encode("latin-1"), *around), daemon=True)
        self.sender.start()
        self.status, self.headers, self.body = self._answer()

    def _send(self, head: bytes, before: bytes, after: bytes) -> None:
        """The head, then the body in chunks: `before`, BODY zero bytes, `after`."""
        try:
            self.conn.sendall(head)
            for part in (before, *([bytes(PIECE)] * (BODY // PIECE)), after):
                if part:
                    self.conn.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
                    self.sent += len(part)
            self.conn.sendall(b"0\r\n\r\n")
        except OSError:  # the server closed the connection: it takes no more of the body
            pass

    def _answer(self) -> tuple[int, dict[str, str], bytes]:
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {name.strip().lower(): value.strip() for name, _, value in (x.partition(":") for x in lines[1:])}
        while len(body) < int(headers.get("content-length", 0)):
            body += self._recv()
        return int(lines[0].split()[1]), headers, body

    def _recv(self) -> bytes:
        data = self.conn.recv(65536)
        assert data, "the server closed the connection without an answer"
        return data

    def server_closed(self) -> bool:
        """Whether the server closes the connection after its answer (rather than keep it)."""
        self.conn.settimeout(10)
        try:
            return self.conn.recv(65536) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def body_sent(self) -> int:
        """How much of the body went out before the server stopped taking it."""
        self.sender.join(60)
        self.conn.close()
        return self.sent


def request_head(api, method: str, path: str, **headers: str) -> str:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{api.http.base_url.port}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in {**headers, "Transfer-Encoding": "chunked"}.items()]
    return "\r\n".join(lines) + "\r\n\r\n"


def sign_in(api, token: str) -> tuple[str, str]:
    """A page session for the owner of `token`: its cookie and its CSRF token."""
    signed_in = api.http.post("/session", data={"token": token}, follow_redirects=False)
    assert signed_in.status_code == 303, signed_in.text
    cookie = signed_in.cookies["transcriber_session"]
    api.http.cookies.clear()
    return cookie, csrf_of(api.http.get("/", headers=as_page(cookie)).text)


def as_page(cookie: str) -> dict[str, str]:
    """The headers of a page's request: its session cookie."""
    return {"Cookie": f"transcriber_session={cookie}"}


# --- byte ranges ----------------------------------------------------------------------------------

def _number(digits: str) -> float:
    """The number `digits` spell; one of thousands of digits is past any file's end."""
    significant = digits.lstrip("0")
    return int(significant or "0") if len(significant) < 100 else float("inf")


def _expected(first: str, last: str, size: int) -> tuple[int, int, int]:
    """What `bytes=first-last` must get (RFC 9110, section 14.1.2): 206 and the part, 416, or
    200 and the whole file for a range the server may ignore."""
    if not first and not last:
        return 200, 0, size - 1
    if not first:
        suffix = _number(last)
        return (416, 0, 0) if suffix == 0 else (206, int(max(size - suffix, 0)), size - 1)
    start = _number(first)
    if start >= size:
        return 416, 0, 0
    end = _number(last) if last else size - 1
    return (200, 0, size - 1) if end < start else (206, int(start), int(min(end, size - 1)))


NUMBERS = st.one_of(
    st.just(""),
    st.integers(0, 30_000).map(str),
    st.tuples(st.integers(1, 20), st.integers(0, 30_000)).map(lambda zeros_and: "0" * zeros_and[0] + str(zeros_and[1])),
    st.integers(4301, 6000).map(lambda n: "9" * n),
    st.text("0123456789", min_size=4301, max_size=6000),
)
ANY_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80).map(str.strip)


def test_no_range_header_gets_a_5xx(make_api):
    """Any `Range` header on a recording's audio gets 200 with the whole file, 206 with exactly
    the part it names, or 416 with `Content-Range: bytes */SIZE`, never a 5xx: numbers of
    thousands of digits included (a start past the end is 416, a suffix longer than the file
    is all of it), and any text at all."""
    api = make_api()
    token = api.token("alice")
    record = api.upload(token, AUDIO).json()["id"]
    original = AUDIO.read_bytes()
    size = len(original)

    def answer(header: str):
        got = api.http.get(f"/records/{record}/audio", headers={**api.auth(token), "Range": header})
        assert got.status_code in (200, 206, 416), (header[:80], got.status_code, got.text[:200])
        if got.status_code == 416:
            assert got.headers["content-range"] == f"bytes */{size}"
            return 416, 0, 0
        if got.status_code == 200:
            assert got.content == original
            return 200, 0, size - 1
        first, last = map(int, got.headers["content-range"].removeprefix("bytes ").split("/")[0].split("-"))
        assert got.headers["content-range"] == f"bytes {first}-{last}/{size}"
        assert got.content == original[first:last + 1]
        return 206, first, last

    @hypothesis_settings(max_examples=120, derandomize=True, deadline=None, database=None)
    @given(st.sampled_from(["bytes=", "bytes = ", "BYTES="]), NUMBERS, NUMBERS)
    @example("bytes=", "9" * 4301, "")
    @example("bytes=", "", "9" * 4301)
    @example("bytes=", "0", "9" * 4301)
    @example("bytes=", "9" * 4302, "9" * 4301)
    def a_range(prefix: str, first: str, last: str):
        assert answer(f"{prefix}{first}-{last}") == _expected(first, last, size), (first[:20], last[:20])

    @hypothesis_settings(max_examples=60, derandomize=True, deadline=None, database=None)
    @given(ANY_TEXT)
    def any_text(header: str):
        answer(header)

    a_range()
    any_text()


# --- a disabled owner's sessions ------------------------------------------------------------------

def test_a_disabled_owners_session_is_refused_before_its_body_and_ends_for_good(make_api):
    """Disabling an owner ends its browser sessions: an upload from its page (cookie and CSRF
    token) is refused from the headers with `Connection: close`, before the body is read (the
    server takes a few MB of 64 at most); `/` shows the sign-in form; enabling the owner again
    revives no session (the browser signs in again)."""
    api = make_api()
    token = api.token("dana")
    cookie, csrf = sign_in(api, token)
    page = {"headers": as_page(cookie)}
    assert api.http.get("/records", **page).status_code == 200
    api.store.set_owner_disabled("dana", True)

    upload = Streamed(api.http.base_url.port, request_head(
        api, "POST", "/records", Cookie=f"transcriber_session={cookie}", X_CSRF_Token=csrf,
        Content_Type="multipart/form-data; boundary=x"), FILE_PART)
    assert upload.status == 401, upload.body
    assert upload.headers["connection"] == "close" and upload.server_closed()
    assert upload.body_sent() < 16 * PIECE

    assert api.http.get("/records", **page).status_code == 401
    assert 'id="sign-in"' in api.http.get("/", **page).text
    api.store.set_owner_disabled("dana", False)
    assert api.http.get("/records", **page).status_code == 401
    assert 'id="sign-in"' in api.http.get("/", **page).text
    assert api.http.get("/records", headers=api.auth(token)).status_code == 200
    cookie, _ = sign_in(api, token)
    assert api.http.get("/records", headers=as_page(cookie)).status_code == 200


# --- bodies a route leaves unread -----------------------------------------------------------------

def test_every_route_body_limit_holds_for_bodies_it_does_not_read(make_api):
    """The sign-in and sign-out forms, sent 64 MB in chunks of a type they do not parse (or a
    multipart form past the limit), answer 413 `too_large` with `Connection: close` at their
    1 MB limit, and the server stops reading: it takes a few MB of the 64 and closes the
    connection. A small form still signs in on a kept connection."""
    api = make_api()
    token = api.token("dana")
    for path, content_type, around in (("/session", "application/octet-stream", (b"", b"")),
                                       ("/session/end", "text/plain", (b"", b"")),
                                       ("/admin/session", "application/json", (b"", b"")),
                                       ("/session", "multipart/form-data; boundary=x", FILE_PART)):
        sent = Streamed(api.http.base_url.port, request_head(api, "POST", path, Content_Type=content_type), around)
        assert sent.status == 413, (path, content_type, sent.status, sent.body[:200])
        assert b'"too_large"' in sent.body and sent.headers["connection"] == "close", path
        assert sent.server_closed(), path
        assert sent.body_sent() < 16 * PIECE, (path, content_type)
    assert sign_in(api, token)[0]


# --- idle time ------------------------------------------------------------------------------------

def _pass_time(store, seconds: float) -> None:
    """As if `seconds` went by since each session was last seen (its last use is what ages)."""
    with store.db.connection() as conn:
        conn.execute("UPDATE sessions SET last_seen_at = last_seen_at - make_interval(secs => %s)", (seconds,))


def test_a_session_in_use_outlives_an_idle_time_of_seconds(make_api):
    """With TRANSCRIBER_SESSION_IDLE_SECONDS=5 a session used every 3 seconds stays signed in
    past those 5 seconds, and ends once left unused for them."""
    api = make_api(session_idle_seconds=5)
    cookie, _ = sign_in(api, api.token("dana"))
    page = {"headers": as_page(cookie)}
    for _ in range(3):
        _pass_time(api.store, 3)
        assert api.http.get("/records", **page).status_code == 200
    _pass_time(api.store, 6)
    assert api.http.get("/records", **page).status_code == 401
