-- Resumable uploads (tus 1.0, `web.tus`): a recording that arrives in any number of requests,
-- each one's bytes committed before it is answered, that becomes a record through the one intake
-- once its last byte is in. Its bytes are an intake blob written in place (`blob_id`, chunks of
-- CHUNK_BYTES like every blob: a request that ends mid-chunk leaves a shorter last chunk that the
-- next one fills), never a copy on a file system, so any API process answers any request of it.
--
-- `id`: opaque and random (the address is not guessable). `upload_length`: NULL while deferred
-- (a recording in a browser, whose length is known only when it stops). `received`: the bytes
-- committed, the offset a client resumes from; it moves only with the chunk that holds them, in
-- one transaction. `touched_at`: the last request that wrote bytes or created it; an upload idle
-- for TRANSCRIBER_UPLOAD_EXPIRY_HOURS is removed by the sweep, a deferred one idle for
-- TRANSCRIBER_RECORDING_IDLE_SECONDS is finished into a record of what arrived (`cut_short`).
-- `finished_at` and `record_id`: set in the transaction that inserts the record, which also
-- hands the blob to the record (`blob_id` NULL): one record per upload, whoever finishes it.
-- `record_id` is no reference: deleting the record leaves the upload saying which it made.
CREATE TABLE resumable_uploads (
    id               text PRIMARY KEY,
    owner_id         bigint NOT NULL REFERENCES owners(id),
    blob_id          bigint REFERENCES blobs(id),
    upload_length    bigint CHECK (upload_length >= 0),
    received         bigint NOT NULL DEFAULT 0 CHECK (received >= 0),
    source_name      text NOT NULL DEFAULT '',
    title            text NOT NULL DEFAULT '',
    language         text,
    prompt           text,
    speakers         text,
    idempotency_key  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    touched_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    record_id        bigint,
    cut_short        boolean NOT NULL DEFAULT false,
    CONSTRAINT resumable_uploads_within_length CHECK (upload_length IS NULL OR received <= upload_length),
    CONSTRAINT resumable_uploads_bytes_until_finished CHECK ((finished_at IS NULL) = (blob_id IS NOT NULL))
);

-- A repeat of a creation with the owner's Idempotency-Key finds the upload it made.
CREATE UNIQUE INDEX resumable_uploads_key ON resumable_uploads (owner_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- The sweep of blobs asks whether an upload is writing a blob; quotas sum an owner's unfinished ones.
CREATE UNIQUE INDEX resumable_uploads_blob ON resumable_uploads (blob_id) WHERE blob_id IS NOT NULL;
CREATE INDEX resumable_uploads_owner ON resumable_uploads (owner_id) WHERE finished_at IS NULL;
-- The idle and expired ones, found by the sweep in order of their last write.
CREATE INDEX resumable_uploads_touched ON resumable_uploads (touched_at);

-- A record made of a recording whose uploader went quiet before saying it had stopped (a browser
-- tab closed mid-recording): the part that arrived, marked so on its card (the cards view's
-- column `cut_short`, appended where the view is restated last).
ALTER TABLE records ADD COLUMN cut_short boolean NOT NULL DEFAULT false;
