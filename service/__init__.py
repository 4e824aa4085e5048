"""The floor under the service's processes: configuration, the rules for what users send,
intake, metrics, logging setup and opening the database. `actors/`, `web/` and the shell
(`transcriber/`) stand on it; it stands on `domain/`, `db/` and `audio/` and imports none of the
layers above it."""
