-- Statements of the accounts: owners and operators. A token is stored only as its hash.

-- name: create_owner
INSERT INTO owners (name, token_hash) VALUES (%(name)s, %(token_hash)s) RETURNING id;

-- name: owner_by_name
SELECT id, name FROM owners WHERE name = %(name)s;

-- name: owner_by_token_hash
SELECT id AS account_id, name AS account_name, token_hash, disabled_at AS account_disabled_at
FROM owners WHERE token_hash = %(token_hash)s;

-- name: owner_card_by_token_hash
-- An authenticated card in one statement: the owner holding the token (by its hash) and that
-- owner's card; the card's columns are NULL when it has no such record. No row: no owner.
SELECT o.id AS account_id, o.name AS account_name, o.token_hash, o.disabled_at AS account_disabled_at,
       c.*
FROM owners o LEFT JOIN cards c ON c.id = %(id)s AND c.owner_id = o.id
WHERE o.token_hash = %(token_hash)s;

-- name: replace_owner_token
-- The old token's hash is gone with this statement: a request that still carries it is refused.
UPDATE owners SET token_hash = %(token_hash)s WHERE name = %(name)s RETURNING id;

-- name: set_owner_disabled
-- Disabling keeps the first moment; enabling clears it. Returns whether it was disabled before.
UPDATE owners o
SET disabled_at = CASE WHEN %(disabled)s THEN coalesce(o.disabled_at, now()) END
FROM (SELECT id, disabled_at FROM owners WHERE name = %(name)s FOR UPDATE) before
WHERE o.id = before.id
RETURNING o.id, before.disabled_at IS NOT NULL AS was_disabled;

-- name: list_owners
-- Names, state, record counts, and use against the quotas (hours of the records,
-- measured once converted and declared until then; bytes of the originals kept); never a token
-- or its hash.
SELECT o.name, o.created_at, o.disabled_at, o.quota_seconds, o.quota_bytes,
       count(r.id) AS records,
       count(r.id) FILTER (WHERE r.stage = 'done') AS done,
       count(r.id) FILTER (WHERE EXISTS (SELECT FROM steps s WHERE s.record_id = r.id AND s.stage <> 'done'
                                                              AND s.halted_at IS NOT NULL)) AS halted,
       coalesce(sum(coalesce(r.duration_seconds, r.intake_seconds)), 0)::float8 AS audio_seconds,
       coalesce(sum(b.size_bytes), 0)::bigint AS stored_bytes
FROM owners o LEFT JOIN records r ON r.owner_id = o.id LEFT JOIN blobs b ON b.id = r.original_blob_id
GROUP BY o.id
ORDER BY o.name;

-- name: create_operator
INSERT INTO operators (name, token_hash) VALUES (%(name)s, %(token_hash)s) RETURNING id;

-- name: operator_by_token_hash
SELECT id, name, token_hash FROM operators WHERE token_hash = %(token_hash)s;
