-- Deleting a record for good, and the service owner's (operator's) accounts for /admin.

-- The journal outlives the records it speaks of: a record erased for good keeps exactly one
-- line, its 'deleted' event (who, when, at which stage; no content). The foreign key gives way
-- to the trigger below, which keeps its guarantee for every other line.
ALTER TABLE events DROP CONSTRAINT events_record_id_fkey;

-- A line about a record must name a record that exists. The record's row is locked for key
-- share as a foreign key check would, so an erasure and a line written meanwhile are ordered:
-- a line about an erased record (a stale step's refusal arriving late) is dropped, not kept.
CREATE FUNCTION events_name_a_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.kind = 'deleted' THEN
        RETURN NEW;
    END IF;
    PERFORM 1 FROM records WHERE id = NEW.record_id FOR KEY SHARE;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    IF EXISTS (SELECT 1 FROM events WHERE record_id = NEW.record_id AND kind = 'deleted') THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'event for a record that does not exist: %', NEW.record_id
        USING ERRCODE = 'foreign_key_violation';
END $$;
CREATE TRIGGER events_name_a_record BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_name_a_record();

-- Still append-only, with one exception: erasing a record takes its journal with it, all but
-- the line that says it was deleted (which is written first, in the same transaction).
CREATE OR REPLACE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.kind <> 'deleted'
       AND NOT EXISTS (SELECT 1 FROM records WHERE id = OLD.record_id)
       AND EXISTS (SELECT 1 FROM events WHERE record_id = OLD.record_id AND kind = 'deleted') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the event journal is append-only';
END $$;

-- Operators sign in to /admin with a token of their own, apart from owners' tokens: an owner's
-- token never opens the panel, and an operator's never reads an owner's records.
CREATE TABLE operators (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    token_hash  text NOT NULL UNIQUE,          -- sha256 of the token; the token itself is never stored
    created_at  timestamptz NOT NULL DEFAULT now()
);
