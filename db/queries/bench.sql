-- Statements the benchmarks (bench/) use to set up their scratch databases; never the service.

-- name: bench_reset
TRUNCATE events, records RESTART IDENTITY;

-- name: bench_fill
-- `count` records at stage created, accepted in this order, sharing one audio blob.
INSERT INTO records (owner_id, original_blob_id, stage_entered_at)
SELECT %(owner_id)s, %(blob_id)s, now() - make_interval(secs => %(count)s - n)
FROM generate_series(1, %(count)s) AS n;

-- name: bench_pause_head
-- `count` records at stage created, accepted before any other and waiting out a retry pause.
INSERT INTO records (owner_id, original_blob_id, stage_entered_at, retry_after, failures)
SELECT %(owner_id)s, %(blob_id)s, now() - interval '1 day', now() + interval '1 day', 1
FROM generate_series(1, %(count)s);

-- name: bench_finish
-- `count` records done.
INSERT INTO records (owner_id, original_blob_id, stage, stage_entered_at)
SELECT %(owner_id)s, %(blob_id)s, 'done', now() - interval '2 days'
FROM generate_series(1, %(count)s);

-- name: bench_analyze
ANALYZE records;

-- name: bench_index_size
SELECT pg_relation_size('records_claimable') AS claimable_bytes,
       pg_relation_size('records_pkey') AS pkey_bytes,
       (SELECT count(*) FROM records) AS rows;

-- name: bench_xact_count
SELECT xact_commit + xact_rollback AS transactions FROM pg_stat_database WHERE datname = current_database();

-- name: bench_backends
-- The server processes serving this database's connections (their CPU is the pipeline's too).
SELECT pid FROM pg_stat_activity WHERE datname = current_database();

-- name: bench_generic_plans
-- Plan as a worker's prepared statement is planned: once, whatever its parameters.
SET plan_cache_mode = force_generic_plan;

-- name: bench_explain
EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement};

-- name: bench_search_owners
-- `count` owners named o1, o2, … (the search benchmark's; their tokens are never used).
INSERT INTO owners (name, token_hash)
SELECT 'o' || n, md5('bench' || n) FROM generate_series(1, %(count)s) AS n;

-- name: bench_search_records
-- `per_owner` done records for each owner whose name starts with `prefix`, in the given
-- language, sharing one audio blob; the last id.
WITH made AS (
    INSERT INTO records (owner_id, original_blob_id, stage, stage_entered_at, language, title)
    SELECT o.id, %(blob_id)s, 'done', now(), %(language)s, 'Meeting ' || n
    FROM owners o, generate_series(1, %(per_owner)s) AS n
    WHERE starts_with(o.name, %(prefix)s)
    RETURNING id
)
SELECT max(id) AS last FROM made;

-- name: bench_search_fill
-- `per_record` search rows for each record whose id is in [first, last): segments of `seconds`
-- each, 10-16 words each, the way save_done writes them (the generated tsvector column
-- included). A word is the pseudo-word of its rank among `words`, drawn with a skewed
-- (Zipf-like) frequency: one to three of the `syllables`, the rank's digits in their base.
INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
SELECT r.id, g.n, r.owner_id, (g.n - 1) * %(seconds)s, g.n * %(seconds)s, search_config(r.language),
       (SELECT string_agg(s[1 + k %% b] || CASE WHEN k >= b THEN s[1 + k / b %% b] ELSE '' END
                          || CASE WHEN k >= b * b THEN s[1 + k / (b * b) %% b] ELSE '' END, ' ')
        FROM (SELECT %(syllables)s::text[] AS s, cardinality(%(syllables)s::text[]) AS b,
                     floor(%(words)s * power(random(), 2.5))::int AS k
              FROM generate_series(1, 10 + (g.n * 7 + r.id) %% 7)) AS drawn)
FROM records r, generate_series(1, %(per_record)s) AS g(n)
WHERE r.id >= %(first)s AND r.id < %(last)s AND r.stage = 'done';

-- name: bench_search_analyze
ANALYZE search_rows;

-- name: bench_search_samples
-- Segments to draw the benchmark's queries from: their owner and text.
SELECT owner_id, body FROM search_rows TABLESAMPLE BERNOULLI (%(percent)s)
WHERE n > 0 AND (%(owner_id)s::bigint IS NULL OR owner_id = %(owner_id)s) LIMIT %(count)s;

-- name: bench_search_size
SELECT pg_total_relation_size('search_rows') AS total_bytes, pg_relation_size('search_rows') AS heap_bytes,
       pg_relation_size('search_rows_owner') AS owner_bytes,
       pg_relation_size('search_rows_pkey') AS pkey_bytes,
       (SELECT sum(end_seconds - start_seconds) FROM search_rows) AS audio_seconds,
       (SELECT count(*) FROM search_rows WHERE n > 0) AS segments;

-- name: bench_fill_archive
-- `count` done records of one owner, created `age_days` ago, each with an original of its own
-- (one chunk of `chunk_bytes` zero bytes), in one statement (bench/retention.py).
WITH b AS (
    INSERT INTO blobs (media_type, completed_at, size_bytes)
    SELECT 'audio/ogg', now(), %(chunk_bytes)s FROM generate_series(1, %(count)s)
    RETURNING id
), c AS (
    INSERT INTO blob_chunks (blob_id, seq, data)
    SELECT id, 0, decode(repeat('00', %(chunk_bytes)s), 'hex') FROM b
)
INSERT INTO records (owner_id, original_blob_id, stage, created_at, transcript, duration_seconds)
SELECT %(owner_id)s, id, 'done', now() - make_interval(days => %(age_days)s), 'text', 60 FROM b;

-- name: bench_vacuum_analyze
VACUUM ANALYZE;

-- name: bench_full_queue_count
-- What a /metrics scrape ran before migration 28: a count of all records at every scrape.
SELECT stage, halt_reason AS reason, count(*) AS records,
       count(*) FILTER (WHERE halted_at IS NULL AND retry_after > now()) AS waiting
FROM records
GROUP BY stage, halt_reason
ORDER BY stage, halt_reason;
