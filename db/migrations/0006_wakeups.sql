-- Wake-ups on commit, and a claim index that holds only what can be claimed.

-- The moment a record is, or becomes, claimable: NULL once it is done or halted, otherwise the
-- latest of its stage entry, its lease's end and its retry pause's end. A record is eligible now
-- exactly when available_at <= now() (its stage entry is never in the future, so it changes the
-- order only: a record is queued by the moment it became claimable, the id breaking ties).
-- Computed by the database from the row itself, so no statement has to keep it up to date.
ALTER TABLE records ADD COLUMN available_at timestamptz GENERATED ALWAYS AS (
    CASE WHEN halted_at IS NULL AND stage <> 'done'
         THEN greatest(stage_entered_at, lease_expires_at, retry_after)
    END) STORED;

-- Serves the claim: done and halted rows are not in it at all, and a paused or leased record sits
-- at its future available_at, beyond the range a claim scans, instead of at the head of the queue.
DROP INDEX records_claim_order;
CREATE INDEX records_claimable ON records (stage, available_at, id) WHERE available_at IS NOT NULL;

-- A record that becomes claimable wakes the step that can take it, on commit (NOTIFY is
-- delivered only if the transaction commits). The payload is the record's stage, followed by the
-- seconds still to wait when the record becomes claimable only later (the end of a retry pause).
-- A record merely claimed, renewed or edited wakes nobody; a lease running out is the tick's.
CREATE FUNCTION records_wake_up() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wait double precision;
BEGIN
    IF NOT isfinite(NEW.available_at) THEN
        RETURN NULL;  -- a pause without end: nothing will ever be due
    END IF;
    wait := extract(epoch FROM NEW.available_at - clock_timestamp());
    PERFORM pg_notify('transcriber_wakeups',
                      CASE WHEN wait > 0 THEN NEW.stage || ' ' || round(wait::numeric, 3) ELSE NEW.stage END);
    RETURN NULL;
END $$;

CREATE TRIGGER records_wake_up_accepted AFTER INSERT ON records
    FOR EACH ROW WHEN (NEW.available_at IS NOT NULL)
    EXECUTE FUNCTION records_wake_up();

-- advanced by a save, released, paused after a failure, resumed: unclaimed, not done, not halted,
-- and claimable at another moment (or by another step) than before
CREATE TRIGGER records_wake_up_freed AFTER UPDATE ON records
    FOR EACH ROW WHEN (NEW.available_at IS NOT NULL AND NEW.claim_token IS NULL
                       AND (OLD.claim_token IS NOT NULL OR OLD.stage <> NEW.stage
                            OR OLD.available_at IS DISTINCT FROM NEW.available_at))
    EXECUTE FUNCTION records_wake_up();
