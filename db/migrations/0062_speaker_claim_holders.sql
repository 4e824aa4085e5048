-- The process that holds a speakers row's claim (domain.holders), as records have had since
-- migration 61: a worker of the same machine that sees the holder has ended takes the diarization
-- up at once instead of waiting out the lease.
ALTER TABLE record_speakers ADD COLUMN claim_holder text;
-- What an idle worker's look for ended holders reads (claims_held_on_machine) every 30 s: the
-- standing claims only, not every done record's row.
CREATE INDEX record_speakers_held ON record_speakers (record_id)
    WHERE claim_token IS NOT NULL AND halted_at IS NULL AND done_at IS NULL;
