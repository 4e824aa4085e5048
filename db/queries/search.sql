-- Statements of the owner's search (search_rows). The owner's words only: every
-- statement is bounded by owner_id, the count included.

-- name: search_page
-- One page of the owner's hits, best first, and how many there are, counted up to `candidates`
-- + 1 (more matches are reported as that many, "at least"). The text is parsed once per
-- configuration, and a row is matched by the query parsed with its own configuration (so
-- "конвейер" finds "конвейера" in a Russian record and "running" finds "run" in an English one);
-- the last word typed, if any, is also a prefix. Rows are found by the owner's keys
-- (search_rows_keys): every configuration's parse, with the owner's id and the
-- configuration on each lexeme, or'ed. At most `candidates` + 1 matching rows are read, in the
-- index's order (oldest stored first), and the page is the best of them by rank: of all the
-- matches, unless more match. Snippets (ts_headline re-parses the text) are made for the page
-- only.
WITH parsed AS MATERIALIZED (
    SELECT c.config, websearch_to_tsquery(c.config, search_normal(%(text)s)) AS plain,
           numnode(websearch_to_tsquery(c.config, search_normal(%(prefix)s))) > 0 AS last_word_kept
    FROM unnest(search_configs()) AS c(config)
), asked AS MATERIALIZED (
    -- the last operand of the parsed query is the last word's lexeme (unless that word is a stop
    -- word): it becomes a prefix, stemmed and as typed
    SELECT config,
           CASE WHEN %(prefix)s::text IS NULL OR NOT last_word_kept THEN plain
                ELSE regexp_replace(plain::text, '''(?:[^'']|'''')*''$',
                                    '( \&:* | ''' || search_normal(%(prefix)s) || ''':* )')::tsquery
           END AS words
    FROM parsed
    WHERE numnode(plain) > 0
), keyed AS MATERIALIZED (
    -- what the index is asked: each configuration's parse over the keys of the owner's rows of
    -- that configuration, or'ed (NULL, which matches nothing, when every word is a stop word in
    -- every configuration); with the owner's own key when nothing else can be looked up (only
    -- negated words)
    SELECT CASE WHEN querytree(q) = 'T' THEN %(owner_id)s::bigint::text::tsquery && q ELSE q END AS keys
    FROM (SELECT string_agg('(' || search_owner_query(%(owner_id)s, config, words)::text || ')', ' | ')::tsquery
          FROM asked) AS o(q)
), named AS MATERIALIZED (
    -- the labels of the owner's records whose speaker is shown with the name asked for, keyed
    -- by record (speakers_named, 0011)
    SELECT speakers_named(%(owner_id)s, %(speaker)s::text) AS labels
), candidates AS MATERIALIZED (
    SELECT s.record_id, s.n, s.start_seconds, s.end_seconds, s.config, a.words AS asked,
           ts_rank(s.words, a.words) AS rank
    FROM search_rows s
    CROSS JOIN LATERAL (SELECT words FROM asked WHERE asked.config = s.config) AS a
    JOIN records r ON r.id = s.record_id
    WHERE search_keys(s.owner_id, s.config, s.words) @@ (SELECT keys FROM keyed)
      AND s.words @@ a.words
      AND s.owner_id = %(owner_id)s
      AND (%(stage)s::text IS NULL OR r.stage = %(stage)s)
      AND (%(topic)s::text IS NULL OR %(topic)s = ANY (r.topics))
      AND (%(since)s::date IS NULL OR r.created_at >= %(since)s::date)
      AND (%(until)s::date IS NULL OR r.created_at < %(until)s::date + 1)
      -- a speaker: by label (S1), or by the name it is shown with (named)
      AND spoken_by(%(speaker)s::text, s.speakers, (SELECT labels FROM named), s.record_id)
    LIMIT %(candidates)s + 1
), page AS (
    SELECT * FROM candidates
    ORDER BY rank DESC, record_id DESC, n
    LIMIT least(%(limit)s, greatest(%(candidates)s - %(offset)s, 0)) OFFSET %(offset)s  -- no page past the count
)
SELECT (SELECT count(*) FROM candidates) AS total,
       p.record_id, p.n, p.start_seconds, p.end_seconds, p.rank,
       c.title, c.stage,
       ts_headline(p.config, search_normal(s.body), p.asked,
                   'StartSel=<mark>, StopSel=</mark>, MaxWords=30, MinWords=12, ShortWord=2') AS snippet,
       said.words, s.speakers, CASE WHEN cardinality(s.speakers) > 0 THEN shown_speaker_names(p.record_id) END AS names
FROM (SELECT 1) one
LEFT JOIN page p ON true
LEFT JOIN search_rows s ON s.record_id = p.record_id AND s.n = p.n
LEFT JOIN records c ON c.id = p.record_id
-- the hit segment's timed words as the owner reads them (corrected or recognised), so the hit
-- can say when its first matched word was said: read for the page's hits only, each from the
-- one window that holds its segment (shown_words: one step back along the windows' key,
-- however long the recording)
LEFT JOIN LATERAL (
    SELECT shown_words(p.record_id, p.start_seconds, p.end_seconds) AS words WHERE p.n > 0
) said ON true
ORDER BY p.rank DESC, p.record_id DESC, p.n;
