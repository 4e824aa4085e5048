-- The owner's corrections of the text: owner rows kept apart from the recognised text (P3), one
-- per corrected segment, applied on top of it wherever the text is read (`Store.transcript`).
-- The recognised text (records.transcript, record_windows) stays as the recognize step saved
-- it, so a re-run can never overwrite a correction, and the machine's text can still be read.
--
-- A correction names its segment by the segment's place (`segment`, from 0, in recording order)
-- and by its times as recognised (start_seconds, end_seconds): a text recognised again puts the
-- correction back on the segment with those times; where no segment has them any more, the
-- correction is detached (listed on the card, shown where its times fall), never dropped. The
-- times are its key: a second edit of the same segment replaces the first (the later wins),
-- and an edit of a new segment at the place of a detached correction keeps both.
-- `words`: the corrected segment's timed words, made by the edit (the words that did not change
-- keep their times, new ones share the span between their neighbours), so a read only
-- substitutes. `corrected_at`: when the row was written (the clock, not the transaction's start),
-- so of two edits the one kept is seen to be the later.
CREATE TABLE record_corrections (
    record_id      bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    start_seconds  double precision NOT NULL,
    end_seconds    double precision NOT NULL,
    segment        integer NOT NULL CHECK (segment >= 0),
    text           text NOT NULL,
    words          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(words) = 'array'),
    corrected_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (record_id, start_seconds, end_seconds)
);

-- A record's segment as recognised, found by its times (NULL if it has no segment with them):
-- read from the one window that would hold it (the last to start at or before it), so its
-- cost is a window's, whatever the recording's length. Whether a correction is on the text,
-- what an edit starts from, and the words of a search hit all look a segment up this way.
CREATE FUNCTION recognised_segment(record_id bigint, start_seconds float8, end_seconds float8) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT e.segment
    FROM (SELECT w.segments FROM record_windows w
          WHERE w.record_id = $1 AND w.from_seconds <= $2
          ORDER BY w.from_seconds DESC LIMIT 1) w,
         jsonb_array_elements(w.segments) AS e(segment)
    WHERE (e.segment->>'start')::float8 = $2 AND (e.segment->>'end')::float8 = $3
    LIMIT 1
$$;

-- A segment's timed words as the owner reads them: the correction's, else the recognised ones.
CREATE FUNCTION shown_words(record_id bigint, start_seconds float8, end_seconds float8) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        (SELECT k.words FROM record_corrections k
         WHERE k.record_id = $1 AND k.start_seconds = $2 AND k.end_seconds = $3),
        recognised_segment($1, $2, $3)->'words')
$$;

-- The card says how many corrections a record has, and lists those detached from the text
-- (each with its place and its times). Columns are appended, so the view's readers are unchanged.
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.created_at, r.updated_at, r.duration_seconds,
       r.source_name, r.engine, r.language, r.prompt, r.language_probability, r.audio_expired_at,
       s.step, s.halted_at, s.halt_reason, s.halt_error, s.failures, s.retry_after, s.lease_expires_at,
       s.lost_leases, s.progress_seconds, s.checkpoint_seconds,
       r.speakers_wanted, r.speaker_names, d.record_id IS NOT NULL AS speakers_queued,
       r.turns IS NOT NULL AS speakers_found, d.halt_reason AS speakers_halt_reason,
       d.halt_error AS speakers_halt_error, d.failures AS speakers_failures,
       speaker_list(r.id) AS speaker_list,
       coalesce(c.corrections, 0) AS corrections, coalesce(c.detached, '[]') AS detached_corrections
FROM records r JOIN owners o ON o.id = r.owner_id
     LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
     LEFT JOIN steps d ON d.record_id = r.id AND d.stage = 'done'
     LEFT JOIN LATERAL (
         SELECT count(*)::int AS corrections,
                jsonb_agg(jsonb_build_object('segment', k.segment, 'start', k.start_seconds, 'end', k.end_seconds)
                          ORDER BY k.start_seconds)
                    FILTER (WHERE recognised_segment(k.record_id, k.start_seconds, k.end_seconds) IS NULL) AS detached
         FROM record_corrections k WHERE k.record_id = r.id
     ) c ON true;
