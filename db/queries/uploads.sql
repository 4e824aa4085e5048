-- Statements that make one record of an intended upload: its Idempotency-Key, or
-- the same bytes already in the pipeline.

-- name: lock_upload
-- Two uploads of the same owner with the same key (or, without one, the same bytes) decide one
-- after the other: the second finds what the first committed. Held to the end of the
-- transaction; a collision of the hash only makes two unrelated uploads wait for each other.
SELECT pg_advisory_xact_lock(hashtextextended(%(owner_id)s::text || ':' || %(what)s, 7262700225));

-- name: upload_by_key
-- The record the owner's key stands for, with the SHA-256 of the bytes it was first sent with
-- and whether that record was asked for alike (`domain.asked`).
SELECT k.record_id, k.content_sha256, r.asked IS NOT DISTINCT FROM %(asked)s AS asked_alike
FROM upload_keys k JOIN records r ON r.id = k.record_id
WHERE k.owner_id = %(owner_id)s AND k.key = %(key)s;

-- name: keep_upload_key
INSERT INTO upload_keys (owner_id, key, content_sha256, record_id)
VALUES (%(owner_id)s, %(key)s, %(content_sha256)s, %(record_id)s);

-- name: upload_in_flight
-- The owner's record of the same bytes, asked for alike (`domain.asked`), still in the pipeline
-- or done so recently that a client's retry may still be on its way: not halted, newest first.
SELECT r.id FROM records r
WHERE r.owner_id = %(owner_id)s AND r.content_sha256 = %(content_sha256)s AND r.asked = %(asked)s
  -- not halted (a halt of the diarize step leaves its record done, not halted)
  AND NOT EXISTS (SELECT FROM steps s WHERE s.record_id = r.id AND s.stage <> 'done' AND s.halted_at IS NOT NULL)
  AND (r.stage <> 'done' OR r.stage_entered_at > now() - make_interval(secs => %(window_seconds)s))
ORDER BY r.id DESC
LIMIT 1;

-- name: upload_unfinished
-- The owner's records of the same bytes that an earlier `transcriber transcribe` left unfinished:
-- not done, not halted, asked for alike (`domain.asked`). The oldest first, each saying whether a
-- claim still holds it (a run stopped with Ctrl-C gave its claim back; a killed one's holds until
-- its lease runs out) and by whom.
SELECT r.id AS record_id, s.step, s.claim_token, s.claim_holder,
       s.claim_token IS NOT NULL AND s.lease_expires_at >= now() AS held
FROM records r JOIN steps s ON s.record_id = r.id AND s.stage = r.stage
WHERE r.owner_id = %(owner_id)s AND r.content_sha256 = %(content_sha256)s AND r.asked = %(asked)s
  AND s.halted_at IS NULL AND r.stage <> 'done'
ORDER BY r.id
LIMIT 10;

-- name: sweep_upload_keys
-- Keys past their keeping time, the oldest first, a bounded batch per statement.
WITH doomed AS (
    SELECT owner_id, key FROM upload_keys
    WHERE created_at < now() - make_interval(secs => %(keep_seconds)s)
    ORDER BY created_at
    LIMIT %(batch)s
)
DELETE FROM upload_keys u USING doomed d
WHERE u.owner_id = d.owner_id AND u.key = d.key;
