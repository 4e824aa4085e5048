-- Statements of the browser sessions (the table `sessions`). A session is found by the hash of its id.

-- name: open_owner_session
-- Opened only for the owner whose token this is now (by its hash); no row: no such owner.
INSERT INTO sessions (id_hash, owner_id, token_hash, csrf, expires_at)
SELECT %(id_hash)s, id, token_hash, %(csrf)s, now() + make_interval(secs => %(lifetime)s)
FROM owners WHERE token_hash = %(token_hash)s
RETURNING csrf;

-- name: open_operator_session
INSERT INTO sessions (id_hash, operator_id, token_hash, csrf, expires_at)
SELECT %(id_hash)s, id, token_hash, %(csrf)s, now() + make_interval(secs => %(lifetime)s)
FROM operators WHERE token_hash = %(token_hash)s
RETURNING csrf;

-- name: live_session
-- The live session of this kind: not idle past %(idle)s seconds, not expired, and its account
-- still holds the token it was opened with. Its last_seen_at moves on at most once a minute (a
-- page's every request need not write). No row: no such session, or it has ended.
WITH found AS (
    SELECT s.id_hash, s.csrf, s.last_seen_at,
           coalesce(o.id, p.id) AS account_id, coalesce(o.name, p.name) AS name,
           o.disabled_at IS NOT NULL AS disabled
    FROM sessions s
    LEFT JOIN owners o ON o.id = s.owner_id AND o.token_hash = s.token_hash
    LEFT JOIN operators p ON p.id = s.operator_id AND p.token_hash = s.token_hash
    WHERE s.id_hash = %(id_hash)s
      AND (s.owner_id IS NOT NULL) = (%(kind)s = 'owner')
      AND s.last_seen_at > now() - make_interval(secs => %(idle)s)
      AND s.expires_at > now()
), touched AS (
    UPDATE sessions SET last_seen_at = now()
    WHERE id_hash IN (SELECT id_hash FROM found WHERE account_id IS NOT NULL
                      AND last_seen_at < now() - interval '1 minute')
)
SELECT account_id, name, disabled, csrf FROM found WHERE account_id IS NOT NULL;

-- name: end_session
DELETE FROM sessions WHERE id_hash = %(id_hash)s RETURNING 1;

-- name: sweep_sessions
-- Sessions that can never be used again: idle too long, expired, or their account's token
-- replaced since. Returns how many went.
WITH gone AS (
    DELETE FROM sessions s
    WHERE s.last_seen_at < now() - make_interval(secs => %(idle)s)
       OR s.expires_at < now()
       OR NOT EXISTS (SELECT 1 FROM owners o WHERE o.id = s.owner_id AND o.token_hash = s.token_hash)
          AND NOT EXISTS (SELECT 1 FROM operators p WHERE p.id = s.operator_id AND p.token_hash = s.token_hash)
    RETURNING 1
)
SELECT count(*) AS swept FROM gone;
