-- Statements of `transcriber check`: the facts the invariant rules (domain/invariants.py) judge.

-- name: check_snapshot
-- The whole check reads one consistent snapshot and writes nothing.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY;

-- name: check_now
SELECT now() AS now;

-- name: check_records
-- Every record with the step row of its stage (for a done record, the diarize step's, if any):
-- its claim, pause and halt, whether the halt (if any) is in the journal (a halted event after
-- the last resume), how many step rows it has of another stage, whether it has text and still
-- points at its converted audio. Times are clamped to what a client can read, so an 'infinity'
-- planted by hand is reported instead of breaking the check (greatest and least skip NULLs,
-- hence the CASE).
SELECT r.id, r.stage, s.step, s.claim_token,
       CASE WHEN s.lease_expires_at IS NOT NULL
            THEN greatest(least(s.lease_expires_at, '9999-01-01'), '0002-01-01') END AS lease_expires_at,
       CASE WHEN s.retry_after IS NOT NULL
            THEN greatest(least(s.retry_after, '9999-01-01'), '0002-01-01') END AS retry_after,
       s.halted_at IS NOT NULL AS halted, s.halt_reason,
       (SELECT count(*) FROM steps x WHERE x.record_id = r.id AND x.stage <> r.stage) AS steps_out_of_stage,
       r.transcript IS NOT NULL AS has_text,
       r.converted_blob_id IS NOT NULL AS keeps_converted_audio,
       (s.halted_at IS NULL OR EXISTS (
           SELECT 1 FROM events e
           WHERE e.record_id = r.id AND e.kind = 'halted'
             AND e.id > coalesce((SELECT max(x.id) FROM events x
                                  WHERE x.record_id = r.id AND x.kind = 'resumed'), 0)
       )) AS halt_journaled
FROM records r LEFT JOIN steps s ON s.record_id = r.id AND s.stage = r.stage
ORDER BY r.id;

-- name: check_orphan_blobs
-- Audio the sweep would have removed by now (the same notion as its orphan_blobs): no record
-- points at it, no resumable upload fills it, and it is complete for longer than the grace, or incomplete, older than the
-- grace and written by nobody any more (an intake's, or a conversion whose claim moved on).
SELECT b.id, b.size_bytes, b.created_at, b.completed_at FROM blobs b
WHERE coalesce(b.completed_at, b.created_at) < now() - make_interval(secs => %(grace_seconds)s)
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.original_blob_id = b.id)
  AND NOT EXISTS (SELECT 1 FROM records r WHERE r.converted_blob_id = b.id)
  AND NOT EXISTS (SELECT 1 FROM resumable_uploads u WHERE u.blob_id = b.id)
  AND (b.completed_at IS NOT NULL
       OR b.writer_record_id IS NULL
       OR NOT EXISTS (SELECT 1 FROM steps w WHERE w.record_id = b.writer_record_id AND w.claim_token = b.writer_token))
ORDER BY b.id;

-- name: check_incomplete_audio
-- Records pointing at audio not marked complete: a blob is usable only once complete.
SELECT r.id AS record_id, b.id AS blob_id
FROM blobs b JOIN records r ON r.original_blob_id = b.id
WHERE b.completed_at IS NULL
UNION ALL
SELECT r.id, b.id
FROM blobs b JOIN records r ON r.converted_blob_id = b.id
WHERE b.completed_at IS NULL
ORDER BY 1, 2;

-- name: check_windows
-- Records whose recognised windows do not run end to end from 0 to where recognition stands (the
-- recognize step's checkpoint while it is due; the whole recording once done): a gap or an
-- overlap means two holders wrote windows, or one went missing. breaks: windows not starting
-- where the one before ended (the first: at 0).
WITH chained AS (
    SELECT record_id, from_seconds, to_seconds,
           coalesce(lag(to_seconds) OVER (PARTITION BY record_id ORDER BY from_seconds), 0) AS expected_from
    FROM record_windows
), per_record AS (
    SELECT record_id, count(*) FILTER (WHERE from_seconds <> expected_from) AS breaks,
           max(to_seconds) AS last_end
    FROM chained GROUP BY record_id
), expected AS (
    SELECT r.id, coalesce(p.breaks, 0) AS breaks, p.last_end,
           CASE WHEN r.stage = 'done' THEN r.duration_seconds ELSE coalesce(s.checkpoint_seconds, 0) END AS up_to
    FROM records r LEFT JOIN per_record p ON p.record_id = r.id
         LEFT JOIN steps s ON s.record_id = r.id AND s.step = 'recognize'
)
SELECT id AS record_id, up_to AS recognized_seconds, breaks, last_end FROM expected
-- a done record's last window ends where its converted audio did, to within a rounding
WHERE breaks > 0 OR abs(coalesce(last_end, 0) - coalesce(up_to, 0)) > 0.001
ORDER BY id;

-- name: check_saved_twice
-- A stage reached more than once by one record, or its speakers saved more than once: two
-- holders both saved (P3 broken).
SELECT record_id, kind, stage, count(*) AS times FROM events
WHERE kind IN ('advanced', 'speakers_saved')
GROUP BY record_id, kind, stage
HAVING count(*) > 1
ORDER BY record_id, kind, stage;
