-- Search by meaning: a done record's text cut into passages (a few consecutive segments, about
-- 20 to 80 words, never across a change of speaker once speakers are known), each embedded once
-- by the sentence model (audio.meaning: 384 numbers of length 1) and found by the cosine of its
-- embedding with the query's.
--
-- The passages are written by the statements that write the text they are cut from, in the
-- same fenced statement (P3): the recognize step's save and the diarize step's (which cuts them
-- again at the speakers' changes), and the owner's correction of a segment (its passage made
-- again from the corrected words). The embeddings are computed before those statements, outside
-- any transaction. A record's passages go with it (the foreign key) and stay when retention lets
-- its audio go. English records only: the model is English's (other languages are found by
-- their words).
--
-- The embedding is kept as real[] on every server, so the table, its statements and this
-- description are the same whether the server has pgvector or not. Where it has, the extension
-- is created here and an HNSW index over the embeddings (as pgvector's vector) serves the
-- owners with many passages; an owner's few passages are read by owner_id and compared one by
-- one (exact, and cheaper than walking a graph shared by every owner). Without pgvector nothing
-- is embedded and search by meaning answers that it is unavailable; `CREATE EXTENSION vector`
-- and `transcriber meaning install` enable it later (docs/operations.md).
CREATE TABLE passages (
    record_id      bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    n              integer NOT NULL CHECK (n >= 1),        -- in recording order
    owner_id       bigint NOT NULL,
    first_segment  integer NOT NULL,                       -- search_rows.n of its first segment
    last_segment   integer NOT NULL CHECK (last_segment >= first_segment),
    start_seconds  double precision NOT NULL,
    end_seconds    double precision NOT NULL,
    speaker        text,                                   -- its speaker's label; NULL: not known
    body           text NOT NULL,
    embedding      real[] NOT NULL CHECK (cardinality(embedding) = 384),
    PRIMARY KEY (record_id, n)
);

-- an owner's passages, for the exact comparison, and a record's by the primary key
CREATE INDEX passages_owner ON passages (owner_id);

-- A record's passages made anew, as the save that writes its text (or its speakers) made them:
-- `made` holds them in order (n from 1: first, last, start, end, speaker, body, embedding);
-- those past its end go. Called by those saves' statements, so the passages change with the
-- text in one fenced statement; NULL (STRICT): the passages stay as they are. Returns how many
-- the record has, for the save's event.
CREATE FUNCTION keep_passages(record_id bigint, owner_id bigint, made jsonb) RETURNS integer
LANGUAGE sql VOLATILE STRICT AS $$
    INSERT INTO passages AS p (record_id, n, owner_id, first_segment, last_segment, start_seconds,
                               end_seconds, speaker, body, embedding)
    SELECT $1, m.n, $2, m.first, m.last, m.start, m."end", m.speaker, m.body, m.embedding
    FROM jsonb_to_recordset($3) AS m(n int, first int, last int, start float8, "end" float8,
                                     speaker text, body text, embedding real[])
    ON CONFLICT (record_id, n) DO UPDATE
        SET owner_id = excluded.owner_id, first_segment = excluded.first_segment,
            last_segment = excluded.last_segment, start_seconds = excluded.start_seconds,
            end_seconds = excluded.end_seconds, speaker = excluded.speaker, body = excluded.body,
            embedding = excluded.embedding;
    DELETE FROM passages p WHERE p.record_id = $1 AND p.n > jsonb_array_length($3);
    SELECT jsonb_array_length($3);
$$;

-- Where the server offers pgvector, the extension and the index; where the role may not create
-- the extension, a notice (the operator creates it, docs/operations.md).
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_available_extensions WHERE name = 'vector') THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS vector;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'pgvector is offered but this role may not create it: search by meaning stays off';
            RETURN;
        END;
        EXECUTE 'CREATE INDEX IF NOT EXISTS passages_meaning ON passages '
                'USING hnsw ((embedding::vector(384)) vector_cosine_ops)';
    END IF;
END $$;
