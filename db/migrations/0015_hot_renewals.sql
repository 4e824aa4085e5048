-- A claim index that lease renewals do not touch (issue 16 §1): records_claimable indexed
-- available_at, which moves with lease_expires_at, so every renewal and every checkpoint wrote
-- all of records' indexes (500 renewals: 0 HOT updates). The claim now reads two indexes, neither
-- of which holds the lease:
--
-- queued_at: the moment an unclaimed record became claimable: NULL once it is claimed, done or
-- halted, otherwise the later of its stage entry and its retry pause's end. It changes when a
-- record is claimed, saved, failed, released, halted or resumed, never when a lease is renewed
-- or a checkpoint saved. A paused record sits at its future queued_at, beyond the range a claim
-- scans, as it did in records_claimable.
ALTER TABLE records ADD COLUMN queued_at timestamptz GENERATED ALWAYS AS (
    CASE WHEN halted_at IS NULL AND stage <> 'done' AND claim_token IS NULL
         THEN greatest(stage_entered_at, retry_after)
    END) STORED;
CREATE INDEX records_queued ON records (stage, queued_at, id) WHERE queued_at IS NOT NULL;

-- Records held under a claim: as many as there are running steps (plus the claims of dead
-- workers not yet taken over), so the claim reads them all and checks their leases as a filter.
CREATE INDEX records_held ON records (stage, id) WHERE claim_token IS NOT NULL AND halted_at IS NULL;

DROP INDEX records_claimable;

-- Room on each page for the new version of a row being worked: a renewal is a HOT update only
-- when the new version fits on the old one's page (pages filled later keep 10% free).
ALTER TABLE records SET (fillfactor = 90);
