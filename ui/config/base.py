"""The building blocks of the settings object: one `setting(...)` per variable, the comma-separated list type,
and the text that says what a variable accepts (used by start-up errors and the README's table alike).

Why one helper: a variable's type, range, default and description are written once, beside its name, and
everything else (the check at start-up, the message naming what it got and what it accepts, the operator table
in README.md) is derived from that one definition.
"""
from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import BeforeValidator, Field, SecretStr, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

PREFIX = "AGENTDECK_"


class SettingsError(ValueError):
    """A variable of the app's settings has a value it does not accept; the message names the variable, what it
    got and what it accepts, one line per bad variable."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        joined = self.problems[0] if len(self.problems) == 1 else "\n  " + "\n  ".join(self.problems)
        super().__init__(f"AgentDeck cannot start: {joined}")


def _split_commas(value: Any) -> Any:
    """`a, b,,c` -> ("a", "b", "c") (order kept, repeats dropped); lists pass through for direct construction."""
    if isinstance(value, str):
        return tuple(dict.fromkeys(item.strip() for item in value.replace("\n", ",").split(",") if item.strip()))
    return value


def _zero_or_one(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    if text not in ("0", "1"):
        raise ValueError("only 1 turns it on")
    return text == "1"


#: A switch whose readers turn it on for `1` alone (security switches, read where they act): anything but 1 or
#: 0 is refused at start, so `true` is never taken for on by the check and for off where it is read.
Switch01 = Annotated[bool, BeforeValidator(_zero_or_one)]

#: A comma-separated list of names in one variable (never parsed as JSON).
CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_split_commas)]


#: Fields for which a variable set to nothing means nothing (no extra imports), not the default.
EMPTY_MEANS_NONE = frozenset({"authorized_imports"})


class SettingsPart(BaseSettings):
    """One concept's variables (models, sandbox, limits...); `AppSettings` inherits them all. A variable set to
    an empty (or blank) value counts as unset, as it always did, except those of `EMPTY_MEANS_NONE`."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", protected_namespaces=(),
                                      validate_default=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        return {name: value for name, value in values.items()
                if not (isinstance(value, str) and not value.strip() and name not in EMPTY_MEANS_NONE)}


def setting(default: Any, description: str, *, accepts: str | None = None, default_text: str | None = None,
            **constraints: Any) -> Any:
    """One variable: its default, a one-line description, and (optional) pydantic constraints (`ge`, `le`,
    `min_length`...). `accepts` overrides the text derived from the type; `default_text` says what an unset
    variable means when the default is computed elsewhere (e.g. from the keys found)."""
    extra: dict[str, Any] = {}
    if accepts is not None:
        extra["accepts"] = accepts
    if default_text is not None:
        extra["default_text"] = default_text
    return Field(default, description=description, json_schema_extra=extra or None, **constraints)


def env_name(field_name: str) -> str:
    return PREFIX + field_name.upper()


def _bounds(info: FieldInfo) -> tuple[Any, Any]:
    low: Any = None
    high: Any = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge):
            low = item.ge
        elif isinstance(item, annotated_types.Gt):
            low = item.gt
        elif isinstance(item, annotated_types.Le):
            high = item.le
        elif isinstance(item, annotated_types.Lt):
            high = item.lt
    return low, high


def _min_length(info: FieldInfo) -> int | None:
    for item in info.metadata:
        if isinstance(item, annotated_types.MinLen):
            return int(item.min_length)
    return None


def _core_type(annotation: Any) -> tuple[Any, bool]:
    """The annotation without `None` and `Annotated`, and whether None (unset) is allowed."""
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(typing.get_args(annotation))
            annotation = args[0] if len(args) == 1 else annotation
            if len(args) != 1:
                return annotation, optional
        else:
            return annotation, optional


def _number(value: Any) -> str:
    return f"{value:,}".replace(",", "_") if isinstance(value, int) and abs(value) >= 10_000 else f"{value:g}"


def accepts(info: FieldInfo) -> str:
    """What a variable accepts, in words: from `setting(accepts=...)`, else from its type and range."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if "accepts" in extra:
        return str(extra["accepts"])
    if any(getattr(item, "func", None) is _zero_or_one for item in info.metadata):
        return "1 or 0"
    kind, _ = _core_type(info.annotation)
    if typing.get_origin(kind) is Literal:
        return "one of " + ", ".join(str(choice) for choice in typing.get_args(kind))
    if kind is bool:
        return "1 or 0 (also true/false, yes/no, on/off)"
    if kind in (int, float):
        low, high = _bounds(info)
        what = "a whole number" if kind is int else "a number"
        if low is not None and high is not None:
            return f"{what} from {_number(low)} to {_number(high)}"
        if low is not None:
            return f"{what}, {_number(low)} or more"
        if high is not None:
            return f"{what}, at most {_number(high)}"
        return what
    if typing.get_origin(kind) is tuple:
        return "comma-separated names"
    if kind is SecretStr:
        length = _min_length(info)
        return f"text of {length} characters or more" if length else "text"
    return "text"


def default_text(info: FieldInfo) -> str:
    """The default as the README shows it."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if "default_text" in extra:
        return str(extra["default_text"])
    value = info.default
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value) if value else "none"
    if isinstance(value, (int, float)):
        return _number(value)
    return str(value)
