-- The process that holds a speakers row's claim (domain.holders), as records have had since
-- migration 61: a worker of the same machine that sees the holder has ended takes the diarization
-- up at once instead of waiting out the lease.
ALTER TABLE record_speakers ADD COLUMN claim_holder text;
