-- Browser sessions as rows (issue 17 §3): every `serve` process reads the same ones, and a
-- restart keeps them. A row holds what a session needs to act for its person and nothing that
-- would let a reader of the database act without the browser's cookie:
--   id_hash     sha256 of the cookie's random session id (the id itself is only in the cookie)
--   owner_id / operator_id   whose session it is (exactly one)
--   token_hash  the hash the account's token had at sign-in: a replaced token no longer matches,
--               so its sessions end at once, in every process
--   csrf        the token every change made from the page must carry
-- A session ends at sign-out, when idle for longer than the configured idle time (last_seen_at),
-- and at expires_at whatever happens; ended rows are swept periodically by the API processes.
CREATE TABLE sessions (
    id_hash       text PRIMARY KEY,
    owner_id      bigint REFERENCES owners(id) ON DELETE CASCADE,
    operator_id   bigint REFERENCES operators(id) ON DELETE CASCADE,
    token_hash    text NOT NULL,
    csrf          text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    CHECK ((owner_id IS NULL) <> (operator_id IS NULL))
);

-- the sweep finds idle and expired sessions without reading the others
CREATE INDEX sessions_last_seen ON sessions (last_seen_at);
CREATE INDEX sessions_expiry ON sessions (expires_at);
