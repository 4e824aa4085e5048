-- The owner's search finds its rows by an index whose keys are the owner's own (issue 18, Speed).
-- Migration 33 read all of an owner's rows and tested each stored tsvector: ~3 ms per 1,000
-- segments, 450-840 ms at p95 for an owner of 100,000. A GIN index over the words (alone, or
-- beside owner_id with btree_gin) keeps one posting list per word for every owner: a common word
-- (or a short prefix) of one owner costs reading that word's entries for the whole archive
-- (measured: 240,000 entries, 450 ms, for a word of 22,000 of the heavy owner's rows). Here each
-- key is the owner's id and the lexeme ("42:pipelin"), so a word's, or a prefix's, entries are
-- that owner's alone, and a query never reads another owner's keys; one more key per row, the
-- owner's id alone ("42"), lists all of an owner's rows, for a query that has no word an index
-- can look up (only negated words: "-pipeline"). The cost is the size (one entry per word an
-- owner ever said, BENCHMARKS.md, Search). The keys are computed from the stored tsvector (no
-- text is parsed again), once when a row is written.

-- The index keys of an owner's row: its lexemes joined into one string by spaces (which no
-- lexeme has: the parser splits words on them), each with the owner's id in front, and split
-- again; with the owner's id alone, and no "42:" of an empty row. Plain string functions, no
-- subquery: half the cost of unnesting the lexemes, measured on the done save.
CREATE FUNCTION search_keys(owner_id bigint, words tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_to_tsvector(array_remove(string_to_array(
        owner_id::text || ' ' || owner_id::text || ':'
            || array_to_string(tsvector_to_array(words), ' ' || owner_id::text || ':'),
        ' '), owner_id::text || ':'))
$$;

-- A query (as websearch_to_tsquery gives it) over the owner's keys: each lexeme of it, quoted in
-- the tsquery's text, gets the owner's id in front; a phrase's "followed by" (<->, <N>) becomes
-- "and" (the keys have no positions: the row's own tsvector tests the phrase); other operators
-- and prefixes (:*) stay. The operators are found by the spaces around them, which no lexeme has.
CREATE FUNCTION search_owner_query(owner_id bigint, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN querytree(keyed) = 'T' THEN owner_id::text::tsquery && keyed ELSE keyed END
    FROM (SELECT regexp_replace(
                     regexp_replace(query::text, ' <(?:-|[0-9]+)> ', ' & ', 'g'),
                     '''((?:[^'']|'''')*)''', '''' || owner_id::text || ':\1''', 'g')::tsquery AS keyed) AS q
$$;

CREATE INDEX search_rows_keys ON search_rows USING gin (search_keys(owner_id, words));
DROP INDEX search_rows_owner;
