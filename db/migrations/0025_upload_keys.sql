-- Exactly one record per intended upload (issue 17 §1).
--
-- A client that sends `Idempotency-Key` gets the record its first request with that key made, as
-- long as the key is kept (at least 24 hours; the sweep deletes older keys). The key is the
-- owner's own: two owners may use the same one. The bytes' SHA-256 is kept with it, so the
-- same key with other bytes is told apart and refused. A key goes with its record when the
-- record is deleted for good.
CREATE TABLE upload_keys (
    owner_id        bigint NOT NULL REFERENCES owners(id) ON DELETE CASCADE,
    key             text NOT NULL CHECK (key <> ''),
    content_sha256  bytea NOT NULL,
    record_id       bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX upload_keys_created ON upload_keys (created_at);
CREATE INDEX upload_keys_record ON upload_keys (record_id);

-- The SHA-256 of an uploaded recording's bytes: a retried upload of the same bytes by the same
-- owner, while the first is still in the pipeline, is attached to it (the OpenAI-compatible
-- address, whose official client retries on its own). NULL for recordings given on the command
-- line and for those accepted before this migration.
ALTER TABLE records ADD COLUMN content_sha256 bytea;
CREATE INDEX records_owner_content ON records (owner_id, content_sha256) WHERE content_sha256 IS NOT NULL;
