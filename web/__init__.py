"""The HTTP API: the owner's side (intake, the card, the text). Addresses, auth and error shapes
live here; the rules are the same functions the command line calls."""
