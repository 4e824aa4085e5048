-- Search by speaker has one home: the word search (search_page) and the search by meaning
-- (meaning_exact, meaning_nearest) keep the words of a speaker asked for by label or by the name
-- it is shown with through these two functions, so the three statements cannot drift apart.
-- Both are plain SQL the planner inlines into the statement that calls them: the plans, and
-- the costs, are those of the rule written out in each (BENCHMARKS.md, Search, by speaker).

-- Per record of the owner's, the labels of its speakers shown with `name` (any case): the
-- owner's name for the speaker, else its matched voice's unless rejected (speaker_labels, the
-- one home of what a speaker is called). None when `name` is NULL. A few rows, read by the
-- owner's records, so that each searched row's test is an array overlap.
CREATE FUNCTION speakers_named(owner bigint, name text) RETURNS TABLE (record_id bigint, labels text[])
LANGUAGE sql STABLE AS $$
    SELECT l.record_id, array_agg(l.label)
    FROM speaker_labels l
    WHERE $2 IS NOT NULL AND l.owner_id = $1 AND lower(l.name) = lower($2)
    GROUP BY l.record_id
$$;

-- Whether words said by `speakers` (their labels) are kept by a search for `speaker`: none
-- asked, its label (S1, any case), or a label `named` holds (speakers_named's, for the words'
-- record).
CREATE FUNCTION spoken_by(speaker text, speakers text[], named text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT $1 IS NULL OR upper($1) = ANY ($2) OR $2 && $3
$$;
