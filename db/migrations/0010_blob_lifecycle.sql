-- Audio follows the record's life: blobs written in committed chunks and usable once complete,
-- converted audio let go once the text is saved, and the blob references indexed so that
-- deleting a blob and sweeping orphans are index probes instead of scans of records.

-- A blob is written chunk by chunk, each chunk its own transaction (memory and transaction
-- length bounded by a chunk, whatever the recording's length), and is usable (a record may point
-- at it, a reader reads it) only once completed_at is set. An intake's blob names no writer; a
-- conversion's names the claim writing it, so that a stale converter is refused at its next
-- chunk and the sweep can tell a dead conversion's leftovers from one still under way.
-- Every blob there is now is complete: a default evaluated once (now() is stable) is kept in the
-- catalog, so no row is rewritten; dropped at once, so that a new blob starts incomplete.
ALTER TABLE blobs ADD COLUMN completed_at timestamptz DEFAULT now();
ALTER TABLE blobs ALTER COLUMN completed_at DROP DEFAULT;
ALTER TABLE blobs ADD COLUMN writer_record_id bigint;
ALTER TABLE blobs ADD COLUMN writer_token bigint;

-- Deleting a blob checks the records' foreign keys, and the sweep asks whether any record
-- points at a blob: both by these indexes. Neither column moves while a record is worked (lease
-- renewals and checkpoints stay HOT updates).
CREATE INDEX records_original_blob ON records (original_blob_id);
CREATE INDEX records_converted_blob ON records (converted_blob_id) WHERE converted_blob_id IS NOT NULL;

-- Records done before this migration let their converted audio go as a done save now does; the
-- sweep deletes it, in bounded batches, once its grace is over.
UPDATE records SET converted_blob_id = NULL WHERE stage = 'done' AND converted_blob_id IS NOT NULL;
