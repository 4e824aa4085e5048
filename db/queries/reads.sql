-- Statements of the read side: cards (the `cards` view), lists, the transcript, the
-- journal, the original audio, and the counts of status and the metrics.

-- name: card
-- owner_id NULL means any owner (the operator's tools).
SELECT * FROM cards
WHERE id = %(id)s AND (%(owner_id)s::bigint IS NULL OR owner_id = %(owner_id)s);

-- name: list_cards
SELECT * FROM cards
WHERE owner_id = %(owner_id)s
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_records
SELECT count(*) AS total FROM records WHERE owner_id = %(owner_id)s;

-- name: halted_records
-- The operator's list of halted records, oldest halt first: metadata only, never text or audio.
-- A halted diarize step leaves its record done, not halted: it is not listed here.
SELECT r.id, o.name AS owner, r.title, r.stage, s.step, s.halt_reason, s.halt_error, s.halted_at,
       s.failures, r.created_at, r.updated_at, r.source_name, r.duration_seconds,
       extract(epoch FROM now() - s.halted_at) AS halted_seconds,
       extract(epoch FROM now() - r.created_at) AS age_seconds
FROM steps s JOIN records r ON r.id = s.record_id JOIN owners o ON o.id = r.owner_id
WHERE s.halted_at IS NOT NULL AND s.stage <> 'done'
ORDER BY s.halted_at, r.id
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_halted
SELECT count(*) AS total FROM steps WHERE halted_at IS NOT NULL AND stage <> 'done';

-- name: transcript
-- The text, assembled at done, and once done its timed segments: the windows' (record_windows)
-- in recording order, each window's in its own order; likewise the spans whose text the guards
-- suppressed (record_windows.suppressed).
-- Speakers: the diarize step's turns once saved, the names shown for them (the owner's, else
-- the matched voice's: shown_speaker_names) and each one's match (speaker_list).
-- The owner's corrections (record_corrections), laid on the segments by `Store.transcript`.
-- With %(english)s, the segments are the windows' English ones (record_windows.english) of a
-- record asked to translate (`task`).
SELECT r.stage, r.transcript, r.duration_seconds, r.language, r.language_probability,
       shown_speaker_names(r.id) AS speaker_names, speaker_list(r.id) AS speaker_list, r.turns,
       coalesce(r.asked->>'task', 'transcribe') AS task,
       CASE WHEN r.stage = 'done' THEN
           (SELECT coalesce(jsonb_agg(e.segment ORDER BY w.from_seconds, e.n), '[]')
            FROM record_windows w,
                 jsonb_array_elements(CASE WHEN %(english)s THEN w.english ELSE w.segments END)
                     WITH ORDINALITY AS e(segment, n)
            WHERE w.record_id = r.id)
       END AS segments,
       CASE WHEN r.stage = 'done' THEN
           (SELECT coalesce(jsonb_agg(e.span ORDER BY w.from_seconds, e.n), '[]')
            FROM record_windows w, jsonb_array_elements(w.suppressed) WITH ORDINALITY AS e(span, n)
            WHERE w.record_id = r.id)
       END AS suppressed,
       CASE WHEN r.stage = 'done' THEN
           (SELECT coalesce(jsonb_agg(jsonb_build_object('segment', k.segment, 'start', k.start_seconds,
                                                         'end', k.end_seconds, 'text', k.text, 'words', k.words)
                                      ORDER BY k.start_seconds), '[]')
            FROM record_corrections k WHERE k.record_id = r.id)
       END AS corrections
FROM records r
WHERE r.id = %(id)s AND (%(owner_id)s::bigint IS NULL OR r.owner_id = %(owner_id)s);

-- name: original_audio
-- The owner's original recording: its blob, size, stored media type and the uploaded name.
-- `head` is the first bytes of the file, enough to tell its container by. A record whose
-- original retention deleted has no blob and says when it went (audio_expired_at).
SELECT r.original_blob_id AS blob_id, b.size_bytes, b.media_type, r.source_name, b.created_at,
       r.audio_expired_at,
       (SELECT substring(c.data FROM 1 FOR 16) FROM blob_chunks c
        WHERE c.blob_id = b.id AND c.seq = 0) AS head
FROM records r LEFT JOIN blobs b ON b.id = r.original_blob_id
WHERE r.id = %(id)s AND r.owner_id = %(owner_id)s;

-- name: events
SELECT at, record_id AS record, origin, kind, stage, detail FROM events
WHERE record_id = %(id)s ORDER BY id;

-- name: status
-- Counts for the service owner: per stage, halted, waiting out a pause, oldest eligible age. A
-- record is counted by its stage's step (a done record's diarize step is not the record's).
SELECT r.stage,
       count(*) FILTER (WHERE s.halted_at IS NULL) AS active,
       count(*) FILTER (WHERE s.halted_at IS NOT NULL) AS halted,
       count(*) FILTER (WHERE s.halted_at IS NULL AND s.retry_after > now()) AS waiting,
       count(*) FILTER (WHERE s.halted_at IS NULL AND s.lease_expires_at > now()) AS claimed,
       extract(epoch FROM now() - min(s.entered_at) FILTER (
           WHERE s.halted_at IS NULL
             AND (s.retry_after IS NULL OR s.retry_after <= now())
             AND (s.lease_expires_at IS NULL OR s.lease_expires_at <= now())
       )) AS oldest_eligible_seconds
FROM records r LEFT JOIN steps s ON s.record_id = r.id AND s.stage = r.stage AND s.stage <> 'done'
GROUP BY r.stage
ORDER BY r.stage;

-- name: fold_without_waiting_for_disk
-- A fold need not wait for its commit to reach the disk: lost in a crash, it is lost whole (the
-- changes it took are back with it), and the next fold does it again.
SET LOCAL synchronous_commit = off;

-- name: fold_record_counts
-- The changes appended since the last fold, added into record_counts. Each change
-- is taken by one fold only (DELETE … RETURNING); rows are updated in one order, so two folds
-- at once wait for each other instead of deadlocking.
WITH taken AS (DELETE FROM record_count_changes RETURNING stage, reason, delta)
INSERT INTO record_counts AS c (stage, reason, records)
SELECT stage, reason, sum(delta) FROM taken GROUP BY stage, reason ORDER BY stage, reason
ON CONFLICT (stage, reason) DO UPDATE SET records = c.records + EXCLUDED.records;

-- name: queue_counts
-- For the metrics: records per stage and halt reason (NULL: not halted), and how many of the
-- unhalted ones wait out a retry pause. A few rows of record_counts (folded just before) and the
-- paused records through their own index: never a scan of records.
SELECT c.stage, nullif(c.reason, '') AS reason, c.records,
       CASE WHEN c.reason = '' THEN coalesce(w.waiting, 0) ELSE 0 END AS waiting
FROM record_counts c
LEFT JOIN (SELECT stage, count(*) AS waiting FROM steps
           WHERE halted_at IS NULL AND retry_after IS NOT NULL AND retry_after > now() AND stage <> 'done'
           GROUP BY stage) w ON w.stage = c.stage
WHERE c.records <> 0
ORDER BY c.stage, c.reason;
