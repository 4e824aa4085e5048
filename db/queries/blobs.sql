-- Statements of the audio blobs: chunks written in order, read back by position.

-- name: create_blob
INSERT INTO blobs (media_type) VALUES (%(media_type)s) RETURNING id;

-- name: append_chunk
INSERT INTO blob_chunks (blob_id, seq, data) VALUES (%(blob_id)s, %(seq)s, %(data)s);

-- name: finish_blob
UPDATE blobs
SET size_bytes = (SELECT coalesce(sum(length(data)), 0) FROM blob_chunks WHERE blob_id = %(blob_id)s)
WHERE id = %(blob_id)s
RETURNING size_bytes;

-- name: read_chunks
-- One chunk at a time, by position, so a reader never holds more than a chunk.
SELECT seq, data FROM blob_chunks WHERE blob_id = %(blob_id)s AND seq >= %(from_seq)s
ORDER BY seq LIMIT %(limit)s;

-- name: delete_blob
DELETE FROM blobs WHERE id = %(blob_id)s;

-- name: delete_orphan_blobs
-- Blobs no record points at, left by a worker that died mid-conversion or a refused save.
DELETE FROM blobs b
WHERE b.created_at < now() - make_interval(secs => %(older_than_seconds)s)
  AND NOT EXISTS (SELECT 1 FROM records r
                  WHERE r.original_blob_id = b.id OR r.converted_blob_id = b.id)
RETURNING id;
