-- Full-text search over an owner's archive (issue 18): one row per segment of a done record, and
-- one (n = 0) for the record's title, summary and topics. A tsvector per segment, not per
-- transcript: a whole transcript's would hit PostgreSQL's limits (1 MB, positions stop at
-- 16,383) and a hit would have no time. The rows are written by the statements that save the text
-- (save_done) and the owner's edit (edit_record); they go with their record (ON DELETE CASCADE).

-- The text-search configuration of a record's language (its code as recognition gives it, `en`,
-- `ru`, ...), `simple` for any other or none. Immutable, so generated columns may use it.
CREATE FUNCTION search_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE lower(split_part(coalesce(language, ''), '-', 1))
        WHEN 'en' THEN 'english' WHEN 'ru' THEN 'russian' WHEN 'de' THEN 'german'
        WHEN 'fr' THEN 'french' WHEN 'es' THEN 'spanish' WHEN 'it' THEN 'italian'
        WHEN 'pt' THEN 'portuguese' WHEN 'nl' THEN 'dutch' WHEN 'sv' THEN 'swedish'
        WHEN 'no' THEN 'norwegian' WHEN 'da' THEN 'danish' WHEN 'fi' THEN 'finnish'
        WHEN 'hu' THEN 'hungarian' WHEN 'ro' THEN 'romanian' WHEN 'tr' THEN 'turkish'
        ELSE 'simple' END::regconfig
$$;

-- Every configuration search_config gives: a query is parsed once with each, and each row is
-- matched by the query parsed with its own row's configuration.
CREATE FUNCTION search_configs() RETURNS regconfig[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY['english', 'russian', 'german', 'french', 'spanish', 'italian', 'portuguese',
                 'dutch', 'swedish', 'norwegian', 'danish', 'finnish', 'hungarian', 'romanian',
                 'turkish', 'simple']::regconfig[]
$$;

-- Text as it is indexed and queried: ё is е (Russian writes either for the same word).
CREATE FUNCTION search_normal(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT translate(body, 'Ёё', 'Ее')
$$;

CREATE TABLE search_rows (
    record_id      bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    n              integer NOT NULL,            -- 0: title, summary, topics; then segments in order
    owner_id       bigint NOT NULL,
    start_seconds  double precision,            -- NULL on row 0
    end_seconds    double precision,
    config         regconfig NOT NULL,
    body           text NOT NULL,
    words          tsvector GENERATED ALWAYS AS (to_tsvector(config, search_normal(body))) STORED,
    PRIMARY KEY (record_id, n)
);
-- A search reads one owner's rows by this index and tests each row's stored tsvector (no text is
-- parsed again). No GIN index over words: the words of one owner are a thousandth of the
-- archive, and a GIN scan reads a common word's (or a short prefix's) entries for every owner;
-- measured, it was slower at every percentile and cost indexing time (BENCHMARKS.md, Search).
CREATE INDEX search_rows_owner ON search_rows (owner_id);

-- The records done before this migration.
INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
SELECT r.id, 0, r.owner_id, NULL, NULL, search_config(r.language),
       concat_ws(' ', r.title, r.summary, array_to_string(r.topics, ' '))
FROM records r WHERE r.stage = 'done';
INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
SELECT r.id, row_number() OVER (PARTITION BY r.id ORDER BY w.from_seconds, e.n)::int, r.owner_id,
       (e.segment->>'start')::float8, (e.segment->>'end')::float8, search_config(r.language),
       coalesce(e.segment->>'text', '')
FROM records r JOIN record_windows w ON w.record_id = r.id,
     jsonb_array_elements(w.segments) WITH ORDINALITY AS e(segment, n)
WHERE r.stage = 'done';
