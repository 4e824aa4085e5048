-- The process that holds a record's claim (domain.holders): host, boot, process id and start
-- time. Written by every claim, read only while the claim stands: a rerun of `transcribe` on the
-- same machine tells from it that the run it follows was killed, and need not wait out its lease.
ALTER TABLE records ADD COLUMN claim_holder text;
