-- Statements of the owner's voices: what the diarize step reads to match a record's speakers,
-- and the owner's naming, rejecting, renaming, merging and deleting. Every statement is bounded
-- by the owner: another owner's voice is never read, matched or changed. The writes of one
-- owner's voices run one at a time (lock_owner_voices), so a voice emptied by one is never
-- deleted under a sample another is adding.

-- name: lock_owner_voices
-- Held to the end of the transaction: the owner's voice writes wait for each other, not for
-- intake or the pipeline (an advisory lock of its own, keyed by the owner).
SELECT pg_advisory_xact_lock(hashtextextended('voices of owner ' || %(owner_id)s::bigint::text, 0));

-- name: lock_record_owner_voices
-- lock_owner_voices for the owner of a record (deletion, where the caller may be the operator).
SELECT pg_advisory_xact_lock(hashtextextended('voices of owner ' || owner_id::text, 0))
FROM records WHERE id = %(id)s;

-- name: voice_samples
-- The samples of each of the owner's voices, a voice's together (the step computes the voices'
-- centroids from them).
SELECT s.voice_id, s.centroid, s.seconds
FROM voices v JOIN voice_samples s ON s.voice_id = v.id
WHERE v.owner_id = %(owner_id)s
ORDER BY s.voice_id;

-- name: rejected_matches
-- The owner's rejections for the speakers of a record: (label, voice) pairs never matched again.
SELECT label, voice_id FROM speaker_rejections WHERE record_id = %(id)s;

-- name: unenrol_speakers
-- The owner renamed, or took the name from, speakers of a record: their samples leave the voices
-- they were in (returned, so that a voice left empty goes).
DELETE FROM voice_samples WHERE record_id = %(id)s AND label = ANY (%(labels)s::text[])
RETURNING voice_id;

-- name: add_named_voices
-- A voice for each name the owner gave a speaker that has a print, unless the owner has a voice
-- of that name already (any case).
INSERT INTO voices (owner_id, name)
SELECT DISTINCT ON (lower(e.value)) %(owner_id)s, e.value
FROM jsonb_each_text(%(names)s::jsonb) AS e(label, value)
JOIN record_speakers s ON s.record_id = %(id)s AND s.label = e.label
WHERE btrim(e.value) <> ''
ON CONFLICT (owner_id, lower(name)) DO NOTHING;

-- name: enrol_speakers
-- Each named speaker's print becomes a sample of the owner's voice of that name.
INSERT INTO voice_samples (record_id, label, voice_id, centroid, seconds)
SELECT s.record_id, s.label, v.id, s.centroid, s.seconds
FROM jsonb_each_text(%(names)s::jsonb) AS e(label, value)
JOIN record_speakers s ON s.record_id = %(id)s AND s.label = e.label
JOIN voices v ON v.owner_id = %(owner_id)s AND lower(v.name) = lower(e.value)
WHERE btrim(e.value) <> '';

-- name: drop_empty_voices
-- The voices among `ids` left with no sample go (their matches with them: record_speakers'
-- voice_id is set NULL). Run after the statement that took the samples, under the owner's lock.
DELETE FROM voices v
WHERE v.id = ANY (%(ids)s::bigint[])
  AND NOT EXISTS (SELECT FROM voice_samples s WHERE s.voice_id = v.id);

-- name: record_voices
-- The voices a record's speakers are samples of (before the record is erased).
SELECT DISTINCT voice_id FROM voice_samples WHERE record_id = %(id)s;

-- name: reject_matches
-- The owner says the voices matched to these speakers of the record are not theirs: kept as
-- owner rows that the diarize step's re-runs read and never write. A speaker with no match
-- rejects nothing.
WITH owned AS (
    SELECT id FROM records WHERE id = %(id)s AND owner_id = %(owner_id)s
), rejected AS (
    INSERT INTO speaker_rejections (record_id, label, voice_id)
    SELECT s.record_id, s.label, s.voice_id
    FROM record_speakers s JOIN owned o ON o.id = s.record_id
    WHERE s.label = ANY (%(labels)s::text[]) AND s.voice_id IS NOT NULL
    ON CONFLICT DO NOTHING
), touched AS (
    UPDATE records r SET updated_at = now() FROM owned o WHERE r.id = o.id
)
SELECT id FROM owned;

-- name: list_voices
-- The owner's voices by name: how many recordings each was named in, and their seconds of speech.
SELECT v.id, v.name, count(DISTINCT s.record_id) AS recordings, coalesce(sum(s.seconds), 0) AS seconds
FROM voices v LEFT JOIN voice_samples s ON s.voice_id = v.id
WHERE v.owner_id = %(owner_id)s
GROUP BY v.id
ORDER BY lower(v.name), v.id;

-- name: owner_voice
-- One voice of the owner's (none: another owner's, or no such voice).
SELECT id, name FROM voices WHERE id = %(id)s AND owner_id = %(owner_id)s;

-- name: rename_voice
-- The owner renames a voice; every record speaker named with it (its samples) is named anew, so
-- the shown labels follow everywhere (matches read the name when shown).
WITH renamed AS (
    UPDATE voices SET name = %(name)s WHERE id = %(id)s AND owner_id = %(owner_id)s
    RETURNING id, name
), named AS (
    SELECT s.record_id, jsonb_object_agg(s.label, renamed.name) AS names
    FROM voice_samples s JOIN renamed ON s.voice_id = renamed.id
    GROUP BY s.record_id
), relabelled AS (
    UPDATE records r SET speaker_names = r.speaker_names || named.names, updated_at = now()
    FROM named WHERE r.id = named.record_id
)
SELECT id FROM renamed;

-- name: voice_name_holder
-- Which of the owner's voices has this name (any case), if any.
SELECT id FROM voices WHERE owner_id = %(owner_id)s AND lower(name) = lower(%(name)s);

-- name: merge_voice_samples
-- Merging voice `id` into `into` (both the owner's, checked first): its samples become the
-- other's, and the speakers named with it are named with the other's name.
WITH moved AS (
    UPDATE voice_samples SET voice_id = %(into)s WHERE voice_id = %(id)s
    RETURNING record_id, label
), named AS (
    SELECT m.record_id, jsonb_object_agg(m.label, v.name) AS names
    FROM moved m, voices v WHERE v.id = %(into)s
    GROUP BY m.record_id
)
UPDATE records r SET speaker_names = r.speaker_names || named.names, updated_at = now()
FROM named WHERE r.id = named.record_id;

-- name: merge_voice_matches
-- ...its matches and the owner's rejections of it become the other's...
WITH matches AS (
    UPDATE record_speakers SET voice_id = %(into)s WHERE voice_id = %(id)s
)
INSERT INTO speaker_rejections (record_id, label, voice_id)
SELECT record_id, label, %(into)s FROM speaker_rejections WHERE voice_id = %(id)s
ON CONFLICT DO NOTHING;

-- name: delete_voice
-- ...and it goes. Deleting a voice: its samples and the rejections of it go with it, its matches
-- are set NULL; the owner's names for speakers stay (a record keeps them, or "Speaker N").
DELETE FROM voices WHERE id = %(id)s AND owner_id = %(owner_id)s RETURNING id;
