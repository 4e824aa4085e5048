-- Retention and quotas (issue 16 §2): the service owner decides how long original audio is kept
-- and how much each owner may hold; the owner sees what it uses.

-- An original may be gone while its record, card and text stay: retention deleted it. The record
-- then says when; a record has its original or says when it went, never neither.
ALTER TABLE records ALTER COLUMN original_blob_id DROP NOT NULL;
ALTER TABLE records ADD COLUMN audio_expired_at timestamptz;
ALTER TABLE records ADD CONSTRAINT records_original_or_expired
    CHECK (original_blob_id IS NOT NULL OR audio_expired_at IS NOT NULL);

-- The length the file declared at intake: what the hours quota counts until conversion has
-- measured the real one (duration_seconds). NULL: the container declared none.
ALTER TABLE records ADD COLUMN intake_seconds double precision;

-- Per-owner quotas; NULL: no limit of that kind.
ALTER TABLE owners ADD COLUMN quota_seconds double precision CHECK (quota_seconds >= 0);
ALTER TABLE owners ADD COLUMN quota_bytes bigint CHECK (quota_bytes >= 0);

-- The retention sweep's batches: done records still holding their original, oldest first. The
-- columns never move while a record is worked (created_at, and original_blob_id only at expiry;
-- stage once, at done), so lease renewals and checkpoints stay HOT updates.
CREATE INDEX records_audio_retention ON records (created_at, id)
    WHERE stage = 'done' AND original_blob_id IS NOT NULL;

-- The card says whether the original is still there: the view of migration 13, with the new
-- column at its end (CREATE OR REPLACE VIEW may only append).
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.lost_leases, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language, r.prompt, r.language_probability, r.audio_expired_at
FROM records r JOIN owners o ON o.id = r.owner_id;
