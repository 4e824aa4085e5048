"""The HTTP service: addresses, auth and error shapes; the rules are the same functions the command
line calls. `app` only assembles; `errors` (the JSON error shape), `parsing` (bearer token, record
id) and `auth` (owner, operator) are what every router stands on; the routers are `records`,
`admin`, `openai_compat`, `monitoring` and `pages` (with `sessions` for the browser)."""
