-- Statements of the diarize step's side queue (record_speakers, migration 38). As on records,
-- every write a holder makes is conditional on the record id AND this claim's token, and
-- journals its event in the same statement (stage 'done', detail.step 'diarize').

-- name: claim_speakers
-- The oldest claimable row, claimed under a new token in one statement (ties broken by the id);
-- a token still standing is a lost lease, as in `claim`.
WITH candidate AS (
    SELECT record_id FROM record_speakers
    WHERE available_at <= now()
    ORDER BY available_at, record_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE record_speakers s
    SET claim_token = nextval('claim_tokens'),
        claim_holder = %(holder)s,
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
        lost_leases = s.lost_leases + (s.claim_token IS NOT NULL)::int
    FROM candidate c
    WHERE s.record_id = c.record_id
    RETURNING s.record_id AS id, s.claim_token, s.lease_expires_at, s.lost_leases,
              s.queued_at < now() - make_interval(secs => %(time_limit_seconds)s) AS overdue
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'claimed', 'done',
           jsonb_build_object('step', 'diarize', 'claim_token', claim_token,
                              'lease_expires_at', lease_expires_at, 'lost_leases', lost_leases)
    FROM claimed
)
SELECT id, claim_token, overdue, lost_leases FROM claimed;

-- name: end_gone_speakers_lease
-- As `end_gone_holders_lease` (pipeline.sql), for a speakers row: the lease of a claim whose holder
-- is known to have ended ends now, once, and only that claim's.
WITH ended AS (
    UPDATE record_speakers
    SET lease_expires_at = now()
    WHERE record_id = %(id)s AND claim_token = %(token)s AND claim_holder = %(holder)s
      AND halted_at IS NULL AND done_at IS NULL AND lease_expires_at > now()
    RETURNING record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'holder_gone', 'done',
           jsonb_build_object('step', 'diarize', 'claim_token', %(token)s::bigint, 'holder', %(holder)s::text)
    FROM ended
)
SELECT record_id FROM ended;

-- name: speakers_job
-- What the diarize step reads: the number of speakers asked for, its failures so far, and the
-- original audio it decodes again (the converted PCM is let go at done).
SELECT s.record_id, s.speakers, s.failures, s.embedded_seconds, r.original_blob_id, r.duration_seconds
FROM record_speakers s JOIN records r ON r.id = s.record_id
WHERE s.record_id = %(id)s;

-- name: speaker_windows
-- The embeddings checkpointed so far, in recording order.
SELECT from_seconds, to_seconds, times, vectors FROM record_speaker_windows
WHERE record_id = %(id)s AND to_seconds <= %(up_to)s
ORDER BY from_seconds;

-- name: speakers_checkpoint
-- One window's embeddings saved under the claim's token, the checkpoint moved on and the lease
-- renewed; the window must start where the last checkpoint ended, so none is saved twice.
WITH saved AS (
    UPDATE record_speakers
    SET embedded_seconds = %(to_seconds)s, progress_seconds = %(to_seconds)s,
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s)
    WHERE record_id = %(id)s AND claim_token = %(token)s AND halted_at IS NULL
      AND embedded_seconds = %(from_seconds)s
    RETURNING record_id
), kept AS (
    INSERT INTO record_speaker_windows (record_id, from_seconds, to_seconds, claim_token, times, vectors)
    SELECT record_id, %(from_seconds)s, %(to_seconds)s, %(token)s, %(times)s, %(vectors)s FROM saved
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'checkpoint', 'done',
           jsonb_build_object('step', 'diarize', 'from_seconds', %(from_seconds)s::float8,
                              'seconds', %(to_seconds)s::float8, 'claim_token', %(token)s::bigint)
    FROM saved
)
SELECT record_id FROM saved;

-- name: save_speakers
-- The turns, saved under the claim's token; the segments' search rows get their speakers in the
-- same statement, so a refused save labels nothing.
WITH saved AS (
    UPDATE record_speakers
    SET turns = %(turns)s, done_at = now(), claim_token = NULL, lease_expires_at = NULL,
        retry_after = NULL, progress_seconds = NULL
    WHERE record_id = %(id)s AND claim_token = %(token)s AND halted_at IS NULL
    RETURNING record_id
), labelled AS (
    -- each segment's search row learns who speaks in it (migration 60: search by speaker);
    -- %(said)s holds, in the segments' order (search_rows.n from 1), each one's speaker labels
    UPDATE search_rows r SET speakers = ARRAY(SELECT jsonb_array_elements_text(x.labels))
    FROM saved, jsonb_array_elements(%(said)s::jsonb) WITH ORDINALITY AS x(labels, n)
    WHERE r.record_id = saved.record_id AND r.n = x.n
), let_go AS (
    -- the checkpoints served their purpose
    DELETE FROM record_speaker_windows w USING saved WHERE w.record_id = saved.record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'speakers_saved', 'done',
           jsonb_build_object('step', 'diarize', 'claim_token', %(token)s::bigint,
                              'turns', jsonb_array_length(%(turns)s::jsonb))
    FROM saved
)
SELECT record_id FROM saved;

-- name: speakers_failure
WITH failed AS (
    UPDATE record_speakers
    SET failures = failures + 1,
        retry_after = now() + make_interval(secs => %(pause_seconds)s),
        claim_token = NULL, lease_expires_at = NULL, progress_seconds = NULL
    WHERE record_id = %(id)s AND claim_token = %(token)s
    RETURNING record_id, failures, retry_after
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'failed', 'done',
           jsonb_build_object('step', 'diarize', 'attempt', failures, 'error', %(error)s::text,
                              'retry_after', retry_after, 'claim_token', %(token)s::bigint)
    FROM failed
)
SELECT failures, retry_after FROM failed;

-- name: speakers_halt
-- Halts the side row only: the record stays done, its text readable.
WITH halted AS (
    UPDATE record_speakers
    SET halted_at = now(), halt_reason = %(reason)s, halt_error = %(error)s,
        failures = failures + %(add_failures)s, progress_seconds = NULL
    WHERE record_id = %(id)s AND claim_token = %(token)s
    RETURNING record_id, failures
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'halted', 'done',
           jsonb_build_object('step', 'diarize', 'reason', %(reason)s::text, 'error', %(error)s::text,
                              'attempts', failures, 'claim_token', %(token)s::bigint)
    FROM halted
)
SELECT record_id FROM halted;

-- name: renew_speakers_lease
UPDATE record_speakers
SET lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
    progress_seconds = COALESCE(%(progress_seconds)s, progress_seconds)
WHERE record_id = %(id)s AND claim_token = %(token)s AND halted_at IS NULL
RETURNING lease_expires_at;

-- name: release_speakers
WITH released AS (
    UPDATE record_speakers
    SET claim_token = NULL, lease_expires_at = NULL, progress_seconds = NULL
    WHERE record_id = %(id)s AND claim_token = %(token)s
    RETURNING record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'released', 'done',
           jsonb_build_object('step', 'diarize', 'claim_token', %(token)s::bigint)
    FROM released
)
SELECT record_id FROM released;

-- name: journal_speakers_refusal
-- A stale diarize holder fenced out: its write took no effect, and the journal says so.
INSERT INTO events (record_id, origin, kind, stage, detail)
SELECT record_id, 'pipeline', 'save_refused', 'done',
       jsonb_build_object('step', 'diarize', 'write', %(write)s::text, 'claim_token', %(token)s::bigint,
                          'current_claim_token', claim_token)
FROM record_speakers WHERE record_id = %(id)s;

-- name: resume_speakers
-- A human returns a halted speakers row to work: the same guards reset as RESUME_RESETS names
-- for records (halt flag, claim, failures, pause, lost leases, the time queued).
WITH resumed AS (
    UPDATE record_speakers
    SET halted_at = NULL, halt_reason = NULL, halt_error = NULL, claim_token = NULL,
        lease_expires_at = NULL, failures = 0, retry_after = NULL, lost_leases = 0, queued_at = now()
    WHERE record_id = %(id)s AND halted_at IS NOT NULL
    RETURNING record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'human', 'resumed', 'done', jsonb_build_object('step', 'diarize', 'by', %(by)s::text)
    FROM resumed
)
SELECT record_id FROM resumed;

-- name: name_speakers
-- The owner's names for the speaker labels; merged into those given before, a name of null or
-- "" takes one away.
WITH named AS (
    UPDATE records
    SET speaker_names = jsonb_strip_nulls(speaker_names || %(names)s::jsonb),
        updated_at = now()
    WHERE id = %(id)s AND owner_id = %(owner_id)s
    RETURNING id
)
SELECT id FROM named;
