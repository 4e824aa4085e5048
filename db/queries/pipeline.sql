-- The claim protocol: one set of statements for every step (convert, recognize, diarize, and any
-- later one), on the step rows of the `steps` table. Every write a holder makes is conditional on
-- the record, the step AND this claim's token, and journals its event in the same statement. A
-- step adds its own part to two of them, its save and its checkpoint (the fragments named
-- save_<step> and checkpoint_<step> below), never a statement of its own for the protocol.

-- name: claim
-- Selects an eligible row of a step and claims it under a new token, in one statement (P2).
-- Returns only the record id and the token (INV-2), whether the record has overstayed the step,
-- and how many of its leases were lost (past a limit the claimer halts it).
-- The order: a row whose holder ran out of lease (its work started before anything queued),
-- oldest lease end first; then a row whose retry pause is over, the oldest pause end first; then
-- new work by turn, so that owners take turns. The record id breaks ties. No index used here
-- holds the lease, so renewals are HOT updates.
WITH held AS (
    SELECT record_id FROM steps            -- steps_held: a handful, their leases filtered
    WHERE step = %(step)s AND claim_token IS NOT NULL AND halted_at IS NULL
      AND lease_expires_at <= now()
    ORDER BY lease_expires_at, record_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), retrying AS (
    SELECT record_id FROM steps            -- steps_retrying: paused rows sit beyond now()
    WHERE step = %(step)s AND queued_at <= now() AND failures > 0
      AND NOT EXISTS (SELECT FROM held)    -- evaluated once, before the scan: no lock if held won
    ORDER BY queued_at, record_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), fresh AS (
    SELECT record_id FROM steps            -- steps_turns: new work, owners taking turns
    WHERE step = %(step)s AND queued_at <= now() AND failures = 0
      AND NOT EXISTS (SELECT FROM held) AND NOT EXISTS (SELECT FROM retrying)
    ORDER BY turn, record_id
    LIMIT 1
    FOR UPDATE SKIP LOCKED
), candidate AS (
    SELECT record_id FROM held UNION ALL SELECT record_id FROM retrying UNION ALL SELECT record_id FROM fresh
), claimed AS (
    UPDATE steps s
    SET claim_token = nextval('claim_tokens'),
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
        claim_holder = %(holder)s,
        -- A token still standing is a lost lease: its holder ran out of lease without a save, a
        -- failure or a give-back, all of which clear the token. A holder whose checkpoint was the
        -- last one made progress, and its loss is not counted (the checkpoint itself restarted
        -- the count). (SET sees the old values.)
        lost_leases = s.lost_leases + (s.claim_token IS NOT NULL
                                       AND s.checkpoint_token IS DISTINCT FROM s.claim_token)::int
    FROM candidate c
    WHERE s.record_id = c.record_id AND s.step = %(step)s
    RETURNING s.record_id, s.claim_token, s.stage, s.lease_expires_at, s.lost_leases,
              s.entered_at < now() - make_interval(secs => %(time_limit_seconds)s) AS overdue
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'claimed', stage,
           jsonb_build_object('step', %(step)s::text, 'claim_token', claim_token,
                              'lease_expires_at', lease_expires_at, 'lost_leases', lost_leases)
    FROM claimed
)
SELECT record_id, claim_token, overdue, lost_leases FROM claimed;

-- name: read_for_step
-- The step's ordinary read (INV-2): the record's columns, whatever columns there are, and its
-- step row's failures so far and checkpoint (where the step's work goes on from).
SELECT r.*, s.failures, s.checkpoint_seconds
FROM records r JOIN steps s ON s.record_id = r.id AND s.step = %(step)s
WHERE r.id = %(id)s;

-- name: read_record
-- A record's columns with those of the step its stage waits for (its claim, guards, halt and
-- checkpoint; NULL once done, its counts 0): what the operator's tools look at.
SELECT r.*, s.step, s.entered_at, s.claim_token, s.claim_holder, s.lease_expires_at,
       coalesce(s.failures, 0) AS failures, s.retry_after, coalesce(s.lost_leases, 0) AS lost_leases,
       s.halted_at, s.halt_reason, s.halt_error, s.progress_seconds, s.checkpoint_seconds
FROM records r LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
WHERE r.id = %(id)s;

-- name: save
-- Ends the step under the claim's token (its row goes), writes the step's result (the fragment
-- save_<step>, which reads `finished` and ends with a CTE `saved` returning record_id, a
-- `detail` for the journal and the converted audio it lets go, if any), queues the next step if
-- there is one, and journals the save, in one statement: a refused save writes nothing at all.
WITH finished AS (
    DELETE FROM steps
    WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s AND halted_at IS NULL
    RETURNING record_id, owner_id
), {result}, queued AS (
    INSERT INTO steps (record_id, step, stage, owner_id)
    SELECT record_id, %(next_step)s, %(target)s, owner_id FROM finished
    WHERE %(next_step)s::text IS NOT NULL
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', %(saved_event)s, %(target)s,
           jsonb_build_object('step', %(step)s::text, 'claim_token', %(token)s::bigint) || detail
    FROM saved
)
SELECT record_id, released_blob_id FROM saved;

-- name: save_convert
-- The convert step's result: the fields it owns (the SET list, filled in by db/queries.py
-- from the columns the step names), and the record's next stage.
saved AS (
    UPDATE records r
    SET {owned},
        stage = %(target)s,
        stage_entered_at = now(),
        updated_at = now()
    FROM finished f
    WHERE r.id = f.record_id
    RETURNING r.id AS record_id, jsonb_build_object() AS detail, NULL::bigint AS released_blob_id
)

-- name: save_recognize
-- The save that reaches done: the text assembled once from the record's windows (segments in
-- recording order, joined by a space), its search rows written, and the converted audio let go.
-- The blob let go is returned: it is deleted right after, in bounded batches (the orphan sweep
-- finds it if a crash comes in between). `old` is the row as this statement found it.
said AS MATERIALIZED (
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
        updated_at = now()
    FROM finished f, records old
    WHERE r.id = f.record_id AND old.id = r.id
    -- the text's passages for search by meaning (keep_passages), made anew by the same statement
    RETURNING r.id AS record_id,
              jsonb_build_object('passages', keep_passages(r.id, r.owner_id, %(passages)s::jsonb)) AS detail,
              old.converted_blob_id AS released_blob_id,
              r.owner_id, search_config(r.language) AS config, r.title, r.summary, r.topics
), headed AS (
    -- the record becomes searchable by the same statement: a row for its title, summary and
    -- topics (an upsert: the owner's edit may have written it first)...
    INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
    SELECT s.record_id, 0, s.owner_id, NULL, NULL, s.config,
           concat_ws(' ', s.title, s.summary, array_to_string(s.topics, ' '))
    FROM saved s
    ON CONFLICT (record_id, n) DO UPDATE SET config = excluded.config, body = excluded.body
), indexed AS (
    -- ...and one per segment in the order the text was assembled: written by this save alone,
    -- once (a record is done once), so a plain insert (an upsert's check costs a tenth more). A
    -- segment the owner corrected (a correction with its times, kept through a re-run) is
    -- found by the owner's words, not the misheard ones.
    INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
    SELECT s.record_id, d.n, s.owner_id, d.start, d."end", s.config, coalesce(k.text, d.text, '')
    FROM saved s CROSS JOIN said d
    LEFT JOIN record_corrections k
           ON k.record_id = s.record_id AND k.start_seconds = d.start AND k.end_seconds = d."end"
), kept_apart AS (
    -- ...and one after them for each correction the text has no segment for any more (detached
    -- by a re-run): still found by its words, at its times
    INSERT INTO search_rows (record_id, n, owner_id, start_seconds, end_seconds, config, body)
    SELECT s.record_id, (SELECT count(*) FROM said) + row_number() OVER (ORDER BY k.start_seconds, k.end_seconds),
           s.owner_id, k.start_seconds, k.end_seconds, s.config, k.text
    FROM saved s JOIN record_corrections k ON k.record_id = s.record_id
    WHERE NOT EXISTS (SELECT 1 FROM said d WHERE d.start = k.start_seconds AND d."end" = k.end_seconds)
)

-- name: save_diarize
-- The diarize step's result: who spoke when (the turns, a field it owns), and in the same
-- statement each segment's search row learns who speaks in it, so a search can keep one
-- speaker's words (%(said)s holds, in the segments' order, search_rows.n from 1, each one's
-- speaker labels); the checkpoints served their purpose and go. Each speaker's print and the
-- owner's voice it was matched to (%(speakers)s, an object per speaker: label, centroid as base64
-- of float32, seconds, voice_id, score) replace the earlier run's, in this statement too: a match
-- is a pipeline field. It keeps a voice's id, never its name (read when shown), so a voice renamed while the
-- step ran is never overwritten; a voice deleted meanwhile is matched by nothing (only the
-- owner's voices that still exist are kept, each locked against deletion until this commits).
saved AS (
    UPDATE records r
    SET {owned},
        updated_at = now()
    FROM finished f
    WHERE r.id = f.record_id
    -- the passages cut again where the speaker changes (keep_passages; NULL: they stay)
    RETURNING r.id AS record_id,
              jsonb_build_object('turns', jsonb_array_length(r.turns),
                                 'passages', keep_passages(r.id, r.owner_id, %(passages)s::jsonb)) AS detail,
              NULL::bigint AS released_blob_id
), labelled AS (
    UPDATE search_rows r SET speakers = ARRAY(SELECT jsonb_array_elements_text(x.labels))
    FROM saved, jsonb_array_elements(%(said)s::jsonb) WITH ORDINALITY AS x(labels, n)
    WHERE r.record_id = saved.record_id AND r.n = x.n
), let_go AS (
    DELETE FROM record_speaker_windows w USING saved WHERE w.record_id = saved.record_id
), printed AS MATERIALIZED (
    SELECT saved.record_id, p.label, decode(p.centroid, 'base64') AS centroid, p.seconds, p.voice_id, p.score
    FROM saved, jsonb_to_recordset(%(speakers)s::jsonb)
                AS p(label text, centroid text, seconds float8, voice_id bigint, score real)
), matchable AS MATERIALIZED (
    SELECT v.id FROM voices v, finished f
    WHERE v.owner_id = f.owner_id AND v.id IN (SELECT voice_id FROM printed)
    FOR KEY SHARE OF v
), prints AS (
    INSERT INTO record_speakers AS s (record_id, label, centroid, seconds, voice_id, score)
    SELECT p.record_id, p.label, p.centroid, p.seconds, m.id, CASE WHEN m.id IS NOT NULL THEN p.score END
    FROM printed p LEFT JOIN matchable m ON m.id = p.voice_id
    ON CONFLICT (record_id, label) DO UPDATE
    SET centroid = excluded.centroid, seconds = excluded.seconds, voice_id = excluded.voice_id, score = excluded.score
), unprinted AS (
    DELETE FROM record_speakers s USING saved
    WHERE s.record_id = saved.record_id AND s.label NOT IN (SELECT label FROM printed)
)

-- name: record_failure
-- Counts a failed run and sets the retry pause (P4); the claim is released so the step becomes
-- eligible again once the pause is over.
WITH failed AS (
    UPDATE steps
    SET failures = failures + 1,
        retry_after = now() + make_interval(secs => %(pause_seconds)s),
        claim_token = NULL,
        lease_expires_at = NULL,
        progress_seconds = NULL
    WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s
    RETURNING record_id, stage, failures, retry_after
), touched AS (
    UPDATE records r SET updated_at = now() FROM failed WHERE r.id = failed.record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'failed', stage,
           jsonb_build_object('step', %(step)s::text, 'attempt', failures, 'error', %(error)s::text,
                              'retry_after', retry_after, 'claim_token', %(token)s::bigint)
    FROM failed
)
SELECT failures, retry_after FROM failed;

-- name: halt
-- Sets the halt flag (P5); the stage reached is kept. add_failures counts the run that caused it.
WITH halted AS (
    UPDATE steps
    SET halted_at = now(),
        halt_reason = %(reason)s,
        halt_error = %(error)s,
        failures = failures + %(add_failures)s,
        progress_seconds = NULL
    WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s
    RETURNING record_id, stage, failures
), touched AS (
    UPDATE records r SET updated_at = now() FROM halted WHERE r.id = halted.record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'halted', stage,
           jsonb_build_object('step', %(step)s::text, 'reason', %(reason)s::text, 'error', %(error)s::text,
                              'attempts', failures, 'claim_token', %(token)s::bigint)
    FROM halted
)
SELECT record_id, stage FROM halted;

-- name: renew_lease
-- Extends a running step's lease and notes its progress; refused once the claim moved on.
UPDATE steps
SET lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
    progress_seconds = COALESCE(%(progress_seconds)s, progress_seconds)
WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s AND halted_at IS NULL
RETURNING lease_expires_at;

-- name: checkpoint
-- Saves one window of a step's work under the claim's token and moves the checkpoint on; the
-- window must start where the last checkpoint ended, so none is saved twice. The step's part,
-- the fragment checkpoint_<step>, keeps the window's work, reading `saved` (it takes effect only
-- if the checkpoint did). It renews the lease too (a holder that just finished a window is
-- alive), and restarts the count of lost leases: claims lost before it did not lose the work,
-- which goes on from here.
WITH saved AS (
    UPDATE steps
    SET checkpoint_seconds = %(to_seconds)s,
        checkpoint_token = %(token)s,
        progress_seconds = %(to_seconds)s,
        lost_leases = 0,
        lease_expires_at = now() + make_interval(secs => %(lease_seconds)s)
    WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s AND halted_at IS NULL
      AND checkpoint_seconds = %(from_seconds)s
    RETURNING record_id, stage
), {kept}, journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'checkpoint', stage,
           jsonb_build_object('step', %(step)s::text, 'from_seconds', %(from_seconds)s::float8,
                              'seconds', %(to_seconds)s::float8, 'claim_token', %(token)s::bigint)
           || %(detail)s::jsonb
    FROM saved
)
SELECT record_id FROM saved;

-- name: checkpoint_recognize
-- A recognised window's segments (and the spans its guards suppressed, and its English
-- segments if the record is translated), written once; the language found in it, on the record.
kept AS (
    INSERT INTO record_windows (record_id, from_seconds, to_seconds, claim_token, segments, suppressed, english)
    SELECT record_id, %(from_seconds)s, %(to_seconds)s, %(token)s, %(segments)s, %(suppressed)s, %(english)s
    FROM saved
), spoken AS (
    UPDATE records r
    SET language = coalesce(%(language)s, r.language),
        language_probability = coalesce(%(language_probability)s, r.language_probability)
    FROM saved
    WHERE r.id = saved.record_id
      AND (r.language IS DISTINCT FROM coalesce(%(language)s, r.language)
           OR r.language_probability IS DISTINCT FROM coalesce(%(language_probability)s, r.language_probability))
)

-- name: checkpoint_diarize
-- A window's speaker embeddings: `times` the (n, 2) float64 start/end seconds of the embedded
-- pieces, `vectors` their (n, d) float32 rows. Never the audio.
kept AS (
    INSERT INTO record_speaker_windows (record_id, from_seconds, to_seconds, claim_token, times, vectors)
    SELECT record_id, %(from_seconds)s, %(to_seconds)s, %(token)s, %(times)s, %(vectors)s FROM saved
)

-- name: checkpoint_refusal
-- Why a checkpoint was refused: whether the claim is still the writer's own (then its window did
-- not start where the last checkpoint ended), and where the last checkpoint stands.
SELECT claim_token IS NOT DISTINCT FROM %(token)s::bigint AND halted_at IS NULL AS still_held,
       checkpoint_seconds
FROM steps WHERE record_id = %(id)s AND step = %(step)s;

-- name: journal_refusal
-- A stale holder fenced out (P3): its write took no effect, and the journal says so.
INSERT INTO events (record_id, origin, kind, stage, detail)
SELECT r.id, 'pipeline', 'save_refused', r.stage,
       jsonb_build_object('step', %(step)s::text, 'write', %(write)s::text, 'claim_token', %(token)s::bigint,
                          'current_claim_token', (SELECT s.claim_token FROM steps s
                                                  WHERE s.record_id = r.id AND s.step = %(step)s))
FROM records r WHERE r.id = %(id)s;

-- name: release
-- A holder gives its claim back unfinished (its worker is stopping): the step is eligible at once
-- instead of after the lease.
WITH released AS (
    UPDATE steps
    SET claim_token = NULL, lease_expires_at = NULL, progress_seconds = NULL
    WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s
    RETURNING record_id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'released', stage,
           jsonb_build_object('step', %(step)s::text, 'claim_token', %(token)s::bigint)
    FROM released
)
SELECT record_id FROM released;

-- name: resume
-- Clears the halt flag of the record's halted step and resets every guard the domain names, in
-- one statement (P5). That SET list is filled in by db/queries.py (assignments) from
-- domain/resume.py.
WITH resumed AS (
    UPDATE steps
    SET {resets}
    WHERE record_id = %(id)s AND halted_at IS NOT NULL
    RETURNING record_id, step, stage
), touched AS (
    UPDATE records r SET updated_at = now() FROM resumed WHERE r.id = resumed.record_id
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'human', 'resumed', stage, jsonb_build_object('step', step, 'by', %(by)s::text)
    FROM resumed
)
SELECT stage, step FROM resumed;

-- name: stage_of
SELECT stage FROM records WHERE id = %(id)s;

-- name: end_gone_holders_lease
-- The lease of a claim whose holder is known to have ended (domain.holders) ends now, as if it had
-- run out: the next claim takes the step up at once and counts the lost lease as any other.
-- Only that claim's, and once: a row claimed again meanwhile, or whose lease has ended, is left
-- alone.
WITH ended AS (
    UPDATE steps
    SET lease_expires_at = now()
    WHERE record_id = %(id)s AND step = %(step)s AND claim_token = %(token)s AND claim_holder = %(holder)s
      AND halted_at IS NULL AND lease_expires_at > now()
    RETURNING record_id, stage
), journal AS (
    INSERT INTO events (record_id, origin, kind, stage, detail)
    SELECT record_id, 'pipeline', 'holder_gone', stage,
           jsonb_build_object('step', %(step)s::text, 'claim_token', %(token)s::bigint, 'holder', %(holder)s::text)
    FROM ended
)
SELECT record_id, stage FROM ended;

-- name: claims_held_on_machine
-- The claims standing whose holders run on one machine (their names begin with its host and
-- boot), for a process there to tell which of them have ended.
SELECT record_id, step, claim_token, claim_holder FROM steps
WHERE claim_token IS NOT NULL AND halted_at IS NULL AND lease_expires_at > now()
  AND starts_with(claim_holder, %(machine)s)
ORDER BY record_id, step;
