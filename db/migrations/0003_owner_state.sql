-- An owner can be disabled: its API token is refused until it is enabled again. (A new token
-- replaces token_hash in place, so the old one is refused at once.)
ALTER TABLE owners ADD COLUMN disabled_at timestamptz;
