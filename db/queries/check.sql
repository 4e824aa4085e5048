-- Statements of `transcriber check`: the facts the invariant rules (domain/invariants.py) judge.

-- name: check_snapshot
-- The whole check reads one consistent snapshot and writes nothing.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY;

-- name: check_now
SELECT now() AS now;

-- name: check_records
-- Every record's queue columns, whether it has text, and whether its halt (if any) is in the
-- journal: a halted event after its last resume. Times are clamped to what a client can read, so
-- an 'infinity' planted by hand is reported instead of breaking the check (greatest and least skip
-- NULLs, hence the CASE).
SELECT r.id, r.stage, r.claim_token,
       CASE WHEN r.lease_expires_at IS NOT NULL
            THEN greatest(least(r.lease_expires_at, '9999-01-01'), '0002-01-01') END AS lease_expires_at,
       CASE WHEN r.retry_after IS NOT NULL
            THEN greatest(least(r.retry_after, '9999-01-01'), '0002-01-01') END AS retry_after,
       r.halted_at IS NOT NULL AS halted, r.halt_reason,
       r.transcript IS NOT NULL AS has_text,
       (r.halted_at IS NULL OR EXISTS (
           SELECT 1 FROM events e
           WHERE e.record_id = r.id AND e.kind = 'halted'
             AND e.id > coalesce((SELECT max(x.id) FROM events x
                                  WHERE x.record_id = r.id AND x.kind = 'resumed'), 0)
       )) AS halt_journaled
FROM records r
ORDER BY r.id;

-- name: check_orphan_blobs
-- Audio no record points at, older than the sweep's grace (the sweep would have removed it).
SELECT b.id, b.size_bytes, b.created_at FROM blobs b
WHERE b.created_at < now() - make_interval(secs => %(grace_seconds)s)
  AND NOT EXISTS (SELECT 1 FROM records r
                  WHERE r.original_blob_id = b.id OR r.converted_blob_id = b.id)
ORDER BY b.id;

-- name: check_advanced_twice
-- A stage reached more than once by one record: two holders both saved (INV-2 broken).
SELECT record_id, stage, count(*) AS times FROM events
WHERE kind = 'advanced'
GROUP BY record_id, stage
HAVING count(*) > 1
ORDER BY record_id, stage;
