-- Statements of per-owner quotas: the limits, an owner's use, the check that
-- holds an owner's intake while an upload is weighed against them, and the stored bytes.

-- name: set_quota
-- Sets either limit or both; a limit whose set_ flag is false is left alone. No row: no owner.
UPDATE owners
SET quota_seconds = CASE WHEN %(set_seconds)s THEN %(seconds)s::float8 ELSE quota_seconds END,
    quota_bytes = CASE WHEN %(set_bytes)s THEN %(bytes)s::bigint ELSE quota_bytes END
WHERE name = %(name)s
RETURNING id;

-- name: hold_owner_quota
-- The first statement of weighing an upload in the transaction that accepts it: the owner's row
-- locked against the other intakes of that owner (FOR NO KEY UPDATE conflicts with itself, not
-- with the key-share locks of the pipeline's writes), so that the next statement sums its use
-- with a fresh snapshot that sees every upload accepted before this one.
SELECT quota_seconds, quota_bytes FROM owners WHERE id = %(owner_id)s FOR NO KEY UPDATE;

-- name: owner_usage
-- What an owner uses now: hours of its records (measured once converted, declared until then)
-- and bytes of the originals still kept, and of its unfinished resumable uploads (the length
-- each declared, or what arrived while the length is deferred); with its limits. By the owner's index on records.
-- Unless `always`, a use is summed only where its limit is set (NULL otherwise): weighing an
-- upload of an owner without limits reads no records at all.
SELECT o.quota_seconds, o.quota_bytes,
       CASE WHEN %(always)s OR o.quota_seconds IS NOT NULL THEN
           coalesce((SELECT sum(coalesce(r.duration_seconds, r.intake_seconds)) FROM records r
                     WHERE r.owner_id = o.id), 0)::float8 END AS audio_seconds,
       CASE WHEN %(always)s OR o.quota_bytes IS NOT NULL THEN
           coalesce((SELECT sum(b.size_bytes) FROM records r JOIN blobs b ON b.id = r.original_blob_id
                     WHERE r.owner_id = o.id), 0)::bigint
           + coalesce((SELECT sum(coalesce(u.upload_length, u.received)) FROM resumable_uploads u
                       WHERE u.owner_id = o.id AND u.finished_at IS NULL), 0)::bigint END AS stored_bytes
FROM owners o WHERE o.id = %(owner_id)s;

-- name: stored_bytes
-- For the metrics: bytes of audio stored (complete blobs), originals apart from the rest
-- (converted audio in work, and what the sweep has yet to take).
SELECT coalesce(sum(b.size_bytes), 0)::bigint AS stored_bytes,
       coalesce(sum(b.size_bytes) FILTER (WHERE EXISTS (
           SELECT 1 FROM records r WHERE r.original_blob_id = b.id)), 0)::bigint AS original_bytes
FROM blobs b WHERE b.completed_at IS NOT NULL;
