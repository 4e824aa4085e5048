-- Statements of intake and of the owner's side: owners, audio blobs, cards, edits, journal.

-- name: create_owner
INSERT INTO owners (name, token_hash) VALUES (%(name)s, %(token_hash)s) RETURNING id;

-- name: owner_by_name
SELECT id, name FROM owners WHERE name = %(name)s;

-- name: owner_by_token_hash
SELECT id, name, token_hash, disabled_at FROM owners WHERE token_hash = %(token_hash)s;

-- name: create_blob
INSERT INTO blobs (media_type) VALUES (%(media_type)s) RETURNING id;

-- name: append_chunk
INSERT INTO blob_chunks (blob_id, seq, data) VALUES (%(blob_id)s, %(seq)s, %(data)s);

-- name: finish_blob
UPDATE blobs
SET size_bytes = (SELECT coalesce(sum(length(data)), 0) FROM blob_chunks WHERE blob_id = %(blob_id)s)
WHERE id = %(blob_id)s
RETURNING size_bytes;

-- name: read_chunks
-- One chunk at a time, by position, so a reader never holds more than a chunk.
SELECT seq, data FROM blob_chunks WHERE blob_id = %(blob_id)s AND seq >= %(from_seq)s
ORDER BY seq LIMIT %(limit)s;

-- name: delete_blob
DELETE FROM blobs WHERE id = %(blob_id)s;

-- name: delete_orphan_blobs
-- Blobs no record points at, left by a worker that died mid-conversion or a refused save.
DELETE FROM blobs b
WHERE b.created_at < now() - make_interval(secs => %(older_than_seconds)s)
  AND NOT EXISTS (SELECT 1 FROM records r
                  WHERE r.original_blob_id = b.id OR r.converted_blob_id = b.id)
RETURNING id;

-- name: accept_record
-- A new record at stage created, with its 'accepted' event.
WITH accepted AS (
    INSERT INTO records (owner_id, title, source_name, original_blob_id, language)
    VALUES (%(owner_id)s, %(title)s, %(source_name)s, %(blob_id)s, %(language)s)
    RETURNING id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'accepted', stage,
           jsonb_build_object('source_name', %(source_name)s::text, 'size_bytes', %(size_bytes)s::bigint)
    FROM accepted
)
SELECT id FROM accepted;

-- name: card
-- The card's columns; owner_id NULL means any owner (the operator's tools).
SELECT r.id, r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language, o.name AS owner, r.lost_leases
FROM records r JOIN owners o ON o.id = r.owner_id
WHERE r.id = %(id)s AND (%(owner_id)s::bigint IS NULL OR r.owner_id = %(owner_id)s);

-- name: list_cards
SELECT r.id, r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language, o.name AS owner, r.lost_leases
FROM records r JOIN owners o ON o.id = r.owner_id
WHERE r.owner_id = %(owner_id)s
ORDER BY r.created_at DESC, r.id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_records
SELECT count(*) AS total FROM records WHERE owner_id = %(owner_id)s;

-- name: edit_record
-- The owner's edit: title, summary, topics only; a NULL parameter leaves its field alone.
UPDATE records
SET title = coalesce(%(title)s, title),
    summary = coalesce(%(summary)s, summary),
    topics = coalesce(%(topics)s, topics),
    updated_at = now()
WHERE id = %(id)s AND owner_id = %(owner_id)s
RETURNING id;

-- name: transcript
SELECT r.stage, r.transcript, r.segments, r.duration_seconds
FROM records r
WHERE r.id = %(id)s AND (%(owner_id)s::bigint IS NULL OR r.owner_id = %(owner_id)s);

-- name: events
SELECT at, record_id AS record, origin, kind, stage, detail FROM events
WHERE record_id = %(id)s ORDER BY id;
