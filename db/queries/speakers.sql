-- Statements of the diarize step's own reads and of the owner's names for the speakers. Its claim,
-- checkpoints, save, failures and halts are the protocol's (pipeline.sql) like every step's.

-- name: speaker_windows
-- The embeddings checkpointed so far, in recording order.
SELECT from_seconds, to_seconds, times, vectors FROM record_speaker_windows
WHERE record_id = %(id)s AND to_seconds <= %(up_to)s
ORDER BY from_seconds;

-- name: name_speakers
-- The owner's names for the speaker labels; merged into those given before, a name of null or
-- "" takes one away.
WITH named AS (
    UPDATE records
    SET speaker_names = jsonb_strip_nulls(speaker_names || %(names)s::jsonb),
        updated_at = now()
    WHERE id = %(id)s AND owner_id = %(owner_id)s
    RETURNING id
)
SELECT id FROM named;
