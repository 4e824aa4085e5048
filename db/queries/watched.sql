-- Statements of the watched folder (`transcriber watch`): one row per owner and content
-- (migration 0007). Paths and names travel as parameters only.

-- name: watched_known
-- The owner's rows under a folder (`prefix` ends with the separator): what a starting watcher
-- knows without reading the files again.
SELECT sha256, path, size_bytes, mtime_ns, state
FROM watched_files
WHERE owner_id = %(owner_id)s AND starts_with(path, %(prefix)s);

-- name: watched_claim
-- A content seen for the first time becomes this watcher's to accept; a content seen before
-- answers nothing here (see watched_row).
INSERT INTO watched_files (owner_id, sha256, path, size_bytes, mtime_ns, holder, held_until)
VALUES (%(owner_id)s, %(sha256)s, %(path)s, %(size_bytes)s, %(mtime_ns)s, %(holder)s,
        now() + make_interval(secs => %(lease_seconds)s))
ON CONFLICT (owner_id, sha256) DO NOTHING
RETURNING state;

-- name: watched_row
SELECT sha256, record_id, path, size_bytes, mtime_ns, state, error, holder,
       held_until < now() AS lapsed
FROM watched_files
WHERE owner_id = %(owner_id)s AND sha256 = %(sha256)s;

-- name: watched_take_over
-- A row left `accepting` by its holder (`was`: ended, or its time ran out, or this very watcher
-- after a failed try) becomes this watcher's: compared with the holder read, so of two watchers
-- taking it over at once one does.
UPDATE watched_files
SET holder = %(holder)s, held_until = now() + make_interval(secs => %(lease_seconds)s),
    path = %(path)s, size_bytes = %(size_bytes)s, mtime_ns = %(mtime_ns)s, updated_at = now()
WHERE owner_id = %(owner_id)s AND sha256 = %(sha256)s AND state = 'accepting'
  AND holder IS NOT DISTINCT FROM %(was)s
RETURNING state;

-- name: watched_made
-- The owner's record of this content made since its row was first claimed: what a watcher that
-- ended between intake's commit and its own row's update left (intake's key finds it too, for
-- as long as the key is kept).
SELECT r.id FROM watched_files w
JOIN records r ON r.owner_id = w.owner_id AND r.content_sha256 = w.sha256 AND r.created_at >= w.seen_at
WHERE w.owner_id = %(owner_id)s AND w.sha256 = %(sha256)s
ORDER BY r.id
LIMIT 1;

-- name: watched_accepted
-- The content is a record now; the row's holder lets go.
UPDATE watched_files
SET state = 'accepted', record_id = %(record_id)s, holder = NULL, held_until = NULL, updated_at = now()
WHERE owner_id = %(owner_id)s AND sha256 = %(sha256)s AND state = 'accepting';

-- name: watched_refused
-- Intake refused the content; the reason is kept, and the content is not tried again.
UPDATE watched_files
SET state = 'refused', error = %(error)s, holder = NULL, held_until = NULL, updated_at = now()
WHERE owner_id = %(owner_id)s AND sha256 = %(sha256)s AND state = 'accepting';

-- name: watched_moved
-- A content whose results are not written yet was seen at another path (renamed): its results
-- go there.
UPDATE watched_files
SET path = %(path)s, size_bytes = %(size_bytes)s, mtime_ns = %(mtime_ns)s, updated_at = now()
WHERE owner_id = %(owner_id)s AND sha256 = %(sha256)s AND state IN ('accepting', 'accepted');

-- name: watched_due
-- The owner's accepted contents under a folder whose results are not written yet, each with its
-- record's card (whether the record has finished is the card's to say).
SELECT w.sha256 AS watched_sha256, w.path AS watched_path, c.*
FROM watched_files w JOIN cards c ON c.id = w.record_id
WHERE w.owner_id = %(owner_id)s AND w.state = 'accepted' AND starts_with(w.path, %(prefix)s)
ORDER BY w.record_id
LIMIT %(limit)s;

-- name: watched_written
UPDATE watched_files
SET state = 'written', updated_at = now()
WHERE owner_id = %(owner_id)s AND sha256 = %(sha256)s AND state = 'accepted';
