-- The schema of the service, in one piece: owners and operators, audio, records and the steps
-- that work them, the journal, the recognised windows, search, upload keys and the counts the
-- metrics read. Later changes are further numbered migrations beside this one; db/schema.txt
-- describes the schema as all of them leave it (`python -m db.schema --write` rewrites it).


-- ---------------------------------------------------------------------------------------------
-- Owners, operators, sessions
-- ---------------------------------------------------------------------------------------------

-- An owner's records are its own; its API token is refused while it is disabled (disabled_at).
-- A new token replaces token_hash in place, so the old one is refused at once.
CREATE TABLE owners (
    id             bigserial PRIMARY KEY,
    name           text NOT NULL UNIQUE CHECK (name <> ''),
    token_hash     text NOT NULL UNIQUE,       -- sha256 of the API token; the token itself is never stored
    created_at     timestamptz NOT NULL DEFAULT now(),
    disabled_at    timestamptz,
    -- the quotas the service owner sets (hours of audio, bytes kept); NULL: no limit of that kind
    quota_seconds  double precision CHECK (quota_seconds >= 0),
    quota_bytes    bigint CHECK (quota_bytes >= 0)
);

-- Operators sign in to /admin with a token of their own, apart from owners' tokens: an owner's
-- token never opens the panel, and an operator's never reads an owner's records.
CREATE TABLE operators (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    token_hash  text NOT NULL UNIQUE,          -- sha256 of the token; the token itself is never stored
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Browser sessions as rows: every `serve` process reads the same ones, and a restart keeps them.
-- A row holds what a session needs to act for its person and nothing that would let a reader of
-- the database act without the browser's cookie:
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


-- ---------------------------------------------------------------------------------------------
-- Blobs
-- ---------------------------------------------------------------------------------------------

-- Audio lives outside the records table: a blob is an ordered list of chunks, so a worker on
-- another machine needs only the database URL, and nobody holds a whole recording in memory.
--
-- A blob is written chunk by chunk, each chunk its own transaction (memory and transaction
-- length bounded by a chunk, whatever the recording's length), and is usable (a record may point
-- at it, a reader reads it) only once completed_at is set. An intake's blob names no writer; a
-- conversion's names the claim writing it (writer_record_id, writer_token), so that a stale
-- converter is refused at its next chunk and the sweep can tell a dead conversion's leftovers
-- from one still under way.
CREATE TABLE blobs (
    id                bigserial PRIMARY KEY,
    media_type        text NOT NULL,
    size_bytes        bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    completed_at      timestamptz,
    writer_record_id  bigint,
    writer_token      bigint
);

CREATE TABLE blob_chunks (
    blob_id     bigint NOT NULL REFERENCES blobs(id) ON DELETE CASCADE,
    seq         integer NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (blob_id, seq)
);


-- ---------------------------------------------------------------------------------------------
-- Records
-- ---------------------------------------------------------------------------------------------

-- A record is one recording of one owner and what the pipeline made of it: the stage it reached,
-- the owner's fields and each step's result. The work still to do on it (claims, guards, halts,
-- checkpoints) is in its step rows (`steps`, below); a record is read by column name, so a column
-- added here needs no change to the claim (INV-2).
CREATE TABLE records (
    id                    bigserial PRIMARY KEY,
    owner_id              bigint NOT NULL REFERENCES owners(id),
    -- the owner's fields: the pipeline reads them and never writes them
    title                 text NOT NULL DEFAULT '',
    summary               text NOT NULL DEFAULT '',
    topics                text[] NOT NULL DEFAULT '{}',
    -- names, jargon, context, given with the upload and handed to the recognizer as Whisper's
    -- initial prompt for every window; NULL: no prompt
    prompt                text CHECK (char_length(prompt) <= 800),
    -- what the upload asked for: auto (the service decides), off, or a fixed number of speakers
    speakers_wanted       text NOT NULL DEFAULT 'auto' CHECK (speakers_wanted ~ '^(auto|off|[1-9][0-9]?)$'),
    -- the owner's names for the speaker labels ({"S1": "Alice"})
    speaker_names         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(speaker_names) = 'object'),
    -- the stage reached, and when
    stage                 text NOT NULL DEFAULT 'created' CHECK (stage IN ('created', 'converted', 'done')),
    stage_entered_at      timestamptz NOT NULL DEFAULT now(),
    -- intake. An original may be gone while its record, card and text stay: retention deleted it,
    -- and audio_expired_at says when (records_original_or_expired: never neither).
    source_name           text NOT NULL DEFAULT '',
    original_blob_id      bigint REFERENCES blobs(id),
    audio_expired_at      timestamptz,
    -- the SHA-256 of an uploaded recording's bytes: a retried upload of the same bytes by the
    -- same owner, while the first is still in the pipeline, is attached to it (the
    -- OpenAI-compatible address, whose official client retries on its own). NULL for recordings
    -- given on the command line.
    content_sha256        bytea,
    -- the length the file declared at intake: what the hours quota counts until conversion has
    -- measured the real one (duration_seconds). NULL: the container declared none.
    intake_seconds        double precision,
    -- the convert step's fields (the converted audio is let go once the text is saved)
    converted_blob_id     bigint REFERENCES blobs(id),
    duration_seconds      double precision,
    -- the recognize step's fields. The language asked for at intake (NULL: the service's
    -- default), then the one recognition used or detected, so a record resumed after a
    -- checkpoint goes on in the same language; how sure the recognizer was of it when it was
    -- detected rather than asked for (Whisper's probability for the language of the first
    -- window; NULL then, and for engines that do not tell), written by the checkpoint that saves
    -- the window it was detected in; the text, assembled once from the windows at done.
    language              text,
    language_probability  double precision CHECK (language_probability BETWEEN 0 AND 1),
    engine                text,
    transcript            text,
    -- the diarize step's result: who spoke when, [{start, end, speaker}] in time order, written
    -- once by its fenced save
    turns                 jsonb,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT records_original_or_expired CHECK (original_blob_id IS NOT NULL OR audio_expired_at IS NOT NULL)
);

CREATE INDEX records_owner_recent ON records (owner_id, created_at DESC, id DESC);

-- Deleting a blob checks the records' foreign keys, and the sweep asks whether any record
-- points at a blob: both by these indexes.
CREATE INDEX records_original_blob ON records (original_blob_id);
CREATE INDEX records_converted_blob ON records (converted_blob_id) WHERE converted_blob_id IS NOT NULL;

-- The retention sweep's batches: done records still holding their original, oldest first.
CREATE INDEX records_audio_retention ON records (created_at, id)
    WHERE stage = 'done' AND original_blob_id IS NOT NULL;

-- A retried upload's record, found by the bytes' SHA-256.
CREATE INDEX records_owner_content ON records (owner_id, content_sha256) WHERE content_sha256 IS NOT NULL;


-- ---------------------------------------------------------------------------------------------
-- Steps: the claim, its indexes, fair turns and wake-ups
-- ---------------------------------------------------------------------------------------------

-- Claim tokens come from a sequence: unique per claim, and ordered, so an older holder is
-- recognisably older.
CREATE SEQUENCE claim_tokens;

-- One table of step claims for every step. A record waiting for a step has one row here, keyed by
-- (record, step): its claim (token, holder, lease), its guards (failures, retry pause, lost
-- leases, the time it entered the step), its halt flag, its progress and its checkpoint. Every
-- step (convert, recognize, diarize, and any later one) is claimed, renewed, checkpointed,
-- failed, halted, released and resumed by the same statements (queries/pipeline.sql) on these
-- rows. The row is deleted by the save that finishes its step, which inserts the next step's.
--
-- A record not done has exactly one row here (its stage's step); a done record has one while
-- its speakers are still to be found (the diarize step, a side step: it never moves the stage).
-- A diarization that fails for good halts its row only: the record stays done and its text
-- readable.
--
-- Room on each page for the new version of a row being worked (fillfactor 90): a renewal is a
-- HOT update only when the new version fits on the old one's page.
CREATE TABLE steps (
    record_id          bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    step               text NOT NULL CHECK (step IN ('convert', 'recognize', 'diarize')),
    -- the record's stage while this step is due (the step works from it), and its owner, whose
    -- turns the claim takes (both fixed for the row's life)
    stage              text NOT NULL CHECK (stage IN ('created', 'converted', 'done')),
    owner_id           bigint NOT NULL REFERENCES owners(id),
    -- when the record entered this step: the clock of the step's time limit (resume restarts it)
    entered_at         timestamptz NOT NULL DEFAULT now(),
    turn               bigint,
    -- the claim: its token, the process that holds it (domain.holders: host, boot, process id
    -- and start time, so that a process of the same machine that sees the holder has ended
    -- takes the work up at once instead of waiting out the lease), and the lease's end
    claim_token        bigint,
    claim_holder       text,
    lease_expires_at   timestamptz,
    -- the guards: step errors, the retry pause after one, and the crash-loop guard (claims that
    -- ended with the lease running out and no save, failure or give-back written; counted by
    -- the claim that takes the row over, past a limit the claimer halts it with reason
    -- worker_lost)
    failures           integer NOT NULL DEFAULT 0,
    retry_after        timestamptz,
    lost_leases        integer NOT NULL DEFAULT 0,
    halted_at          timestamptz,
    halt_reason        text,
    halt_error         text,
    progress_seconds   double precision,
    -- the checkpoint: the step's work is saved up to here (its windows), by the claim named
    -- checkpoint_token; a claim whose lease runs out after its own checkpoint lost no work
    checkpoint_seconds double precision NOT NULL DEFAULT 0,
    checkpoint_token   bigint,
    -- the moment an unclaimed row became claimable: NULL while claimed or halted, otherwise the
    -- later of its entry and its retry pause's end. Lease renewals and checkpoints never change
    -- it, so the claim's indexes (below) stay out of their way: those are HOT updates.
    queued_at          timestamptz GENERATED ALWAYS AS (
        CASE WHEN halted_at IS NULL AND claim_token IS NULL THEN greatest(entered_at, retry_after) END) STORED,
    PRIMARY KEY (record_id, step),
    CHECK ((halted_at IS NULL) = (halt_reason IS NULL))
) WITH (fillfactor = 90);

-- The claim reads three small ranges: rows whose holder may have run out of lease (as many as
-- there are running steps), rows retrying after a failure by the end of their pause (a paused
-- row sits at its future queued_at, beyond the range a claim scans), and new work by turn. None
-- of them holds the lease.
CREATE INDEX steps_held ON steps (step, record_id) WHERE claim_token IS NOT NULL AND halted_at IS NULL;
CREATE INDEX steps_retrying ON steps (step, queued_at, record_id) WHERE queued_at IS NOT NULL AND failures > 0;
CREATE INDEX steps_turns ON steps (step, turn, record_id) WHERE queued_at IS NOT NULL AND failures = 0;
-- The metrics count rows waiting out a pause through this index: a few rows.
CREATE INDEX steps_paused ON steps (stage, retry_after) WHERE halted_at IS NULL AND retry_after IS NOT NULL;
CREATE INDEX steps_halted ON steps (halted_at, record_id) WHERE halted_at IS NOT NULL;

-- Fair turns between owners: a row entering a step takes a turn there: the owner's previous turn
-- in that step plus one, but never earlier than the turn the step is serving now (the lowest
-- turn still queued; with nothing queued, the latest turn given). New work is claimed by turn,
-- so owners with records waiting take turns: one recording uploaded after another owner's
-- hundred waits behind at most one of them.

-- Each owner's latest turn per step (kept by the trigger below).
CREATE TABLE owner_turns (
    step       text NOT NULL,
    owner_id   bigint NOT NULL REFERENCES owners(id) ON DELETE CASCADE,
    last_turn  bigint NOT NULL,
    PRIMARY KEY (step, owner_id)
);
CREATE INDEX owner_turns_latest ON owner_turns (step, last_turn);

CREATE FUNCTION steps_take_a_turn() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    serving bigint;
    previous bigint;
BEGIN
    SELECT turn INTO serving FROM steps
    WHERE step = NEW.step AND queued_at IS NOT NULL AND failures = 0
    ORDER BY turn, record_id LIMIT 1;
    IF serving IS NULL THEN
        SELECT max(last_turn) INTO serving FROM owner_turns WHERE step = NEW.step;
    END IF;
    SELECT last_turn INTO previous FROM owner_turns WHERE step = NEW.step AND owner_id = NEW.owner_id;
    NEW.turn := greatest(coalesce(serving, 1), coalesce(previous + 1, 1));
    INSERT INTO owner_turns (step, owner_id, last_turn) VALUES (NEW.step, NEW.owner_id, NEW.turn)
    ON CONFLICT (step, owner_id) DO UPDATE SET last_turn = greatest(owner_turns.last_turn, EXCLUDED.last_turn);
    RETURN NEW;
END $$;

CREATE TRIGGER steps_turn BEFORE INSERT ON steps
    FOR EACH ROW EXECUTE FUNCTION steps_take_a_turn();

-- A row that is, or becomes, claimable wakes its step on commit (NOTIFY is delivered only if the
-- transaction commits). The payload names the step, followed by the seconds still to wait when
-- the row becomes claimable only later (the end of a retry pause). A row merely claimed, renewed
-- or checkpointed wakes nobody; a lease running out is the tick's.
CREATE FUNCTION steps_wake_up() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    wait double precision;
BEGIN
    IF NOT isfinite(NEW.queued_at) THEN
        RETURN NULL;  -- a pause without end: nothing will ever be due
    END IF;
    wait := extract(epoch FROM NEW.queued_at - clock_timestamp());
    PERFORM pg_notify('transcriber_wakeups',
                      CASE WHEN wait > 0 THEN NEW.step || ' ' || round(wait::numeric, 3) ELSE NEW.step END);
    RETURN NULL;
END $$;
CREATE TRIGGER steps_wake_up_queued AFTER INSERT ON steps
    FOR EACH ROW WHEN (NEW.queued_at IS NOT NULL)
    EXECUTE FUNCTION steps_wake_up();
-- released, paused after a failure, resumed: unclaimed, not halted, and claimable at another moment
CREATE TRIGGER steps_wake_up_freed AFTER UPDATE ON steps
    FOR EACH ROW WHEN (NEW.queued_at IS NOT NULL
                       AND (OLD.claim_token IS NOT NULL OR OLD.queued_at IS DISTINCT FROM NEW.queued_at))
    EXECUTE FUNCTION steps_wake_up();


-- ---------------------------------------------------------------------------------------------
-- The card
-- ---------------------------------------------------------------------------------------------

-- The card's columns, named once: what an owner (and the operator) is shown of a record, with its
-- owner's name: the record, the step row of its stage while it is not done (its claim, guards and
-- halt are the record's), and for a done record its diarize step's row (the speakers'). The card,
-- the owner's list and the authenticated card select from this view; it is a plain join that the
-- planner folds into each statement, so they keep their indexes. A migration that drops or
-- retypes one of these columns recreates the view.
CREATE VIEW cards AS
SELECT r.id, r.owner_id, o.name AS owner,
       r.title, r.summary, r.topics, r.stage, r.created_at, r.updated_at, r.duration_seconds,
       r.source_name, r.engine, r.language, r.prompt, r.language_probability, r.audio_expired_at,
       s.step, s.halted_at, s.halt_reason, s.halt_error, s.failures, s.retry_after, s.lease_expires_at,
       s.lost_leases, s.progress_seconds, s.checkpoint_seconds,
       r.speakers_wanted, r.speaker_names, d.record_id IS NOT NULL AS speakers_queued,
       r.turns IS NOT NULL AS speakers_found, d.halt_reason AS speakers_halt_reason,
       d.halt_error AS speakers_halt_error, d.failures AS speakers_failures
FROM records r JOIN owners o ON o.id = r.owner_id
     LEFT JOIN steps s ON s.record_id = r.id AND s.stage <> 'done'
     LEFT JOIN steps d ON d.record_id = r.id AND d.stage = 'done';


-- ---------------------------------------------------------------------------------------------
-- The journal
-- ---------------------------------------------------------------------------------------------

-- The append-only event journal of every record. The journal outlives the records it speaks of:
-- a record erased for good keeps exactly one line, its 'deleted' event (who, when, at which
-- stage; no content). So record_id has no foreign key: the trigger events_name_a_record keeps
-- that guarantee for every other line.
CREATE TABLE events (
    id         bigserial PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    record_id  bigint NOT NULL,
    origin     text NOT NULL CHECK (origin IN ('pipeline', 'human')),
    kind       text NOT NULL,
    stage      text NOT NULL,
    detail     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_record ON events (record_id, id);

-- A line about a record must name a record that exists. The record's row is locked for key
-- share as a foreign key check would, so an erasure and a line written meanwhile are ordered:
-- a line about an erased record (a stale step's refusal arriving late) is dropped, not kept.
CREATE FUNCTION events_name_a_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.kind = 'deleted' THEN
        RETURN NEW;
    END IF;
    PERFORM 1 FROM records WHERE id = NEW.record_id FOR KEY SHARE;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    IF EXISTS (SELECT 1 FROM events WHERE record_id = NEW.record_id AND kind = 'deleted') THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'event for a record that does not exist: %', NEW.record_id
        USING ERRCODE = 'foreign_key_violation';
END $$;
CREATE TRIGGER events_name_a_record BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_name_a_record();

-- Append-only, with one exception: erasing a record takes its journal with it, all but the line
-- that says it was deleted (which is written first, in the same transaction).
CREATE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.kind <> 'deleted'
       AND NOT EXISTS (SELECT 1 FROM records WHERE id = OLD.record_id)
       AND EXISTS (SELECT 1 FROM events WHERE record_id = OLD.record_id AND kind = 'deleted') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the event journal is append-only';
END $$;
CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_are_append_only();


-- ---------------------------------------------------------------------------------------------
-- Windows: the steps' checkpoints
-- ---------------------------------------------------------------------------------------------

-- Recognised windows, one row each, written once by the checkpoint that saves them (the same
-- statement, under the claim's token); the text is assembled from them once, at done. One row
-- per window rather than a column of the record's segments: that column grew by a whole copy per
-- checkpoint, and a 4-hour recording wrote hundreds of MB of WAL for under 1 MB of segments.
--
-- A window's segments are as the engine gave them ({start, end, text, words}), timed from the
-- recording's start; the recording's segments are the windows' in from_seconds order, each
-- window's in its own order. That order is the one search rows (one per segment) are built in.
-- `suppressed` is what the recognizer's guards dropped from the window as text no one could have
-- said (over no voice, faster than people speak, a loop), one {start, end, reason} per dropped
-- segment, timed from the recording's start and shown in the transcript's JSON, so nothing is
-- dropped without a word.
CREATE TABLE record_windows (
    record_id     bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    from_seconds  double precision NOT NULL,
    to_seconds    double precision NOT NULL,
    claim_token   bigint NOT NULL,             -- the claim that saved it
    segments      jsonb NOT NULL,
    suppressed    jsonb NOT NULL DEFAULT '[]',
    saved_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (record_id, from_seconds),
    CHECK (to_seconds > from_seconds)
);

-- The speaker embeddings of each window the diarize step worked (a checkpoint, written under the
-- claim's token by the statement that moves its step row's checkpoint on), so a run taken over
-- goes on from the last window; clustering at the end reads them all, and the save of the turns
-- lets them go. `times` are the (n, 2) float32 start/end seconds of the embedded pieces,
-- `vectors` their (n, d) float32 rows.
CREATE TABLE record_speaker_windows (
    record_id     bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    from_seconds  double precision NOT NULL,
    to_seconds    double precision NOT NULL,
    claim_token   bigint NOT NULL,
    times         bytea NOT NULL,
    vectors       bytea NOT NULL,
    PRIMARY KEY (record_id, from_seconds),
    CHECK (to_seconds > from_seconds)
);


-- ---------------------------------------------------------------------------------------------
-- Search
-- ---------------------------------------------------------------------------------------------

-- Full-text search over an owner's archive: one row per segment of a done record, and one
-- (n = 0) for the record's title, summary and topics. A tsvector per segment, not per
-- transcript: a whole transcript's would hit PostgreSQL's limits (1 MB, positions stop at
-- 16,383) and a hit would have no time. The rows are written by the statements that save the text
-- (the recognize step's save, save_recognize) and the owner's edit (edit_record).

-- The text-search configuration of a record's language (its code as recognition gives it, `en`,
-- `ru`, ...), `simple` for any other or none. Immutable, so generated columns may use it.
CREATE FUNCTION search_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE lower(split_part(coalesce(language, ''), '-', 1))
        WHEN 'en' THEN 'english' WHEN 'ru' THEN 'russian' WHEN 'de' THEN 'german'
        WHEN 'fr' THEN 'french' WHEN 'es' THEN 'spanish' WHEN 'it' THEN 'italian'
        WHEN 'pt' THEN 'portuguese' WHEN 'nl' THEN 'dutch' WHEN 'sv' THEN 'swedish'
        WHEN 'no' THEN 'norwegian' WHEN 'da' THEN 'danish' WHEN 'fi' THEN 'finnish'
        WHEN 'hu' THEN 'hungarian' WHEN 'ro' THEN 'romanian' WHEN 'tr' THEN 'turkish'
        ELSE 'simple' END::regconfig
$$;

-- Every configuration search_config gives: a query is parsed once with each, and each row is
-- matched by the query parsed with its own row's configuration.
CREATE FUNCTION search_configs() RETURNS regconfig[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY['english', 'russian', 'german', 'french', 'spanish', 'italian', 'portuguese',
                 'dutch', 'swedish', 'norwegian', 'danish', 'finnish', 'hungarian', 'romanian',
                 'turkish', 'simple']::regconfig[]
$$;

-- Text as it is indexed and queried: ё is е (Russian writes either for the same word).
CREATE FUNCTION search_normal(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT translate(body, 'Ёё', 'Ее')
$$;

-- `speakers` holds the labels of the speakers whose words a segment's row holds (S1, S2, …), so
-- a search by speaker tests a column of the rows it already reads by owner and joins nothing
-- more. The diarize step finishes after done, so its fenced save (save_diarize) writes them;
-- until then, and on the title row (n = 0), the array is empty. Names are the owner's and
-- change: a name given is matched at query time through records.speaker_names, never copied here.
CREATE TABLE search_rows (
    record_id      bigint NOT NULL,
    n              integer NOT NULL,            -- 0: title, summary, topics; then segments in order
    owner_id       bigint NOT NULL,
    start_seconds  double precision,            -- NULL on row 0
    end_seconds    double precision,
    speakers       text[] NOT NULL DEFAULT '{}',
    config         regconfig NOT NULL,
    body           text NOT NULL,
    words          tsvector GENERATED ALWAYS AS (to_tsvector(config, search_normal(body))) STORED,
    PRIMARY KEY (record_id, n)
);

-- The owner's search finds its rows by an index whose keys are the owner's own. Reading all of
-- an owner's rows and testing each stored tsvector cost ~3 ms per 1,000 segments, 450-840 ms at
-- p95 for an owner of 100,000. A GIN index over the words (alone, or beside owner_id with
-- btree_gin) keeps one posting list per word for every owner: a common word (or a short prefix)
-- of one owner costs reading that word's entries for the whole archive (measured: 240,000
-- entries, 450 ms, for a word in 22,000 of the heavy owner's rows). Here each key is the owner's
-- id, the row's configuration (its place in search_configs()) and the lexeme ("42.1:pipelin"), so
-- a word's, or a prefix's, entries are that owner's in that configuration alone: a query never
-- reads another owner's keys, nor rows of another configuration that its parse with that
-- configuration would match (a stemmer that cut "pube" to "pub" made a prefix query read 13,000
-- rows to keep 600). One more key per row, the owner's id alone ("42"), lists all of an owner's
-- rows, for a query that has no word an index can look up (only negated words: "-pipeline").
-- The cost is the size (one entry per word an owner ever said, BENCHMARKS.md, Search). The keys
-- are made from the stored tsvector (no text is parsed again), once when a row is written.

-- What each key of an owner's rows of a configuration starts with. The configuration is its place
-- in search_configs(): a configuration added there later goes at its end (or the index is
-- rebuilt), so that the keys already written keep their meaning.
CREATE FUNCTION search_key_prefix(owner_id bigint, config regconfig) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT owner_id::text || '.' || coalesce(array_position(search_configs(), config), 0)::text || ':'
$$;

-- The index keys of a row: its lexemes joined into one string by spaces (which no lexeme has:
-- the parser splits words on them), each with the key prefix in front, and split again; with
-- the owner's id alone, and no bare prefix of an empty row. String functions, no subquery: half
-- the cost of unnesting the lexemes; PL/pgSQL, so that the prefix is made once, in a plan kept
-- from row to row (an SQL function calling search_key_prefix three times cost 12 times as much).
CREATE FUNCTION search_keys(owner_id bigint, config regconfig, words tsvector) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    prefix text := search_key_prefix(owner_id, config);
BEGIN
    RETURN array_to_tsvector(array_remove(string_to_array(
        owner_id::text || ' ' || prefix || array_to_string(tsvector_to_array(words), ' ' || prefix),
        ' '), prefix));
END $$;

-- A query (as websearch_to_tsquery parses it with `config`) over the keys of the owner's rows
-- of that configuration: each lexeme of it, quoted in the tsquery's text, gets the key prefix in
-- front; a phrase's "followed by" (<->, <N>) becomes "and" (the keys have no positions: the
-- row's own tsvector tests the phrase); other operators and prefixes (:*) stay. The operators
-- are found by the spaces around them, which no lexeme has.
CREATE FUNCTION search_owner_query(owner_id bigint, config regconfig, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT regexp_replace(
               regexp_replace(query::text, ' <(?:-|[0-9]+)> ', ' & ', 'g'),
               '''((?:[^'']|'''')*)''', '''' || search_key_prefix(owner_id, config) || '\1''', 'g')::tsquery
$$;

CREATE INDEX search_rows_keys ON search_rows USING gin (search_keys(owner_id, config, words));

-- A record's search rows go with it by a trigger once per deleting statement, not by a foreign
-- key: the key's check ran once per row written (780 for an hour's record), measured as 10-20 %
-- of indexing an hour in the done save. Nothing else writes search rows than the statements
-- that hold the record's row (the done save, the owner's edit: each updates the record in the
-- same statement), so a row never names a record that is gone: a deletion waits for them, and
-- this trigger, run after it, sees what they wrote.
CREATE FUNCTION search_rows_go_with_records() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_rows s USING gone g WHERE s.record_id = g.id;
    RETURN NULL;
END $$;
CREATE TRIGGER records_search_rows_go AFTER DELETE ON records
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION search_rows_go_with_records();


-- ---------------------------------------------------------------------------------------------
-- Upload keys
-- ---------------------------------------------------------------------------------------------

-- Exactly one record per intended upload. A client that sends `Idempotency-Key` gets the record
-- its first request with that key made, as long as the key is kept (at least 24 hours; the
-- sweep deletes older keys). The key is the owner's own: two owners may use the same one. The
-- bytes' SHA-256 is kept with it, so the same key with other bytes is told apart and refused. A
-- key goes with its record when the record is deleted for good.
CREATE TABLE upload_keys (
    owner_id        bigint NOT NULL REFERENCES owners(id) ON DELETE CASCADE,
    key             text NOT NULL CHECK (key <> ''),
    content_sha256  bytea NOT NULL,
    record_id       bigint NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX upload_keys_created ON upload_keys (created_at);
CREATE INDEX upload_keys_record ON upload_keys (record_id);


-- ---------------------------------------------------------------------------------------------
-- Counts for the metrics
-- ---------------------------------------------------------------------------------------------

-- Records per stage and halt reason, kept by the statements that change them, so that /metrics
-- reads a few rows instead of counting all of records at every scrape.
--
-- A change to a record's stage or halt appends -1 for its old place and +1 for its new one to
-- record_count_changes; nothing is updated in place, so writers never wait on a shared counter
-- row (and never deadlock on two). A reader folds the changes into record_counts and reads that:
-- the cost of a scrape follows the changes since the last one, not the number of records.
-- Records waiting out a retry pause are counted from their step rows (the count depends on the
-- clock), through steps_paused.

CREATE TABLE record_counts (
    stage   text NOT NULL,
    reason  text NOT NULL DEFAULT '',   -- '' while not halted, else the halt reason
    records bigint NOT NULL,
    PRIMARY KEY (stage, reason)
);

CREATE TABLE record_count_changes (
    id      bigserial PRIMARY KEY,
    stage   text NOT NULL,
    reason  text NOT NULL,
    delta   integer NOT NULL
);

-- A record's stage is counted from records, its halt from its stage's step row (a halted side
-- step leaves its done record counted as done). A halted row's record counts at (stage, reason)
-- instead of (stage, '').
CREATE FUNCTION records_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO record_count_changes (stage, reason, delta) VALUES (OLD.stage, '', -1);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO record_count_changes (stage, reason, delta) VALUES (NEW.stage, '', 1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER records_counted_in_out AFTER INSERT OR DELETE ON records
    FOR EACH ROW EXECUTE FUNCTION records_count_change();
CREATE TRIGGER records_counted_moves AFTER UPDATE OF stage ON records
    FOR EACH ROW WHEN (OLD.stage IS DISTINCT FROM NEW.stage)
    EXECUTE FUNCTION records_count_change();

CREATE FUNCTION steps_count_halt() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.halted_at IS NOT NULL THEN
        INSERT INTO record_count_changes (stage, reason, delta)
        VALUES (OLD.stage, OLD.halt_reason, -1), (OLD.stage, '', 1);
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.halted_at IS NOT NULL THEN
        INSERT INTO record_count_changes (stage, reason, delta)
        VALUES (NEW.stage, '', -1), (NEW.stage, NEW.halt_reason, 1);
    END IF;
    RETURN NULL;
END $$;
-- a row is never inserted halted; a halted row goes when its record is deleted
CREATE TRIGGER steps_counted_halts_gone AFTER DELETE ON steps
    FOR EACH ROW WHEN (OLD.stage <> 'done' AND OLD.halted_at IS NOT NULL)
    EXECUTE FUNCTION steps_count_halt();
CREATE TRIGGER steps_counted_halts AFTER UPDATE OF halted_at, halt_reason ON steps
    FOR EACH ROW WHEN (NEW.stage <> 'done' AND ((OLD.halted_at IS NULL) <> (NEW.halted_at IS NULL)
                                                OR OLD.halt_reason IS DISTINCT FROM NEW.halt_reason))
    EXECUTE FUNCTION steps_count_halt();
