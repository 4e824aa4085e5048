-- An English translation beside the original text, for a record asked to translate
-- (`domain.asked`, task translate): each window's English segments, written by the same
-- checkpoint as its original ones (so a resumed run translates no window twice), in the shape
-- of `segments`. NULL: the window was not translated (a plain transcription). The owner's
-- corrections apply to the original text, never to this one.
ALTER TABLE record_windows ADD COLUMN english jsonb CHECK (jsonb_typeof(english) = 'array');

-- The card says what recognition was asked to write: transcribe, or translate (`records.asked`;
-- a record kept before the task was asked for, or a plain one, says transcribe), and whether the
-- record is a recording cut short (0006). Appended, so the view's readers are unchanged.
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.created_at, r.updated_at, r.duration_seconds,
       r.source_name, r.engine, r.language, r.prompt, r.language_probability, r.audio_expired_at,
       s.step, s.halted_at, s.halt_reason, s.halt_error, s.failures, s.retry_after, s.lease_expires_at,
       s.lost_leases, s.progress_seconds, s.checkpoint_seconds,
       r.speakers_wanted, r.speaker_names, d.record_id IS NOT NULL AS speakers_queued,
       r.turns IS NOT NULL AS speakers_found, d.halt_reason AS speakers_halt_reason,
       d.halt_error AS speakers_halt_error, d.failures AS speakers_failures,
       speaker_list(r.id) AS speaker_list,
       coalesce(c.corrections, 0) AS corrections, coalesce(c.detached, '[]') AS detached_corrections,
       coalesce(r.asked->>'task', 'transcribe') AS task,
       r.cut_short
FROM records r JOIN owners o ON o.id = r.owner_id
     LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
     LEFT JOIN steps d ON d.record_id = r.id AND d.stage = 'done'
     LEFT JOIN LATERAL (
         SELECT count(*)::int AS corrections,
                jsonb_agg(jsonb_build_object('segment', k.segment, 'start', k.start_seconds, 'end', k.end_seconds)
                          ORDER BY k.start_seconds)
                    FILTER (WHERE recognised_segment(k.record_id, k.start_seconds, k.end_seconds) IS NULL) AS detached
         FROM record_corrections k WHERE k.record_id = r.id
     ) c ON true;
