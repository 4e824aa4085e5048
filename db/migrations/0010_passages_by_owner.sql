-- Passages (0008) split by owner: 64 partitions by a hash of owner_id, each with its own owner
-- index and, where the server has pgvector, its own HNSW graph. Search by meaning for an owner of
-- many passages walks the graph of the one partition that holds them: its own passages and a
-- 64th of everyone else's, rather than a graph of every owner's where the owner is a few per
-- cent and the walk would have to be many times wider to find its own (BENCHMARKS.md, Search by
-- meaning). An owner's few passages are still compared one by one, read by the owner index of
-- its partition. Sixty-four small graphs are also cheaper to build than one of every passage.
--
-- A partitioned table's unique keys hold its partition key, so the primary key is
-- (record_id, n, owner_id): a record's passages all carry its owner (keep_passages writes
-- records.owner_id, and a record never changes owner), so it is as unique as (record_id, n).
-- The statements that know the owner name it, so that they read one partition.
--
-- The rows are kept: the table is renamed, the partitioned one made under its name (its
-- constraints under 0008's names), the rows copied. Its indexes go first (the copy does not
-- maintain them, and the new table's take their names); the new table's keys and indexes are
-- made after the copy, in one pass each. The old table is dropped and the foreign key to records
-- made last: each locks records until the migration commits (dropping a table whose key refers
-- to records, even against reads), so the service waits seconds for records (the key's check),
-- not the graphs' build (BENCHMARKS.md: minutes per million passages); saves that write
-- passages and searches by meaning wait for all of it. The same with or without pgvector: only
-- the HNSW index depends on it.
DROP INDEX IF EXISTS passages_meaning;
DROP INDEX passages_owner;
ALTER TABLE passages RENAME TO passages_before;
ALTER TABLE passages_before RENAME CONSTRAINT passages_pkey TO passages_before_pkey;

CREATE TABLE passages (
    record_id      bigint NOT NULL,
    n              integer NOT NULL CONSTRAINT passages_n_check CHECK (n >= 1),  -- in recording order
    owner_id       bigint NOT NULL,
    first_segment  integer NOT NULL,                       -- search_rows.n of its first segment
    last_segment   integer NOT NULL CONSTRAINT passages_check CHECK (last_segment >= first_segment),
    start_seconds  double precision NOT NULL,
    end_seconds    double precision NOT NULL,
    speaker        text,                                   -- its speaker's label; NULL: not known
    body           text NOT NULL,
    embedding      real[] NOT NULL CONSTRAINT passages_embedding_check CHECK (cardinality(embedding) = 384)
) PARTITION BY HASH (owner_id);

DO $$
BEGIN
    FOR r IN 0..63 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF passages FOR VALUES WITH (MODULUS 64, REMAINDER %s)',
                       'passages_' || lpad(r::text, 2, '0'), r);
    END LOOP;
END $$;

INSERT INTO passages (record_id, n, owner_id, first_segment, last_segment, start_seconds, end_seconds,
                      speaker, body, embedding)
SELECT record_id, n, owner_id, first_segment, last_segment, start_seconds, end_seconds, speaker, body, embedding
FROM passages_before;

ALTER TABLE passages ADD CONSTRAINT passages_pkey PRIMARY KEY (record_id, n, owner_id);

-- an owner's passages, for the exact comparison (one partition's index)
CREATE INDEX passages_owner ON passages (owner_id);

-- As 0008's, its conflict on the new key and its deletion in the owner's partition.
CREATE OR REPLACE FUNCTION keep_passages(record_id bigint, owner_id bigint, made jsonb) RETURNS integer
LANGUAGE sql VOLATILE STRICT AS $$
    INSERT INTO passages AS p (record_id, n, owner_id, first_segment, last_segment, start_seconds,
                               end_seconds, speaker, body, embedding)
    SELECT $1, m.n, $2, m.first, m.last, m.start, m."end", m.speaker, m.body, m.embedding
    FROM jsonb_to_recordset($3) AS m(n int, first int, last int, start float8, "end" float8,
                                     speaker text, body text, embedding real[])
    ON CONFLICT (record_id, n, owner_id) DO UPDATE
        SET first_segment = excluded.first_segment, last_segment = excluded.last_segment,
            start_seconds = excluded.start_seconds, end_seconds = excluded.end_seconds,
            speaker = excluded.speaker, body = excluded.body, embedding = excluded.embedding;
    DELETE FROM passages p WHERE p.record_id = $1 AND p.owner_id = $2 AND p.n > jsonb_array_length($3);
    SELECT jsonb_array_length($3);
$$;

-- The HNSW index where the server has pgvector (0008 made the extension where it could): made on
-- the partitioned table, it is one graph per partition. Elsewhere the operator makes it with the
-- extension (docs/operations.md).
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_extension WHERE extname = 'vector') THEN
        EXECUTE 'CREATE INDEX passages_meaning ON passages '
                'USING hnsw ((embedding::vector(384)) vector_cosine_ops)';
    END IF;
END $$;

DROP TABLE passages_before;
ALTER TABLE passages ADD CONSTRAINT passages_record_id_fkey
    FOREIGN KEY (record_id) REFERENCES records(id) ON DELETE CASCADE;
