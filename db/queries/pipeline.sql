-- Statements of the pipeline. Every write a claim holder makes is conditional on the record id
-- AND this claim's token, and appends its journal event in the same statement.

-- name: claim
-- Selects an eligible record of a stage and claims it under a new token, in one statement.
-- Returns only the id and the token (INV-2), whether the record has overstayed its stage, and
-- how many of its leases were lost (past a limit the claimer halts it).
-- The order: a record whose holder ran out of lease (its work started before anything queued),
-- oldest lease end first; then a record whose retry pause is over, the oldest pause end first;
-- then new work by turn, so that owners take turns (migration 16). The id breaks ties. No index
-- used here holds the lease, so renewals are HOT updates (migration 15).
WITH held AS (
    SELECT id FROM records                 -- records_held: a handful, their leases filtered
    WHERE stage = %(stage)s AND claim_token IS NOT NULL AND halted_at IS NULL
      AND lease_expires_at <= now()
    ORDER BY lease_expires_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), retrying AS (
    SELECT id FROM records                 -- records_retrying: paused records sit beyond now()
    WHERE stage = %(stage)s AND queued_at <= now() AND failures > 0
      AND NOT EXISTS (SELECT FROM held)    -- evaluated once, before the scan: no lock if held won
    ORDER BY queued_at, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), fresh AS (
    SELECT id FROM records                 -- records_turns: new work, owners taking turns
    WHERE stage = %(stage)s AND queued_at <= now() AND failures = 0
      AND NOT EXISTS (SELECT FROM held) AND NOT EXISTS (SELECT FROM retrying)
    ORDER BY turn, id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), candidate AS (
    SELECT id FROM held UNION ALL SELECT id FROM retrying UNION ALL SELECT id FROM fresh
), claimed AS (
    UPDATE records r
    SET claim_token = nextval('claim_tokens'),
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
        claim_holder = %(holder)s,
        -- A token still standing is a lost lease (issue 8, part 2): its holder ran out of lease without
        -- a save, a failure or a give-back, all of which clear the token. A holder that saved a
        -- checkpoint made progress (issue 16, part 3): its windows carry its token, and its loss is
        -- not counted (the checkpoint itself restarted the count). (SET sees old values.)
        lost_leases = r.lost_leases + (r.claim_token IS NOT NULL AND NOT EXISTS (
            SELECT FROM record_windows w WHERE w.record_id = r.id AND w.claim_token = r.claim_token))::int
    FROM candidate c
    WHERE r.id = c.id
    RETURNING r.id, r.claim_token, r.stage, r.lease_expires_at, r.lost_leases,
              r.stage_entered_at < now() - make_interval(secs => %(time_limit_seconds)s) AS overdue
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'claimed', stage,
           jsonb_build_object('claim_token', claim_token, 'lease_expires_at', lease_expires_at,
                              'lost_leases', lost_leases)
    FROM claimed
)
SELECT id, claim_token, overdue, lost_leases FROM claimed;

-- name: read_record
-- The step's ordinary read of the record's columns, whatever columns there are.
SELECT * FROM records WHERE id = %(id)s;

-- name: save_result
-- Advances the record to the step's target stage with the fields the step owns, releasing the
-- claim and the guards of the stage it leaves. The owned fields' SET list is filled in by
-- db/queries.py (assignments).
WITH saved AS (
    UPDATE records
    SET {owned},
        stage = %(target)s,
        stage_entered_at = now(),
        claim_token = NULL,
        lease_expires_at = NULL,
        failures = 0,
        retry_after = NULL,
        lost_leases = 0,
        progress_seconds = NULL,
        updated_at = now()
    WHERE id = %(id)s AND claim_token = %(token)s
    RETURNING id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'advanced', stage, jsonb_build_object('claim_token', %(token)s::bigint)
    FROM saved
)
SELECT id FROM saved;

-- name: save_done
-- The save that reaches done: save_result's, and in the same statement the text assembled once
-- from the record's windows (segments in recording order, joined by a space), its search rows
-- written, the diarize step's row queued when speakers are wanted, and the converted audio let go. The blob let go is returned: it is deleted right after, in bounded batches (the
-- orphan sweep finds it if a crash comes in between). `old` is the row as this statement found
-- it. The owned fields' SET list is filled in by db/queries.py (assignments).
WITH said AS MATERIALIZED (
    -- the record's segments in recording order, read from its windows once for both the text
    -- and the search rows (only the fields used: a segment's words and their times stay unread)
    SELECT row_number() OVER (ORDER BY w.from_seconds, e.n)::int AS n, e.start, e."end", e.text
    FROM record_windows w,
         ROWS FROM (jsonb_to_recordset(w.segments) AS (start float8, "end" float8, text text))
             WITH ORDINALITY AS e(start, "end", text, n)
    WHERE w.record_id = %(id)s
), saved AS (
    UPDATE records r
    SET {owned},
        transcript = (SELECT coalesce(string_agg(text, ' ' ORDER BY n), '') FROM said),
        converted_blob_id = NULL,
        stage = %(target)s,
        stage_entered_at = now(),
        claim_token = NULL,
        lease_expires_at = NULL,
        failures = 0,
        retry_after = NULL,
        lost_leases = 0,
        progress_seconds = NULL,
        updated_at = now()
    FROM records old
    WHERE r.id = %(id)s AND r.claim_token = %(token)s AND old.id = r.id
    RETURNING r.id, r.stage, old.converted_blob_id AS released_blob_id,
              r.owner_id, search_config(r.language) AS config, r.title, r.summary, r.topics, r.speakers_wanted
), speakers AS (
    -- who spoke when is wanted (the service diarizes and the upload did not say off): the
    -- diarize step's row, queued by the same statement (record_speakers, migration 38)
    INSERT INTO record_speakers (record_id, speakers)
    SELECT s.id, CASE WHEN s.speakers_wanted ~ '^[0-9]+$' THEN s.speakers_wanted::int END
    FROM saved s
    WHERE %(diarize)s AND s.speakers_wanted <> 'off'
    ON CONFLICT (record_id) DO NOTHING
), headed AS (
    -- the record becomes searchable by the same statement (search_rows, migration 33): a row for
    -- its title, summary and topics (an upsert: the owner's edit may have written it first)...
    INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
    SELECT s.id, 0, s.owner_id, NULL, NULL, s.config, concat_ws(' ', s.title, s.summary, array_to_string(s.topics, ' '))
    FROM saved s
    ON CONFLICT (record_id, n) DO UPDATE SET config = excluded.config, body = excluded.body
), indexed AS (
    -- ...and one per segment in the order the text was assembled: written by this save alone,
    -- once (a record is done once), so a plain insert (an upsert's check costs a tenth more)
    INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
    SELECT s.id, d.n, s.owner_id, d.start, d."end", s.config, coalesce(d.text, '')
    FROM saved s, said d
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'advanced', stage, jsonb_build_object('claim_token', %(token)s::bigint)
    FROM saved
)
SELECT id, released_blob_id FROM saved;

-- name: record_failure
-- Counts a failed run and sets the retry pause; the claim is released so the record becomes
-- eligible again once the pause is over.
WITH failed AS (
    UPDATE records
    SET failures = failures + 1,
        retry_after = now() + make_interval(secs => %(pause_seconds)s),
        claim_token = NULL,
        lease_expires_at = NULL,
        progress_seconds = NULL,
        updated_at = now()
    WHERE id = %(id)s AND claim_token = %(token)s
    RETURNING id, stage, failures, retry_after
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'failed', stage,
           jsonb_build_object('attempt', failures, 'error', %(error)s::text,
                              'retry_after', retry_after, 'claim_token', %(token)s::bigint)
    FROM failed
)
SELECT failures, retry_after FROM failed;

-- name: halt
-- Sets the halt flag; the stage reached is kept. add_failures counts the run that caused it.
WITH halted AS (
    UPDATE records
    SET halted_at = now(),
        halt_reason = %(reason)s,
        halt_error = %(error)s,
        failures = failures + %(add_failures)s,
        progress_seconds = NULL,
        updated_at = now()
    WHERE id = %(id)s AND claim_token = %(token)s
    RETURNING id, stage, failures, halted_at
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'halted', stage,
           jsonb_build_object('reason', %(reason)s::text, 'error', %(error)s::text,
                              'attempts', failures, 'claim_token', %(token)s::bigint)
    FROM halted
)
SELECT id, stage FROM halted;

-- name: renew_lease
-- Extends a running step's lease and notes its progress; refused once the claim moved on.
UPDATE records
SET lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
    progress_seconds = COALESCE(%(progress_seconds)s, progress_seconds)
WHERE id = %(id)s AND claim_token = %(token)s AND halted_at IS NULL
RETURNING lease_expires_at;

-- name: checkpoint
-- Saves the segments of one recognised window under the claim's token and moves the checkpoint
-- on; the window must start where the last checkpoint ended, so none is saved twice. It renews
-- the lease too: a holder that just finished a window is alive. And it restarts the count of lost
-- leases (issue 16, part 3): claims lost before it did not lose the work, which goes on from here.
WITH saved AS (
    UPDATE records
    SET recognized_seconds = %(to_seconds)s,
        progress_seconds = %(to_seconds)s,
        lost_leases = 0,
        language = coalesce(%(language)s, language),
        language_probability = coalesce(%(language_probability)s, language_probability),
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
        updated_at = now()
    WHERE id = %(id)s AND claim_token = %(token)s AND halted_at IS NULL
      AND recognized_seconds = %(from_seconds)s
    RETURNING id, stage
), kept AS (
    -- the window's segments, written once, only if the checkpoint above took effect: a stale
    -- holder writes neither (record_windows, migration 11; suppressed: migration 43)
    INSERT INTO record_windows (record_id, from_seconds, to_seconds, claim_token, segments, suppressed)
    SELECT id, %(from_seconds)s, %(to_seconds)s, %(token)s, %(segments)s, %(suppressed)s FROM saved
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'checkpoint', stage,
           jsonb_build_object('from_seconds', %(from_seconds)s::float8, 'seconds', %(to_seconds)s::float8,
                              'segments', jsonb_array_length(%(segments)s::jsonb),
                              'claim_token', %(token)s::bigint)
    FROM saved
)
SELECT id FROM saved;

-- name: checkpoint_refusal
-- Why a checkpoint was refused: whether the claim is still the writer's own (then its window did
-- not start where the last checkpoint ended), and where the last checkpoint stands.
SELECT claim_token IS NOT DISTINCT FROM %(token)s::bigint AND halted_at IS NULL AS still_held,
       recognized_seconds
FROM records WHERE id = %(id)s;

-- name: journal_refusal
-- A stale holder fenced out: its write took no effect, and the journal says so.
INSERT INTO events (record_id, origin, kind, stage, detail)
SELECT id, 'pipeline', 'save_refused', stage,
       jsonb_build_object('write', %(write)s::text, 'claim_token', %(token)s::bigint,
                          'current_claim_token', claim_token)
FROM records WHERE id = %(id)s;

-- name: resume
-- Clears the halt flag and resets every guard the domain names, in one statement. That SET list
-- is filled in by db/queries.py (assignments) from domain/resume.py.
WITH resumed AS (
    UPDATE records
    SET {resets},
        updated_at = now()
    WHERE id = %(id)s AND halted_at IS NOT NULL
    RETURNING id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'human', 'resumed', stage, jsonb_build_object('by', %(by)s::text)
    FROM resumed
)
SELECT stage FROM resumed;

-- name: stage_of
SELECT stage FROM records WHERE id = %(id)s;

-- name: release
-- A holder gives its claim back unfinished (its worker is stopping): the record is eligible at
-- once instead of after the lease.
WITH released AS (
    UPDATE records
    SET claim_token = NULL, lease_expires_at = NULL, progress_seconds = NULL
    WHERE id = %(id)s AND claim_token = %(token)s
    RETURNING id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'released', stage, jsonb_build_object('claim_token', %(token)s::bigint)
    FROM released
)
SELECT id FROM released;

-- name: end_gone_holders_lease
-- The lease of a claim whose holder is known to have ended (domain.holders) ends now, as if it had
-- run out: the next claim takes the record up at once and counts the lost lease as any other.
-- Only that claim's, and once: a record claimed again meanwhile, or whose lease has ended, is left
-- alone.
WITH ended AS (
    UPDATE records
    SET lease_expires_at = now()
    WHERE id = %(id)s AND claim_token = %(token)s AND claim_holder = %(holder)s AND halted_at IS NULL
      AND lease_expires_at > now()
    RETURNING id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT id, 'pipeline', 'holder_gone', stage,
           jsonb_build_object('claim_token', %(token)s::bigint, 'holder', %(holder)s::text)
    FROM ended
)
SELECT id, stage FROM ended;

-- name: claims_held_on_machine
-- The claims standing on records and on speakers rows (`speakers`) whose holders run on one
-- machine (their names begin with its host and boot), for a process there to tell which of them
-- have ended.
SELECT id, claim_token, claim_holder, false AS speakers FROM records
WHERE claim_token IS NOT NULL AND halted_at IS NULL AND lease_expires_at > now()
  AND starts_with(claim_holder, %(machine)s)
UNION ALL
SELECT record_id, claim_token, claim_holder, true FROM record_speakers
WHERE claim_token IS NOT NULL AND halted_at IS NULL AND done_at IS NULL AND lease_expires_at > now()
  AND starts_with(claim_holder, %(machine)s)
ORDER BY id, speakers;
