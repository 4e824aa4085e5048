-- The owner's search finds its rows by an index whose keys are the owner's own (issue 18, Speed).
-- Migration 33 read all of an owner's rows and tested each stored tsvector: ~3 ms per 1,000
-- segments, 450-840 ms at p95 for an owner of 100,000. A GIN index over the words (alone, or
-- beside owner_id with btree_gin) keeps one posting list per word for every owner: a common word
-- (or a short prefix) of one owner costs reading that word's entries for the whole archive
-- (measured: 240,000 entries, 450 ms, for a word in 22,000 of the heavy owner's rows). Here each
-- key is the owner's id, the row's configuration (its place in search_configs()) and the lexeme
-- ("42.1:pipelin"), so a word's, or a prefix's, entries are that owner's in that configuration
-- alone: a query never reads another owner's keys, nor rows of another configuration that its
-- parse with that configuration would match (a stemmer that cut "pube" to "pub" made a prefix
-- query read 13,000 rows to keep 600). One more key per row, the owner's id alone ("42"), lists
-- all of an owner's rows, for a query that has no word an index can look up (only negated
-- words: "-pipeline"). The cost is the size (one entry per word an owner ever said,
-- BENCHMARKS.md, Search). The keys are made from the stored tsvector (no text is parsed again),
-- once when a row is written.

-- What each key of an owner's rows of a configuration starts with. The configuration is its place
-- in search_configs(): a configuration added there later goes at its end (or the index is
-- rebuilt), so that the keys already written keep their meaning.
CREATE FUNCTION search_key_prefix(owner_id bigint, config regconfig) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT owner_id::text || '.' || coalesce(array_position(search_configs(), config), 0)::text || ':'
$$;

-- The index keys of a row: its lexemes joined into one string by spaces (which no lexeme has:
-- the parser splits words on them), each with the key prefix in front, and split again; with
-- the owner's id alone, and no bare prefix of an empty row. String functions, no subquery: half
-- the cost of unnesting the lexemes; PL/pgSQL, so that the prefix is made once, in a plan kept
-- from row to row (an SQL function calling search_key_prefix three times cost 12 times as much).
CREATE FUNCTION search_keys(owner_id bigint, config regconfig, words tsvector) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    prefix text := search_key_prefix(owner_id, config);
BEGIN
    RETURN array_to_tsvector(array_remove(string_to_array(
        owner_id::text || ' ' || prefix || array_to_string(tsvector_to_array(words), ' ' || prefix),
        ' '), prefix));
END $$;

-- A query (as websearch_to_tsquery parses it with `config`) over the keys of the owner's rows
-- of that configuration: each lexeme of it, quoted in the tsquery's text, gets the key prefix in
-- front; a phrase's "followed by" (<->, <N>) becomes "and" (the keys have no positions: the
-- row's own tsvector tests the phrase); other operators and prefixes (:*) stay. The operators
-- are found by the spaces around them, which no lexeme has.
CREATE FUNCTION search_owner_query(owner_id bigint, config regconfig, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT regexp_replace(
               regexp_replace(query::text, ' <(?:-|[0-9]+)> ', ' & ', 'g'),
               '''((?:[^'']|'''')*)''', '''' || search_key_prefix(owner_id, config) || '\1''', 'g')::tsquery
$$;

CREATE INDEX search_rows_keys ON search_rows USING gin (search_keys(owner_id, config, words));
DROP INDEX search_rows_owner;

-- A record's search rows go with it by a trigger once per deleting statement, not by a foreign
-- key: the key's check ran once per row written (780 for an hour's record), measured as 10-20 %
-- of indexing an hour in the done save. Nothing else writes search rows than the statements
-- that hold the record's row (the done save, the owner's edit: each updates the record in the
-- same statement), so a row never names a record that is gone: a deletion waits for them, and
-- this trigger, run after it, sees what they wrote.
ALTER TABLE search_rows DROP CONSTRAINT search_rows_record_id_fkey;

CREATE FUNCTION search_rows_go_with_records() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_rows s USING gone g WHERE s.record_id = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER records_search_rows_go AFTER DELETE ON records
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION search_rows_go_with_records();
