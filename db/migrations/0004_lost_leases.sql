-- The crash-loop guard: claims of the record that ended with the lease running out (its worker
-- died or hung) and no save, failure or give-back written. Counted by the claim that takes the
-- record over, apart from step errors (failures); past the limit the claimer halts the record
-- with reason worker_lost. Reset like failures: by a save that advances the stage and by resume.
ALTER TABLE records ADD COLUMN lost_leases integer NOT NULL DEFAULT 0;
