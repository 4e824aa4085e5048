-- Statements of the migration runner.

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: lock_migrations
-- Two migrators never interleave; workers keep running meanwhile.
SELECT pg_advisory_xact_lock(7262700201);

-- name: applied_migrations
SELECT version FROM schema_migrations ORDER BY version;

-- name: record_migration
INSERT INTO schema_migrations (version, name) VALUES (%(version)s, %(name)s);

-- name: ping
SELECT 1 AS ok;

-- name: database_exists
SELECT 1 AS found FROM pg_database WHERE datname = %(name)s;

-- name: create_embedded_database
CREATE DATABASE transcriber;
