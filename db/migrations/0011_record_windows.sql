-- Recognised windows, one row each, written once by the checkpoint that saves them (the same
-- statement, under the claim's token); the text is assembled from them once, at done. The
-- segments column grew by a whole copy per checkpoint: a 4-hour recording wrote hundreds of MB of
-- WAL for under 1 MB of segments.
--
-- A window's segments are as the engine gave them ({start, end, text, words}), timed from the
-- recording's start; the recording's segments are the windows' in from_seconds order, each
-- window's in its own order. That order is the one search rows (one per segment) are built in.
CREATE TABLE record_windows (
    record_id     bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    from_seconds  double precision NOT NULL,
    to_seconds    double precision NOT NULL,
    claim_token   bigint NOT NULL,             -- the claim that saved it
    segments      jsonb NOT NULL,
    saved_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_id, from_seconds),
    CHECK (to_seconds > from_seconds)
);

-- What was recognised before this migration becomes one window per record, from 0 to where
-- recognition stood (a record done before checkpoints existed: to its duration).
UPDATE records SET recognized_seconds = greatest(duration_seconds, 0.001)
WHERE recognized_seconds = 0 AND jsonb_array_length(coalesce(segments, '[]')) > 0;
INSERT INTO record_windows (record_id, from_seconds, to_seconds, claim_token, segments)
SELECT id, 0, recognized_seconds, coalesce(claim_token, 0), coalesce(segments, '[]')
FROM records WHERE recognized_seconds > 0;
ALTER TABLE records DROP COLUMN segments;
