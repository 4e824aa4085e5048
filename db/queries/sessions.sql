-- Statements of the browser sessions (the table `sessions`). A session is found by the hash of its id.

-- name: open_owner_session
-- Opened only for the enabled owner whose token this is now (by its hash); no row: no such
-- owner, or it is disabled. The lock on the owner's row holds off a disabling meanwhile (its FOR
-- UPDATE): the disabling waits for this session and then ends it (end_owner_sessions), or
-- comes first, and this statement, reading the row again, opens nothing.
INSERT INTO sessions (id_hash, owner_id, token_hash, csrf, expires_at)
SELECT %(id_hash)s, id, token_hash, %(csrf)s, now() + make_interval(secs => %(lifetime)s)
FROM owners WHERE token_hash = %(token_hash)s AND disabled_at IS NULL
FOR KEY SHARE
RETURNING csrf;

-- name: open_operator_session
INSERT INTO sessions (id_hash, operator_id, token_hash, csrf, expires_at)
SELECT %(id_hash)s, id, token_hash, %(csrf)s, now() + make_interval(secs => %(lifetime)s)
FROM operators WHERE token_hash = %(token_hash)s
RETURNING csrf;

-- name: live_session
-- The live session of this kind: not idle past %(idle)s seconds, not expired, its account still
-- holds the token it was opened with and, an owner, is enabled. Its last_seen_at moves on only
-- when it is older than %(touch)s seconds (a page's every request need not write). No row: no
-- such session, or it has ended.
WITH found AS (
    SELECT s.id_hash, s.csrf, s.last_seen_at,
           coalesce(o.id, p.id) AS account_id, coalesce(o.name, p.name) AS name
    FROM sessions s
    LEFT JOIN owners o ON o.id = s.owner_id AND o.token_hash = s.token_hash AND o.disabled_at IS NULL
    LEFT JOIN operators p ON p.id = s.operator_id AND p.token_hash = s.token_hash
    WHERE s.id_hash = %(id_hash)s
      AND (s.owner_id IS NOT NULL) = (%(kind)s = 'owner')
      AND s.last_seen_at > now() - make_interval(secs => %(idle)s)
      AND s.expires_at > now()
), touched AS (
    UPDATE sessions SET last_seen_at = now()
    WHERE id_hash IN (SELECT id_hash FROM found WHERE account_id IS NOT NULL
                      AND last_seen_at < now() - make_interval(secs => %(touch)s))
)
SELECT account_id, name, csrf FROM found WHERE account_id IS NOT NULL;

-- name: end_session
DELETE FROM sessions WHERE id_hash = %(id_hash)s RETURNING 1;

-- name: end_owner_sessions
-- Every session of the owner ends with its disabling (enabling the owner again revives none).
-- Run as a statement of its own after set_owner_disabled, in its transaction, so that it sees a
-- session opened while the disabling waited for the owner's row.
DELETE FROM sessions WHERE owner_id = %(owner_id)s;

-- name: sweep_sessions
-- Sessions that can never be used again: idle too long, expired, their account's token replaced
-- since, or their owner disabled. Returns how many went.
WITH gone AS (
    DELETE FROM sessions s
    WHERE s.last_seen_at < now() - make_interval(secs => %(idle)s)
       OR s.expires_at < now()
       OR NOT EXISTS (SELECT 1 FROM owners o WHERE o.id = s.owner_id AND o.token_hash = s.token_hash
                                               AND o.disabled_at IS NULL)
          AND NOT EXISTS (SELECT 1 FROM operators p WHERE p.id = s.operator_id AND p.token_hash = s.token_hash)
    RETURNING 1
)
SELECT count(*) AS swept FROM gone;
