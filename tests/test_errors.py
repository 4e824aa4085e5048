"""One error root: every exception class of the service derives from `domain.errors.TranscriberError`
and names a stable snake_case `code`, so a caller can catch any refusal of ours at once and a
client can match on a name that does not change with a message's wording. Read from the sources
(no module is imported, so no engine or model is loaded to check this)."""
from __future__ import annotations

import ast
import builtins
import re

from conftest import ROOT
from test_layers import LAYERS

ROOT_ERROR = "TranscriberError"
# what the exceptions of the frameworks the service builds on are called where a class derives from them
FOREIGN_EXCEPTIONS = {"HTTPException"}
CODE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _classes() -> list[tuple[str, str, list[str], str | None]]:
    """Every class of the layers: where, its name, the names of its bases, the code it gives."""
    found = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    bases = [b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
                             if isinstance(b, (ast.Name, ast.Attribute))]
                    code = next((k.value.value for k in node.keywords
                                 if k.arg == "code" and isinstance(k.value, ast.Constant)), None)
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.name, bases, code))
    return found


def _named(name: str, classes: list, holds, seen: frozenset = frozenset()) -> bool:
    """Whether a class called `name` has a base (or is one) for which `holds` is true."""
    if holds(name):
        return True
    seen = seen | {name}
    return any(_named(base, classes, holds, seen) for _, other, bases, _ in classes if other == name
               for base in bases if base not in seen)


def _builtin_exception(name: str) -> bool:
    builtin = getattr(builtins, name, None)
    return isinstance(builtin, type) and issubclass(builtin, BaseException) or name in FOREIGN_EXCEPTIONS


def test_every_exception_of_the_service_derives_from_the_one_root():
    classes = _classes()
    exceptions = [(where, name) for where, name, _, _ in classes if _named(name, classes, _builtin_exception)]
    assert len(exceptions) > 30, exceptions  # the walk sees them
    stray = [f"{where} {name}" for where, name in exceptions
             if not _named(name, classes, lambda base: base == ROOT_ERROR)]
    assert not stray, "\n".join(stray)


def test_the_codes_are_snake_case():
    bad = [f"{where} {name}: {code!r}" for where, name, _, code in _classes()
           if code is not None and not CODE.fullmatch(code)]
    assert not bad, "\n".join(bad)


def test_a_class_gives_its_code_and_its_subclasses_keep_it():
    from domain.errors import TranscriberError

    class Refused(TranscriberError, code="refused_here"):
        pass

    class RefusedToo(Refused):
        pass

    assert (TranscriberError.code, Refused.code, RefusedToo.code) == ("transcriber_error", "refused_here",
                                                                       "refused_here")
    assert isinstance(RefusedToo("why"), TranscriberError) and str(RefusedToo("why")) == "why"


def test_each_refusal_the_api_answers_has_its_status_chosen_in_the_web_layer():
    """The statuses the HTTP API has always answered these refusals with, now chosen by
    `web.errors` alone."""
    from domain.resume import NotHalted
    from domain.search import QueryProblem
    from service import intake
    from web.errors import http_status

    expected = {intake.IntakeError: 400, intake.UnknownOwner: 400, intake.BadText: 400, intake.BadSpeakers: 400,
                intake.EmptyFile: 415, intake.NotAudio: 415, intake.UnsupportedAudio: 415,
                intake.TooLarge: 413, intake.AudioTooLong: 413, intake.OverQuota: 413,
                intake.KeyReused: 422, intake.BadLanguage: 422, intake.BadPrompt: 422, QueryProblem: 422}
    assert {kind: http_status(kind("why")) for kind in expected} == expected
    assert http_status(NotHalted(1, "done")) == 409
