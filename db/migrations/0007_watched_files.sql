-- The watched folder (`transcriber watch`): each file's content is accepted once per owner,
-- whatever its name, wherever it is copied, however often the watcher restarts. A row is the
-- claim on one content (its SHA-256) and, once the content is a record, the memory that it is.
--
-- state: `accepting` while a watcher (holder, until held_until) makes the record: a row left so
-- by a watcher that ended is taken over, and the record made once whatever the timing (intake
-- keeps one record per key, `db.uploads`); `accepted` once record_id names the record; `written`
-- once its results lie beside the file at `path`; `refused` when intake refused the content
-- (`error` says why): it is not tried again until the file changes, that is, until its content
-- is another. `path` is where the content was last seen, the place its results go;
-- size_bytes and mtime_ns are that file's as it was hashed, so that a restarted watcher knows an
-- unchanged file without reading it again.
CREATE TABLE watched_files (
    owner_id     bigint NOT NULL REFERENCES owners(id) ON DELETE CASCADE,
    sha256       bytea NOT NULL CHECK (length(sha256) = 32),
    record_id    bigint REFERENCES records(id) ON DELETE SET NULL,
    path         text NOT NULL,
    size_bytes   bigint NOT NULL CHECK (size_bytes >= 0),
    mtime_ns     bigint NOT NULL,
    state        text NOT NULL DEFAULT 'accepting'
                 CHECK (state IN ('accepting', 'accepted', 'written', 'refused')),
    error        text,
    holder       text,
    held_until   timestamptz,
    seen_at      timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, sha256),
    CHECK (state <> 'refused' OR error IS NOT NULL)
);

-- A watcher reads the owner's rows under its folder at its start (by the primary key's owner),
-- and the rows whose results are due while it runs.
CREATE INDEX watched_files_due ON watched_files (owner_id) WHERE state = 'accepted';
CREATE INDEX watched_files_record ON watched_files (record_id) WHERE record_id IS NOT NULL;
