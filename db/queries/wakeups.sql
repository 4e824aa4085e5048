-- Statements of the wake-up listener (the trigger that notifies is in migration 6).

-- name: listen_wakeups
LISTEN transcriber_wakeups;

-- name: take_wakeup_forwarding
-- The one forwarder of wake-ups is the session holding this advisory lock (per database; the
-- key spells "wakeups"). Not waiting: a standby asks again later. Released when the session ends.
SELECT pg_try_advisory_lock(33602636120158323);
