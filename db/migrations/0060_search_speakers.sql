-- Search by speaker (issue 19 §Names, issue 18 §API): each segment's search row (migration 33)
-- keeps the labels of the speakers whose words it holds (S1, S2, …), so `GET /search?speaker=`
-- tests a column of the rows it already reads by owner and joins nothing more. The diarize step
-- finishes after done, so its fenced save (save_speakers) writes them; until then, and on the
-- title row (n = 0), the array is empty. Names are the owner's and change: a name given is
-- matched at query time through records.speaker_names, never copied here.
ALTER TABLE search_rows ADD COLUMN speakers text[] NOT NULL DEFAULT '{}';

-- The records diarized before this migration: each word (a segment without words: the segment)
-- gets the speaker whose turn overlaps it most, the nearest turn's where none does, as
-- audio.speakers.assign labels them for the formats.
WITH segments AS (
    SELECT w.record_id, row_number() OVER (PARTITION BY w.record_id ORDER BY w.from_seconds, e.n)::int AS n,
           e.segment
    FROM record_speakers s JOIN record_windows w ON w.record_id = s.record_id,
         jsonb_array_elements(w.segments) WITH ORDINALITY AS e(segment, n)
    WHERE s.turns IS NOT NULL AND jsonb_array_length(s.turns) > 0
), spans AS (
    SELECT g.record_id, g.n, (x.span->>'start')::float8 AS a, (x.span->>'end')::float8 AS b
    FROM segments g,
         jsonb_array_elements(CASE WHEN jsonb_array_length(coalesce(g.segment->'words', '[]')) > 0
                                   THEN g.segment->'words' ELSE jsonb_build_array(g.segment) END) AS x(span)
), said AS (
    SELECT p.record_id, p.n,
           (SELECT t.turn->>'speaker'
            FROM record_speakers s, jsonb_array_elements(s.turns) AS t(turn)
            WHERE s.record_id = p.record_id
            ORDER BY greatest(0, least(p.b, (t.turn->>'end')::float8) - greatest(p.a, (t.turn->>'start')::float8)) DESC,
                     least(abs((p.a + p.b) / 2 - (t.turn->>'start')::float8),
                           abs((p.a + p.b) / 2 - (t.turn->>'end')::float8))
            LIMIT 1) AS speaker
    FROM spans p
)
UPDATE search_rows r SET speakers = x.speakers
FROM (SELECT record_id, n, array_agg(DISTINCT speaker) AS speakers FROM said
      WHERE speaker IS NOT NULL GROUP BY record_id, n) x
WHERE r.record_id = x.record_id AND r.n = x.n;
