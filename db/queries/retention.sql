-- Statements of audio retention: the original audio of done records older than
-- TRANSCRIBER_AUDIO_RETENTION_DAYS lets go; the record, its card and its text stay.

-- name: expire_audio
-- One bounded batch, oldest first, by the retention index. The rows are locked and skipped
-- when another write holds them (an edit, a deletion: the next pass takes them); the record's
-- stage and original are checked again on the locked row, so a record that left done or lost
-- its audio meanwhile is left alone. Each expiry is journaled; the blobs are returned, to be
-- deleted after the commit in bounded batches (the sweep finds what a crash in between left).
WITH due AS (
    SELECT id, original_blob_id FROM records
    WHERE stage = 'done' AND original_blob_id IS NOT NULL
      AND created_at < now() - make_interval(secs => %(retention_seconds)s)
      -- the diarize step decodes the original again: its audio waits until speakers are
      -- saved or halted
      AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.record_id = records.id AND s.halted_at IS NULL)
    ORDER BY created_at, id
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
), expired AS (
    UPDATE records r SET original_blob_id = NULL, audio_expired_at = now()
    FROM due
    WHERE r.id = due.id AND r.stage = 'done' AND r.original_blob_id = due.original_blob_id
    RETURNING r.id, due.original_blob_id AS blob_id,
              (SELECT b.size_bytes FROM blobs b WHERE b.id = due.original_blob_id) AS size_bytes
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'audio_expired', 'done',
           jsonb_build_object('retention_days', %(retention_days)s::float8)
    FROM expired
)
SELECT (SELECT count(*) FROM due) AS looked_at,
       ARRAY(SELECT id FROM expired ORDER BY id) AS records,
       ARRAY(SELECT blob_id FROM expired ORDER BY id) AS blobs,
       ARRAY(SELECT size_bytes FROM expired ORDER BY id) AS sizes;

-- name: drop_expired_blobs
-- Small expired originals deleted together, chunks and all (ON DELETE CASCADE), in one short
-- transaction: the caller groups them so that a group holds no more chunks than one batch of a
-- blob deleted alone. Only complete blobs no record points at (as drop_blob asks).
DELETE FROM blobs b
WHERE b.id = ANY(%(blob_ids)s) AND b.completed_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.original_blob_id = b.id)
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.converted_blob_id = b.id)
RETURNING b.id;
