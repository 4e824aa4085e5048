-- Statements of deletion, the original audio for the owner's player, and operators.

-- name: erase_record
-- Removes the owner's record row (waiting for any step's write in flight on it) and returns
-- what the rest of the erasure needs; owner_id NULL means any owner (the operator's command).
DELETE FROM records
WHERE id = %(id)s AND (%(owner_id)s::bigint IS NULL OR owner_id = %(owner_id)s)
RETURNING id, stage, original_blob_id, converted_blob_id;

-- name: journal_deletion
-- The one line the journal keeps of an erased record: who deleted it, when, at which stage.
INSERT INTO events (record_id, origin, kind, stage, detail)
VALUES (%(id)s, 'human', 'deleted', %(stage)s, jsonb_build_object('by', %(by)s::text, 'as', %(role)s::text));

-- name: erase_journal
-- Every other line of the erased record goes (they carry file names and error texts).
DELETE FROM events WHERE record_id = %(id)s AND kind <> 'deleted';

-- name: erase_blobs
DELETE FROM blobs WHERE id = ANY(%(blob_ids)s::bigint[]);

-- name: original_audio
-- The owner's original recording: its blob, size, stored media type and the uploaded name.
-- `head` is the first bytes of the file, enough to tell its container by.
SELECT r.original_blob_id AS blob_id, b.size_bytes, b.media_type, r.source_name, b.created_at,
       (SELECT substring(c.data FROM 1 FOR 16) FROM blob_chunks c
        WHERE c.blob_id = b.id AND c.seq = 0) AS head
FROM records r JOIN blobs b ON b.id = r.original_blob_id
WHERE r.id = %(id)s AND r.owner_id = %(owner_id)s;

-- name: create_operator
INSERT INTO operators (name, token_hash) VALUES (%(name)s, %(token_hash)s) RETURNING id;

-- name: operator_by_token_hash
SELECT id, name, token_hash FROM operators WHERE token_hash = %(token_hash)s;

-- name: halted_records
-- The operator's list of halted records, oldest halt first: metadata only, never text or audio.
SELECT r.id, o.name AS owner, r.title, r.stage, r.halt_reason, r.halt_error, r.halted_at,
       r.failures, r.created_at, r.updated_at, r.source_name, r.duration_seconds,
       extract(epoch FROM now() - r.halted_at) AS halted_seconds,
       extract(epoch FROM now() - r.created_at) AS age_seconds
FROM records r JOIN owners o ON o.id = r.owner_id
WHERE r.halted_at IS NOT NULL
ORDER BY r.halted_at, r.id
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_halted
SELECT count(*) AS total FROM records WHERE halted_at IS NOT NULL;
