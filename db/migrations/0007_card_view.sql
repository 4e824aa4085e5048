-- The card's columns, named once: what an owner (and the operator) is shown of a record, with its
-- owner's name. The card, the owner's list and the authenticated card select from this view; it
-- is a plain join that the planner folds into each statement, so they keep their indexes.
-- (A later migration that drops or retypes one of these columns recreates the view.)
CREATE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.halted_at, r.halt_reason, r.halt_error,
       r.failures, r.retry_after, r.lease_expires_at, r.lost_leases, r.created_at, r.updated_at,
       r.duration_seconds, r.progress_seconds, r.recognized_seconds, r.source_name, r.engine,
       r.language
FROM records r JOIN owners o ON o.id = r.owner_id;
