-- Statements of the wake-up listener (the triggers that notify are steps_wake_up_queued and
-- steps_wake_up_freed, db/schema.txt).

-- name: listen_wakeups
LISTEN transcriber_wakeups;

-- name: take_wakeup_forwarding
-- The one forwarder of wake-ups to a broker queue is the session holding this advisory lock: per
-- database, per queue (the first key spells "wake" in ASCII). Not waiting: a standby asks again
-- later. Released when the session ends, however it ends.
SELECT pg_try_advisory_lock(2002873189, hashtext(%(group)s));
