"""The typer options of each command, built from the option table (:mod:`lmc.settings`).

Every option defaults to None, so that "not given" differs from ``0`` or ``--no-network``, and
the config file and ``LMC_*`` variables can supply the value (see :mod:`lmc.config`). The
values given travel as :class:`SharedOptions`, keyed by config key.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from lmc.settings import BY_KEY, OPTIONS, Option

__all__ = ["SharedOptions", "command_parameters", "with_options"]


@functools.cache
def _choice_type(key: str) -> type[enum.StrEnum]:
    spec = BY_KEY[key]
    return enum.StrEnum(key.title().replace("_", ""), {c: c for c in spec.choices})  # type: ignore[return-value]


def _python_type(spec: Option) -> Any:
    if spec.kind == "choice":
        return _choice_type(spec.key)
    if spec.kind == "names":
        return list[str]
    return {"int": int, "float": float, "bool": bool}.get(spec.kind, str)


def _typer_option(spec: Option) -> Any:
    import typer  # only the typer app builds options: a plain `lmc run` reads them itself

    decls = list(spec.flags)
    if spec.off_flag is not None:
        decls[0] = f"{decls[0]}/{spec.off_flag}"
    extra: dict[str, Any] = {}
    if spec.kind in ("int", "float"):
        extra = {"min": spec.minimum, "max": spec.maximum}
    if spec.kind == "choice":
        extra = {"case_sensitive": False}
    return typer.Option(
        *decls,
        metavar=spec.metavar,
        help=spec.help,
        rich_help_panel=spec.panel,
        show_default=False,
        **extra,
    )


def command_parameters(command: str) -> list[inspect.Parameter]:
    """The keyword parameters (all defaulting to None) of the options ``command`` takes."""
    return [
        inspect.Parameter(
            spec.key,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[_python_type(spec) | None, _typer_option(spec)],
        )
        for spec in OPTIONS
        if command in spec.commands
    ]


def with_options(
    command: str, before: Iterable[inspect.Parameter] = (), after: Iterable[inspect.Parameter] = ()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a ``**given`` function the signature typer reads: ``before``, the table's options
    for ``command``, then ``after``."""

    def decorate(function: Callable[..., None]) -> Callable[..., None]:
        parameters = [*before, *command_parameters(command), *after]
        function.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return function

    return decorate


def _plain(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list):
        return tuple(value)
    return value


class SharedOptions:
    """The options given on one command line, by config key (a value left out is absent)."""

    __slots__ = ("given",)

    def __init__(self, **given: object) -> None:
        unknown = sorted(set(given) - set(BY_KEY))
        if unknown:
            raise TypeError(f"SharedOptions: no option {unknown[0]!r}")
        self.given: dict[str, object] = {
            key: _plain(value) for key, value in given.items() if value is not None
        }

    def __repr__(self) -> str:
        return f"SharedOptions({self.given!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharedOptions) and other.given == self.given

    __hash__ = None  # type: ignore[assignment]

    def over(self, outer: SharedOptions | None) -> SharedOptions:
        """These options, then those given before the subcommand (``lmc -y run``) for the rest.

        Zero and false given here win: only an option left out takes the outer value."""
        if outer is None:
            return self
        return SharedOptions(**{**outer.given, **self.given})

    def get(self, key: str) -> Any:
        return self.given.get(key)

    @property
    def json(self) -> bool:
        return bool(self.given.get("json"))

    @property
    def resume(self) -> str | None:
        value = self.given.get("resume")
        return value if isinstance(value, str) else None

    @property
    def profile(self) -> str | None:
        value = self.given.get("profile")
        return value if isinstance(value, str) else None

    @property
    def verbose(self) -> bool:
        return bool(self.given.get("verbose"))

    def flags(self) -> dict[str, object]:
        """The settings these flags set (and ``mcp``/``no_mcp``), for
        :func:`lmc.config.load_settings`."""
        flags = {key: value for key, value in self.given.items() if BY_KEY[key].setting}
        if "mcp" in self.given:
            flags["mcp"] = list(self.given["mcp"])  # type: ignore[call-overload]
        if "no_mcp" in self.given:
            flags["no_mcp"] = self.given["no_mcp"]
        return flags
