-- Windowed recognition with checkpoints, and the language of a record.

-- The language asked for at intake (NULL: the service's default), then the one recognition used
-- or detected, so a record resumed after a checkpoint goes on in the same language.
ALTER TABLE records ADD COLUMN language text;

-- Audio seconds whose segments are already saved (the last checkpoint): a claim that takes the
-- record over after a crash or a resume goes on from here instead of from zero.
ALTER TABLE records ADD COLUMN recognized_seconds double precision NOT NULL DEFAULT 0;
