-- Statements of the owner's corrections of the text (record_corrections): owner rows apart from
-- the recognised text (P3), read with it by `transcript` (reads.sql).

-- name: segment_to_correct
-- The owner's record's (any owner's with owner_id NULL: the operator's command) stage and, once done, its segment number `segment` (from 0) as
-- recognised: times, text and timed words. The segment's times come from its search row (one
-- per segment, n from 1, by the primary key), the rest from the one window that holds it
-- (recognised_segment), so an edit reads one window whatever the recording's length. The
-- record is locked against its erasure until the edit is written.
-- `corrected_words`: the segment's words as an earlier correction left them (NULL: none), what a
-- word edit changes one word of.
SELECT r.stage, s.start_seconds, s.end_seconds, said.segment->>'text' AS text,
       coalesce(said.segment->'words', '[]') AS words,
       (SELECT k.words FROM record_corrections k
        WHERE k.record_id = r.id AND k.start_seconds = s.start_seconds AND k.end_seconds = s.end_seconds)
           AS corrected_words
FROM records r
LEFT JOIN search_rows s ON r.stage = 'done' AND s.record_id = r.id AND s.n = %(segment)s + 1
LEFT JOIN LATERAL (SELECT recognised_segment(r.id, s.start_seconds, s.end_seconds) AS segment) said ON true
WHERE r.id = %(id)s AND (%(owner_id)s::bigint IS NULL OR r.owner_id = %(owner_id)s)
FOR KEY SHARE OF r;

-- name: correct_segment
-- The owner's correction of one segment of a done record: kept by the segment's times as
-- recognised (a second edit of it replaces the first: the later wins), the segment's search row
-- made to hold the corrected words instead of the misheard ones, and a `corrected` event
-- (origin human: who, as owner or operator, which segment, and which word for a word edit; never
-- the text) in the same statement. Writes no field of the record's: the pipeline's text stays as
-- recognised.
WITH target AS (
    SELECT id, owner_id FROM records
    WHERE id = %(id)s AND (%(owner_id)s::bigint IS NULL OR owner_id = %(owner_id)s) AND stage = 'done'
), kept AS (
    INSERT INTO record_corrections (record_id, start_seconds, end_seconds, segment, text, words)
    SELECT id, %(start)s, %(end)s, %(segment)s, %(text)s, %(words)s FROM target
    ON CONFLICT (record_id, start_seconds, end_seconds)
        DO UPDATE SET segment = excluded.segment, text = excluded.text, words = excluded.words,
                      corrected_at = clock_timestamp()
    RETURNING record_id
), indexed AS (
    UPDATE search_rows s SET body = %(text)s
    FROM target
    WHERE s.record_id = target.id AND s.n = %(segment)s + 1
      AND s.start_seconds = %(start)s AND s.end_seconds = %(end)s
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'human', 'corrected', 'done',
           jsonb_build_object('segment', %(segment)s::int, 'start', %(start)s::float8, 'end', %(end)s::float8,
                              'by', %(by)s::text, 'as', %(role)s::text)
           || CASE WHEN %(word)s::int IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('word', %(word)s::int) END
    FROM kept
)
SELECT record_id FROM kept;
