-- Voices the owner's archive knows: a record speaker's voice print, the owner's voices (named
-- speakers' prints, never audio), the pipeline's match of each record speaker to a voice, and the
-- owner's rejections of a match. Names are owner fields (the owner's naming, renaming, merging and
-- deleting write them); prints and matches are pipeline fields, written by the diarize step's
-- fenced save (save_diarize) and by nothing else (P3).

-- A voice: the owner's, by a name unique among the owner's voices (any case: "alice" names the
-- voice "Alice"). It exists while at least one record speaker is its sample: the statements that
-- take a sample away (naming, deletion of a record or of a voice, merging) delete a voice left
-- without one, under the owner's row lock (voices.sql), never a trigger, so a naming racing
-- them is never lost to a cascade.
CREATE TABLE voices (
    id          bigserial PRIMARY KEY,
    owner_id    bigint NOT NULL REFERENCES owners(id),
    name        text NOT NULL CHECK (name <> ''),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX voices_owner_name ON voices (owner_id, lower(name));

-- Each speaker of a diarized record: its print (the unit-length float32 centroid of its windows'
-- embeddings and the seconds of speech they hold, audio.speakers.voices) and the voice of the
-- owner it was matched to, with its cosine score (NULL: none). Written by the diarize step's
-- save in the statement that saves the turns; a voice deleted meanwhile leaves no match (the
-- save keeps only matches to voices it can lock; a later deletion sets voice_id NULL).
CREATE TABLE record_speakers (
    record_id  bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    label      text NOT NULL,
    centroid   bytea NOT NULL,
    seconds    double precision NOT NULL,
    voice_id   bigint REFERENCES voices(id) ON DELETE SET NULL,
    score      real,
    PRIMARY KEY (record_id, label)
);
CREATE INDEX record_speakers_voice ON record_speakers (voice_id) WHERE voice_id IS NOT NULL;

-- A voice's samples: the prints of the record speakers its owner named with its name, copied
-- when named (a record speaker is a sample of one voice at most). A record deleted takes its
-- samples with it.
CREATE TABLE voice_samples (
    record_id  bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    label      text NOT NULL,
    voice_id   bigint NOT NULL REFERENCES voices(id) ON DELETE CASCADE,
    centroid   bytea NOT NULL,
    seconds    double precision NOT NULL,
    PRIMARY KEY (record_id, label)
);
CREATE INDEX voice_samples_voice ON voice_samples (voice_id);

-- The owner's "this is not that voice" for a speaker of a record: an owner field that re-runs of
-- the diarize step never touch; that voice is never matched to that speaker of that record again.
CREATE TABLE speaker_rejections (
    record_id  bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    label      text NOT NULL,
    voice_id   bigint NOT NULL REFERENCES voices(id) ON DELETE CASCADE,
    PRIMARY KEY (record_id, label, voice_id)
);
CREATE INDEX speaker_rejections_voice ON speaker_rejections (voice_id);

-- The one home of what a record's speaker is called: per record and label, the owner's name
-- (`given`), the voice matched (its id, its name read now, the score), whether the owner rejected
-- that match, and the name shown: the owner's, else the matched voice's unless rejected, else
-- NULL ("Speaker N", audio.formats.speaker_name). Every reader of names (the text in every
-- format, the card, search by speaker) reads it here, so a voice renamed is followed everywhere.
CREATE VIEW speaker_labels AS
SELECT r.id AS record_id, r.owner_id, x.label, x.given,
       v.id AS voice_id, v.name AS voice_name, CASE WHEN v.id IS NOT NULL THEN x.score END AS score,
       j.voice_id IS NOT NULL AS rejected,
       coalesce(x.given, CASE WHEN j.voice_id IS NULL THEN v.name END) AS name
FROM records r
CROSS JOIN LATERAL (
    SELECT coalesce(g.label, s.label) AS label, g.name AS given, s.voice_id, s.score
    FROM (SELECT key AS label, value AS name FROM jsonb_each_text(r.speaker_names)) AS g
    FULL JOIN (SELECT label, voice_id, score FROM record_speakers WHERE record_id = r.id) AS s
        ON s.label = g.label
) AS x
LEFT JOIN voices v ON v.id = x.voice_id
LEFT JOIN speaker_rejections j ON j.record_id = r.id AND j.label = x.label AND j.voice_id = x.voice_id;

-- The names shown for a record's speakers, {label: name} (labels shown as "Speaker N" left out).
CREATE FUNCTION shown_speaker_names(record bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_object_agg(label, name) FILTER (WHERE name IS NOT NULL), '{}')
    FROM speaker_labels WHERE record_id = record
$$;

-- Each speaker of a record as the card shows it, in label order (S2 before S10).
CREATE FUNCTION speaker_list(record bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'label', label, 'name', name, 'given', given, 'rejected', rejected,
               'voice', CASE WHEN voice_id IS NOT NULL
                             THEN jsonb_build_object('id', voice_id, 'name', voice_name, 'score', score) END)
               ORDER BY length(label), label), '[]')
    FROM speaker_labels WHERE record_id = record
$$;

-- The card shows the speakers' names and matches (appended: the view's columns keep their order).
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.created_at, r.updated_at, r.duration_seconds,
       r.source_name, r.engine, r.language, r.prompt, r.language_probability, r.audio_expired_at,
       s.step, s.halted_at, s.halt_reason, s.halt_error, s.failures, s.retry_after, s.lease_expires_at,
       s.lost_leases, s.progress_seconds, s.checkpoint_seconds,
       r.speakers_wanted, r.speaker_names, d.record_id IS NOT NULL AS speakers_queued,
       r.turns IS NOT NULL AS speakers_found, d.halt_reason AS speakers_halt_reason,
       d.halt_error AS speakers_halt_error, d.failures AS speakers_failures,
       speaker_list(r.id) AS speaker_list
FROM records r JOIN owners o ON o.id = r.owner_id
     LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
     LEFT JOIN steps d ON d.record_id = r.id AND d.stage = 'done';
