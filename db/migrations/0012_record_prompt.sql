-- The owner's prompt for a record (issue 15 §3): names, jargon, context, given with the upload
-- and handed to the recognizer as Whisper's initial prompt for every window. An owner field:
-- the pipeline reads it and never writes it. NULL: no prompt.
ALTER TABLE records ADD COLUMN prompt text CHECK (char_length(prompt) <= 800);

-- The card shows it: the view of migration 7 with the new column appended (CREATE OR REPLACE
-- keeps every existing column in place and adds at the end only).
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.lost_leases, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language, r.prompt
FROM records r JOIN owners o ON o.id = r.owner_id;
