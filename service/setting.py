"""What one setting is: an environment variable, how its text is read, its default, what it
allows and what it means. service.config declares each of the service's settings once with
these; the configuration, its checks and the operations document's table are all made from
those declarations, so none of them can tell a different story."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from domain.errors import TranscriberError


class ConfigError(TranscriberError, ValueError, code="bad_configuration"):
    """A configuration value that cannot be used; the message names the variable."""

    def __init__(self, variable: str, problem: str):
        super().__init__(f"{variable}: {problem}")
        self.variable = variable


@dataclass(frozen=True)
class Kind:
    """How a setting's text becomes its value: `parse` raises ValueError saying what is wrong
    (the setting adds its variable's name); `allowed` says what it takes, for the table."""

    parse: Callable[[str], Any]
    allowed: str = ""

    def then(self, convert: Callable[[Any], Any]) -> Kind:
        """This kind, its value passed through `convert` (megabytes to bytes, a text to a path)."""
        return Kind(lambda raw: convert(self.parse(raw)), self.allowed)


TEXT = Kind(str)


def written(value: float) -> str:
    """A number as a person writes it: 86400, not 86400.0 or 8.64e+04; 0.05 as it is."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def number(minimum: float, maximum: float, *, integer: bool = False) -> Kind:
    """A finite number within [minimum, maximum]: `inf`, `nan` and absurd values stop the start
    here instead of overflowing a timer or an interval later."""
    kind = "a whole number" if integer else "a number"

    def parse(raw: str) -> float:
        try:
            value = int(raw) if integer else float(raw)
        except ValueError:
            raise ValueError(f"must be {kind}, got {raw!r}") from None
        if not math.isfinite(value) or not minimum <= value <= maximum:
            raise ValueError(f"must be between {written(minimum)} and {written(maximum)}, got {raw!r}")
        return value

    return Kind(parse, f"{kind} from {written(minimum)} to {written(maximum)}")


def choice(noun: str, *choices: str) -> Kind:
    """One of `choices`, in any case."""
    listed = ", ".join(choices)

    def parse(raw: str) -> str:
        value = raw.lower()
        if value not in choices:
            raise ValueError(f"unknown {noun} {raw!r}; one of {listed}")
        return value

    return Kind(parse, "one of " + ", ".join(f"`{c}`" for c in choices))


def matching(pattern: str, what: str) -> Kind:
    """A text the whole of which matches `pattern`; `what` describes it in words."""
    compiled = re.compile(pattern)

    def parse(raw: str) -> str:
        if not compiled.fullmatch(raw):
            raise ValueError(f"must be {what}, got {raw!r}")
        return raw

    return Kind(parse, what)


@dataclass(frozen=True)
class Setting:
    """One environment variable. `default` is written as an operator would write the value, so
    it reads the same in the table and passes the same checks as a value given; None: unset.
    `attribute` names the Settings attribute it fills as it is (None: the configuration combines
    it with others, as the step policies do)."""

    variable: str
    default: str | None
    meaning: str
    kind: Kind = TEXT
    attribute: str | None = None

    def read(self, env: Mapping[str, str]) -> Any:
        """The value `env` gives (surrounding blanks ignored, empty as unset); ConfigError naming
        the variable when it cannot be used."""
        raw = env.get(self.variable, "").strip() or self.default
        if raw is None:
            return None
        try:
            return self.kind.parse(raw)
        except ValueError as error:
            raise ConfigError(self.variable, str(error)) from None

    def markdown_row(self) -> str:
        default = (
            "unset" if self.default is None else f"`{self.default}`{_readable_duration(self.variable, self.default)}"
        )
        meaning = f"{self.meaning} ({self.kind.allowed})" if self.kind.allowed else self.meaning
        return f"| `{self.variable}` | {default} | {meaning.replace('|', '&#124;')} |"


def markdown_table(settings: tuple[Setting, ...]) -> str:
    """The settings as a markdown table: variable, default, meaning (with what it allows)."""
    return "\n".join(
        ["| variable | default | meaning |", "| --- | --- | --- |", *(setting.markdown_row() for setting in settings)]
    )


_UNITS = ((24 * 3600, "day", "days"), (3600, "h", "h"), (60, "min", "min"))


def _readable_duration(variable: str, default: str) -> str:
    """` (4 h)` after a default of 14400 seconds: a minute or more in whole days, hours or minutes."""
    if not variable.endswith("_SECONDS"):
        return ""
    seconds = float(default)
    for size, one, many in _UNITS:
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f" ({count} {one if count == 1 else many})"
    return ""
