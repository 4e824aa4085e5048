-- One table of step claims for every step. A record waiting for a step has one row here, keyed by
-- (record, step): its claim (token, holder, lease), its guards (failures, retry pause, lost
-- leases, the time it entered the step), its halt flag, its progress and its checkpoint. Every
-- step (convert, recognize, diarize, and any later one) is claimed, renewed, checkpointed,
-- failed, halted, released and resumed by the same statements (queries/pipeline.sql) on these
-- rows. The row is deleted by the save that finishes its step, which inserts the next step's.
--
-- The record keeps what it is: its stage reached, the owner's fields and the pipeline's fields.
-- A record not done has exactly one row here (its stage's step); a done record has one while
-- its speakers are still to be found (the diarize step, a side step: it never moves the stage).

CREATE TABLE steps (
    record_id          bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    step               text NOT NULL CHECK (step IN ('convert', 'recognize', 'diarize')),
    -- the record's stage while this step is due (the step works from it), and its owner, whose
    -- turns the claim takes (both fixed for the row's life)
    stage              text NOT NULL CHECK (stage IN ('created', 'converted', 'done')),
    owner_id           bigint NOT NULL REFERENCES owners(id),
    -- when the record entered this step: the clock of the step's time limit (resume restarts it)
    entered_at         timestamptz NOT NULL DEFAULT now(),
    turn               bigint,
    claim_token        bigint,
    claim_holder       text,
    lease_expires_at   timestamptz,
    failures           integer NOT NULL DEFAULT 0,
    retry_after        timestamptz,
    lost_leases        integer NOT NULL DEFAULT 0,
    halted_at          timestamptz,
    halt_reason        text,
    halt_error         text,
    progress_seconds   double precision,
    -- the checkpoint: the step's work is saved up to here (its windows), by the claim named
    -- checkpoint_token; a claim whose lease runs out after its own checkpoint lost no work
    checkpoint_seconds double precision NOT NULL DEFAULT 0,
    checkpoint_token   bigint,
    -- the moment an unclaimed row became claimable: NULL while claimed or halted, otherwise the
    -- later of its entry and its retry pause's end. Lease renewals and checkpoints never change
    -- it, so the claim's indexes (below) stay out of their way: those are HOT updates.
    queued_at          timestamptz GENERATED ALWAYS AS (
        CASE WHEN halted_at IS NULL AND claim_token IS NULL THEN greatest(entered_at, retry_after) END) STORED,
    PRIMARY KEY (record_id, step),
    CHECK ((halted_at IS NULL) = (halt_reason IS NULL))
) WITH (fillfactor = 90);

-- The claim reads three small ranges: rows whose holder may have run out of lease (as many as
-- there are running steps), rows retrying after a failure by the end of their pause, and new
-- work by turn. None of them holds the lease.
CREATE INDEX steps_held ON steps (step, record_id) WHERE claim_token IS NOT NULL AND halted_at IS NULL;
CREATE INDEX steps_retrying ON steps (step, queued_at, record_id) WHERE queued_at IS NOT NULL AND failures > 0;
CREATE INDEX steps_turns ON steps (step, turn, record_id) WHERE queued_at IS NOT NULL AND failures = 0;
-- The metrics count rows waiting out a pause through this index: a few rows.
CREATE INDEX steps_paused ON steps (stage, retry_after) WHERE halted_at IS NULL AND retry_after IS NOT NULL;
CREATE INDEX steps_halted ON steps (halted_at, record_id) WHERE halted_at IS NOT NULL;

-- Fair turns between owners: a row entering a step takes a turn there: the owner's previous turn
-- in that step plus one, but never earlier than the turn the step is serving now (the lowest
-- turn still queued; with nothing queued, the latest turn given). New work is claimed by turn,
-- so owners with records waiting take turns: one recording uploaded after another owner's
-- hundred waits behind at most one of them.
DROP TRIGGER records_turn_accepted ON records;
DROP TRIGGER records_turn_advanced ON records;
DROP FUNCTION records_take_a_turn();
DROP INDEX owner_turns_latest;
DELETE FROM owner_turns;
ALTER TABLE owner_turns RENAME COLUMN stage TO step;
CREATE INDEX owner_turns_latest ON owner_turns (step, last_turn);

CREATE FUNCTION steps_take_a_turn() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    serving bigint;
    previous bigint;
BEGIN
    SELECT turn INTO serving FROM steps
    WHERE step = NEW.step AND queued_at IS NOT NULL AND failures = 0
    ORDER BY turn, record_id LIMIT 1;
    IF serving IS NULL THEN
        SELECT max(last_turn) INTO serving FROM owner_turns WHERE step = NEW.step;
    END IF;
    SELECT last_turn INTO previous FROM owner_turns WHERE step = NEW.step AND owner_id = NEW.owner_id;
    NEW.turn := greatest(coalesce(serving, 1), coalesce(previous + 1, 1));
    INSERT INTO owner_turns (step, owner_id, last_turn) VALUES (NEW.step, NEW.owner_id, NEW.turn)
    ON CONFLICT (step, owner_id) DO UPDATE SET last_turn = greatest(owner_turns.last_turn, EXCLUDED.last_turn);
    RETURN NEW;
END $$;

-- The rows as the old columns left them: each record not done waits for its stage's step, each
-- speakers row not yet saved for the diarize step; their turns in the order they were queued.
INSERT INTO steps (record_id, step, stage, owner_id, entered_at, turn, claim_token, claim_holder,
                   lease_expires_at, failures, retry_after, lost_leases, halted_at, halt_reason, halt_error,
                   progress_seconds, checkpoint_seconds, checkpoint_token)
SELECT r.id, CASE r.stage WHEN 'created' THEN 'convert' ELSE 'recognize' END, r.stage, r.owner_id,
       r.stage_entered_at, row_number() OVER (PARTITION BY r.stage, r.owner_id ORDER BY r.stage_entered_at, r.id),
       r.claim_token, r.claim_holder, r.lease_expires_at, r.failures, r.retry_after, r.lost_leases,
       r.halted_at, r.halt_reason, r.halt_error, r.progress_seconds, r.recognized_seconds,
       (SELECT max(w.claim_token) FROM record_windows w WHERE w.record_id = r.id)
FROM records r WHERE r.stage <> 'done';
INSERT INTO steps (record_id, step, stage, owner_id, entered_at, turn, claim_token, claim_holder,
                   lease_expires_at, failures, retry_after, lost_leases, halted_at, halt_reason, halt_error,
                   progress_seconds, checkpoint_seconds)
SELECT s.record_id, 'diarize', 'done', r.owner_id, s.queued_at,
       row_number() OVER (PARTITION BY r.owner_id ORDER BY s.queued_at, s.record_id),
       s.claim_token, s.claim_holder, s.lease_expires_at, s.failures, s.retry_after, s.lost_leases,
       s.halted_at, s.halt_reason, s.halt_error, s.progress_seconds, s.embedded_seconds
FROM record_speakers s JOIN records r ON r.id = s.record_id WHERE s.done_at IS NULL;
INSERT INTO owner_turns (step, owner_id, last_turn)
SELECT step, owner_id, max(turn) FROM steps GROUP BY step, owner_id;

CREATE TRIGGER steps_turn BEFORE INSERT ON steps
    FOR EACH ROW EXECUTE FUNCTION steps_take_a_turn();

-- The diarize step's result is a pipeline field of the record, like the others: who spoke when,
-- [{start, end, speaker}] in time order, written once by its fenced save.
ALTER TABLE records ADD COLUMN turns jsonb;
UPDATE records r SET turns = s.turns FROM record_speakers s WHERE s.record_id = r.id AND s.turns IS NOT NULL;

-- The diarize step's checkpoints (each window's speaker embeddings) belong to the record now.
ALTER TABLE record_speaker_windows DROP CONSTRAINT record_speaker_windows_record_id_fkey;
ALTER TABLE record_speaker_windows ADD FOREIGN KEY (record_id) REFERENCES records(id) ON DELETE CASCADE;

-- A row that is, or becomes, claimable wakes its step on commit (NOTIFY is delivered only if the
-- transaction commits). The payload names the step, followed by the seconds still to wait when
-- the row becomes claimable only later (the end of a retry pause). A row merely claimed, renewed
-- or checkpointed wakes nobody; a lease running out is the tick's.
DROP TRIGGER records_wake_up_accepted ON records;
DROP TRIGGER records_wake_up_freed ON records;
DROP FUNCTION records_wake_up();
DROP VIEW cards;  -- made again below, from the record and its step row
DROP TABLE record_speakers;  -- its triggers go with it, their function right after
DROP FUNCTION record_speakers_wake_up();

CREATE FUNCTION steps_wake_up() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wait double precision;
BEGIN
    IF NOT isfinite(NEW.queued_at) THEN
        RETURN NULL;  -- a pause without end: nothing will ever be due
    END IF;
    wait := extract(epoch FROM NEW.queued_at - clock_timestamp());
    PERFORM pg_notify('transcriber_wakeups',
                      CASE WHEN wait > 0 THEN NEW.step || ' ' || round(wait::numeric, 3) ELSE NEW.step END);
    RETURN NULL;
END $$;
CREATE TRIGGER steps_wake_up_queued AFTER INSERT ON steps
    FOR EACH ROW WHEN (NEW.queued_at IS NOT NULL)
    EXECUTE FUNCTION steps_wake_up();
-- released, paused after a failure, resumed: unclaimed, not halted, and claimable at another moment
CREATE TRIGGER steps_wake_up_freed AFTER UPDATE ON steps
    FOR EACH ROW WHEN (NEW.queued_at IS NOT NULL
                       AND (OLD.claim_token IS NOT NULL OR OLD.queued_at IS DISTINCT FROM NEW.queued_at))
    EXECUTE FUNCTION steps_wake_up();

-- Records per stage and halt reason (record_counts): a record's stage is counted from records, its
-- halt from its stage's step row (a halted side step leaves its done record counted as done).
-- A halted row's record counts at (stage, reason) instead of (stage, '').
DROP TRIGGER records_counted_in_out ON records;
DROP TRIGGER records_counted_moves ON records;
DROP FUNCTION records_count_change();

CREATE FUNCTION records_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO record_count_changes (stage, reason, delta) VALUES (OLD.stage, '', -1);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO record_count_changes (stage, reason, delta) VALUES (NEW.stage, '', 1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER records_counted_in_out AFTER INSERT OR DELETE ON records
    FOR EACH ROW EXECUTE FUNCTION records_count_change();
CREATE TRIGGER records_counted_moves AFTER UPDATE OF stage ON records
    FOR EACH ROW WHEN (OLD.stage IS DISTINCT FROM NEW.stage)
    EXECUTE FUNCTION records_count_change();

CREATE FUNCTION steps_count_halt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.halted_at IS NOT NULL THEN
        INSERT INTO record_count_changes (stage, reason, delta)
        VALUES (OLD.stage, OLD.halt_reason, -1), (OLD.stage, '', 1);
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.halted_at IS NOT NULL THEN
        INSERT INTO record_count_changes (stage, reason, delta)
        VALUES (NEW.stage, '', -1), (NEW.stage, NEW.halt_reason, 1);
    END IF;
    RETURN NULL;
END $$;
-- a row is never inserted halted; a halted row goes when its record is deleted
CREATE TRIGGER steps_counted_halts_gone AFTER DELETE ON steps
    FOR EACH ROW WHEN (OLD.stage <> 'done' AND OLD.halted_at IS NOT NULL)
    EXECUTE FUNCTION steps_count_halt();
CREATE TRIGGER steps_counted_halts AFTER UPDATE OF halted_at, halt_reason ON steps
    FOR EACH ROW WHEN (NEW.stage <> 'done' AND ((OLD.halted_at IS NULL) <> (NEW.halted_at IS NULL)
                                                OR OLD.halt_reason IS DISTINCT FROM NEW.halt_reason))
    EXECUTE FUNCTION steps_count_halt();

ALTER TABLE records
    DROP COLUMN available_at,
    DROP COLUMN queued_at,
    DROP COLUMN turn,
    DROP COLUMN claim_token,
    DROP COLUMN claim_holder,
    DROP COLUMN lease_expires_at,
    DROP COLUMN failures,
    DROP COLUMN retry_after,
    DROP COLUMN lost_leases,
    DROP COLUMN halted_at,
    DROP COLUMN halt_reason,
    DROP COLUMN halt_error,
    DROP COLUMN progress_seconds,
    DROP COLUMN recognized_seconds;
ALTER TABLE records SET (fillfactor = 100);

-- The card: the record, the step row of its stage while it is not done (its claim, guards and
-- halt are the record's), and for a done record its diarize step's row (the speakers').
CREATE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.created_at, r.updated_at, r.duration_seconds,
       r.source_name, r.engine, r.language, r.prompt, r.language_probability, r.audio_expired_at,
       s.step, s.halted_at, s.halt_reason, s.halt_error, s.failures, s.retry_after, s.lease_expires_at,
       s.lost_leases, s.progress_seconds, s.checkpoint_seconds,
       r.speakers_wanted, r.speaker_names, d.record_id IS NOT NULL AS speakers_queued,
       r.turns IS NOT NULL AS speakers_found, d.halt_reason AS speakers_halt_reason,
       d.halt_error AS speakers_halt_error, d.failures AS speakers_failures
FROM records r JOIN owners o ON o.id = r.owner_id
     LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
     LEFT JOIN steps d ON d.record_id = r.id AND d.stage = 'done';
