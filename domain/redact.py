"""Nothing private in a message or a log line: a connection address shown without its secret.

One rule for every address the service is given — the database (a URL or a libpq
`key=value` string), the broker and the remote recognizer: a password, and any query
parameter that carries a key or a token, is shown as `***`; everything else stays, so the
message still says where the service tried to go.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN = "***"
_SECRET_KEYS = re.compile(r"pass|secret|token|key", re.IGNORECASE)
# libpq's key=value form: password=… (possibly quoted) anywhere in the string
_CONNINFO_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_url(address: str) -> str:
    """`address` with its password and secret query values replaced by `***`."""
    if "://" not in address:
        return _CONNINFO_PASSWORD.sub(lambda m: m.group(1) + HIDDEN, address)
    try:
        parts = urlsplit(address)
        password = parts.password
    except ValueError:  # a malformed port or bracket: show only the scheme
        return address.split("://", 1)[0] + "://" + HIDDEN
    netloc = parts.netloc
    if password is not None:
        user_info, _, host = netloc.rpartition("@")
        user = user_info.split(":", 1)[0]
        netloc = f"{user}:{HIDDEN}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, HIDDEN if _SECRET_KEYS.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
