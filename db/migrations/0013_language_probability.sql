-- How sure the recognizer was of the language it detected (issue 15 §5): Whisper's probability
-- for the language of the record's first window, when the language was detected rather than
-- asked for (NULL then, and for engines that do not tell). A pipeline field, written by the
-- checkpoint that saves the window it was detected in.
ALTER TABLE records ADD COLUMN language_probability double precision
    CHECK (language_probability BETWEEN 0 AND 1);

-- The card shows it: the view of migration 12 with the new column appended.
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.lost_leases, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language, r.prompt, r.language_probability
FROM records r JOIN owners o ON o.id = r.owner_id;
