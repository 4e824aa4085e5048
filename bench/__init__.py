"""The benchmarks: scripts that measure the service as installed (the `db`, `audio`, `service`,
… packages), each run from the checkout's root as a module, `python -m bench.NAME`. What they
share lives here too: a scratch database (scratch.py), their own SQL (queries.sql, read by
statements.py), the recordings they feed the service (recordings.py) and the report of a run
(common.py). None of it is shipped with the service, and none of it comes from the tests."""
