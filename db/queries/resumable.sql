-- Statements of resumable uploads (`db.resumable`): created with an intake blob of their own,
-- filled a chunk at a time with the offset moved in the same transaction, finished into a record
-- once (one finisher holds the row from its claim until its transaction inserts the record and
-- hands the blob over), and swept when idle.

-- name: upload_by_idempotency_key
-- The upload an owner's creation with this Idempotency-Key made, finished or not.
SELECT id, upload_length, source_name, title, language, prompt, speakers
FROM resumable_uploads WHERE owner_id = %(owner_id)s AND idempotency_key = %(key)s;

-- name: insert_upload
-- A new upload and the blob its bytes go into, committed together: the blob is never an orphan
-- the sweep could take before the upload names it.
WITH blob AS (
    INSERT INTO blobs (media_type) VALUES (%(media_type)s) RETURNING id
)
INSERT INTO resumable_uploads (id, owner_id, blob_id, upload_length, source_name, title, language, prompt,
                               speakers, idempotency_key)
SELECT %(id)s, %(owner_id)s, blob.id, %(upload_length)s, %(source_name)s, %(title)s, %(language)s, %(prompt)s,
       %(speakers)s, %(key)s
FROM blob
RETURNING id;

-- name: upload_state
-- What a client is told of an upload of the owner's: another owner's is not found, like a missing one.
SELECT id, owner_id, blob_id, upload_length, received, touched_at, finished_at, record_id, cut_short,
       source_name, title, language, prompt, speakers
FROM resumable_uploads WHERE id = %(id)s AND owner_id = %(owner_id)s;

-- name: advance_upload
-- The first statement of writing a piece: the offset moves from where the writer found it, only
-- while the upload is unfinished and the piece stays within its length. No row: another request
-- moved the offset first, the upload was finished or removed, or the piece goes past the length.
-- The row stays locked until the piece's chunk is written in the same transaction.
UPDATE resumable_uploads
SET received = received + %(size)s, touched_at = now()
WHERE id = %(id)s AND owner_id = %(owner_id)s AND received = %(offset)s AND finished_at IS NULL
  AND (upload_length IS NULL OR received + %(size)s <= upload_length)
RETURNING blob_id;

-- name: extend_chunk
-- A piece that continues the blob's last, shorter chunk (an earlier request ended inside it).
UPDATE blob_chunks SET data = data || %(data)s
WHERE blob_id = %(blob_id)s AND seq = %(seq)s
RETURNING seq;

-- name: declare_upload_length
-- A deferred length made known (a recording stopped): once, and never below what arrived.
-- Declaring the length it has already is no change.
UPDATE resumable_uploads
SET upload_length = %(upload_length)s, touched_at = now()
WHERE id = %(id)s AND owner_id = %(owner_id)s AND finished_at IS NULL
  AND coalesce(upload_length, %(upload_length)s) = %(upload_length)s AND received <= %(upload_length)s
RETURNING id;

-- name: upload_chunks
-- A few chunks of an upload's blob by position, to hand its bytes to intake's checks.
SELECT seq, data FROM blob_chunks
WHERE blob_id = %(blob_id)s AND seq >= %(from_seq)s
ORDER BY seq LIMIT %(limit)s;

-- name: claim_upload_finish
-- The first statement of finishing an upload, and the one that decides who does: its row,
-- locked until the finisher's transaction ends (the record made, the refusal removed, or the
-- finisher gone: a process that dies lets go with its connection). No row while another
-- finisher holds it, so a second one neither waits nor copies the bytes again: it answers
-- with the upload as it stands (`upload_state`).
SELECT id, owner_id, blob_id, upload_length, received, touched_at, finished_at, record_id, cut_short,
       source_name, title, language, prompt, speakers
FROM resumable_uploads WHERE id = %(id)s AND owner_id = %(owner_id)s
FOR UPDATE SKIP LOCKED;

-- name: await_upload_finish
-- `claim_upload_finish` for the request that brought the last byte, which answers with the
-- record: it waits for a finisher that got there first, then finds the record it made (or no
-- row: the bytes were refused), or the upload still unfinished and its own to finish.
SELECT id, owner_id, blob_id, upload_length, received, touched_at, finished_at, record_id, cut_short,
       source_name, title, language, prompt, speakers
FROM resumable_uploads WHERE id = %(id)s AND owner_id = %(owner_id)s
FOR UPDATE;

-- name: hand_over_upload
-- Inside the finisher's transaction, which inserts the record: the upload is finished and its blob is the
-- record's now, so it no longer counts among the owner's unfinished uploads.
UPDATE resumable_uploads SET finished_at = now(), blob_id = NULL, record_id = %(record_id)s
WHERE id = %(id)s;

-- name: journal_cut_short
-- The record of a recording whose uploader went quiet: the journal says how much arrived.
INSERT INTO events (record_id, origin, kind, stage, detail)
VALUES (%(record_id)s, 'pipeline', 'cut_short', 'created',
        jsonb_build_object('received_bytes', %(received)s::bigint));

-- name: remove_upload
-- Termination, a refusal at the end, or expiry: the upload's row goes; its blob (returned, NULL
-- once a record has it) is deleted after, in bounded batches (the sweep takes it if that fails).
-- Termination of an upload a finisher holds waits for it and removes what it leaves.
DELETE FROM resumable_uploads WHERE id = %(id)s AND owner_id = %(owner_id)s
RETURNING blob_id;

-- name: cut_idle_recording
-- A deferred-length upload nobody wrote to for `idle_seconds` (a browser tab that died mid-
-- recording): its length becomes what arrived, so it can be finished. A request that writes
-- meanwhile either came first (the upload is not idle any more) or finds the length set.
UPDATE resumable_uploads
SET upload_length = received, cut_short = true
WHERE id IN (SELECT id FROM resumable_uploads
             WHERE finished_at IS NULL AND upload_length IS NULL
               AND touched_at < now() - make_interval(secs => %(idle_seconds)s)
             ORDER BY touched_at LIMIT %(batch)s
             FOR UPDATE SKIP LOCKED)
RETURNING id, owner_id;

-- name: stranded_uploads
-- Uploads whose last byte arrived but that no record was made of for `grace_seconds` (the
-- process finishing them died between the two): finished by the sweep.
SELECT id, owner_id FROM resumable_uploads
WHERE finished_at IS NULL AND upload_length = received
  AND touched_at < now() - make_interval(secs => %(grace_seconds)s)
ORDER BY touched_at LIMIT %(batch)s;

-- name: expire_uploads
-- Uploads nobody wrote to for `expiry_seconds`, finished or not, a bounded batch: their rows go
-- (a finished one's record stays); the blobs of the unfinished ones are returned to be deleted.
DELETE FROM resumable_uploads
WHERE id IN (SELECT id FROM resumable_uploads
             WHERE touched_at < now() - make_interval(secs => %(expiry_seconds)s)
             ORDER BY touched_at LIMIT %(batch)s
             FOR UPDATE SKIP LOCKED)
RETURNING id, blob_id;
