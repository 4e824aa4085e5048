-- Statements the benchmarks (bench/) use to set up and measure their scratch databases; never the
-- service's, so they stay here, out of the installed package (read by bench/statements.py).

-- name: bench_reset
-- Every table that refers to records (step rows, upload keys, search rows…) goes with them, and
-- the owners' turns start again.
TRUNCATE events, record_windows, owner_turns, records RESTART IDENTITY CASCADE;

-- name: bench_fill
-- `count` records at stage created, accepted in this order, sharing one audio blob: each waits
-- for its first step, queued as accept_record queues it (taking its owner's turn in order).
WITH accepted AS (
    INSERT INTO records (owner_id, original_blob_id, stage_entered_at)
    SELECT %(owner_id)s, %(blob_id)s, now() - make_interval(secs => %(count)s - n)
    FROM generate_series(1, %(count)s) AS n
    ORDER BY n
    RETURNING id, owner_id, stage, stage_entered_at
)
INSERT INTO steps (record_id, step, stage, owner_id, entered_at)
SELECT id, 'convert', stage, owner_id, stage_entered_at FROM accepted ORDER BY id;

-- name: bench_pause_head
-- `count` records at stage created, accepted before any other, whose first step failed once and
-- waits out a retry pause.
WITH accepted AS (
    INSERT INTO records (owner_id, original_blob_id, stage_entered_at)
    SELECT %(owner_id)s, %(blob_id)s, now() - interval '1 day'
    FROM generate_series(1, %(count)s)
    RETURNING id, owner_id, stage, stage_entered_at
)
INSERT INTO steps (record_id, step, stage, owner_id, entered_at, retry_after, failures)
SELECT id, 'convert', stage, owner_id, stage_entered_at, now() + interval '1 day', 1 FROM accepted ORDER BY id;

-- name: bench_finish
-- `count` records done (no step waits for them).
INSERT INTO records (owner_id, original_blob_id, stage, stage_entered_at)
SELECT %(owner_id)s, %(blob_id)s, 'done', now() - interval '2 days'
FROM generate_series(1, %(count)s);

-- name: bench_analyze
ANALYZE records, steps;

-- name: bench_index_size
-- The claim's indexes: every index of steps but its primary key and the two that serve the
-- metrics and the list of halted records.
SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) AS claimable_bytes,
       pg_relation_size('steps_pkey') AS pkey_bytes,
       (SELECT count(*) FROM steps) AS rows
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'steps'::regclass AND NOT i.indisprimary AND c.relname NOT IN ('steps_paused', 'steps_halted');

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
-- each, 10-16 words each, the way the done save writes them (the generated tsvector column
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

-- name: bench_search_speakers
-- The owners' records as diarized, for the search by speaker: their segments said by S1 and S2
-- in turn, and S2 named `name` by the owner.
WITH named AS (
    UPDATE records SET speaker_names = jsonb_build_object('S2', %(name)s::text)
    WHERE owner_id = ANY (%(owners)s::bigint[])
)
UPDATE search_rows SET speakers = ARRAY['S' || (1 + n %% 2)]
WHERE owner_id = ANY (%(owners)s::bigint[]) AND n > 0;

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
-- What a /metrics scrape would cost counting instead of reading kept counts: every record at
-- every scrape, with the halt of the step its stage waits for.
SELECT r.stage, s.halt_reason AS reason, count(*) AS records,
       count(*) FILTER (WHERE s.halted_at IS NULL AND s.retry_after > now()) AS waiting
FROM records r LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
GROUP BY r.stage, s.halt_reason
ORDER BY r.stage, s.halt_reason;

-- name: bench_design_alone
-- The claim's own indexes gone, for another design measured alone in its table
-- (bench/claim_index.py), and the turns with them: that design takes new work without turns.
ALTER TABLE steps DISABLE TRIGGER steps_turn;
DROP INDEX steps_turns;
DROP INDEX steps_retrying;
DROP INDEX steps_held;

-- name: bench_design_available
-- The claim served by one index in available_at order, for the side-by-side measure: the moment
-- a row is or becomes claimable, the latest of its entry, its lease's end and its retry pause's
-- end, so it moves with every lease renewal (a leased row sits at its lease's end).
ALTER TABLE steps ADD COLUMN available_at timestamptz GENERATED ALWAYS AS (
    CASE WHEN halted_at IS NULL THEN greatest(entered_at, lease_expires_at, retry_after) END) STORED;
CREATE INDEX steps_available ON steps (step, available_at, record_id) WHERE available_at IS NOT NULL;

-- name: bench_picks_available
-- The claim's pick in available_at order: the first row by that moment (a leased row sits at
-- its lease's end, a paused one at its pause's end).
candidate AS (
    SELECT record_id FROM steps
    WHERE step = %(step)s AND available_at <= now()
    ORDER BY available_at, record_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)

-- name: bench_claim_some
-- Claims `count` eligible convert steps at once (the renewals' subjects), under tokens of their
-- own: one in 200, as records claimed at different moments lie apart in the table.
UPDATE steps SET claim_token = nextval('claim_tokens'), lease_expires_at = now() + interval '1 minute'
WHERE step = 'convert'
  AND record_id IN (SELECT record_id FROM steps
                    WHERE step = 'convert' AND claim_token IS NULL AND failures = 0 AND record_id %% 200 = 0
                    ORDER BY record_id LIMIT %(count)s)
RETURNING record_id AS id, step, claim_token;

-- name: bench_updates
-- Updates of step rows and how many of them were HOT, as the statistics collector has them.
SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'steps';

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
WITH accepted AS (
    INSERT INTO records (owner_id, original_blob_id, stage_entered_at)
    SELECT o.first_owner + (n %% %(owners)s), %(first_blob)s + n - 1, now() - make_interval(secs => %(count)s - n)
    FROM generate_series(1, %(count)s) AS n,
         (SELECT min(id) AS first_owner FROM owners WHERE name LIKE 'scale-%%') o
    ORDER BY n
    RETURNING id, owner_id, stage, stage_entered_at
)
INSERT INTO steps (record_id, step, stage, owner_id, entered_at)
SELECT id, 'convert', stage, owner_id, stage_entered_at FROM accepted ORDER BY id;

-- name: bench_scale_blob_ids
SELECT min(id) AS first, max(id) AS last FROM blobs;

-- name: bench_scale_sample_ids
-- `count` record ids and their owners, spread over the table.
SELECT id, owner_id FROM records TABLESAMPLE SYSTEM (1) LIMIT %(count)s;

-- name: bench_scale_settle
-- Everything waiting is done: the fairness scenario starts from an idle queue.
WITH settled AS (DELETE FROM steps RETURNING record_id)
UPDATE records r SET stage = 'done' FROM settled s WHERE r.id = s.record_id AND r.stage <> 'done';

-- name: bench_design_queued
-- The claim served by one index in queued_at order (the moment an unclaimed row became
-- claimable), without fair turns, for the side-by-side measure.
CREATE INDEX steps_queued ON steps (step, queued_at, record_id) WHERE queued_at IS NOT NULL;

-- name: bench_picks_queued
-- The claim's pick in queued_at order without fair turns: a row whose holder ran out of lease,
-- then the first row by queued_at, retried or new alike.
held AS (
    SELECT record_id FROM steps
    WHERE step = %(step)s AND claim_token IS NOT NULL AND halted_at IS NULL
      AND lease_expires_at <= now()
    ORDER BY lease_expires_at, record_id LIMIT 1 FOR UPDATE SKIP LOCKED
), queued AS (
    SELECT record_id FROM steps
    WHERE step = %(step)s AND queued_at <= now() AND NOT EXISTS (SELECT FROM held)
    ORDER BY queued_at, record_id LIMIT 1 FOR UPDATE SKIP LOCKED
), candidate AS (
    SELECT record_id FROM held UNION ALL SELECT record_id FROM queued
)

-- name: bench_voices_records
-- `count` done records of the owner whose audio retention removed (voice samples only refer to
-- them).
INSERT INTO records (owner_id, stage, audio_expired_at)
SELECT %(owner_id)s, 'done', now() FROM generate_series(1, %(count)s)
RETURNING id;

-- name: bench_voices_voices
-- `count` voices of the owner, "Voice 1"…, in that order.
INSERT INTO voices (owner_id, name)
SELECT %(owner_id)s, 'Voice ' || n FROM generate_series(1, %(count)s) AS n ORDER BY n
RETURNING id;

-- name: bench_voices_sample
INSERT INTO voice_samples (record_id, label, voice_id, centroid, seconds)
VALUES (%(record_id)s, %(label)s, %(voice_id)s, %(centroid)s, %(seconds)s);

-- name: bench_voices_analyze
ANALYZE voices, voice_samples, speaker_rejections;

-- name: bench_watched_fill
-- A file of the watched folder as a watcher that transcribed it leaves it (bench/watch.py).
INSERT INTO watched_files (owner_id, sha256, path, size_bytes, mtime_ns, state)
VALUES (%s, %s, %s, %s, %s, 'written');

-- name: bench_watched_accepted
-- When the file at `path` was accepted (the watcher's last write to its row), in seconds since
-- the epoch.
SELECT extract(epoch FROM updated_at) AS at FROM watched_files
WHERE path = %(path)s AND state IN ('accepted', 'refused');

-- name: bench_meaning_records
-- `per_owner` done English records for each owner whose name starts with `prefix` (their audio
-- expired: a passage needs none); the first and last ids.
WITH made AS (
    INSERT INTO records (owner_id, stage, stage_entered_at, language, title, audio_expired_at)
    SELECT o.id, 'done', now(), 'en', 'Meeting ' || n, now()
    FROM owners o, generate_series(1, %(per_owner)s) AS n
    WHERE starts_with(o.name, %(prefix)s)
    RETURNING id
)
SELECT min(id) AS first, max(id) AS last FROM made;

-- name: bench_meaning_fill
-- `per_record` passages of 45 words for each record whose id is in [first, last], each with a
-- random embedding (384 numbers in [-0.5, 0.5): a hard case for the graph, whose neighbours are
-- all about as far), written as keep_passages writes them. Four speakers take turns, S1 to S4,
-- but for one passage in a thousand (the 500th of a record), said by S9.
INSERT INTO passages (record_id, n, owner_id, first_segment, last_segment, start_seconds, end_seconds,
                      speaker, body, embedding)
SELECT r.id, g.n, r.owner_id, g.n * 3 - 2, g.n * 3, (g.n - 1) * 18.0, g.n * 18.0,
       CASE WHEN g.n %% 1000 = 500 THEN 'S9' ELSE 'S' || (g.n %% 4 + 1) END,
       repeat('word ', 45),
       (SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 384 + 0 * g.n))
FROM records r, generate_series(1, %(per_record)s) AS g(n)
WHERE r.id BETWEEN %(first)s AND %(last)s;

-- name: bench_meaning_drop_index
DROP INDEX IF EXISTS passages_meaning;

-- name: bench_meaning_index
CREATE INDEX passages_meaning ON passages USING hnsw ((embedding::vector(384)) vector_cosine_ops);

-- name: bench_meaning_build_memory
SET maintenance_work_mem = '4GB';

-- name: bench_meaning_analyze
-- What autovacuum does after a fill: statistics, and the visibility map that lets the owner's
-- passages be counted from the owner's index alone.
VACUUM ANALYZE passages;

-- name: bench_meaning_size
-- Summed over the partitions (0010_passages_by_owner.sql): each with its TOAST and indexes.
SELECT (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('passages') WHERE isleaf) AS total_bytes,
       (SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree('passages') WHERE isleaf) AS heap_bytes,
       coalesce((SELECT sum(pg_relation_size(relid))
                 FROM pg_partition_tree(to_regclass('passages_meaning')) WHERE isleaf), 0) AS hnsw_bytes,
       (SELECT count(*) FROM passages) AS passages;

-- name: bench_meaning_share
-- The owner's passages, those of the partition holding them (its estimate, as the walk's width
-- reads it: meaning_search_width) and the partition's name.
SELECT o.n AS passages, c.reltuples::bigint AS partition_passages, c.relname AS partition
FROM (SELECT count(*) AS n, min(p.tableoid::oid::bigint)::oid AS part FROM passages p
      WHERE p.owner_id = %(owner_id)s) AS o
JOIN pg_class c ON c.oid = o.part;

-- name: bench_meaning_backends
-- The server processes of this benchmark's connections, whose CPU time a search costs.
SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend';

-- name: bench_meaning_owners
-- A sample of the owners whose name starts with `prefix`.
SELECT id FROM owners WHERE starts_with(name, %(prefix)s) ORDER BY random() LIMIT %(count)s;

-- name: bench_backfill_passages
-- `each` passages for every done record (all-zero embeddings: the look reads only their keys).
INSERT INTO passages (record_id, n, owner_id, first_segment, last_segment, start_seconds, end_seconds, body, embedding)
SELECT r.id, k, r.owner_id, k, k, k, k + 1, 'a passage', array_fill(0::real, ARRAY[384])
FROM records r, generate_series(1, %(each)s) AS k
WHERE r.stage = 'done';

-- name: bench_backfill_search_rows
-- `each` segments with words for every done record, as the done save leaves them.
INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
SELECT r.id, k, r.owner_id, k, k + 1, 'english', 'words said in a meeting'
FROM records r, generate_series(1, %(each)s) AS k
WHERE r.stage = 'done';

-- name: bench_backfill_owe
-- `count` done records, spread over the table, owed their passages (as a save without the model
-- leaves them: no passages, a debt).
WITH chosen AS (
    SELECT id, owner_id FROM records WHERE stage = 'done' ORDER BY md5(id::text) LIMIT %(count)s
), gone AS (
    DELETE FROM passages p USING chosen c WHERE p.owner_id = c.owner_id AND p.record_id = c.id
)
INSERT INTO passages_owed (record_id) SELECT id FROM chosen;

-- name: bench_backfill_analyze
VACUUM ANALYZE records, passages, search_rows;
