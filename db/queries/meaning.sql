-- Statements of search by meaning (passages, 0008_passages.sql). Every read is bounded by the
-- owner's id; the statements that name pgvector's type run only where the server has it
-- (meaning_ready).

-- name: meaning_ready
-- Whether this database has pgvector: search by meaning runs, and passages are embedded.
SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'vector') AS ready;

-- name: passage_segments
-- A record's segments as its passages are cut from them, before or after done: in recording
-- order (n from 1, as its search rows number them), each with the owner's corrected text where
-- a correction has its times (save_recognize writes the search rows the same way).
SELECT row_number() OVER (ORDER BY w.from_seconds, e.n)::int AS n, e.start, e."end",
       coalesce(k.text, e.text, '') AS text
FROM record_windows w,
     ROWS FROM (jsonb_to_recordset(w.segments) AS (start float8, "end" float8, text text))
         WITH ORDINALITY AS e(start, "end", text, n)
LEFT JOIN record_corrections k ON k.record_id = %(id)s AND k.start_seconds = e.start AND k.end_seconds = e."end"
WHERE w.record_id = %(id)s
ORDER BY n;

-- name: lock_passages_holding
-- The passages of a record that hold any of the segments `segments` (search_rows.n), locked by
-- the edit that changes them, in one order: an edit of another of their segments waits for
-- this one's commit, then reads the text it left (passages_holding). The edit's statements name
-- the record's owner, read from records here (the operator's edit has none to give), so that each
-- reads the owner's partition alone (0010_passages_by_owner.sql) rather than probing all 64.
SELECT p.n FROM passages p
WHERE p.owner_id = (SELECT r.owner_id FROM records r WHERE r.id = %(id)s) AND p.record_id = %(id)s
  AND EXISTS (SELECT FROM unnest(%(segments)s::int[]) AS x(n) WHERE x.n BETWEEN p.first_segment AND p.last_segment)
ORDER BY p.n
FOR UPDATE;

-- name: passages_holding
-- The passages of a record that hold any of the segments `segments` (search_rows.n), each with
-- its segments' texts as the search rows hold them (the owner's corrections in): what an edit
-- makes again.
SELECT p.n, p.body,
       array_agg(s.body ORDER BY s.n) AS texts, array_agg(s.n ORDER BY s.n) AS segments
FROM passages p
JOIN search_rows s ON s.record_id = p.record_id AND s.n BETWEEN p.first_segment AND p.last_segment
WHERE p.owner_id = (SELECT r.owner_id FROM records r WHERE r.id = %(id)s) AND p.record_id = %(id)s
  AND EXISTS (SELECT FROM unnest(%(segments)s::int[]) AS x(n) WHERE x.n BETWEEN p.first_segment AND p.last_segment)
GROUP BY p.n, p.body
ORDER BY p.n;

-- name: remake_passage
-- A passage's text and embedding made again by the edit that changed its text, in the edit's
-- transaction (the passage locked by lock_passages_holding).
UPDATE passages p SET body = %(body)s, embedding = %(embedding)s::real[]
WHERE p.owner_id = (SELECT r.owner_id FROM records r WHERE r.id = %(id)s) AND p.record_id = %(id)s AND p.n = %(n)s
RETURNING p.n;

-- name: drop_passage
-- A passage whose corrected text has no embedding here (no model in this process): gone rather
-- than found by words it no longer has, and the record owed its passages (passages_owed), which
-- the backfill makes again where the model is.
WITH dropped AS (
    DELETE FROM passages p
    WHERE p.owner_id = (SELECT r.owner_id FROM records r WHERE r.id = %(id)s) AND p.record_id = %(id)s AND p.n = %(n)s
    RETURNING p.n, p.record_id
), owed AS (
    INSERT INTO passages_owed (record_id) SELECT record_id FROM dropped ON CONFLICT DO NOTHING
)
SELECT n FROM dropped;

-- name: owner_passages_capped
-- How many passages the owner has, counted up to `cap` (by the owner's index, nothing more read).
SELECT count(*) AS passages FROM (SELECT 1 FROM passages WHERE owner_id = %(owner_id)s LIMIT %(cap)s) AS p;

-- name: owner_not_english
-- How many of the owner's done records are in a language other than English (not in passages).
SELECT count(*) AS records FROM records
WHERE owner_id = %(owner_id)s AND stage = 'done' AND NOT in_english(language);

-- name: meaning_exact
-- The owner's passages nearest in meaning to the query's embedding, best first, compared one
-- by one (the owner's passages read by passages_owner in the owner's partition; "+ 0" keeps the
-- HNSW index, which serves every owner of the partition, out of it: for an owner's few thousand
-- passages the exact reading is cheaper and loses none). Filters as the word search's
-- (search_page), the speaker's by the same functions (speakers_named, spoken_by).
WITH named AS MATERIALIZED (
    SELECT speakers_named(%(owner_id)s, %(speaker)s::text) AS labels
)
SELECT p.record_id, p.n, p.first_segment, p.last_segment, p.start_seconds, p.end_seconds, p.speaker, p.body,
       r.title, 1 - (p.embedding::vector(384) <=> %(vector)s::vector(384)) AS score,
       CASE WHEN p.speaker IS NOT NULL THEN shown_speaker_names(p.record_id) END AS names
FROM passages p
JOIN records r ON r.id = p.record_id
WHERE p.owner_id = %(owner_id)s
  AND (%(stage)s::text IS NULL OR r.stage = %(stage)s)
  AND (%(topic)s::text IS NULL OR %(topic)s = ANY (r.topics))
  AND (%(since)s::date IS NULL OR r.created_at >= %(since)s::date)
  AND (%(until)s::date IS NULL OR r.created_at < %(until)s::date + 1)
  AND spoken_by(%(speaker)s::text, ARRAY[p.speaker], (SELECT labels FROM named), p.record_id)
ORDER BY (p.embedding::vector(384) <=> %(vector)s::vector(384)) + 0, p.record_id DESC, p.n
LIMIT %(limit)s;

-- name: meaning_search_width
-- How many neighbours the HNSW walk keeps (pgvector's hnsw.ef_search, kept for the transaction):
-- the walk is of the graph of the owner's partition (0010_passages_by_owner.sql), the owner's
-- passages a part of it, and its neighbours are filtered by owner after it, so it keeps twice
-- `limit` over the owner's share of that partition, at least twice `limit` and at most `width`
-- (pgvector's most). A wider walk costs time in proportion (BENCHMARKS.md, Search by meaning).
-- The partition is the one holding any of the owner's passages; the share is the partition's
-- statistics' (an owner of many is among its most common values), else the owner's passages
-- counted over the partition's estimate (counting 100,000 costs more than the walk).
SELECT set_config('hnsw.ef_search',
                  least(%(width)s, greatest(2 * %(limit)s, round(2.0 * %(limit)s / greatest(w.share, 0.0001))))::int::text,
                  true) AS width
FROM (SELECT coalesce(
                 (SELECT s.most_common_freqs[array_position(s.most_common_vals::text::bigint[], %(owner_id)s::bigint)]
                  FROM pg_stats s
                  WHERE s.schemaname = c.relnamespace::regnamespace::text AND s.tablename = c.relname
                    AND s.attname = 'owner_id' AND NOT s.inherited),
                 (SELECT count(*) FROM passages WHERE owner_id = %(owner_id)s) / greatest(c.reltuples, 1)) AS share
      FROM pg_class c
      WHERE c.oid = (SELECT p.tableoid FROM passages p WHERE p.owner_id = %(owner_id)s LIMIT 1)) AS w;

-- name: meaning_widest_walk
-- The HNSW walk at its widest (`width`, pgvector's most), for the transaction: for a filter that
-- kept fewer neighbours than asked of a walk sized by the owner's share alone.
SELECT set_config('hnsw.ef_search', %(width)s::int::text, true) AS width;

-- name: meaning_nearest
-- The same for an owner of many passages: the HNSW index of the owner's partition walked
-- (passages_meaning), its neighbours kept when they are the owner's and pass the filters.
WITH named AS MATERIALIZED (
    SELECT speakers_named(%(owner_id)s, %(speaker)s::text) AS labels
), near AS MATERIALIZED (
    SELECT p.record_id, p.n, p.first_segment, p.last_segment, p.start_seconds, p.end_seconds, p.speaker, p.body,
           p.embedding::vector(384) <=> %(vector)s::vector(384) AS distance
    FROM passages p
    WHERE p.owner_id = %(owner_id)s
    ORDER BY p.embedding::vector(384) <=> %(vector)s::vector(384)
    LIMIT current_setting('hnsw.ef_search')::int
)
SELECT p.record_id, p.n, p.first_segment, p.last_segment, p.start_seconds, p.end_seconds, p.speaker, p.body,
       r.title, 1 - p.distance AS score,
       CASE WHEN p.speaker IS NOT NULL THEN shown_speaker_names(p.record_id) END AS names
FROM near p
JOIN records r ON r.id = p.record_id
WHERE (%(stage)s::text IS NULL OR r.stage = %(stage)s)
  AND (%(topic)s::text IS NULL OR %(topic)s = ANY (r.topics))
  AND (%(since)s::date IS NULL OR r.created_at >= %(since)s::date)
  AND (%(until)s::date IS NULL OR r.created_at < %(until)s::date + 1)
  AND spoken_by(%(speaker)s::text, ARRAY[p.speaker], (SELECT labels FROM named), p.record_id)
ORDER BY p.distance, p.record_id DESC, p.n
LIMIT %(limit)s;

-- name: passages_missing
-- Done records owed passages (passages_owed, 0012: done in English with words and none, or an
-- edit dropped one it could not embed), by id from `after` on: what the backfill gives passages.
-- Reads the debts alone, however large the archive; one whose record is being run again waits
-- for it to be done.
SELECT o.record_id AS id FROM passages_owed o JOIN records r ON r.id = o.record_id
WHERE o.record_id > %(after)s AND r.stage = 'done'
ORDER BY o.record_id
LIMIT %(limit)s;

-- name: passages_owed_count
-- For the metrics: how many records are owed passages (the backfill's backlog; on a server
-- without pgvector, or with search by meaning off, every English record done meanwhile).
SELECT count(*) AS records FROM passages_owed;

-- name: segment_speakers
-- Who speaks in each of a record's segments (search_rows.n from 1; empty: not known), as the
-- diarize save left them: where the backfill cuts passages as that save would.
SELECT n, coalesce(speakers, '{}') AS speakers FROM search_rows
WHERE record_id = %(id)s AND n > 0
ORDER BY n;

-- name: backfill_passages
-- A done record's passages, all of them, written only if it is still owed them and its segments
-- still hold the texts and speakers they were cut and embedded from (`said`: [text, speakers]
-- per segment, n from 1); keep_passages settles the debt. The segments' search rows are locked
-- (FOR SHARE) and read as committed last: an edit or a diarize save under way finishes first and
-- then fails the comparison (the record waits for the next pass), and one that starts after
-- waits for this commit and finds the passages to make again. Returns how many passages the
-- record has; no row: fenced out.
WITH target AS (
    SELECT r.id, r.owner_id FROM records r
    WHERE r.id = %(id)s AND r.stage = 'done'
      AND EXISTS (SELECT FROM passages_owed o WHERE o.record_id = r.id)
    FOR KEY SHARE OF r
), said AS (
    SELECT s.n, s.body, coalesce(s.speakers, '{}') AS speakers FROM search_rows s
    WHERE s.record_id = %(id)s AND s.n BETWEEN 1 AND jsonb_array_length(%(said)s::jsonb)
    ORDER BY s.n
    FOR SHARE
)
SELECT keep_passages(t.id, t.owner_id, %(passages)s::jsonb) AS passages
FROM target t
WHERE (SELECT coalesce(jsonb_agg(jsonb_build_array(body, to_jsonb(speakers)) ORDER BY n), '[]') FROM said)
      = %(said)s::jsonb;
