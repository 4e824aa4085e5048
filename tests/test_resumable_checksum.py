"""tus's checksum extension at /uploads: a PATCH sent with `Upload-Checksum: <algorithm> <base64
digest>` is stored all or nothing: only when every byte came and matches (460 otherwise, the
offset where it was), never a byte of one cut short; with the real client, tuspy, sending a
checksum with every chunk, through a relay that cuts a chunk in the middle."""
from __future__ import annotations

import base64
import hashlib

from test_http import make_api  # noqa: F401  (the live server fixture)
from test_resumable import (  # noqa: F401  (speech: a fixture)
    MB,
    OFFSET,
    headers,
    speech,
    upload_id,
    upload_through_a_cut,
    uploader,
)


def checksum(algorithm: str, data: bytes) -> str:
    return f"{algorithm} {base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def test_tuspy_sends_a_checksum_with_every_chunk_and_the_record_has_the_same_bytes(make_api, speech):
    """OPTIONS names the extension and its algorithms (sha1 among them, as tus asks); tuspy with
    checksums uploads in chunks across the store's chunk boundaries, and the record's audio is
    byte-identical."""
    api = make_api()
    token = api.token("alice")
    options = api.http.options("/uploads")
    assert "checksum" in options.headers["Tus-Extension"].split(",")
    assert {"sha1", "md5", "sha256", "sha512"} == set(options.headers["Tus-Checksum-Algorithm"].split(","))
    up = uploader(api, token, speech, chunk_size=700_001, title="checked")
    up.upload_checksum = True
    up.upload()
    record = int(api.http.head(up.url, headers=headers(token)).headers["Upload-Record"])
    assert api.http.get(f"/records/{record}/audio", headers=api.auth(token)).content == speech.read_bytes()


def test_bytes_that_do_not_match_their_checksum_are_refused_with_460_and_none_is_stored(make_api, speech):
    """A PATCH whose bytes do not have the digest sent with them: 460 `checksum_mismatch`, the
    offset where it was; sent again with the right one (any of the algorithms), it is taken;
    the record's audio is byte-identical."""
    api = make_api()
    token = api.token("alice")
    data = speech.read_bytes()
    url = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": str(len(data))})).headers["Location"]

    def patch(at: int, end: int, digest: str):
        return api.http.patch(url, content=data[at:end], headers=headers(token, **OFFSET, **{
            "Upload-Offset": str(at), "Upload-Checksum": digest}))

    def offset() -> int:
        return int(api.http.head(url, headers=headers(token)).headers["Upload-Offset"])

    wrong = patch(0, 2 * MB, checksum("sha1", data[1 : 2 * MB + 1]))
    assert (wrong.status_code, wrong.json()["error"]) == (460, "checksum_mismatch"), wrong.text
    assert wrong.headers["Tus-Resumable"] == "1.0.0" and offset() == 0
    assert patch(0, 2 * MB, checksum("sha256", data[: 2 * MB])).status_code == 204
    assert offset() == 2 * MB
    flipped = bytearray(data[2 * MB :])
    flipped[100] ^= 1
    wrong = patch(2 * MB, len(data), checksum("md5", bytes(flipped)))
    assert wrong.status_code == 460 and offset() == 2 * MB
    last = patch(2 * MB, len(data), checksum("sha512", data[2 * MB :]))
    assert last.status_code == 204, last.text
    record = int(last.headers["Upload-Record"])
    assert api.http.get(f"/records/{record}/audio", headers=api.auth(token)).content == data


def test_a_checksum_header_that_cannot_be_checked_is_refused_with_nothing_stored(make_api):
    """An algorithm not known here, a digest that is not base64 or not of the algorithm's size,
    no digest at all: 400 `bad_checksum`, nothing stored. Bytes with the right checksum that go
    past the upload's length: 413, and none of them is stored (a request without a checksum keeps
    what fits)."""
    api = make_api()
    token = api.token("alice")
    data = b"x" * 1000
    url = api.http.post("/uploads", headers=headers(token, **{"Upload-Length": "1000"})).headers["Location"]
    digest = base64.b64encode(hashlib.sha1(data).digest()).decode()
    for header in (f"crc32 {digest}", "sha1 !!not-base64!!", f"sha1 {base64.b64encode(b'short').decode()}",
                   "sha1", f"md5 {digest}"):
        answer = api.http.patch(url, content=data, headers=headers(token, **OFFSET, **{
            "Upload-Offset": "0", "Upload-Checksum": header}))
        assert (answer.status_code, answer.json()["error"]) == (400, "bad_checksum"), (header, answer.text)
    past = data + b"y" * 500
    answer = api.http.patch(url, content=iter([past[:700], past[700:]]), headers=headers(token, **OFFSET, **{
        "Upload-Offset": "0", "Upload-Checksum": checksum("sha1", past)}))
    assert (answer.status_code, answer.json()["error"]) == (413, "past_upload_length"), answer.text
    assert api.http.head(url, headers=headers(token)).headers["Upload-Offset"] == "0"


def test_a_chunk_cut_in_the_middle_stores_none_of_its_bytes_and_tuspy_sends_it_again(make_api, speech):
    """A relay cuts tuspy's connection inside a 2 MB chunk sent with its checksum, 1.5 MB in: none
    of it is stored (HEAD answers 0, where a chunk without a checksum keeps what arrived), tuspy
    sends the whole chunk again, and the record's audio is byte-identical."""
    api = make_api()
    token = api.token("alice")
    up, relay, offsets = upload_through_a_cut(api, token, speech, chunk_size=2 * MB, cut_after=1_500_000,
                                              checksums=True)
    assert relay.cuts == 1 and offsets == [0], offsets
    assert relay.client_bytes - speech.stat().st_size > 1_400_000  # the cut part, sent again
    record = int(api.http.head("/uploads/" + upload_id(up.url), headers=headers(token)).headers["Upload-Record"])
    assert api.http.get(f"/records/{record}/audio", headers=api.auth(token)).content == speech.read_bytes()
