-- Statements the benchmarks (bench/) use to set up and measure their scratch databases; never the
-- service's, so they stay here, out of the installed package (read by bench/statements.py).

-- name: bench_reset
-- Every table that refers to records (upload keys, search rows, speakers…) goes with them.
TRUNCATE events, record_windows, records RESTART IDENTITY CASCADE;

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
-- The claim's indexes: the partial ones on records but the converted audio's.
SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) AS claimable_bytes,
       pg_relation_size('records_pkey') AS pkey_bytes,
       (SELECT count(*) FROM records) AS rows
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'records'::regclass AND i.indpred IS NOT NULL AND c.relname <> 'records_converted_blob';

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

-- name: bench_search_merge
-- The search index's pending list merged into the index (what a later insert or vacuum does).
SELECT gin_clean_pending_list('search_rows_keys'::regclass) AS pages;

-- name: bench_search_parse
-- A record's segment texts read from its windows and, with `parse`, parsed as its search rows'
-- tsvectors are, nothing written: the two runs' difference is the parse alone, the floor of
-- any index kept by the statement that saves the text.
SELECT sum(CASE WHEN %(parse)s THEN length(to_tsvector(search_config(r.language), search_normal(e.text)))
                ELSE length(e.text) END) AS size
FROM records r JOIN record_windows w ON w.record_id = r.id,
     jsonb_to_recordset(w.segments) AS e(text text)
WHERE r.id = %(id)s;

-- name: bench_search_size
SELECT pg_total_relation_size('search_rows') AS total_bytes, pg_relation_size('search_rows') AS heap_bytes,
       pg_relation_size('search_rows_keys') AS keys_bytes,
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
-- What a /metrics scrape ran before the kept counts (record_counts): a count of all records at every scrape.
SELECT stage, halt_reason AS reason, count(*) AS records,
       count(*) FILTER (WHERE halted_at IS NULL AND retry_after > now()) AS waiting
FROM records
GROUP BY stage, halt_reason
ORDER BY stage, halt_reason;

-- name: bench_design_before
-- The claim index before queued_at, for the side-by-side measure: available_at,
-- which moves with every lease renewal.
DROP INDEX records_turns;
DROP INDEX records_retrying;
DROP INDEX records_held;
CREATE INDEX records_claimable ON records (stage, available_at, id) WHERE available_at IS NOT NULL;

-- name: bench_picks_before
-- The claim's pick before queued_at: one index in available_at order.
candidate AS (
    SELECT id FROM records
    WHERE stage = %(stage)s AND available_at <= now()
    ORDER BY available_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)

-- name: bench_claim_some
-- Claims `count` eligible records at once (the renewals' subjects), under tokens of their own:
-- one in 200, as records claimed at different moments lie apart in the table.
UPDATE records SET claim_token = nextval('claim_tokens'), lease_expires_at = now() + interval '1 minute'
WHERE id IN (SELECT id FROM records WHERE stage = 'created' AND claim_token IS NULL AND failures = 0
             AND id %% 200 = 0 ORDER BY id LIMIT %(count)s)
RETURNING id, claim_token;

-- name: bench_updates
-- Updates of records and how many of them were HOT, as the statistics collector has them.
SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'records';

-- name: bench_flush_stats
SELECT pg_stat_force_next_flush();

-- name: bench_fresh_stats
SELECT pg_stat_clear_snapshot();

-- name: bench_scale_owners
-- `count` owners named scale-N (token hashes that no token has).
INSERT INTO owners (name, token_hash)
SELECT 'scale-' || n, 'scale-' || n FROM generate_series(1, %(count)s) AS n;

-- name: bench_scale_blobs
-- `count` small complete blobs of one chunk each (an original's stand-in).
WITH made AS (
    INSERT INTO blobs (media_type, size_bytes, completed_at)
    SELECT 'audio/ogg', 64, now() - interval '1 day' FROM generate_series(1, %(count)s)
    RETURNING id
)
INSERT INTO blob_chunks (blob_id, seq, data)
SELECT id, 0, decode(repeat('4f676753', 16), 'hex') FROM made;

-- name: bench_scale_done
-- `count` done records spread over the owners round robin, each with its own blob (by id from
-- `first_blob`) and a synthetic text of about 200 characters, created over the past year.
INSERT INTO records (owner_id, original_blob_id, stage, stage_entered_at, created_at, updated_at,
                     title, transcript, duration_seconds, engine)
SELECT o.first_owner + (n %% %(owners)s), %(first_blob)s + n - 1, 'done',
       now() - make_interval(secs => n), now() - make_interval(secs => n * 30),
       now() - make_interval(secs => n), 'meeting ' || n,
       repeat(md5(n::text) || ' words of a meeting ', 4), 60 + n %% 600, 'bench'
FROM generate_series(1, %(count)s) AS n,
     (SELECT min(id) AS first_owner FROM owners WHERE name LIKE 'scale-%%') o;

-- name: bench_scale_waiting
-- `count` records at stage created, accepted one by one over the owners round robin (each takes
-- its turn as an upload does), with blobs by id from `first_blob`.
INSERT INTO records (owner_id, original_blob_id, stage_entered_at)
SELECT o.first_owner + (n %% %(owners)s), %(first_blob)s + n - 1, now() - make_interval(secs => %(count)s - n)
FROM generate_series(1, %(count)s) AS n,
     (SELECT min(id) AS first_owner FROM owners WHERE name LIKE 'scale-%%') o
ORDER BY n;

-- name: bench_scale_blob_ids
SELECT min(id) AS first, max(id) AS last FROM blobs;

-- name: bench_scale_sample_ids
-- `count` record ids and their owners, spread over the table.
SELECT id, owner_id FROM records TABLESAMPLE SYSTEM (1) LIMIT %(count)s;

-- name: bench_scale_settle
-- Everything waiting is done: the fairness scenario starts from an idle queue.
UPDATE records SET stage = 'done', claim_token = NULL, lease_expires_at = NULL
WHERE stage <> 'done';

-- name: bench_design_queued
-- The claim index in queued_at order, before fair turns, for the side-by-side measure.
CREATE INDEX records_queued ON records (stage, queued_at, id) WHERE queued_at IS NOT NULL;

-- name: bench_picks_queued
-- The claim's pick in queued_at order, before fair turns: expired leases, then queued_at order.
held AS (
    SELECT id FROM records
    WHERE stage = %(stage)s AND claim_token IS NOT NULL AND halted_at IS NULL
      AND lease_expires_at <= now()
    ORDER BY lease_expires_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
), queued AS (
    SELECT id FROM records
    WHERE stage = %(stage)s AND queued_at <= now() AND NOT EXISTS (SELECT FROM held)
    ORDER BY queued_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
), candidate AS (
    SELECT id FROM held UNION ALL SELECT id FROM queued
)

-- name: bench_design_both_before
-- The claim index before queued_at beside the ones of now (bench/scale.py measures each
-- design's claim in the same table).
CREATE INDEX records_claimable ON records (stage, available_at, id) WHERE available_at IS NOT NULL;
