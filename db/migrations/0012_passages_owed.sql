-- The records owed passages for search by meaning, kept as they arise, so that the backfill's
-- look every ten minutes reads them alone rather than probing the passages of every done record
-- (BENCHMARKS.md, Search by meaning: the look grew with the archive, about 1.8 s a million done
-- records).
--
-- A record is owed when it becomes done in English (or of no known language) with words in its
-- text and no passage: made where search by meaning was not active (no pgvector, the model or the
-- extra missing, switched off) or its embedding failed. The trigger below sees the whole
-- statement that made it done (its search rows and passages are written by the same save). An
-- edit that drops a passage it could not embed owes the record too (drop_passage). keep_passages,
-- the one writer of a record's passages, settles the debt whenever it writes them, so a debt never
-- outlives the passages that pay it; deleting the record takes its row (foreign key).
CREATE TABLE passages_owed (
    record_id bigint PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE
);

-- What English is to search by meaning: the record's language, or none known (the model is English).
CREATE FUNCTION in_english(language text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT split_part(lower(coalesce(nullif($1, ''), 'en')), '-', 1) = 'en'
$$;

-- Whether a done record is owed passages: in English, words in its text, and no passage.
CREATE FUNCTION owes_passages(record_id bigint, owner_id bigint, language text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT in_english($3)
       AND NOT EXISTS (SELECT FROM passages p WHERE p.owner_id = $2 AND p.record_id = $1)
       AND EXISTS (SELECT FROM search_rows s WHERE s.record_id = $1 AND s.n > 0 AND s.body ~ '\S')
$$;

CREATE FUNCTION records_owe_passages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF owes_passages(NEW.id, NEW.owner_id, NEW.language) THEN
        INSERT INTO passages_owed (record_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER records_owe_passages AFTER UPDATE OF stage ON records
    FOR EACH ROW WHEN (NEW.stage = 'done' AND OLD.stage IS DISTINCT FROM 'done')
    EXECUTE FUNCTION records_owe_passages();

-- As 0010's, and the record owes no passages once they are written.
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
    DELETE FROM passages_owed o WHERE o.record_id = $1;
    SELECT jsonb_array_length($3);
$$;

-- The debts already there: done records the backfill looked for until now.
INSERT INTO passages_owed (record_id)
SELECT r.id FROM records r
WHERE r.stage = 'done' AND owes_passages(r.id, r.owner_id, r.language);
