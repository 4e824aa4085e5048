-- Statements of the operator's owner commands: new token, disable, enable, list.

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
-- Names, state and record counts; never a token or its hash.
SELECT o.name, o.created_at, o.disabled_at,
       count(r.id) AS records,
       count(r.id) FILTER (WHERE r.stage = 'done') AS done,
       count(r.id) FILTER (WHERE r.halted_at IS NOT NULL) AS halted
FROM owners o LEFT JOIN records r ON r.owner_id = o.id
GROUP BY o.id
ORDER BY o.name;
