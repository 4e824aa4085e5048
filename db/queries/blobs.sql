-- Statements of the audio blobs: written in committed chunks, usable once complete, read back by
-- position, deleted in bounded batches, and the sweep of blobs no record points at.

-- name: create_blob
-- Committed on its own: the chunks follow, each in its own transaction. A conversion names the
-- claim writing it (writer_record_id, writer_token); an intake names none.
INSERT INTO blobs (media_type, writer_record_id, writer_token)
VALUES (%(media_type)s, %(writer_record_id)s, %(writer_token)s)
RETURNING id;

-- name: append_chunk
-- One chunk into a blob still being written; a conversion's only while its claim is still the
-- record's (a stale converter is refused at its next chunk). No row: refused.
INSERT INTO blob_chunks (blob_id, seq, data)
SELECT b.id, %(seq)s, %(data)s FROM blobs b
WHERE b.id = %(blob_id)s AND b.completed_at IS NULL
  AND (b.writer_record_id IS NULL
       OR EXISTS (SELECT 1 FROM steps s WHERE s.record_id = b.writer_record_id AND s.claim_token = b.writer_token))
RETURNING seq;

-- name: lock_blob
-- The first statement of finishing a blob: its row locked, so that the next statement counts
-- the chunks with a fresh snapshot (a sweep that deleted some meanwhile is then seen).
SELECT id FROM blobs WHERE id = %(blob_id)s AND completed_at IS NULL FOR UPDATE;

-- name: finish_blob
-- Marks the blob complete (usable) with its size, only if every chunk its writer wrote is there
-- and, for a conversion, while its claim is still the record's. An intake runs it in the
-- transaction that inserts the record; a conversion right before its fenced save.
UPDATE blobs b
SET size_bytes = c.size_bytes, completed_at = now()
FROM (SELECT count(*) AS chunks, coalesce(sum(length(data)), 0) AS size_bytes
      FROM blob_chunks WHERE blob_id = %(blob_id)s) c
WHERE b.id = %(blob_id)s AND b.completed_at IS NULL AND c.chunks = %(chunks)s
  AND (b.writer_record_id IS NULL
       OR EXISTS (SELECT 1 FROM steps s WHERE s.record_id = b.writer_record_id AND s.claim_token = b.writer_token))
RETURNING b.size_bytes;

-- name: read_chunks
-- A few chunks by position, of a complete blob only, so a reader never holds more than a few.
SELECT c.seq, c.data FROM blob_chunks c JOIN blobs b ON b.id = c.blob_id
WHERE c.blob_id = %(blob_id)s AND b.completed_at IS NOT NULL AND c.seq >= %(from_seq)s
ORDER BY c.seq LIMIT %(limit)s;

-- name: delete_blob_chunks
-- One bounded batch of taking a blob apart (the last chunks first, so what is left is a prefix):
-- only while no record points at it and it is still as complete (or not) as the caller saw it.
-- The blob's row is locked first: a writer finishing it meanwhile is waited for, and then the
-- blob, complete now, is left alone. Returns how many chunks went.
WITH doomed AS (
    SELECT b.id FROM blobs b
    WHERE b.id = %(blob_id)s AND (b.completed_at IS NOT NULL) = %(complete)s
      AND NOT EXISTS (SELECT 1 FROM records r WHERE r.original_blob_id = b.id)
      AND NOT EXISTS (SELECT 1 FROM records r WHERE r.converted_blob_id = b.id)
      AND NOT EXISTS (SELECT 1 FROM resumable_uploads u WHERE u.blob_id = b.id)
    FOR UPDATE
), gone AS (
    DELETE FROM blob_chunks c
    USING (SELECT seq FROM blob_chunks WHERE blob_id = %(blob_id)s ORDER BY seq DESC LIMIT %(batch)s) d
    WHERE c.blob_id = (SELECT id FROM doomed) AND c.seq = d.seq
    RETURNING 1
)
SELECT (SELECT count(*) FROM doomed) AS doomed, (SELECT count(*) FROM gone) AS deleted;

-- name: delete_blob
-- The row of a blob whose chunks are gone, on the same conditions.
DELETE FROM blobs b
WHERE b.id = %(blob_id)s AND (b.completed_at IS NOT NULL) = %(complete)s
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.original_blob_id = b.id)
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.converted_blob_id = b.id)
  AND NOT EXISTS (SELECT 1 FROM resumable_uploads u WHERE u.blob_id = b.id)
  AND NOT EXISTS (SELECT 1 FROM blob_chunks c WHERE c.blob_id = b.id)
RETURNING id;

-- name: orphan_blobs
-- One bounded batch of the sweep: the next `batch` blobs by id after `after_id` (keyset, by the
-- primary key), and which of them are orphans. An orphan is a blob no record points at nor an upload fills (each
-- reference probed by its own index, through LATERAL … LIMIT 1 so that the plan stays a probe
-- per blob whatever the tables' sizes) that is either complete for longer than the grace, or
-- incomplete, older than the grace, and written by nobody any more: an intake's (whose writes
-- take seconds), or a conversion whose claim is no longer the record's (it died and the record
-- was claimed again, or the record is gone).
WITH scanned AS (
    SELECT id, created_at, completed_at, writer_record_id, writer_token FROM blobs
    WHERE id > %(after_id)s ORDER BY id LIMIT %(batch)s
), orphans AS (
    SELECT b.id, b.completed_at IS NOT NULL AS complete
    FROM scanned b
    LEFT JOIN LATERAL (SELECT 1 AS found FROM records r WHERE r.original_blob_id = b.id LIMIT 1) o ON true
    LEFT JOIN LATERAL (SELECT 1 AS found FROM records r WHERE r.converted_blob_id = b.id LIMIT 1) c ON true
    LEFT JOIN LATERAL (SELECT 1 AS found FROM resumable_uploads u WHERE u.blob_id = b.id LIMIT 1) u ON true
    LEFT JOIN LATERAL (SELECT 1 AS found FROM steps w
                       WHERE w.record_id = b.writer_record_id AND w.claim_token = b.writer_token LIMIT 1) writing ON true
    WHERE o.found IS NULL AND c.found IS NULL AND u.found IS NULL
      AND coalesce(b.completed_at, b.created_at) < now() - make_interval(secs => %(grace_seconds)s)
      AND (b.completed_at IS NOT NULL OR writing.found IS NULL)
)
SELECT (SELECT count(*) FROM scanned) AS scanned,
       (SELECT max(id) FROM scanned) AS scanned_to,
       ARRAY(SELECT id FROM orphans ORDER BY id) AS orphans,
       ARRAY(SELECT complete FROM orphans ORDER BY id) AS complete;
