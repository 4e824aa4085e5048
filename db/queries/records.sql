-- Statements of a record's life outside the pipeline: intake, the owner's edit, deletion for good.

-- name: accept_record
-- A new record at stage created, waiting for its first step, with its 'accepted' event.
WITH accepted AS (
    INSERT INTO records (owner_id, title, source_name, original_blob_id, language, prompt,
                         content_sha256, intake_seconds, speakers_wanted, asked, cut_short)
    VALUES (%(owner_id)s, %(title)s, %(source_name)s, %(blob_id)s, %(language)s, %(prompt)s,
            %(content_sha256)s, %(intake_seconds)s, %(speakers_wanted)s, %(asked)s, %(cut_short)s)
    RETURNING id, stage, owner_id
), queued AS (
    INSERT INTO steps (record_id, step, stage, owner_id)
    SELECT id, %(first_step)s, stage, owner_id FROM accepted
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'accepted', stage,
           jsonb_build_object('source_name', %(source_name)s::text, 'size_bytes', %(size_bytes)s::bigint)
    FROM accepted
)
SELECT id FROM accepted;

-- name: edit_record
-- The owner's edit: title, summary, topics only; a NULL parameter leaves its field alone. A done
-- record's search row for them (search_rows) follows in the same statement; an
-- upsert, so that an edit racing the done save still leaves the edited words searchable.
WITH edited AS (
    UPDATE records
    SET title = coalesce(%(title)s, title),
        summary = coalesce(%(summary)s, summary),
        topics = coalesce(%(topics)s, topics),
        updated_at = now()
    WHERE id = %(id)s AND owner_id = %(owner_id)s
    RETURNING id, owner_id, stage, language, title, summary, topics
), indexed AS (
    INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
    SELECT id, 0, owner_id, NULL, NULL, search_config(language),
           concat_ws(' ', title, summary, array_to_string(topics, ' '))
    FROM edited WHERE stage = 'done'
    ON CONFLICT (record_id, n) DO UPDATE SET config = excluded.config, body = excluded.body
)
SELECT id FROM edited;

-- name: erase_record
-- Removes the owner's record row (waiting for any step's write in flight on it) and returns
-- what the rest of the erasure needs; owner_id NULL means any owner (the operator's command).
DELETE FROM records
WHERE id = %(id)s AND (%(owner_id)s::bigint IS NULL OR owner_id = %(owner_id)s)
RETURNING id, stage, original_blob_id, converted_blob_id;

-- name: journal_deletion
-- The one line the journal keeps of an erased record: who deleted it, when, at which stage.
INSERT INTO events (record_id, origin, kind, stage, detail)
VALUES (%(id)s, 'human', 'deleted', %(stage)s, jsonb_build_object('by', %(by)s::text, 'as', %(role)s::text));

-- name: erase_journal
-- Every other line of the erased record goes (they carry file names and error texts).
DELETE FROM events WHERE record_id = %(id)s AND kind <> 'deleted';
