-- Statements of the owner's search (search_rows, migration 33). The owner's words only: every
-- statement is bounded by owner_id, the count included.

-- name: search_page
-- One page of the owner's hits, best first, and how many there are. The text is parsed once per
-- configuration, and a row is matched by the query parsed with its own configuration (so
-- "конвейер" finds "конвейера" in a Russian record and "running" finds "run" in an English one);
-- the last word typed, if any, is also a prefix. Snippets (ts_headline
-- re-parses the text) are made for the page only.
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
), named AS MATERIALIZED (
    -- the labels of the owner's records whose owner gave the speaker asked for that name (any
    -- case): a few rows, read by the owner's index, so each search row's test is an array overlap
    SELECT r.id AS record_id, array_agg(e.key) AS labels
    FROM records r, jsonb_each_text(r.speaker_names) AS e(key, name)
    WHERE %(speaker)s::text IS NOT NULL AND r.owner_id = %(owner_id)s AND lower(e.name) = lower(%(speaker)s)
    GROUP BY r.id
), hits AS MATERIALIZED (
    SELECT s.record_id, s.n, s.start_seconds, s.end_seconds, s.config, a.words AS asked,
           ts_rank(s.words, a.words) AS rank
    -- the owner's rows, read by owner_id and each tested against its configuration's query:
    -- OFFSET 0 keeps the word test out of the scan, so no plan reads the whole archive's
    -- GIN entries of a common word (or a short prefix) to keep one owner's few
    FROM (SELECT * FROM search_rows WHERE owner_id = %(owner_id)s OFFSET 0) s
    JOIN asked a ON s.config = a.config AND s.words @@ a.words
    JOIN records r ON r.id = s.record_id
    LEFT JOIN named nm ON nm.record_id = s.record_id
    WHERE (%(stage)s::text IS NULL OR r.stage = %(stage)s)
      AND (%(topic)s::text IS NULL OR %(topic)s = ANY (r.topics))
      AND (%(since)s::date IS NULL OR r.created_at >= %(since)s::date)
      AND (%(until)s::date IS NULL OR r.created_at < %(until)s::date + 1)
      -- a speaker (migration 60): by label (S1), or by the name the owner gave it (named)
      AND (%(speaker)s::text IS NULL OR upper(%(speaker)s) = ANY (s.speakers) OR s.speakers && nm.labels)
), page AS (
    SELECT * FROM hits
    ORDER BY rank DESC, record_id DESC, n
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT (SELECT count(*) FROM hits) AS total,
       p.record_id, p.n, p.start_seconds, p.end_seconds, p.rank,
       c.title, c.stage,
       ts_headline(p.config, search_normal(s.body), p.asked,
                   'StartSel=<mark>, StopSel=</mark>, MaxWords=30, MinWords=12, ShortWord=2') AS snippet
FROM (SELECT 1) one
LEFT JOIN page p ON true
LEFT JOIN search_rows s ON s.record_id = p.record_id AND s.n = p.n
LEFT JOIN records c ON c.id = p.record_id
ORDER BY p.rank DESC, p.record_id DESC, p.n;
