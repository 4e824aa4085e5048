-- What an upload asked of recognition, kept as asked (`domain.asked.Asked`: language, prompt,
-- speakers): an upload of the same bytes is attached to an earlier record only when it asks
-- alike. `language` alone cannot tell: recognition overwrites it with the language it used.
-- NULL: a record made before this column, which no upload repeats any more.
ALTER TABLE records ADD COLUMN asked jsonb CHECK (jsonb_typeof(asked) = 'object');

-- The records an upload may still repeat: in the pipeline (an unfinished run, a retry), done
-- within a retry's reach, or named by a kept Idempotency-Key. A recognised record's asked
-- language is lost; the one written instead only ever makes a repeat that asked for none a new
-- record, never one attached to a record that was asked for another language.
UPDATE records
SET asked = jsonb_build_object('language', language, 'prompt', prompt, 'speakers', speakers_wanted)
WHERE content_sha256 IS NOT NULL
  AND (stage <> 'done' OR stage_entered_at > now() - interval '1 hour'
       OR id IN (SELECT record_id FROM upload_keys));
