-- Fair turns between owners (issue 16 §4): one owner's backlog no longer holds up everyone else.
--
-- A record entering a stage (accepted, or advanced by a save) takes a turn in that stage: the
-- owner's previous turn there plus one, but never earlier than the turn the stage is serving now
-- (the lowest turn still queued; with nothing queued, the latest turn given). New work is claimed
-- by turn, the id breaking ties, so owners with records waiting take turns: an owner who uploads
-- one recording after another's hundred waits behind at most one of them.
ALTER TABLE records ADD COLUMN turn bigint;

-- Each owner's latest turn per stage (kept by the trigger below).
CREATE TABLE owner_turns (
    stage      text NOT NULL,
    owner_id   bigint NOT NULL REFERENCES owners(id) ON DELETE CASCADE,
    last_turn  bigint NOT NULL,
    PRIMARY KEY (stage, owner_id)
);
CREATE INDEX owner_turns_latest ON owner_turns (stage, last_turn);

-- New work (never failed in this stage) by turn; records retrying after a failure by the end of
-- their pause, so a paused record sits beyond the range a claim scans. Neither index holds the
-- lease, the failure count changes only when a run fails or a save advances the stage: lease
-- renewals and checkpoints stay HOT updates (migration 15).
CREATE INDEX records_turns ON records (stage, turn, id) WHERE queued_at IS NOT NULL AND failures = 0;
CREATE INDEX records_retrying ON records (stage, queued_at, id) WHERE queued_at IS NOT NULL AND failures > 0;
DROP INDEX records_queued;

CREATE FUNCTION records_take_a_turn() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    serving bigint;
    previous bigint;
BEGIN
    SELECT turn INTO serving FROM records
    WHERE stage = NEW.stage AND queued_at IS NOT NULL AND failures = 0
    ORDER BY turn, id LIMIT 1;
    IF serving IS NULL THEN
        SELECT max(last_turn) INTO serving FROM owner_turns WHERE stage = NEW.stage;
    END IF;
    SELECT last_turn INTO previous FROM owner_turns WHERE stage = NEW.stage AND owner_id = NEW.owner_id;
    NEW.turn := greatest(coalesce(serving, 1), coalesce(previous + 1, 1));
    INSERT INTO owner_turns (stage, owner_id, last_turn) VALUES (NEW.stage, NEW.owner_id, NEW.turn)
    ON CONFLICT (stage, owner_id) DO UPDATE SET last_turn = greatest(owner_turns.last_turn, EXCLUDED.last_turn);
    RETURN NEW;
END $$;

CREATE TRIGGER records_turn_accepted BEFORE INSERT ON records
    FOR EACH ROW WHEN (NEW.stage <> 'done')
    EXECUTE FUNCTION records_take_a_turn();
CREATE TRIGGER records_turn_advanced BEFORE UPDATE OF stage ON records
    FOR EACH ROW WHEN (NEW.stage <> OLD.stage AND NEW.stage <> 'done')
    EXECUTE FUNCTION records_take_a_turn();

-- Records already waiting take turns per owner in the order they were queued.
UPDATE records r SET turn = t.n
FROM (SELECT id, row_number() OVER (PARTITION BY stage, owner_id ORDER BY stage_entered_at, id) AS n
      FROM records WHERE stage <> 'done') t
WHERE r.id = t.id;
INSERT INTO owner_turns (stage, owner_id, last_turn)
SELECT stage, owner_id, max(turn) FROM records WHERE turn IS NOT NULL GROUP BY stage, owner_id;
