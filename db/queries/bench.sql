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

-- name: bench_full_queue_count
-- What a /metrics scrape ran before migration 28: a count of all records at every scrape.
SELECT stage, halt_reason AS reason, count(*) AS records,
       count(*) FILTER (WHERE halted_at IS NULL AND retry_after > now()) AS waiting
FROM records
GROUP BY stage, halt_reason
ORDER BY stage, halt_reason;
