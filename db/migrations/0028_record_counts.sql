-- Records per stage and halt reason, kept by the statements that change them (issue 17 §5), so
-- that /metrics reads a few rows instead of counting all of records at every scrape.
--
-- A change to a record's stage or halt appends -1 for its old place and +1 for its new one to
-- record_count_changes; nothing is updated in place, so writers never wait on a shared counter
-- row (and never deadlock on two). A reader folds the changes into record_counts and reads that:
-- the cost of a scrape follows the changes since the last one, not the number of records.

CREATE TABLE record_counts (
    stage   text NOT NULL,
    reason  text NOT NULL DEFAULT '',   -- '' while not halted, else the halt reason
    records bigint NOT NULL,
    PRIMARY KEY (stage, reason)
);

CREATE TABLE record_count_changes (
    id      bigserial PRIMARY KEY,
    stage   text NOT NULL,
    reason  text NOT NULL,
    delta   integer NOT NULL
);

CREATE FUNCTION records_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO record_count_changes (stage, reason, delta)
        VALUES (OLD.stage, CASE WHEN OLD.halted_at IS NULL THEN '' ELSE coalesce(OLD.halt_reason, '') END, -1);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO record_count_changes (stage, reason, delta)
        VALUES (NEW.stage, CASE WHEN NEW.halted_at IS NULL THEN '' ELSE coalesce(NEW.halt_reason, '') END, 1);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER records_counted_in_out AFTER INSERT OR DELETE ON records
    FOR EACH ROW EXECUTE FUNCTION records_count_change();

CREATE TRIGGER records_counted_moves AFTER UPDATE OF stage, halted_at, halt_reason ON records
    FOR EACH ROW WHEN (OLD.stage IS DISTINCT FROM NEW.stage
                       OR (OLD.halted_at IS NULL) <> (NEW.halted_at IS NULL)
                       OR OLD.halt_reason IS DISTINCT FROM NEW.halt_reason)
    EXECUTE FUNCTION records_count_change();

-- the counts as they stand when this migration runs: the one full count there will be
INSERT INTO record_counts (stage, reason, records)
SELECT stage, CASE WHEN halted_at IS NULL THEN '' ELSE coalesce(halt_reason, '') END, count(*)
FROM records GROUP BY 1, 2;

-- Records waiting out a retry pause are counted from the records themselves (the count depends
-- on the clock), through this index of the unhalted ones with a pause set: a few rows.
CREATE INDEX records_paused ON records (stage, retry_after) WHERE halted_at IS NULL AND retry_after IS NOT NULL;
