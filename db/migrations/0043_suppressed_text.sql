-- What the recognizer's guards dropped from a window as text no one could have said (issue 15
-- §2: over no voice, faster than people speak, a loop), one {start, end, reason} per dropped
-- segment, timed from the recording's start; written with the window's segments by the same
-- checkpoint, shown in the transcript's JSON so nothing is dropped without a word.
ALTER TABLE record_windows ADD COLUMN suppressed jsonb NOT NULL DEFAULT '[]';
