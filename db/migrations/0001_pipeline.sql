-- The pipeline's tables: owners, records (the queue), audio kept beside them, the journal.

CREATE TABLE owners (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    token_hash  text NOT NULL UNIQUE,          -- sha256 of the API token; the token itself is never stored
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Audio lives outside the records table: a blob is an ordered list of chunks, so a worker on
-- another machine needs only the database URL, and nobody holds a whole recording in memory.
CREATE TABLE blobs (
    id          bigserial PRIMARY KEY,
    media_type  text NOT NULL,
    size_bytes  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE blob_chunks (
    blob_id     bigint NOT NULL REFERENCES blobs(id) ON DELETE CASCADE,
    seq         integer NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (blob_id, seq)
);

-- Claim tokens come from a sequence: unique per claim, and ordered, so an older holder is
-- recognisably older.
CREATE SEQUENCE claim_tokens;

CREATE TABLE records (
    id                bigserial PRIMARY KEY,
    owner_id          bigint NOT NULL REFERENCES owners(id),
    -- the owner's fields: the pipeline never writes these
    title             text NOT NULL DEFAULT '',
    summary           text NOT NULL DEFAULT '',
    topics            text[] NOT NULL DEFAULT '{}',
    -- the queue: stage reached, claim, guards, halt flag
    stage             text NOT NULL DEFAULT 'created'
                      CHECK (stage IN ('created', 'converted', 'done')),
    stage_entered_at  timestamptz NOT NULL DEFAULT now(),
    claim_token       bigint,
    lease_expires_at  timestamptz,
    failures          integer NOT NULL DEFAULT 0,
    retry_after       timestamptz,
    halted_at         timestamptz,
    halt_reason       text,
    halt_error        text,
    -- intake
    source_name       text NOT NULL DEFAULT '',
    original_blob_id  bigint NOT NULL REFERENCES blobs(id),
    -- the convert step's fields
    converted_blob_id bigint REFERENCES blobs(id),
    duration_seconds  double precision,
    -- the recognize step's fields
    engine            text,
    transcript        text,
    segments          jsonb,
    progress_seconds  double precision,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((halted_at IS NULL) = (halt_reason IS NULL))
);

-- Serves the claim: unhalted rows of one stage in claim order. The predicate is only what the
-- claim's own WHERE states, so a generic (prepared) plan can use the index too. Lease, pause
-- and counters stay out of it so the frequent writes to them remain cheap (HOT updates).
CREATE INDEX records_claim_order ON records (stage, stage_entered_at, id)
    WHERE halted_at IS NULL;
CREATE INDEX records_owner_recent ON records (owner_id, created_at DESC, id DESC);

-- The append-only event journal of every record.
CREATE TABLE events (
    id         bigserial PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    record_id  bigint NOT NULL REFERENCES records(id),
    origin     text NOT NULL CHECK (origin IN ('pipeline', 'human')),
    kind       text NOT NULL,
    stage      text NOT NULL,
    detail     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_record ON events (record_id, id);

CREATE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event journal is append-only';
END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_are_append_only();
