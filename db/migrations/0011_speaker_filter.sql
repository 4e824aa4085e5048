-- Search by speaker has one home: the word search (search_page) and the search by meaning
-- (meaning_exact, meaning_nearest) keep the words of a speaker asked for by label or by the name
-- it is shown with through these two functions, so the three statements cannot drift apart.
-- Each statement reads speakers_named once (a MATERIALIZED CTE) and tests its rows with
-- spoken_by, which the planner inlines.

-- The labels of the owner's speakers shown with `name` (any case): the owner's name for the
-- speaker, else its matched voice's unless rejected (speaker_labels, the one home of what a
-- speaker is called), as one object keyed by record id (labels in array text form). NULL when
-- `name` is NULL or names no one. One value, read once per search by the owner's records, so
-- that each searched row finds its record's labels by a key lookup whatever the plan: joined as
-- rows, a join the planner guessed at a few rows each side became a loop over every named
-- record for every matching row (BENCHMARKS.md, Search, by speaker).
CREATE FUNCTION speakers_named(owner bigint, name text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_object_agg(n.record_id::text, n.labels::text)
    FROM (SELECT l.record_id, array_agg(l.label) AS labels
          FROM speaker_labels l
          WHERE $2 IS NOT NULL AND l.owner_id = $1 AND lower(l.name) = lower($2)
          GROUP BY l.record_id) AS n
$$;

-- Whether words of record `record_id` said by `speakers` (their labels) are kept by a search for
-- `speaker`: none asked, its label (S1, any case), or a label `named` (speakers_named's) holds
-- for that record.
CREATE FUNCTION spoken_by(speaker text, speakers text[], named jsonb, record_id bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT $1 IS NULL OR upper($1) = ANY ($2) OR $2 && ($3 ->> $4::text)::text[]
$$;
