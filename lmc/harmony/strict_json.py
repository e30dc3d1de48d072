"""Reading JSON strictly: every failure is one :class:`~lmc.errors.HarmonyError` line that
says where (``messages[2].content[0]``) and what is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar

from lmc.errors import HarmonyError

__all__ = [
    "REQUIRED",
    "as_object",
    "optional_text",
    "required",
    "shown",
    "str_list",
    "text_of",
    "typed",
]

_T = TypeVar("_T")
#: The ``default`` of :func:`typed` for a key that must be there, and not null.
REQUIRED: Final[Any] = object()


def shown(value: object) -> str:
    """A short description of a JSON value for an error message."""
    kinds: dict[type, str] = {bool: "a boolean", int: "a number", float: "a number"}
    if value is None:
        return "null"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return kinds.get(type(value), type(value).__name__)


def as_object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise HarmonyError(f"{where}: expected an object, got {shown(value)}")
    return value


def required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise HarmonyError(f"{where}: missing {key!r}")
    return obj[key]


def typed(
    obj: Mapping[str, Any],
    key: str,
    where: str,
    kind: type[_T],
    kind_name: str,
    *,
    default: Any,
) -> Any:
    """``obj[key]`` checked to be ``kind``; ``default`` when absent (or null, if it is None).

    A ``default`` of :data:`REQUIRED` makes the key required and never null.
    """
    if key not in obj or (obj[key] is None and default is not REQUIRED):
        if default is REQUIRED:
            raise HarmonyError(f"{where}: missing {key!r}")
        return default
    value = obj[key]
    # bool is an int in Python but not a number (or a string) in JSON.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise HarmonyError(f"{where}.{key}: expected {kind_name}, got {shown(value)}")
    return value


def text_of(obj: Mapping[str, Any], key: str, where: str) -> str:
    value: str = typed(obj, key, where, str, "a string", default=REQUIRED)
    return value


def optional_text(obj: Mapping[str, Any], key: str, where: str, default: str | None) -> str | None:
    """A string or null; ``default`` only when the key is absent (null means None)."""
    if key not in obj:
        return default
    value = obj[key]
    if value is not None and not isinstance(value, str):
        raise HarmonyError(f"{where}.{key}: expected a string or null, got {shown(value)}")
    return value


def str_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HarmonyError(f"{where}: expected a list of strings, got {shown(value)}")
    return list(value)
