-- Statements of the wake-up listener (the trigger that notifies is in migration 6).

-- name: listen_wakeups
LISTEN transcriber_wakeups;
