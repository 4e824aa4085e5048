-- Speakers (issue 19): a side queue beside the stages. `done` stays what it was (the text is
-- readable at done); a record that wants speakers gets one row here from the save that reaches
-- done, and the diarize step works that row with a claim, lease, failures, retry pause, lost
-- leases and halt flag of its own, exactly as the stages are worked on records. A diarization
-- that fails for good halts this row only: the record stays done and its text readable.

-- What the upload asked for: auto (the service decides), off, or a fixed number of speakers.
ALTER TABLE records ADD COLUMN speakers_wanted text NOT NULL DEFAULT 'auto'
    CHECK (speakers_wanted ~ '^(auto|off|[1-9][0-9]?)$');
-- The owner's names for the speaker labels ({"S1": "Alice"}): the pipeline never writes it.
ALTER TABLE records ADD COLUMN speaker_names jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(speaker_names) = 'object');

CREATE TABLE record_speakers (
    record_id         bigint PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    speakers          integer CHECK (speakers BETWEEN 1 AND 99),  -- a fixed number; NULL: found
    queued_at         timestamptz NOT NULL DEFAULT now(),
    claim_token       bigint,
    lease_expires_at  timestamptz,
    failures          integer NOT NULL DEFAULT 0,
    retry_after       timestamptz,
    lost_leases       integer NOT NULL DEFAULT 0,
    halted_at         timestamptz,
    halt_reason       text,
    halt_error        text,
    progress_seconds  double precision,
    -- the checkpoint: windows up to here are embedded (record_speaker_windows)
    embedded_seconds  double precision NOT NULL DEFAULT 0,
    -- the result, written once by the fenced save: [{start, end, speaker}] in time order
    turns             jsonb,
    done_at           timestamptz,
    -- as records.available_at (migration 6): NULL once done or halted, else when claimable
    available_at      timestamptz GENERATED ALWAYS AS (
        CASE WHEN halted_at IS NULL AND done_at IS NULL
             THEN greatest(queued_at, lease_expires_at, retry_after) END) STORED,
    CHECK ((halted_at IS NULL) = (halt_reason IS NULL)),
    CHECK ((done_at IS NULL) = (turns IS NULL))
);
-- The embeddings of each window worked (a checkpoint, written under the claim's token by the
-- statement that moves embedded_seconds on), so a run taken over goes on from the last window;
-- clustering at the end reads them all, and the save of the turns lets them go. `times` are the
-- (n, 2) float32 start/end seconds of the embedded pieces, `vectors` their (n, d) float32 rows.
CREATE TABLE record_speaker_windows (
    record_id     bigint NOT NULL REFERENCES record_speakers(record_id) ON DELETE CASCADE,
    from_seconds  double precision NOT NULL,
    to_seconds    double precision NOT NULL,
    claim_token   bigint NOT NULL,
    times         bytea NOT NULL,
    vectors       bytea NOT NULL,
    PRIMARY KEY (record_id, from_seconds),
    CHECK (to_seconds > from_seconds)
);

CREATE INDEX record_speakers_claimable ON record_speakers (available_at, record_id)
    WHERE available_at IS NOT NULL;

-- A row that is, or becomes, claimable wakes the diarize step on commit, like records do (the
-- payload names the step: `diarize`, or `diarize SECONDS` for the end of a retry pause).
CREATE FUNCTION record_speakers_wake_up() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wait double precision;
BEGIN
    IF NOT isfinite(NEW.available_at) THEN
        RETURN NULL;
    END IF;
    wait := extract(epoch FROM NEW.available_at - clock_timestamp());
    PERFORM pg_notify('transcriber_wakeups',
                      CASE WHEN wait > 0 THEN 'diarize ' || round(wait::numeric, 3) ELSE 'diarize' END);
    RETURN NULL;
END $$;

CREATE TRIGGER record_speakers_wake_up_queued AFTER INSERT ON record_speakers
    FOR EACH ROW WHEN (NEW.available_at IS NOT NULL)
    EXECUTE FUNCTION record_speakers_wake_up();
CREATE TRIGGER record_speakers_wake_up_freed AFTER UPDATE ON record_speakers
    FOR EACH ROW WHEN (NEW.available_at IS NOT NULL AND NEW.claim_token IS NULL
                       AND (OLD.claim_token IS NOT NULL
                            OR OLD.available_at IS DISTINCT FROM NEW.available_at))
    EXECUTE FUNCTION record_speakers_wake_up();

-- The card shows what was asked and where speakers stand (a plain LEFT JOIN on the key).
CREATE OR REPLACE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.lost_leases, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language, r.prompt, r.language_probability, r.audio_expired_at,
       r.speakers_wanted, r.speaker_names, s.record_id IS NOT NULL AS speakers_queued,
       s.done_at AS speakers_done_at, s.halt_reason AS speakers_halt_reason,
       s.halt_error AS speakers_halt_error, s.failures AS speakers_failures
FROM records r JOIN owners o ON o.id = r.owner_id
     LEFT JOIN record_speakers s ON s.record_id = r.id;
